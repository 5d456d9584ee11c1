//! The reference interpreter: the meaning of a checked program.
//!
//! Evaluation (docs/LANGUAGE.md, "Evaluation"):
//! 1. The mask starts as `default`. Rules run top to bottom; a rule whose
//!    condition holds *fires*: `select M` sets the mask and stops, `add M`
//!    and `remove M` change it and go on.
//! 2. With a `trade`, the mask becomes its non-empty subset with the best
//!    share of what all five show less the price times its share of all
//!    five's tokens ([`trade`]).
//! 3. With a `budget`, structures are dropped, costliest `preview.K.tokens`
//!    first (ties: the later structure in S T G V R order), until the total
//!    fits, never below one structure.
//! 4. An empty mask becomes the fallback.
//!
//! The deciding rule is the `select` that stopped evaluation or, without one,
//! the last rule that changed the mask.

mod explain;

pub use explain::explain;
pub use mesa_core::input::{
    apply_preview_assignment, apply_shown, parse_json_line, Input, InputError, Previews,
};

use crate::cues;
use crate::ir::{BoolExpr, Feature, MaskExpr, NumExpr, Program};
use aho_corasick::AhoCorasick;
use mesa_core::{Mask, Structure};
use mesa_grammar::ast::{ActionKind, MetaField, Subject};
use serde::Serialize;

/// One step of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A rule was evaluated.
    Rule {
        /// Its index in the program.
        index: usize,
        /// Whether its condition held.
        fired: bool,
        /// The mask before it.
        before: Mask,
        /// The mask after it.
        after: Mask,
    },
    /// The budget dropped one structure.
    Budget {
        /// The structure dropped.
        dropped: Structure,
        /// Its estimated tokens.
        #[serde(serialize_with = "number_or_word")]
        tokens: f64,
        /// The estimate of the whole mask before dropping it (it can be
        /// infinite when previews are huge: JSON shows `"inf"`).
        #[serde(serialize_with = "number_or_word")]
        estimate: f64,
    },
    /// The trade kept a subset of the mask.
    Trade {
        /// The mask the rules chose.
        before: Mask,
        /// The subset kept.
        after: Mask,
    },
    /// The mask was empty and became the fallback.
    Fallback {
        /// The fallback mask.
        mask: Mask,
    },
}

/// Writes a finite number as a JSON number and any other as a string
/// (`"inf"`, `"-inf"`, `"NaN"`): JSON has no infinities, and `null` would
/// read as "absent".
fn number_or_word<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_str(&v.to_string())
    }
}

/// Every step of one evaluation, in order.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Trace {
    /// The starting (default) mask.
    pub start: Mask,
    /// The steps.
    pub steps: Vec<Step>,
}

/// The result of selecting for one input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The selected structures (never empty).
    pub mask: Mask,
    /// The deciding rule's index, if a rule decided.
    pub rule: Option<usize>,
    /// What happened, step by step.
    pub trace: Trace,
}

/// A checked program made ready to evaluate: all keywords in one
/// Aho-Corasick automaton, all patterns compiled.
#[derive(Debug, Clone)]
pub struct Selector {
    program: Program,
    automaton: Option<AhoCorasick>,
    /// The distinct keywords, numbered as in the automaton.
    keywords: Vec<String>,
    /// For each distinct keyword, the sets that contain it.
    keyword_sets_of: Vec<Vec<u32>>,
    regexes: Vec<regex::bytes::Regex>,
}

/// Why a program could not be made ready (only possible for programs not
/// produced by the checker, which validates the same things).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// A pattern failed to compile.
    #[error("pattern `{name}` does not compile: {source}")]
    Pattern {
        /// The pattern's name.
        name: String,
        /// The regex error.
        #[source]
        source: regex::Error,
    },
    /// The keyword automaton failed to build.
    #[error("keyword automaton: {0}")]
    Keywords(#[source] aho_corasick::BuildError),
}

