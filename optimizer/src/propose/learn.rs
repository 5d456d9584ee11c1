//! Fitting rules on the train split: greedy decision-list learning over a
//! pool of candidate conditions, keyword mining, preview thresholds, and
//! the refinements (mask refits, trims, budgets, pruning). Everything is
//! scored by native simulation of the policy (see [`super::spec`]).

use super::cues::is_cue_word;
use super::spec::{
    after_rules, holds_vec, Act, Cmp, Cond, FeatTable, PolicySpec, RuleSpec, Simulator,
};
use crate::eval::problem::argmax;
use crate::eval::Problem;

use mesa_core::{Feature, Mask, Structure};
use std::collections::{BTreeMap, HashMap};

/// How eagerly rules are fitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Fewest train questions a new rule must decide.
    pub min_support: usize,
    /// Least total train objective a new rule must add.
    pub min_gain: f64,
    /// Most rules added at once.
    pub max_rules: usize,
    /// Most words in a mined keyword group.
    pub group_size: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            min_support: 8,
            min_gain: 0.5,
            max_rules: 6,
            group_size: 6,
        }
    }
}

/// Fewest train episodes whose questions a mined word must come from: a
/// word that only one or two trajectories' questions use names those
/// trajectories (an id, a site, a file), not a kind of question.
const MIN_CUE_EPISODES: usize = 3;

/// Where new `select` rules go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// First: they override every other rule for the questions they match.
    Front,
    /// After the last `select`: they only see the questions no rule caught.
    AfterSelects,
}

/// The train split as the fitter sees it.
pub struct Fit<'a> {
    /// The problem.
    pub problem: &'a Problem,
    /// Features of every question.
    pub table: &'a FeatTable,
    /// The train questions (indices into the problem).
    pub idx: &'a [usize],
    /// A token price added to the problem's lambda while fitting (an
    /// exchange rate tried for exploration; 0 fits the objective itself).
    pub rate: f64,
}

/// Per train position: the objective of each mask after the trade and the
/// budget, and the mask index they turn each mask into.
struct Rows {
    eff: Vec<[f64; Mask::SUBSETS]>,
    post: Vec<[u8; Mask::SUBSETS]>,
}

impl<'a> Fit<'a> {
    fn rows(&self, base: &PolicySpec) -> Rows {
        let mut eff = Vec::with_capacity(self.idx.len());
        let mut post = Vec::with_capacity(self.idx.len());
        for &i in self.idx {
            let q = &self.problem.questions[i];
            let mut e = [0.0; Mask::SUBSETS];
            let mut p = [0u8; Mask::SUBSETS];
            for k in 0..Mask::SUBSETS {
                let previews = &self.table.feats[i].previews;
                let m = after_rules(Mask::subset(k), base.trade, base.budget, previews);
                let k2 = Mask::subset_index(m).unwrap_or(k);
                e[k] = q.objective[k2] - self.rate * q.tokens[k2];
                p[k] = k2 as u8;
            }
            eff.push(e);
            post.push(p);
        }
        Rows { eff, post }
    }

    /// Per train position: the chosen mask index, and the `select` rule
    /// that decided it (`None`: no `select` fired).
    pub fn outcomes(&self, spec: &PolicySpec) -> (Vec<usize>, Vec<Option<usize>>) {
        let sim = Simulator::new(spec, self.table);
        self.idx
            .iter()
            .map(|&i| {
                let (m, stop) = sim.run(self.table, i);
                (Mask::subset_index(m).unwrap_or(Mask::SUBSETS - 1), stop)
            })
            .unzip()
    }

    /// The total train objective of `spec`.
    pub fn total(&self, spec: &PolicySpec) -> f64 {
        let (cur, _) = self.outcomes(spec);
        self.sum_at(&cur)
    }

    fn sum_at(&self, cur: &[usize]) -> f64 {
        self.idx
            .iter()
            .zip(cur)
            .map(|(&i, &k)| {
                let q = &self.problem.questions[i];
                q.objective[k] - self.rate * q.tokens[k]
            })
            .sum()
    }

