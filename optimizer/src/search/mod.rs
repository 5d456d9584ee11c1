//! The search (the paper's Algorithm 1): UCB over prior directions; each
//! iteration proposes an exploitation, an exploration and a failure-repair
//! candidate; every candidate is checked, compiled to Wasm and evaluated
//! in the sandbox on val (and train), and archived with its scores or the
//! reason it failed; at the end the best val objective is frozen and tested
//! once on test.
//!
//! Directions for iteration `t` are chosen from the statistics of the
//! candidates of iterations before `t`, and every random choice is drawn
//! from (seed, iteration, kind): a resumed run makes the same choices as
//! an uninterrupted one, and with the offline proposer the same candidates.

use crate::archive::{Archive, ArchiveEntry, RunSettings};
use crate::baselines::{baselines, best_fixed, BaselineResult};
use crate::choice::{one_se, Choice, Contender};
use crate::directions::Direction;
use crate::eval::engine::{compile_policy, CandidateFailure, CompiledPolicy, Stage, StageTimings};
use crate::eval::{EvalError, Metrics, Problem, SplitData};
use crate::propose::{
    error_groups, policy_key, DirectionStat, LlmProposer, Mode, OfflineProposer, PolicySpec,
    Proposal, ProposeContext, Proposer,
};
use crate::report::{write_run_report, OptimizeReport};
use crate::rng::Rng;
use crate::split::{FitOn, Split};
use crate::strata::DEFAULT_TRADE_PRICES;
use crate::sweep::Sweep;
use crate::ucb::Ucb;
use mesa_core::Mask;
use mesa_runtime::{Runtime, RuntimeConfig};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

mod options;
pub use options::{OptimizeError, OptimizeOptions, ProposerConfig, RunSummary};

