//! The frontier report as Markdown: the headline table over seeds, the
//! paired bootstrap rows, the choices on val and their check, and the
//! first seed's 31 fixed subsets; and as the first seed's figure.

use super::{
    ChosenOnVal, FrontierReport, Headline, Interval, Rule, SplitFrontier, BOUND_DRAWS, CHECK_DRAWS,
    DRAWS, HALF, KEEP, MARGIN_DRAWS,
};
use crate::split::Split;

fn mean_sd(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    let st = crate::eval::Stat::of(values.to_vec());
    format!("{:.1}% ± {:.1}", 100.0 * st.mean, 100.0 * st.std)
}

/// `lo..hi` of a difference, in points of share.
fn interval_md(i: Option<Interval>) -> String {
    i.map_or("-".into(), |i| {
        format!(
            "{:+.1} [{:+.1}, {:+.1}]",
            100.0 * i.mean,
            100.0 * i.lo,
            100.0 * i.hi
        )
    })
}

/// The per-seed paired bootstrap rows.
fn paired_md(s: &mut String, seeds: &[SplitFrontier]) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "\nThe policies (together) minus the best fixed subset, and the policy chosen on val for {:.0}% of J by the checked rule against all five (its J and tokens as shares of all five's, minus 1), in points of share: mean [95% paired bootstrap interval, resampling the split's episodes, {DRAWS} draws].\n\n| seed | tokens for {:.0}% of all five's J | J at {:.0}% of its tokens | chosen policy's J vs all five | its tokens vs all five |\n| --- | --- | --- | --- | --- |",
        100.0 * KEEP,
        100.0 * KEEP,
        100.0 * HALF
    );
    for f in seeds {
        let p = f.against_fixed;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            f.seed,
            interval_md(p.and_then(|p| p.tokens_for_keep)),
            interval_md(p.and_then(|p| p.j_at_half)),
            interval_md(p.and_then(|p| p.chosen_j)),
            interval_md(p.and_then(|p| p.chosen_tokens))
        );
    }
}

/// A policy's short label: the directory of `RUN/best.mesa`, else the file.
fn policy_label(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or(path);
    match parts.next() {
        Some(dir) if file == "best.mesa" || file == "best.wasm" => dir,
        _ => file,
    }
}

/// The per-seed rows of the policies each rule chose on val, and of each
/// rule's check on val alone.
fn chosen_md(s: &mut String, seeds: &[SplitFrontier]) {
    use std::fmt::Write;
    let (keep, half) = (100.0 * KEEP, 100.0 * HALF);
    let names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    let on = match seeds.first().map(|f| &f.chosen_on_val) {
        Some(v) if v.cross_fit => " (cross-fitted: on each half of val, each policy is read as the search at its setting that compared candidates on the other half)".to_string(),
        Some(ChosenOnVal { on: Some(h), .. }) => format!(" (its {} half)", h.name()),
        _ => String::new(),
    };
    let head = format!("| seed | {} |", names.join(" | "));
    let rule_line = format!("| --- |{}", " --- |".repeat(names.len()));
    let _ = writeln!(
        s,
        "\nChosen on val{on} by each rule, scored here as shares of all five's J / tokens (`keep`: the cheapest keeping {keep:.0}% of all five's J on val; `keep-margin`: the cheapest keeping {keep:.0}% plus the mean shortfall of the `keep` choice made on one half of val's episodes and scored on the other, over {MARGIN_DRAWS} halvings; `keep-bound`: the cheapest whose J share minus one standard error, over {BOUND_DRAWS} bootstrap resamples of val's episodes, keeps {keep:.0}%; `half`: the best J spending at most {half:.0}% of the tokens on val; `half-bound`: the same with the token share plus one standard error; the allowance in points follows in brackets):\n\n{head}\n{rule_line}"
    );
    for f in seeds {
        let v = &f.chosen_on_val;
        let cells: Vec<String> = Rule::ALL
            .iter()
            .map(|&rule| {
                let allowance = v
                    .allowance(rule)
                    .map_or(String::new(), |a| format!(" [{:.2}]", 100.0 * a));
                v.chosen(rule).map_or("none meets it on val".into(), |c| {
                    format!(
                        "#{} {}, {:.1}%, {:.1}%{allowance}",
                        c.policy + 1,
                        policy_label(&f.policies[c.policy].name),
                        100.0 * c.j,
                        100.0 * c.c
                    )
                })
            })
            .collect();
        let _ = writeln!(s, "| {} | {} |", f.seed, cells.join(" | "));
    }
    let _ = writeln!(
        s,
        "\nEach rule checked on val{on} alone, over {CHECK_DRAWS} halvings of its episodes: the rule picks on one half, and its pick is scored on the other. Per rule: halvings where it met its target there / also beat that half's best fixed subset in hindsight (fewer tokens keeping {keep:.0}% of J; a higher J within {half:.0}% of the tokens) / halvings. The checked rule of each target (the most wins, ties to the plainer) is the choice the verdicts use.\n\n{head} checked |\n{rule_line} --- |"
    );
    for f in seeds {
        let v = &f.chosen_on_val;
        let cells: Vec<String> = v
            .checks
            .iter()
            .map(|c| format!("{} / {} / {}", c.met, c.beats, c.draws))
            .collect();
        let name = |r: Option<Rule>| r.map_or("-", Rule::name);
        let _ = writeln!(
            s,
            "| {} | {} | {}, {} |",
            f.seed,
            cells.join(" | "),
            name(v.checked_keep),
            name(v.checked_half)
        );
    }
}

