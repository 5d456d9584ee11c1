//! The optimizer run's report.md, section by section.

use super::{breakdown_md, metrics_row, OptimizeReport};
use crate::eval::Metrics;
use std::fmt::Write as _;

impl OptimizeReport {
    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        self.run_md(&mut s);
        self.best_md(&mut s);
        self.test_md(&mut s);
        self.search_md(&mut s);
        self.timings_md(&mut s);
        s
    }

    /// The run's settings, splits and candidate counts.
    fn run_md(&self, s: &mut String) {
        let st = &self.settings;
        let _ = writeln!(s, "# Optimizer run\n");
        let _ = writeln!(s, "- sweep: `{}` (FNV-1a {})", st.sweep, st.sweep_fnv1a64);
        let _ = writeln!(
            s,
            "- proposer: {}; iterations: {} (exploit, explore, repair each); beta {}; lambda {}; seed {}",
            st.proposer, self.iterations, st.beta, st.lambda, st.seed
        );
        let _ = writeln!(s, "- inputs the policies saw: {}", self.inputs.describe());
        let _ = writeln!(
            s,
            "- splits (episode-level 2:2:6): train {} questions / {} episodes, val {} / {}, test {} / {}",
            self.split_questions[0],
            self.split_episodes[0],
            self.split_questions[1],
            self.split_episodes[1],
            self.split_questions[2],
            self.split_episodes[2]
        );
        if st.fit == crate::split::FitOn::TrainVal {
            let _ = writeln!(
                s,
                "- rules fitted and candidates compared on train and val together: the val figures below are not held out"
            );
        }
        if let Some(h) = st.val_half {
            let _ = writeln!(
                s,
                "- candidates compared on val's {} half only ({} of its questions); the other half is left for choosing among runs",
                h.name(),
                self.split_questions[1]
            );
        }
        let c = &self.counts;
        let _ = writeln!(
            s,
            "- candidates: {} archived, {} valid ({} evaluated, {} duplicates), {} endpoint failures, failures by stage: {:?}",
            c.total, c.valid, c.evaluated, c.duplicates, c.endpoint_failures, c.failed_by_stage
        );
        if let Some(l) = &self.llm {
            let _ = writeln!(
                s,
                "- LLM candidates valid at the first try: {}/{} ({:.0}%); after suggestions and one repair round: {:.0}% ({} fixed by suggestions, {} by the repair round)",
                l.first_try,
                l.candidates,
                100.0 * l.share_first_try,
                100.0 * l.share_after_repair,
                l.autofixed,
                l.repaired
            );
        }
        if let Some(r) = &self.recovered {
            let _ = writeln!(s, "- resumed: a cut-off last archive line was dropped (line {}, {} bytes) and that candidate proposed again", r.line, r.dropped_bytes);
        }
    }

    /// The frozen best: its objectives, source, val-test relation and rules.
    fn best_md(&self, s: &mut String) {
        let b = &self.best;
        let _ = writeln!(
            s,
            "\n## Frozen best: #{} ({} {}, iteration {})\n",
            b.id, b.mode, b.direction, b.iteration
        );
        let how = match b.chosen_by.as_str() {
            "one-se" => "the fewest rules within one standard error of the best val objective",
            _ => "the best val objective",
        };
        let _ = writeln!(s, "Chosen by {how}, then tested once on test.\n");
        let _ = writeln!(
            s,
            "| split | objective | J | C (tokens) | structures |\n| --- | --- | --- | --- | --- |"
        );
        for (name, m) in [("train", b.train), ("val", b.val), ("test", Some(b.test))] {
            if let Some(m) = m {
                let _ = writeln!(
                    s,
                    "| {name} | {:.4} | {:.4} | {:.0} | {:.2} |",
                    m.objective, m.j, m.c, m.structures
                );
            }
        }
        let _ = writeln!(s, "\n```mesa\n{}```", b.source);
        if let Some(v) = &self.val_test {
            let _ = writeln!(
                s,
                "\nAcross the {} evaluated candidates, val and test objectives correlate with Pearson r = {:.3} and Spearman rho = {:.3}; the best val candidate ranks {} of {} on test.",
                v.n, v.pearson, v.spearman, v.best_val_test_rank, v.n
            );
        }
        if !b.rules.is_empty() {
            let _ = writeln!(s, "\nEach rule: the questions it decides (support) and its gain (the objective of its choice minus all five's over them, per question of the split).\n\n| rule | train support | train gain | val support | val gain |\n| --- | --- | --- | --- | --- |");
            for r in &b.rules {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:+.4} | {} | {:+.4} |",
                    r.name, r.train_support, r.train_gain, r.val_support, r.val_gain
                );
            }
        }
    }

    /// The best against the baselines on test, and its breakdown.
    fn test_md(&self, s: &mut String) {
        let b = &self.best;
        let _ = writeln!(s, "\n## Test split: best against the baselines\n");
        let _ = writeln!(s, "| policy | objective | J | C (tokens) | structures | detail |\n| --- | --- | --- | --- | --- | --- |");
        let _ = writeln!(
            s,
            "{}",
            metrics_row(&format!("**best #{}**", b.id), "", &b.test)
        );
        for r in &self.baselines_test {
            let _ = writeln!(s, "{}", metrics_row(&r.name, &r.detail, &r.metrics));
        }
        breakdown_md(s, "Best", &b.breakdown);
    }

    /// The directions' statistics and the top candidates on val.
    fn search_md(&self, s: &mut String) {
        let _ = writeln!(s, "\n## Directions (UCB statistics)\n\n| direction | axis | candidates | mean val objective | UCB |\n| --- | --- | --- | --- | --- |");
        for d in &self.directions {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.4} | {:.4} |",
                d.direction, d.axis, d.n, d.mean, d.ucb
            );
        }
        let _ = writeln!(s, "\n## Top candidates (val)\n\n| id | iteration | kind | direction | train objective | val objective | val J | val C |\n| --- | --- | --- | --- | --- | --- | --- | --- |");
        for t in &self.top {
            let f = |m: Option<Metrics>, g: fn(&Metrics) -> f64, d: usize| {
                m.map_or("-".into(), |m| format!("{:.d$}", g(&m), d = d))
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                t.id,
                t.iteration,
                t.mode,
                t.direction,
                f(t.train, |m| m.objective, 4),
                f(t.val, |m| m.objective, 4),
                f(t.val, |m| m.j, 4),
                f(t.val, |m| m.c, 0)
            );
        }
    }

    /// Timings per evaluated candidate and the whole run.
    fn timings_md(&self, s: &mut String) {
        let tm = &self.timings;
        let _ = writeln!(s, "\n## Timings (ms per evaluated candidate)\n\n| stage | n | mean | median | p95 | max |\n| --- | --- | --- | --- | --- | --- |");
        for (name, d) in [
            (
                "**candidate compile time** (check + compile + instantiate + eval val)",
                &tm.turnaround_ms,
            ),
            ("check", &tm.check_ms),
            ("compile to Wasm", &tm.compile_ms),
            ("wasmtime compile + instantiate", &tm.instantiate_ms),
            ("select val split", &tm.eval_val_ms),
            ("select train split", &tm.eval_train_ms),
            ("propose", &tm.propose_ms),
        ] {
            let _ = writeln!(
                s,
                "| {name} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                d.n, d.mean, d.median, d.p95, d.max
            );
        }
        let _ = writeln!(
            s,
            "\nWhole run: {:.1} s.\n\n![tokens against utility](pareto.svg)",
            tm.run_seconds
        );
    }
}