/// Everything the loop works with.
struct Search<'a> {
    opts: &'a OptimizeOptions,
    problem: &'a Problem,
    train: SplitData,
    val: SplitData,
    runtime: Runtime,
    directions: Vec<Direction>,
    archive: Archive,
    /// Train masks of evaluated candidates, by id (recomputed after a resume).
    train_masks: HashMap<usize, Vec<Mask>>,
    /// The evaluated candidates by [`policy_key`], to spot duplicates.
    keys: HashMap<String, usize>,
    /// Candidates the proposer validated for the current proposal, by
    /// source: evaluating one reuses its compiled module and instance.
    validated: RefCell<HashMap<String, CompiledPolicy>>,
    /// The best candidate so far, compiled: the frozen choice is tested
    /// with it rather than compiled again.
    best_compiled: Option<(usize, CompiledPolicy)>,
    floor: f64,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs the search and writes RUN/ (archive, report.md, report.json,
/// best.mesa, best.wasm, pareto.svg).
pub fn optimize(opts: &OptimizeOptions) -> Result<RunSummary, OptimizeError> {
    let started = Instant::now();
    if opts.trade_prices.is_empty()
        || opts
            .trade_prices
            .iter()
            .any(|p| !(p.is_finite() && *p > 0.0))
    {
        return Err(OptimizeError::TradePrices(opts.trade_prices.clone()));
    }
    let sweep = Sweep::read(&opts.sweep).map_err(EvalError::from)?;
    let problem = Problem::new(&sweep, opts.lambda, opts.hide_qtype)?;
    let splits = problem.splits(opts.seed)?;
    let train = problem.split_data(&splits, Split::Train)?;
    let val = problem.split_data_in(&splits, Split::Val, opts.val_half)?;
    let (train, val) = match opts.fit {
        FitOn::Train => (train, val),
        FitOn::TrainVal => {
            let both = train.joined(&val);
            (both.clone(), both)
        }
    };
    let test = problem.split_data(&splits, Split::Test)?;
    let settings = run_settings(opts)?;
    let archive = Archive::open(&opts.out, &settings, opts.resume)?;
    if let (Some(r), true) = (&archive.recovered, opts.progress) {
        eprintln!(
            "resume: dropped a cut-off last archive line (line {}, {} bytes); that candidate is proposed again",
            r.line, r.dropped_bytes
        );
    }
    // Each candidate selects for the val and the train questions once.
    let per_candidate = (train.inputs.len() + val.inputs.len()) as u64;
    let runtime = Runtime::with_config(RuntimeConfig::for_queries(per_candidate))?;
    let mut proposer: Box<dyn Proposer> = match &opts.proposer {
        ProposerConfig::Offline => Box::new(OfflineProposer::new(&problem, &opts.trade_prices)),
        ProposerConfig::Llm(o) => Box::new(LlmProposer::new(o.as_ref().clone())?),
    };
    let mut search = Search {
        opts,
        problem: &problem,
        train,
        val,
        runtime,
        directions: Direction::available(opts.hide_qtype, problem.shown_available),
        archive,
        train_masks: HashMap::new(),
        keys: HashMap::new(),
        validated: RefCell::new(HashMap::new()),
        best_compiled: None,
        floor: 0.0,
    };
    for e in &search.archive.entries {
        if let (true, None, Some(src)) = (e.valid, e.duplicate_of, &e.source) {
            search.keys.entry(policy_key(src)).or_insert(e.id);
        }
    }
    search.seed()?;
    search.iterate(proposer.as_mut())?;
    search.finish(&test, &splits, started, settings)
}

/// The run's settings, as RUN/'s archive records them (the sweep's
/// checksum read from its bytes).
fn run_settings(opts: &OptimizeOptions) -> Result<RunSettings, OptimizeError> {
    let bytes = std::fs::read(&opts.sweep).map_err(|e| {
        EvalError::from(crate::sweep::SweepError::Io {
            path: opts.sweep.clone(),
            source: e,
        })
    })?;
    let settings = RunSettings {
        format: "mesa-optimizer-run".into(),
        version: 1,
        sweep: opts.sweep.display().to_string(),
        sweep_fnv1a64: format!("{:016x}", crate::rng::fnv1a64(&bytes)),
        seed: opts.seed,
        lambda: opts.lambda,
        beta: opts.beta,
        proposer: opts.proposer.name().into(),
        no_qtype: opts.hide_qtype,
        val_half: opts.val_half,
        fit: opts.fit,
        trade_prices: (opts.trade_prices != DEFAULT_TRADE_PRICES)
            .then(|| opts.trade_prices.clone()),
    };
    Ok(settings)
}

impl Search<'_> {
    /// The UCB iterations: at each, an exploit, an explore and a repair
    /// candidate, archived as they come; stops when the endpoint fails
    /// `max_endpoint_failures` times in a row.
    fn iterate(&mut self, proposer: &mut dyn Proposer) -> Result<(), OptimizeError> {
        let opts = self.opts;
        let mut endpoint_failures = 0usize;
        for t in 1..=opts.iterations {
            let ucb = self.ucb_before(t);
            let all = |_: usize| true;
            let Some(exploit) = ucb.best(all) else { break };
            let exploit_dir = self.directions[exploit];
            let explore_dir = self.directions[ucb.explore(exploit, all).unwrap_or(exploit)];
            for (mode, dir) in [
                (Mode::Exploit, exploit_dir),
                (Mode::Explore, explore_dir),
                (Mode::Repair, exploit_dir),
            ] {
                if self.done(t, mode) {
                    continue;
                }
                let entry = self.candidate(proposer, &ucb, t, mode, dir)?;
                let failed_endpoint = entry.endpoint_failed();
                let last = entry
                    .failure
                    .as_ref()
                    .map(|f| f.message.clone())
                    .unwrap_or_default();
                if opts.progress {
                    eprintln!(
                        "{}",
                        progress_line(
                            &entry,
                            self.best().and_then(|b| b.val_objective()),
                            opts.iterations
                        )
                    );
                }
                self.archive.append(entry)?;
                if failed_endpoint {
                    endpoint_failures += 1;
                    if endpoint_failures >= opts.max_endpoint_failures.max(1) {
                        return Err(OptimizeError::EndpointDown {
                            count: endpoint_failures,
                            last,
                            archived: self.archive.entries.len(),
                        });
                    }
                } else {
                    endpoint_failures = 0;
                }
            }
        }
        Ok(())
    }
}