impl Selector {
    /// Prepares a checked program for evaluation.
    pub fn new(program: Program) -> Result<Selector, SelectorError> {
        let (keywords, keyword_sets_of) = program.distinct_keywords();
        let automaton = if keywords.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                    .build(&keywords)
                    .or_else(|_| AhoCorasick::new(&keywords))
                    .map_err(SelectorError::Keywords)?,
            )
        };
        let regexes = program
            .patterns
            .iter()
            .map(|p| {
                cues::build_regex(&p.source).map_err(|source| SelectorError::Pattern {
                    name: p.name.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Selector {
            program,
            automaton,
            keywords,
            keyword_sets_of,
            regexes,
        })
    }

    /// Which distinct keywords occur in `text` under the matching rules of
    /// [`crate::cues`], in one pass over its normalized form.
    fn found_keywords(&self, text: &str) -> Vec<bool> {
        let mut found = vec![false; self.keywords.len()];
        let Some(ac) = &self.automaton else {
            return found;
        };
        let mut norm = Vec::with_capacity(text.len());
        cues::normalize_into(text.as_bytes(), &mut norm);
        for m in ac.find_overlapping_iter(&norm) {
            let k = m.pattern().as_usize();
            if !found[k] && cues::at_word_boundaries(&norm, m.start(), m.end()) {
                found[k] = true;
            }
        }
        found
    }

    /// The program being evaluated.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Selects for one input, with the full trace.
    pub fn select(&self, input: &Input) -> Outcome {
        let mut trace = Trace::default();
        let (mask, rule) = self.run(input, Some(&mut trace));
        Outcome { mask, rule, trace }
    }

    /// Selects for one input: the mask and the deciding rule, without a trace.
    pub fn select_mask(&self, input: &Input) -> (Mask, Option<usize>) {
        self.run(input, None)
    }

    fn run(&self, input: &Input, mut trace: Option<&mut Trace>) -> (Mask, Option<usize>) {
        let p = &self.program;
        let mut ev = Eval::new(self, input);
        ev.mask = p.default;
        if let Some(t) = trace.as_deref_mut() {
            t.start = p.default;
        }
        let mut decided: Option<usize> = None;
        for (index, rule) in p.rules.iter().enumerate() {
            let before = ev.mask;
            let fired = ev.boolean(&rule.cond);
            if fired {
                let m = ev.mask_value(&rule.mask);
                ev.mask = match rule.action {
                    ActionKind::Select => m,
                    ActionKind::Add => before.union(m),
                    ActionKind::Remove => before.without(m),
                };
            }
            if let Some(t) = trace.as_deref_mut() {
                t.steps.push(Step::Rule {
                    index,
                    fired,
                    before,
                    after: ev.mask,
                });
            }
            if fired && rule.action == ActionKind::Select {
                decided = Some(index);
                break;
            }
            if fired && ev.mask != before {
                decided = Some(index);
            }
        }
        if let Some(t) = p.trade {
            let before = ev.mask;
            ev.mask = trade(before, t, &input.previews);
            if let Some(tr) = trace.as_deref_mut() {
                tr.steps.push(Step::Trade {
                    before,
                    after: ev.mask,
                });
            }
        }
        if let Some(budget) = p.budget {
            let tokens = |s: Structure| input.previews.get(s, Feature::Tokens);
            // Sums start from +0.0 and add in S T G V R order (the Wasm
            // backend adds in the same order).
            let estimate_of = |m: Mask| m.iter().map(tokens).fold(0.0, |a, b| a + b);
            let mut estimate = estimate_of(ev.mask);
            while ev.mask.len() > 1 && estimate > budget {
                // Costliest first; on a tie the later structure goes first.
                let mut drop = None;
                for s in ev.mask.iter() {
                    if drop.is_none_or(|d: Structure| tokens(s) >= tokens(d)) {
                        drop = Some(s);
                    }
                }
                let Some(s) = drop else { break };
                if let Some(t) = trace.as_deref_mut() {
                    t.steps.push(Step::Budget {
                        dropped: s,
                        tokens: tokens(s),
                        estimate,
                    });
                }
                ev.mask = ev.mask.without(Mask::single(s));
                estimate = estimate_of(ev.mask);
            }
        }
        if ev.mask.is_empty() {
            ev.mask = p.fallback;
            if let Some(t) = trace {
                t.steps.push(Step::Fallback { mask: p.fallback });
            }
        }
        (ev.mask, decided)
    }
}

/// The subset of `mask` a trade keeps (see [`crate::ir::Trade`]): the
/// non-empty `m ⊆ mask` with the highest `shown(m) / shown(all) - (price *
/// tokens(m)) / tokens(all)`, where `tokens` sums `preview.K.tokens` in S T
/// G V R order from +0.0. Subsets are tried in increasing bits and one
/// replaces the best so far only when its value is higher, or equal with
/// fewer tokens. The mask is kept as it is when it is empty or when all
/// five show nothing or cost nothing (neither total is above 0). The Wasm
/// backend computes the same values in the same order.
pub fn trade(mask: Mask, t: crate::ir::Trade, previews: &Previews) -> Mask {
    let sum = |m: Mask| {
        m.iter()
            .map(|s| previews.get(s, Feature::Tokens))
            .fold(0.0, |a, b| a + b)
    };
    let (all_shown, all_tokens) = (previews.shown_value(t.unit, Mask::ALL), sum(Mask::ALL));
    if !(all_shown > 0.0 && all_tokens > 0.0) {
        return mask;
    }
    let mut best: Option<(Mask, f64, f64)> = None;
    for m in Mask::subsets().filter(|m| m.without(mask).is_empty()) {
        let tokens = sum(m);
        let value = previews.shown_value(t.unit, m) / all_shown - t.price * tokens / all_tokens;
        if best.is_none_or(|(_, v, c)| value > v || (value == v && tokens < c)) {
            best = Some((m, value, tokens));
        }
    }
    best.map_or(mask, |(m, _, _)| m)
}

/// Per-input evaluation state: cue results are computed once, on first use.
struct Eval<'a> {
    sel: &'a Selector,
    input: &'a Input,
    mask: Mask,
    /// Per subject (query, task): per set, distinct keywords found; None until scanned.
    set_hits: [Option<Vec<u32>>; 2],
    /// Per subject: per pattern, 0 = unknown, 1 = no match, 2 = match.
    pattern_memo: [Vec<u8>; 2],
}