impl FrontierReport {
    /// The first seed's figure (SVG): every fixed subset, both frontiers,
    /// the policies and the oracle.
    pub fn to_svg(&self) -> String {
        let title = format!(
            "{}: {} split, seed {}",
            self.utility,
            self.split.map_or("every question", Split::name),
            self.seeds.first().map_or(0, |f| f.seed)
        );
        match self.seeds.first() {
            Some(f) => crate::frontier_svg::frontier_svg(&title, f),
            None => String::new(),
        }
    }

    /// The report as Markdown: the headline table over seeds, then the
    /// first seed's 31 fixed subsets.
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let n = self.seeds.len();
        let _ = writeln!(
            s,
            "Frontier on {} ({}), {n} seed(s); shares of all five's J and tokens, mean ± sd over seeds.\n",
            self.split.map_or("every question", Split::name),
            self.utility
        );
        let _ = writeln!(
            s,
            "| method | tokens for {:.0}% of all five's J | J with at most {:.0}% of all five's tokens |\n| --- | --- | --- |",
            100.0 * KEEP,
            100.0 * HALF
        );
        let row = |s: &mut String, name: &str, hs: Vec<Headline>| {
            let keep: Vec<f64> = hs.iter().filter_map(|h| h.tokens_for_keep).collect();
            let half: Vec<f64> = hs.iter().filter_map(|h| h.j_at_half).collect();
            let missing = |k: usize| {
                if k < n {
                    format!(" ({} of {n} seeds)", k)
                } else {
                    String::new()
                }
            };
            let _ = writeln!(
                s,
                "| {name} | {}{} | {}{} |",
                mean_sd(&keep),
                missing(keep.len()),
                mean_sd(&half),
                missing(half.len())
            );
        };
        row(
            &mut s,
            "best fixed subset (in hindsight)",
            self.seeds.iter().map(|f| f.fixed_headline).collect(),
        );
        row(
            &mut s,
            "oracle",
            self.seeds.iter().map(|f| f.oracle_headline).collect(),
        );
        if let Some(first) = self.seeds.first() {
            for (k, p) in first.policies.iter().enumerate() {
                row(
                    &mut s,
                    &p.name,
                    self.seeds.iter().map(|f| f.policy_headlines[k]).collect(),
                );
            }
            if first.policies.len() > 1 {
                let together = self.seeds.iter().map(|f| f.policies_headline).collect();
                row(&mut s, "the policies together", together);
            }
            if !first.policies.is_empty() {
                paired_md(&mut s, &self.seeds);
                chosen_md(&mut s, &self.seeds);
            }
            let _ = writeln!(
                s,
                "\nSeed {}: {} questions; all five J {:.4}, {:.0} tokens. The 31 fixed subsets (* on the frontier):\n\n| subset | J | share of J | tokens | share of tokens |\n| --- | --- | --- | --- | --- |",
                first.seed, first.questions, first.all_five.j, first.all_five.c
            );
            let mut order: Vec<usize> = (0..first.fixed.len()).collect();
            order.sort_by(|&a, &b| first.fixed[a].c.total_cmp(&first.fixed[b].c));
            for k in order {
                let p = &first.fixed[k];
                let mark = if first.pareto.contains(&k) { " *" } else { "" };
                let _ = writeln!(
                    s,
                    "| {}{mark} | {:.4} | {:.1}% | {:.0} | {:.1}% |",
                    p.name,
                    p.j,
                    100.0 * p.j / first.all_five.j.max(f64::MIN_POSITIVE),
                    p.c,
                    100.0 * p.c / first.all_five.c.max(f64::MIN_POSITIVE)
                );
            }
            let o = &first.oracle;
            let _ = writeln!(
                s,
                "| oracle | {:.4} | {:.1}% | {:.0} | {:.1}% |",
                o.j,
                100.0 * o.j / first.all_five.j.max(f64::MIN_POSITIVE),
                o.c,
                100.0 * o.c / first.all_five.c.max(f64::MIN_POSITIVE)
            );
        }
        s
    }
}