    /// How many distinct episodes the train positions `ps` come from.
    fn episodes_of(&self, ps: &[usize]) -> usize {
        let q = &self.problem.questions;
        let mut seen: Vec<u32> = ps.iter().map(|&p| q[self.idx[p]].episode_no).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    fn objective(&self, pos: usize, k: usize) -> f64 {
        let q = &self.problem.questions[self.idx[pos]];
        q.objective[k] - self.rate * q.tokens[k]
    }

    /// Greedy decision-list learning: repeatedly adds the `select` rule
    /// (a condition from `pool` and its best mask) that adds the most train
    /// objective, until no rule adds `min_gain` with `min_support`
    /// questions or `max_rules` were added. Returns the policy and one note
    /// per added rule.
    pub fn greedy(
        &self,
        base: &PolicySpec,
        pool: &[Cond],
        insert: Insert,
        params: &Params,
        prefix: &str,
    ) -> (PolicySpec, Vec<String>) {
        let rows = self.rows(base);
        let (mut cur, stops) = self.outcomes(base);
        let mut reach: Vec<bool> = stops.iter().map(Option::is_none).collect();
        let holds: Vec<Vec<bool>> = pool
            .iter()
            .map(|c| holds_vec(c, self.table, self.idx))
            .collect();
        let mut spec = base.clone();
        let mut used = vec![false; pool.len()];
        let mut at = match insert {
            Insert::Front => 0,
            Insert::AfterSelects => spec.after_selects(),
        };
        let mut notes = Vec::new();
        for _ in 0..params.max_rules {
            let mut best: Option<(f64, usize, usize, usize)> = None;
            for (ci, h) in holds.iter().enumerate() {
                if used[ci] {
                    continue;
                }
                let mut sum = [0.0; Mask::SUBSETS];
                let mut old = 0.0;
                let mut support = 0;
                for (p, &on) in h.iter().enumerate() {
                    if on && (insert == Insert::Front || reach[p]) {
                        support += 1;
                        for (s, v) in sum.iter_mut().zip(rows.eff[p].iter()) {
                            *s += v;
                        }
                        old += self.objective(p, cur[p]);
                    }
                }
                if support < params.min_support {
                    continue;
                }
                let m = argmax(&sum);
                let gain = sum[m] - old;
                if gain > params.min_gain && best.is_none_or(|b| gain > b.0) {
                    best = Some((gain, ci, m, support));
                }
            }
            let Some((gain, ci, m, support)) = best else {
                break;
            };
            used[ci] = true;
            let name = spec.fresh_name(prefix);
            notes.push(format!(
                "{name}: {} -> select {} (+{gain:.3} on {support} train questions)",
                pool[ci].describe(),
                Mask::subset(m)
            ));
            spec.rules.insert(
                at,
                RuleSpec {
                    name,
                    cond: Some(pool[ci].clone()),
                    action: Act::Select,
                    mask: Mask::subset(m),
                },
            );
            if insert == Insert::AfterSelects {
                at += 1;
            }
            for (p, &on) in holds[ci].iter().enumerate() {
                if on && (insert == Insert::Front || reach[p]) {
                    cur[p] = usize::from(rows.post[p][m]);
                    reach[p] = false;
                }
            }
        }
        (spec, notes)
    }

    /// Re-chooses the mask of every `select` rule for the questions it
    /// decides, and the default for the rest (when no rule adds or removes).
    pub fn refit_masks(&self, base: &PolicySpec) -> (PolicySpec, Vec<String>) {
        let rows = self.rows(base);
        let (_, stops) = self.outcomes(base);
        let mut sums: BTreeMap<Option<usize>, [f64; Mask::SUBSETS]> = BTreeMap::new();
        for (p, stop) in stops.iter().enumerate() {
            let s = sums.entry(*stop).or_insert([0.0; Mask::SUBSETS]);
            for (a, v) in s.iter_mut().zip(rows.eff[p].iter()) {
                *a += v;
            }
        }
        let mut spec = base.clone();
        let mut notes = Vec::new();
        for (stop, sum) in sums {
            let m = Mask::subset(argmax(&sum));
            match stop {
                Some(r) if spec.rules[r].mask != m => {
                    notes.push(format!(
                        "{}: {} -> {m}",
                        spec.rules[r].name, spec.rules[r].mask
                    ));
                    spec.rules[r].mask = m;
                }
                Some(_) => {}
                None if !spec.has_modifiers() && spec.default != m => {
                    notes.push(format!("default: {} -> {m}", spec.default));
                    spec.default = m;
                }
                None => {}
            }
        }
        (spec, notes)
    }

    /// Keyword conditions mined from the train questions' `query` (or
    /// `task`) words: single words whose presence shifts the best subset,
    /// and per target subset a group of the strongest such words. Only
    /// questions where `within` holds are mined (all when `None`).
    pub fn mine_words(
        &self,
        base: &PolicySpec,
        task: bool,
        within: Option<&Cond>,
        insert: Insert,
        params: &Params,
    ) -> Vec<Cond> {
        let rows = self.rows(base);
        let (cur, stops) = self.outcomes(base);
        let inside: Vec<bool> = match within {
            Some(c) => holds_vec(c, self.table, self.idx),
            None => vec![true; self.idx.len()],
        };
        let mut postings: HashMap<u32, Vec<usize>> = HashMap::new();
        for (p, &i) in self.idx.iter().enumerate() {
            if !inside[p] || (insert == Insert::AfterSelects && stops[p].is_some()) {
                continue;
            }
            let f = &self.table.feats[i];
            for &w in if task { &f.twords } else { &f.qwords } {
                postings.entry(w).or_default().push(p);
            }
        }
        // (gain, word, best mask) of each frequent enough word. Function
        // words, question phrasing (`cues.rs`), words in more than half the
        // mined questions and words of fewer than MIN_CUE_EPISODES
        // trajectories are no cue a person would write (they fit the split
        // or name an episode, not a kind of question).
        let mined = inside.iter().filter(|x| **x).count();
        let mut scored: Vec<(f64, String, usize)> = Vec::new();
        for (w, ps) in &postings {
            let word = &self.table.words[*w as usize];
            if ps.len() < params.min_support
                || 2 * ps.len() > mined
                || !is_cue_word(word)
                || self.episodes_of(ps) < MIN_CUE_EPISODES
            {
                continue;
            }
            let mut sum = [0.0; Mask::SUBSETS];
            let mut old = 0.0;
            for &p in ps {
                for (s, v) in sum.iter_mut().zip(rows.eff[p].iter()) {
                    *s += v;
                }
                old += self.objective(p, cur[p]);
            }
            let m = argmax(&sum);
            let gain = sum[m] - old;
            if gain > 0.0 {
                scored.push((gain, word.clone(), m));
            }
        }
        // Strongest first; the word breaks ties so the order is stable.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let wrap = |words: Vec<String>| {
            let c = if task {
                Cond::TaskHas { words }
            } else {
                Cond::QueryHas { words }
            };
            match within {
                Some(w) => Cond::and(w.clone(), c),
                None => c,
            }
        };
        let mut pool: Vec<Cond> = scored
            .iter()
            .take(60)
            .map(|(_, w, _)| wrap(vec![w.clone()]))
            .collect();
        let mut groups: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (_, w, m) in &scored {
            let g = groups.entry(*m).or_default();
            if g.len() < params.group_size.max(1) {
                g.push(w.clone());
            }
        }
        for (_, g) in groups {
            if g.len() > 1 {
                for n in [2, 4, g.len()] {
                    if n <= g.len() {
                        pool.push(wrap(g[..n].to_vec()));
                    }
                }
            }
        }
        pool.dedup();
        pool
    }