fn subject_index(s: Subject) -> usize {
    match s {
        Subject::Query => 0,
        Subject::Task => 1,
    }
}

impl<'a> Eval<'a> {
    fn new(sel: &'a Selector, input: &'a Input) -> Self {
        let n = sel.regexes.len();
        Eval {
            sel,
            input,
            mask: Mask::EMPTY,
            set_hits: [None, None],
            pattern_memo: [vec![0; n], vec![0; n]],
        }
    }

    fn text(&self, s: Subject) -> Option<&'a str> {
        match s {
            Subject::Query => Some(self.input.query.as_str()),
            Subject::Task => self.input.task.as_deref(),
        }
    }

    fn hits(&mut self, s: Subject, set: usize) -> u32 {
        let si = subject_index(s);
        if self.set_hits[si].is_none() {
            self.set_hits[si] = Some(self.scan(s));
        }
        self.set_hits[si].as_ref().map_or(0, |h| h[set])
    }

    /// Per set, how many of its distinct keywords occur in the subject.
    fn scan(&self, s: Subject) -> Vec<u32> {
        let mut counts = vec![0u32; self.sel.program.keyword_sets.len()];
        let Some(text) = self.text(s) else {
            return counts;
        };
        let found = self.sel.found_keywords(text);
        for (k, _) in found.iter().enumerate().filter(|(_, f)| **f) {
            for &set in &self.sel.keyword_sets_of[k] {
                counts[set as usize] += 1;
            }
        }
        counts
    }

    fn matches(&mut self, s: Subject, pattern: usize) -> bool {
        let si = subject_index(s);
        match self.pattern_memo[si][pattern] {
            1 => false,
            2 => true,
            _ => {
                let hit = self
                    .text(s)
                    .is_some_and(|t| self.sel.regexes[pattern].is_match(t.as_bytes()));
                self.pattern_memo[si][pattern] = if hit { 2 } else { 1 };
                hit
            }
        }
    }

    fn boolean(&mut self, e: &BoolExpr) -> bool {
        match e {
            BoolExpr::Const(b) => *b,
            BoolExpr::Has(s, set) => self.hits(*s, *set) > 0,
            BoolExpr::Matches(s, p) => self.matches(*s, *p),
            BoolExpr::MetaIn(field, values) => {
                let v = match field {
                    MetaField::Domain => self.input.domain.as_deref(),
                    MetaField::Qtype => self.input.qtype.as_deref(),
                };
                v.is_some_and(|v| values.iter().any(|x| x.eq_ignore_ascii_case(v)))
            }
            BoolExpr::Cmp(op, a, b) => {
                let (a, b) = (self.num(a), self.num(b));
                op.apply(a, b)
            }
            BoolExpr::And(v) => v.iter().all(|x| self.boolean(x)),
            BoolExpr::Or(v) => v.iter().any(|x| self.boolean(x)),
            BoolExpr::Not(x) => !self.boolean(x),
            BoolExpr::If(c, a, b) => {
                if self.boolean(c) {
                    self.boolean(a)
                } else {
                    self.boolean(b)
                }
            }
        }
    }

    fn num(&mut self, e: &NumExpr) -> f64 {
        match e {
            NumExpr::Const(v) => *v,
            NumExpr::Preview(s, f) => self.input.previews.get(*s, *f),
            NumExpr::WordCount(s) => {
                self.text(*s).map_or(0, |t| cues::word_count(t.as_bytes())) as f64
            }
            NumExpr::Hits(s, set) => f64::from(self.hits(*s, *set)),
            NumExpr::Size => f64::from(self.mask.len()),
            NumExpr::Neg(a) => -self.num(a),
            NumExpr::Add(a, b) => self.num(a) + self.num(b),
            NumExpr::Sub(a, b) => self.num(a) - self.num(b),
            NumExpr::Mul(a, b) => self.num(a) * self.num(b),
            NumExpr::Div(a, b) => {
                let (a, b) = (self.num(a), self.num(b));
                if b == 0.0 {
                    0.0
                } else {
                    a / b
                }
            }
            NumExpr::Min(v) => self.fold(v, |x, acc| x < acc),
            NumExpr::Max(v) => self.fold(v, |x, acc| x > acc),
            NumExpr::If(c, a, b) => {
                if self.boolean(c) {
                    self.num(a)
                } else {
                    self.num(b)
                }
            }
        }
    }

    /// min/max: start from the first argument and take each later one that
    /// `better` prefers (so a NaN never replaces a number).
    fn fold(&mut self, v: &[NumExpr], better: fn(f64, f64) -> bool) -> f64 {
        let mut acc = f64::NAN;
        for (i, x) in v.iter().enumerate() {
            let x = self.num(x);
            if i == 0 || better(x, acc) {
                acc = x;
            }
        }
        acc
    }

    fn mask_value(&mut self, m: &MaskExpr) -> Mask {
        match m {
            MaskExpr::Const(m) => *m,
            MaskExpr::Top { k, above } => {
                let threshold = above.as_ref().map(|a| self.num(a));
                let mut scores = [f64::NAN; 5];
                for s in Structure::ALL {
                    let score = match &self.sel.program.scores[s.index()] {
                        Some(e) => self.num(e),
                        None => self.input.previews.get(s, Feature::Top),
                    };
                    // NaN scores and scores not strictly above the threshold
                    // are never chosen.
                    if threshold.is_none_or(|t| score > t) {
                        scores[s.index()] = score;
                    }
                }
                // Pick the highest remaining score k times; on a tie the
                // earlier structure (S T G V R order) wins.
                let mut chosen = Mask::EMPTY;
                for _ in 0..*k {
                    let mut best: Option<Structure> = None;
                    for s in Structure::ALL {
                        let v = scores[s.index()];
                        if !chosen.contains(s)
                            && !v.is_nan()
                            && best.is_none_or(|b| v > scores[b.index()])
                        {
                            best = Some(s);
                        }
                    }
                    match best {
                        Some(s) => chosen = chosen.with(s),
                        None => break,
                    }
                }
                chosen
            }
        }
    }
}

#[cfg(test)]
mod tests;

impl mesa_core::Engine for Selector {
    type Error = std::convert::Infallible;

    fn select(&mut self, input: &Input) -> Result<mesa_core::Selection, Self::Error> {
        let (mask, rule) = self.select_mask(input);
        Ok(mesa_core::Selection { mask, rule })
    }

    fn rule_names(&self) -> Vec<String> {
        self.program.rules.iter().map(|r| r.name.clone()).collect()
    }

    fn previews(&self) -> Vec<mesa_core::PreviewKey> {
        self.program.features.previews.clone()
    }

    fn shown(&self) -> Option<mesa_core::Shown> {
        self.program.features.shown
    }
}