fn progress_line(e: &ArchiveEntry, best: Option<f64>, iterations: usize) -> String {
    let what = match (&e.failure, e.val) {
        (Some(f), _) => format!("invalid ({}: {})", f.stage.name(), f.message),
        (None, Some(v)) => format!(
            "val objective {:.4} (J {:.4}, C {:.0})",
            v.objective, v.j, v.c
        ),
        _ => "?".into(),
    };
    format!(
        "[{}/{}] #{} {} {}: {}; best {:.4}; {:.0} ms",
        e.iteration,
        iterations,
        e.id,
        e.mode.name(),
        e.direction.as_deref().unwrap_or("-"),
        what,
        best.unwrap_or(f64::NAN),
        e.timings.turnaround_ms()
    )
}

impl Search<'_> {
    /// Whether iteration `t`'s candidate of kind `mode` is archived (an
    /// endpoint failure is not: it is proposed again).
    fn done(&self, t: usize, mode: Mode) -> bool {
        self.archive
            .entries
            .iter()
            .any(|e| e.iteration == t && e.mode == mode && !e.endpoint_failed())
    }

    /// UCB statistics from the candidates of iterations before `t`.
    fn ucb_before(&self, t: usize) -> Ucb {
        let mut ucb = Ucb::new(self.directions.len(), self.opts.beta);
        for e in &self.archive.entries {
            if e.iteration == 0 || e.iteration >= t || e.endpoint_failed() {
                continue;
            }
            if let Some(a) = e
                .direction
                .as_deref()
                .and_then(|d| self.directions.iter().position(|x| x.name() == d))
            {
                ucb.update(a, e.reward);
            }
        }
        ucb
    }

    fn stats(&self, ucb: &Ucb) -> Vec<DirectionStat> {
        self.directions
            .iter()
            .enumerate()
            .map(|(a, d)| DirectionStat {
                direction: d.name().into(),
                axis: d.axis().name().into(),
                n: ucb.arms[a].n,
                mean: ucb.arms[a].mean(),
                ucb: ucb.score(a),
            })
            .collect()
    }

    /// The best valid candidate by val objective (the earliest on ties).
    fn best(&self) -> Option<&ArchiveEntry> {
        let mut best: Option<&ArchiveEntry> = None;
        for e in &self.archive.entries {
            if let Some(v) = e.val_objective() {
                if best
                    .and_then(ArchiveEntry::val_objective)
                    .is_none_or(|b| v > b)
                {
                    best = Some(e);
                }
            }
        }
        best
    }

    /// The candidate the run tests, by [`OptimizeOptions::choice`].
    fn chosen(&mut self) -> Option<ArchiveEntry> {
        if self.opts.choice == Choice::BestVal {
            return self.best().cloned();
        }
        let sources: Vec<(usize, String)> = self
            .archive
            .entries
            .iter()
            .filter(|e| e.val_objective().is_some() && e.duplicate_of.is_none())
            .filter_map(|e| Some((e.id, e.source.clone()?)))
            .collect();
        let contenders: Vec<Contender> = sources
            .into_iter()
            .filter_map(|(id, source)| {
                Some(Contender {
                    id,
                    rules: crate::rules::rule_names(&source).len(),
                    objectives: self.objectives(&source, &self.val)?,
                })
            })
            .collect();
        match one_se(&contenders) {
            Some(id) => self.archive.entries.get(id).cloned(),
            None => self.best().cloned(),
        }
    }

    /// Each rule's support and gain on train and val (empty if the policy
    /// cannot select there, which its evaluation already ruled out).
    fn rule_stats(
        &self,
        compiled: &mut crate::eval::engine::CompiledPolicy,
        source: &str,
    ) -> Vec<crate::rules::RuleStat> {
        let (mut train, mut val) = (Vec::new(), Vec::new());
        if compiled.select_all(&self.train.inputs, &mut train).is_err()
            || compiled.select_all(&self.val.inputs, &mut val).is_err()
        {
            return Vec::new();
        }
        let names = crate::rules::rule_names(source);
        crate::rules::rule_stats(
            self.problem,
            &names,
            (&self.train.idx, &train),
            (&self.val.idx, &val),
        )
    }

    /// A candidate's objective on each question of `on`, in `on.idx` order.
    fn objectives(&self, source: &str, on: &SplitData) -> Option<Vec<f64>> {
        let mut compiled = compile_policy(&self.runtime, source, self.problem, false).ok()?;
        let mut out = Vec::new();
        compiled.select_all(&on.inputs, &mut out).ok()?;
        let q = &self.problem.questions;
        Some(
            on.idx
                .iter()
                .zip(&out)
                .map(|(&i, s)| Mask::subset_index(s.mask).map_or(0.0, |k| q[i].objective[k]))
                .collect(),
        )
    }

    /// The val and test objectives of every evaluated candidate (for the
    /// report only: nothing is chosen on test).
    fn val_test(&self, test: &SplitData) -> crate::choice::ValTest {
        let pairs: Vec<(f64, f64)> = self
            .archive
            .entries
            .iter()
            .filter(|e| e.duplicate_of.is_none())
            .filter_map(|e| {
                let val = e.val_objective()?;
                let t = self.objectives(e.source.as_deref()?, test)?;
                Some((val, t.iter().sum::<f64>() / t.len().max(1) as f64))
            })
            .collect();
        crate::choice::ValTest::of(&pairs)
    }

    fn top(&self, k: usize) -> Vec<&ArchiveEntry> {
        let mut v: Vec<&ArchiveEntry> = self
            .archive
            .entries
            .iter()
            .filter(|e| e.val_objective().is_some() && e.duplicate_of.is_none())
            .collect();
        v.sort_by(|a, b| {
            b.val_objective()
                .unwrap_or(f64::MIN)
                .total_cmp(&a.val_objective().unwrap_or(f64::MIN))
                .then(a.id.cmp(&b.id))
        });
        v.truncate(k);
        v
    }

    /// The seed candidate: the best fixed subset on train.
    fn seed(&mut self) -> Result<(), OptimizeError> {
        if let Some(e) = self.archive.entries.iter().find(|e| e.mode == Mode::Seed) {
            self.floor = e.val_objective().unwrap_or(0.0);
            return Ok(());
        }
        let m = Mask::subset(best_fixed(self.problem, &self.train.idx));
        let spec = PolicySpec::fixed("seed-best-fixed", m);
        let proposal = Proposal {
            source: Some(spec.to_source()),
            note: format!("best fixed subset on train: {m}"),
            spec: Some(spec),
            ..Proposal::default()
        };
        let entry = self.evaluate(proposal, 0, Mode::Seed, None, None, "seed", 0.0)?;
        self.floor = entry.val_objective().unwrap_or(0.0);
        self.archive.append(entry)?;
        Ok(())
    }

    /// The train masks of an archived candidate (compiled again after a resume).
    fn masks_of(&mut self, id: usize) -> Option<Vec<Mask>> {
        if let Some(m) = self.train_masks.get(&id) {
            return Some(m.clone());
        }
        let source = self.archive.entries.get(id)?.source.clone()?;
        let mut compiled = compile_policy(&self.runtime, &source, self.problem, false).ok()?;
        let mut out = Vec::new();
        compiled.select_all(&self.train.inputs, &mut out).ok()?;
        let masks: Vec<Mask> = out.iter().map(|s| s.mask).collect();
        self.train_masks.insert(id, masks.clone());
        Some(masks)
    }

    fn candidate(
        &mut self,
        proposer: &mut dyn Proposer,
        ucb: &Ucb,
        t: usize,
        mode: Mode,
        dir: Direction,
    ) -> Result<ArchiveEntry, OptimizeError> {
        let parent_id = match mode {
            Mode::Explore => {
                let top: Vec<usize> = self.top(5).iter().map(|e| e.id).collect();
                let mut rng = Rng::derive(&[self.opts.seed, t as u64, 0x9a]);
                rng.pick(&top).copied()
            }
            _ => self.best().map(|e| e.id),
        };
        let errors = match parent_id.and_then(|id| self.masks_of(id)) {
            Some(masks) => error_groups(self.problem, &self.train.idx, &masks, 5),
            None => Vec::new(),
        };
        let stats = self.stats(ucb);
        let problem = self.problem;
        let runtime = &self.runtime;
        let validated = &self.validated;
        validated.borrow_mut().clear();
        let validate = |src: &str| -> Result<(), CandidateFailure> {
            let compiled = compile_policy(runtime, src, problem, true)?;
            validated.borrow_mut().insert(src.to_string(), compiled);
            Ok(())
        };
        let ctx = ProposeContext {
            problem,
            train: &self.train,
            direction: dir,
            mode,
            iteration: t,
            seed: self.opts.seed,
            parent: parent_id.and_then(|id| self.archive.entries.get(id)),
            top: self.top(5),
            ucb: stats,
            errors,
            inputs: problem.inputs_seen(),
            known: &self.keys,
        };
        let started = Instant::now();
        let proposal = proposer.propose(&ctx, &validate);
        let propose_ms = ms(started);
        let name = proposer.name();
        self.evaluate(proposal, t, mode, Some(dir), parent_id, name, propose_ms)
    }

    /// Checks, compiles, instantiates and evaluates a proposal on val and
    /// train; never fails for a bad candidate (the failure is archived).
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &mut self,
        proposal: Proposal,
        t: usize,
        mode: Mode,
        dir: Option<Direction>,
        parent: Option<usize>,
        proposer: &str,
        propose_ms: f64,
    ) -> Result<ArchiveEntry, OptimizeError> {
        let id = self.archive.next_id();
        let mut entry = ArchiveEntry {
            id,
            iteration: t,
            mode,
            direction: dir.map(|d| d.name().to_string()),
            proposer: proposer.to_string(),
            parent,
            source: proposal.source.clone(),
            spec: proposal.spec.clone(),
            valid: false,
            failure: None,
            warnings: Vec::new(),
            duplicate_of: None,
            note: proposal.note.clone(),
            train: None,
            val: None,
            reward: self.floor,
            propose_ms,
            timings: StageTimings::default(),
            llm: proposal.llm.clone(),
        };
        if let Some(f) = proposal.failure {
            entry.failure = Some(f);
            return Ok(entry);
        }
        let Some(source) = proposal.source else {
            entry.failure = Some(CandidateFailure::new(
                Stage::Propose,
                "the proposer gave no policy",
            ));
            return Ok(entry);
        };
        let key = policy_key(&source);
        if let Some(dup) = self
            .keys
            .get(&key)
            .and_then(|&id| self.archive.entries.get(id))
        {
            entry.same_as(dup);
            return Ok(entry);
        }
        let validated = self.validated.get_mut().remove(&source);
        let compiled = validated.map_or_else(
            || compile_policy(&self.runtime, &source, self.problem, true),
            Ok,
        );
        let mut compiled = match compiled {
            Ok(c) => c,
            Err(f) => {
                entry.failure = Some(f);
                return Ok(entry);
            }
        };
        let (val, train, train_masks) = match self.score(&mut compiled) {
            Ok(scored) => scored,
            Err(f) => {
                entry.failure = Some(f);
                entry.timings = compiled.timings;
                return Ok(entry);
            }
        };
        self.train_masks.insert(id, train_masks);
        self.keys.insert(key, id);
        entry.valid = true;
        entry.warnings = compiled.warnings.clone();
        entry.train = Some(train);
        entry.val = Some(val);
        entry.timings = compiled.timings;
        entry.reward = val.objective;
        let best = self.best().and_then(ArchiveEntry::val_objective);
        if best.is_none_or(|b| val.objective > b) {
            self.best_compiled = Some((id, compiled));
        }
        Ok(entry)
    }

    /// A compiled candidate's metrics on val and on train, and its train
    /// masks (kept for the fitting); the selection times go into its timings.
    fn score(
        &self,
        compiled: &mut CompiledPolicy,
    ) -> Result<(Metrics, Metrics, Vec<Mask>), CandidateFailure> {
        let mut out = Vec::new();
        compiled.timings.eval_val_ms = compiled.select_all(&self.val.inputs, &mut out)?;
        let val_masks: Vec<Mask> = out.iter().map(|s| s.mask).collect();
        let val = Metrics::of(self.problem, &self.val.idx, |i| {
            let pos = self.val.idx.binary_search(&i).unwrap_or(0);
            val_masks[pos]
        });
        compiled.timings.eval_train_ms = compiled.select_all(&self.train.inputs, &mut out)?;
        let train_masks: Vec<Mask> = out.iter().map(|s| s.mask).collect();
        let train = Metrics::of(self.problem, &self.train.idx, |i| {
            let pos = self.train.idx.binary_search(&i).unwrap_or(0);
            train_masks[pos]
        });
        Ok((val, train, train_masks))
    }

    fn finish(
        mut self,
        test: &SplitData,
        splits: &crate::split::Splits,
        started: Instant,
        settings: RunSettings,
    ) -> Result<RunSummary, OptimizeError> {
        let best = self.chosen().ok_or(OptimizeError::NoValidCandidate)?;
        let source = best.source.clone().unwrap_or_default();
        // Frozen: the best val objective, tested once (compiled when it was
        // evaluated, unless it was evaluated before a resume).
        let kept = self.best_compiled.take().filter(|(id, _)| *id == best.id);
        let compiled = kept.map_or_else(
            || compile_policy(&self.runtime, &source, self.problem, true),
            |(_, c)| Ok(c),
        );
        let mut compiled = compiled.map_err(|f| {
            OptimizeError::Eval(EvalError::Policy {
                path: format!("archive #{}", best.id),
                failure: f,
            })
        })?;
        let mut out = Vec::new();
        compiled.select_all(&test.inputs, &mut out).map_err(|f| {
            OptimizeError::Eval(EvalError::Policy {
                path: format!("archive #{}", best.id),
                failure: f,
            })
        })?;
        let test_masks: Vec<Mask> = out.iter().map(|s| s.mask).collect();
        let rules = self.rule_stats(&mut compiled, &source);
        let val_test = self.val_test(test);
        let lookup = |i: usize| {
            let pos = test.idx.binary_search(&i).unwrap_or(0);
            test_masks[pos]
        };
        let test_metrics = Metrics::of(self.problem, &test.idx, lookup);
        let breakdown = crate::eval::Breakdown::of(self.problem, &test.idx, lookup);
        let train_idx = self.train.idx.clone();
        let val_idx = self.val.idx.clone();
        let base_test: Vec<BaselineResult> = baselines(
            self.problem,
            &train_idx,
            &val_idx,
            &test.idx,
            splits.seed,
            self.opts.draws,
        );
        let base_val: Vec<BaselineResult> = baselines(
            self.problem,
            &train_idx,
            &val_idx,
            &val_idx,
            splits.seed,
            self.opts.draws,
        );
        let ucb = self.ucb_before(usize::MAX);
        let stats = self.stats(&ucb);
        let mut report = OptimizeReport::new(
            &settings,
            self.opts,
            self.problem,
            splits,
            [train_idx.len(), val_idx.len(), test.idx.len()],
            &self.archive,
            &best,
            test_metrics,
            breakdown,
            base_test,
            base_val,
            stats,
            started.elapsed().as_secs_f64(),
        );
        report.best.rules = rules;
        report.val_test = Some(val_test);
        write_run_report(
            &self.opts.out,
            &report,
            &self.archive,
            &source,
            compiled.wasm(),
        )
        .map_err(|(path, source)| OptimizeError::Write { path, source })?;
        self.archive.recovered = None;
        Ok(RunSummary {
            report,
            out: self.opts.out.clone(),
        })
    }
}