    /// `domain is X` for every domain of the train questions.
    pub fn domains(&self) -> Vec<Cond> {
        self.distinct(|i| self.problem.questions[i].input.domain.clone())
            .into_iter()
            .map(|d| Cond::Domain { values: vec![d] })
            .collect()
    }

    /// The question-shape cues of the standard library (`query matches
    /// std.stepref`, `query has std.causal`, ...): rules a person would
    /// write, which say what a question asks for (named steps, a range,
    /// the recent past, a cause, a count) rather than fit its words.
    pub fn std_cues(&self) -> Vec<Cond> {
        self.table
            .std_sets
            .iter()
            .map(|(name, pattern)| Cond::Std {
                name: name.clone(),
                pattern: *pattern,
            })
            .collect()
    }

    /// `qtype is X` for every type the policies may see.
    pub fn qtypes(&self) -> Vec<Cond> {
        self.distinct(|i| self.problem.questions[i].input.qtype.clone())
            .into_iter()
            .map(|t| Cond::Qtype { values: vec![t] })
            .collect()
    }

    fn distinct(&self, get: impl Fn(usize) -> Option<String>) -> Vec<String> {
        let mut v: Vec<String> = self.idx.iter().filter_map(|&i| get(i)).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Preview gates: for each structure whose previews the sweep has,
    /// `hits == 0`, and each feature above and below thresholds at train
    /// quantiles (midpoints between neighbouring values, so that no
    /// question sits on a threshold). An overlap is gated once per pair of
    /// available structures, in its canonical order.
    pub fn preview_gates(&self, features: &[Feature]) -> Vec<Cond> {
        let mut out = Vec::new();
        let available = |s: Structure| self.problem.available[s.index()];
        for s in Structure::ALL {
            if !available(s) {
                continue;
            }
            for &feat in features {
                if feat.partner().is_some_and(|o| o <= s || !available(o)) {
                    continue;
                }
                let mut vals: Vec<f64> = self
                    .idx
                    .iter()
                    .map(|&i| self.table.feats[i].previews.get(s, feat))
                    .collect();
                vals.sort_by(f64::total_cmp);
                vals.dedup();
                if feat == Feature::Hits && vals.first() == Some(&0.0) {
                    out.push(Cond::Preview {
                        structure: s,
                        feature: feat,
                        op: Cmp::Eq,
                        threshold: 0.0,
                    });
                }
                for t in thresholds(&vals) {
                    for op in [Cmp::Gt, Cmp::Lt] {
                        out.push(Cond::Preview {
                            structure: s,
                            feature: feat,
                            op,
                            threshold: t,
                        });
                    }
                }
            }
        }
        out
    }

    /// Per-structure value from the retrieval score: coordinate ascent over
    /// `add {K}` when `preview.K.top` is above a threshold and `remove {K}`
    /// when below one, appended after the `select` rules (so they shape the
    /// questions no rule caught). Each change must add `min_gain`.
    pub fn backend_value(&self, base: &PolicySpec, params: &Params) -> (PolicySpec, Vec<String>) {
        let mut spec = base.clone();
        let mut score = self.total(&spec);
        let mut notes = Vec::new();
        for _round in 0..2 {
            for s in Structure::ALL {
                if !self.problem.available[s.index()] {
                    continue;
                }
                let mut vals: Vec<f64> = self
                    .idx
                    .iter()
                    .map(|&i| self.table.feats[i].previews.get(s, Feature::Top))
                    .collect();
                vals.sort_by(f64::total_cmp);
                vals.dedup();
                let mut best: Option<(f64, PolicySpec, String)> = None;
                for t in thresholds(&vals) {
                    for (act, op) in [(Act::Add, Cmp::Gt), (Act::Remove, Cmp::Lt)] {
                        let mut trial = spec.clone();
                        let name = trial.fresh_name("value");
                        let note = format!(
                            "{name}: preview.{}.top {} {t} -> {} {{{}}}",
                            s.letter(),
                            if op == Cmp::Gt { ">" } else { "<" },
                            if act == Act::Add { "add" } else { "remove" },
                            s.letter()
                        );
                        trial.rules.push(RuleSpec {
                            name,
                            cond: Some(Cond::Preview {
                                structure: s,
                                feature: Feature::Top,
                                op,
                                threshold: t,
                            }),
                            action: act,
                            mask: Mask::single(s),
                        });
                        let v = self.total(&trial);
                        if v > score + params.min_gain && best.as_ref().is_none_or(|b| v > b.0) {
                            best = Some((v, trial, note));
                        }
                    }
                }
                if let Some((v, trial, note)) = best {
                    score = v;
                    spec = trial;
                    notes.push(note);
                }
            }
        }
        (spec, notes)
    }

    /// Cost shaping: drop from each rule's mask (and the default) the
    /// structures whose marginal utility does not pay for their tokens on
    /// train, then try token gates (`cond and preview.K.tokens > t`) in
    /// front of each `select` rule.
    pub fn cost_trim(&self, base: &PolicySpec, params: &Params) -> (PolicySpec, Vec<String>) {
        let mut spec = base.clone();
        let mut score = self.total(&spec);
        let mut notes = Vec::new();
        let slots = spec.rules.len() + 1;
        for slot in 0..slots {
            loop {
                let mask = if slot < spec.rules.len() {
                    spec.rules[slot].mask
                } else {
                    spec.default
                };
                let mut best: Option<(f64, Mask)> = None;
                for s in mask.iter() {
                    let smaller = mask.without(Mask::single(s));
                    if smaller.is_empty() {
                        continue;
                    }
                    let mut trial = spec.clone();
                    if slot < trial.rules.len() {
                        if trial.rules[slot].action != Act::Select {
                            continue;
                        }
                        trial.rules[slot].mask = smaller;
                    } else {
                        trial.default = smaller;
                    }
                    let v = self.total(&trial);
                    if v > score && best.is_none_or(|b| v > b.0) {
                        best = Some((v, smaller));
                    }
                }
                let Some((v, smaller)) = best else { break };
                let what = if slot < spec.rules.len() {
                    spec.rules[slot].mask = smaller;
                    spec.rules[slot].name.clone()
                } else {
                    spec.default = smaller;
                    "default".to_string()
                };
                notes.push(format!("{what}: {mask} -> {smaller} (+{:.3})", v - score));
                score = v;
            }
        }
        let gates = self.preview_gates(&[Feature::Tokens]);
        let mut pool: Vec<Cond> = Vec::new();
        for r in spec.rules.iter().filter(|r| r.action == Act::Select) {
            for g in &gates {
                if let Cond::Preview {
                    structure,
                    op: Cmp::Gt,
                    ..
                } = g
                {
                    if r.mask.contains(*structure) {
                        pool.push(match &r.cond {
                            Some(c) => Cond::and(c.clone(), g.clone()),
                            None => g.clone(),
                        });
                    }
                }
            }
        }
        pool.extend(
            gates
                .into_iter()
                .filter(|g| matches!(g, Cond::Preview { op: Cmp::Gt, .. })),
        );
        let (spec, more) = self.greedy(&spec, &pool, Insert::Front, params, "cost");
        notes.extend(more);
        (spec, notes)
    }

    /// The token budget (or none) that maximizes the train objective,
    /// among quantiles of the chosen masks' preview tokens.
    pub fn budget(&self, base: &PolicySpec, params: &Params) -> (PolicySpec, Vec<String>) {
        let mut none = base.clone();
        none.budget = None;
        let sim = Simulator::new(&none, self.table);
        let mut costs: Vec<f64> = self
            .idx
            .iter()
            .map(|&i| {
                let (m, _) = sim.run(self.table, i);
                m.iter()
                    .map(|s| self.table.feats[i].previews.get(s, Feature::Tokens))
                    .sum()
            })
            .collect();
        costs.sort_by(f64::total_cmp);
        let mut best = (self.total(base), base.budget);
        let base_score = best.0;
        let mut options: Vec<Option<f64>> = vec![None];
        for q in [0.5, 0.6, 0.7, 0.8, 0.9, 0.95] {
            if let Some(v) = costs.get(((costs.len() as f64 - 1.0) * q) as usize) {
                options.push(Some(v.round().max(1.0)));
            }
        }
        for b in options {
            let mut trial = base.clone();
            trial.budget = b;
            let v = self.total(&trial);
            if v > best.0 + params.min_gain * 0.5 {
                best = (v, b);
            }
        }
        let mut spec = base.clone();
        spec.budget = best.1;
        let notes = if spec.budget != base.budget {
            vec![format!(
                "budget {:?} -> {:?} (+{:.3})",
                base.budget,
                spec.budget,
                best.0 - base_score
            )]
        } else {
            Vec::new()
        };
        (spec, notes)
    }

    /// Robustness: removes, one at a time, each rule whose removal costs
    /// less than `min_gain` of train objective, then re-fits the masks.
    pub fn prune(&self, base: &PolicySpec, params: &Params) -> (PolicySpec, Vec<String>) {
        let mut spec = base.clone();
        let mut notes = Vec::new();
        let mut score = self.total(&spec);
        let mut r = 0;
        while r < spec.rules.len() {
            let mut trial = spec.clone();
            let removed = trial.rules.remove(r);
            let v = self.total(&trial);
            if v > score - params.min_gain {
                notes.push(format!("dropped {} ({:+.3})", removed.name, v - score));
                spec = trial;
                score = v;
            } else {
                r += 1;
            }
        }
        let (spec, more) = self.refit_masks(&spec);
        notes.extend(more);
        (spec, notes)
    }
}

/// Thresholds between neighbouring distinct sorted values at the 10th,
/// 25th, 50th, 75th and 90th percentiles, rounded to 4 significant digits
/// (and kept only if the rounding stays strictly between the neighbours).
pub fn thresholds(sorted_distinct: &[f64]) -> Vec<f64> {
    let n = sorted_distinct.len();
    if n < 2 {
        return Vec::new();
    }
    let mut out: Vec<f64> = Vec::new();
    for q in [0.1, 0.25, 0.5, 0.75, 0.9] {
        let j = (((n - 1) as f64) * q) as usize;
        let j = j.min(n - 2);
        let (a, b) = (sorted_distinct[j], sorted_distinct[j + 1]);
        let mid = (a + b) / 2.0;
        let rounded = round_sig(mid, 4);
        let t = if rounded > a && rounded < b {
            rounded
        } else {
            mid
        };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let mag = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits - 1 - mag);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::synthetic::{generate, SyntheticConfig};
    use crate::{write_sweep, Sweep, UtilityKind};

    /// Two words that gain alike: `alpha` in ten questions of two
    /// episodes, `beta` in ten questions of five. Only `beta` is mined.
    #[test]
    fn a_word_of_too_few_episodes_is_no_cue() {
        let mut records = generate(&SyntheticConfig {
            episodes: 12,
            questions_per_episode: 10,
            seed: 7,
            ..SyntheticConfig::default()
        });
        let t_only = Mask::subset_index(Mask::single(Structure::Temporal)).expect("T");
        for (n, r) in records.iter_mut().enumerate() {
            let (e, q) = (n / 10, n % 10);
            let word = match (e, q) {
                (0 | 1, 0..5) => Some("alpha"),
                (2..7, 0..2) => Some("beta"),
                _ => None,
            };
            r.labelled = true;
            r.tokens = [0.0; Mask::SUBSETS];
            r.utility = [0.5; Mask::SUBSETS];
            r.query = format!("what happened {}", word.unwrap_or("here"));
            if word.is_some() {
                r.utility[t_only] = 1.0;
            }
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.jsonl");
        write_sweep(&path, UtilityKind::EvidenceRecall, "d", "s", &records).expect("write");
        let sweep = Sweep::read(&path).expect("read");
        let problem = Problem::new(&sweep, 0.0, true).expect("problem");
        let table = FeatTable::new(&problem);
        let idx: Vec<usize> = (0..problem.questions.len()).collect();
        let fit = Fit {
            problem: &problem,
            table: &table,
            idx: &idx,
            rate: 0.0,
        };
        let base = PolicySpec::fixed("p", Mask::ALL);
        let pool = fit.mine_words(&base, false, None, Insert::Front, &Params::default());
        let mined: Vec<&String> = pool
            .iter()
            .filter_map(|c| match c {
                Cond::QueryHas { words } => Some(words),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(mined.iter().any(|w| *w == "beta"), "{mined:?}");
        assert!(!mined.iter().any(|w| *w == "alpha"), "{mined:?}");
    }
}
