//! S: the episode summary, the same for every question.
//!
//! The built-in [`ExtractiveSummarizer`] writes one candidate line per step,
//! anchored `[step N] action → observation line`, where the observation line
//! is the step's most informative line not already used (headers ending in
//! `:` are skipped). A line scores 3 for an error cue (error, exception,
//! failed, invalid, …), 2 for a result cue (result, rows, answer, success,
//! reward, …), 2 for a state-change cue (inventory, moved, opened, updated,
//! …), 0.5 for a number, and 1.5 when the action's verb or tool differs from
//! the previous step's (a subgoal change). Within the token budget
//! (`Config::summary_budget_tokens`, default 1,500 cl100k tokens, each line
//! counted with its line break):
//!
//! 1. the first and the last step are always kept;
//! 2. salient lines (score ≥ 3), most salient first, take up to 60% of the
//!    rest;
//! 3. the remainder is split evenly between turn-aligned segments (the R
//!    windows' width, without overlap), in order, each taking its best lines
//!    (score ≥ 1) and passing an unused share to the next.
//!
//! The kept lines are output in step order, after a `Task:` line and
//! before an `Outcome:` line when the outcome is known.
//!
//! Access: one item, the whole summary; its score is the fraction of the
//! question's content terms that occur in the summary; `hits` is the number
//! of summary lines that contain a question term.

use super::{Evidence, EvidenceItem, MemoryStructure, PluginError, Query, RetrieveError};
use crate::config::Config;
use crate::dataset::{Episode, Step};
use crate::text::{cut, intersects, term_hashes, words};
use crate::tokens::count_tokens;
use mesa_core::Structure;
use serde::{Deserialize, Serialize};

/// One line of a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryLine {
    /// The step it is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// The text (one line).
    pub text: String,
}

/// Writes an episode's summary.
pub trait Summarizer: Send + Sync {
    /// A name recorded in a store's manifest, e.g. `extractive-v1`.
    fn name(&self) -> String;
    /// The summary lines, in order, within about `budget_tokens` tokens.
    fn summarize(
        &self,
        episode: &Episode,
        budget_tokens: usize,
    ) -> Result<Vec<SummaryLine>, PluginError>;
    /// The state an append extends at the cost of its own steps, for a
    /// summarizer that selects from per-step [`Candidates`] as the
    /// extractive one does (and must then summarize as
    /// `Candidates::of(steps).select(..)`). `None`, the default, means the
    /// summary is only rewritten over the whole episode: between rewrites
    /// the live store keeps the last one and says how many steps it lacks.
    fn candidates(&self, steps: &[Step]) -> Option<Candidates> {
        let _ = steps;
        None
    }
}

/// The built-in extractive summarizer (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveSummarizer;

/// Steps scoring at least this are kept before the coverage pass.
const SALIENT: f64 = 3.0;

const ERROR_CUES: &[&str] = &[
    "error",
    "errors",
    "exception",
    "traceback",
    "failed",
    "fail",
    "fails",
    "failure",
    "invalid",
    "denied",
    "timeout",
    "cannot",
    "unable",
    "refused",
    "locked",
    "wrong",
    "missing",
];
const RESULT_CUES: &[&str] = &[
    "result",
    "results",
    "returned",
    "rows",
    "answer",
    "final",
    "success",
    "successfully",
    "succeeded",
    "passed",
    "completed",
    "done",
    "finished",
    "reward",
    "score",
    "found",
    "created",
    "saved",
    "status",
    "exit",
    "win",
    "won",
    "solved",
];
const STATE_CUES: &[&str] = &[
    "inventory",
    "now",
    "changed",
    "moved",
    "pick",
    "picked",
    "opened",
    "closed",
    "put",
    "took",
    "arrive",
    "became",
    "updated",
    "set",
    "level",
    "health",
    "position",
    "located",
    "added",
    "removed",
    "modified",
    "edited",
    "active",
];

fn cue_score(line: &str) -> f64 {
    let mut score: f64 = 0.0;
    let (mut e, mut r, mut s, mut digits) = (false, false, false, false);
    for w in words(line) {
        e |= ERROR_CUES.contains(&w.as_str());
        r |= RESULT_CUES.contains(&w.as_str());
        s |= STATE_CUES.contains(&w.as_str());
        digits |= w.bytes().any(|b| b.is_ascii_digit());
    }
    if e {
        score += 3.0;
    }
    if r {
        score += 2.0;
    }
    if s {
        score += 2.0;
    }
    if digits {
        score += 0.5;
    }
    score
}

/// The action's verb or tool: its first word, or the name before `(` / `:`.
pub(crate) fn action_kind(action: &str) -> String {
    let a = action.trim();
    let end = a
        .find(|c: char| c == '(' || c == ':' || c.is_whitespace())
        .unwrap_or(a.len());
    a[..end].to_ascii_lowercase()
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let (head, was_cut) = cut(&flat, max);
    if was_cut {
        format!("{head}…")
    } else {
        flat
    }
}

/// The most informative line of a step's observation, and its score.
fn best_line(step: &Step, seen: &std::collections::HashSet<String>) -> (String, f64) {
    let mut best = (String::new(), -1.0);
    for raw in step.observation.lines().take(200) {
        let line = one_line(raw, 160);
        if line.len() < 3 || line.ends_with(':') || seen.contains(&line) {
            continue;
        }
        let s = cue_score(&line);
        if s > best.1 {
            best = (line, s);
        }
    }
    if best.1 < 0.0 {
        (String::new(), 0.0)
    } else {
        best
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn name(&self) -> String {
        "extractive-v1".into()
    }

    fn summarize(
        &self,
        episode: &Episode,
        budget_tokens: usize,
    ) -> Result<Vec<SummaryLine>, PluginError> {
        Ok(Candidates::of(&episode.steps).select(episode, budget_tokens))
    }

    fn candidates(&self, steps: &[Step]) -> Option<Candidates> {
        Some(Candidates::of(steps))
    }
}

/// One step's candidate line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Candidate {
    step: usize,
    score: f64,
    text: String,
    /// Its tokens, plus one for its line break.
    cost: usize,
}

/// The extractive summarizer's candidate lines, one per step. A step's
/// line depends only on the steps before it (the observation lines already
/// used, the previous action's kind), so an append adds its own line and
/// reruns the selection, which reads only the kept scores and costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Candidates {
    lines: Vec<Candidate>,
    seen: std::collections::HashSet<String>,
    previous_kind: String,
}

impl Candidates {
    /// The candidates of `steps`.
    pub fn of(steps: &[Step]) -> Candidates {
        let mut c = Candidates::default();
        for s in steps {
            c.add(s);
        }
        c
    }

    /// Adds the next step's line.
    pub fn add(&mut self, step: &Step) {
        let kind = action_kind(&step.action);
        let (obs, mut score) = best_line(step, &self.seen);
        if kind != self.previous_kind {
            score += 1.5;
        }
        self.previous_kind = kind;
        let mut text = format!("[step {}] {}", step.index, one_line(&step.action, 100));
        if !obs.is_empty() {
            text.push_str(" → ");
            text.push_str(&obs);
            self.seen.insert(obs);
        }
        let cost = count_tokens(&text) + 1;
        self.lines.push(Candidate {
            step: step.index,
            score,
            text,
            cost,
        });
    }

    /// The summary lines within `budget_tokens` (see the module docs).
    pub fn select(&self, episode: &Episode, budget_tokens: usize) -> Vec<SummaryLine> {
        let candidates = &self.lines;
        let n = candidates.len();
        let mut head = vec![SummaryLine {
            step: None,
            text: format!("Task: {}", one_line(&episode.task, 300)),
        }];
        let tail: Vec<SummaryLine> = episode
            .outcome
            .iter()
            .map(|o| SummaryLine {
                step: None,
                text: format!("Outcome: {o}"),
            })
            .collect();
        let cost = |l: &SummaryLine| count_tokens(&l.text) + 1;
        let fixed: usize = head.iter().chain(&tail).map(cost).sum();
        let mut budget = budget_tokens.saturating_sub(fixed) as f64;
        // The first and the last step are always kept.
        let mut keep = vec![false; n];
        for p in [0, n.saturating_sub(1)] {
            if n > 0 && !keep[p] {
                keep[p] = true;
                budget -= candidates[p].cost as f64;
            }
        }
        let by_score = |a: &usize, b: &usize| {
            candidates[*b]
                .score
                .total_cmp(&candidates[*a].score)
                .then(a.cmp(b))
        };
        // Salient steps first (errors, results with state changes), with up
        // to 60% of the budget, most salient first.
        let mut salient: Vec<usize> = (0..n)
            .filter(|&p| !keep[p] && candidates[p].score >= SALIENT)
            .collect();
        salient.sort_by(by_score);
        let mut salient_budget = budget * 0.6;
        for p in salient {
            let c = candidates[p].cost as f64;
            if c <= salient_budget {
                keep[p] = true;
                salient_budget -= c;
                budget -= c;
            }
        }
        // Then coverage: the rest split evenly between segments, in order.
        let w = super::raw::window_width(n);
        let segments = n.div_ceil(w).max(1);
        let share = budget / segments as f64;
        let mut carry = 0.0;
        for seg in 0..segments {
            let range = seg * w..((seg + 1) * w).min(n);
            let mut allowance = share + carry;
            let mut order: Vec<usize> = range.filter(|&p| !keep[p]).collect();
            order.sort_by(by_score);
            for p in order {
                if candidates[p].score < 1.0 {
                    break;
                }
                let c = candidates[p].cost as f64;
                if c <= allowance.min(budget) {
                    keep[p] = true;
                    allowance -= c;
                    budget -= c;
                }
            }
            carry = allowance.max(0.0);
        }
        head.extend(
            candidates
                .iter()
                .zip(keep)
                .filter(|(_, k)| *k)
                .map(|(c, _)| SummaryLine {
                    step: Some(c.step),
                    text: c.text.clone(),
                }),
        );
        head.extend(tail);
        head
    }
}

/// The summary of one episode. Two summaries are equal when everything
/// but their kept per-line token counts is (an opened summary has none
/// until its first append).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Persisted as plain pairs (a line's JSON form leaves out a missing
    /// step, which a compact binary form cannot read back).
    #[serde(with = "plain_lines")]
    lines: Vec<SummaryLine>,
    text: String,
    tokens: usize,
    terms: Vec<u64>,
    line_terms: Vec<Vec<u64>>,
    steps: Vec<usize>,
    /// The extractive summarizer's per-step lines, kept for appends.
    candidates: Option<Candidates>,
    /// Steps appended since the summary was written that it does not cover.
    stale: usize,
    /// Per line, the tokens of the line followed by a line break (empty
    /// when a line holds a line break itself); kept so that an append
    /// tokenizes only its new lines. Not persisted: an opened summary
    /// counts them again on its first append.
    #[serde(skip)]
    line_tokens: Vec<usize>,
}

impl PartialEq for Summary {
    fn eq(&self, other: &Summary) -> bool {
        (
            &self.lines,
            &self.text,
            self.tokens,
            &self.terms,
            &self.line_terms,
            &self.steps,
            &self.candidates,
            self.stale,
        ) == (
            &other.lines,
            &other.text,
            other.tokens,
            &other.terms,
            &other.line_terms,
            &other.steps,
            &other.candidates,
            other.stale,
        )
    }
}

/// [`SummaryLine`]s as `(step, text)` pairs.
mod plain_lines {
    use super::SummaryLine;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(lines: &[SummaryLine], s: S) -> Result<S::Ok, S::Error> {
        let pairs: Vec<(Option<usize>, &str)> =
            lines.iter().map(|l| (l.step, l.text.as_str())).collect();
        pairs.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<SummaryLine>, D::Error> {
        let pairs = Vec::<(Option<usize>, String)>::deserialize(d)?;
        Ok(pairs
            .into_iter()
            .map(|(step, text)| SummaryLine { step, text })
            .collect())
    }
}

impl Summary {
    /// Summarizes an episode.
    pub fn build(
        episode: &Episode,
        summarizer: &dyn Summarizer,
        config: &Config,
    ) -> Result<Summary, PluginError> {
        let candidates = summarizer.candidates(&episode.steps);
        let lines = match &candidates {
            Some(c) => c.select(episode, config.summary_budget_tokens),
            None => summarizer.summarize(episode, config.summary_budget_tokens)?,
        };
        let mut summary = Summary::assemble(lines, None);
        summary.candidates = candidates;
        Ok(summary)
    }

    /// Takes in steps appended to `episode` (already in it, last): with
    /// kept candidates, their lines are added and the selection rerun (the
    /// same summary as [`Summary::build`] over the whole episode); else the
    /// summary is kept as it is and counted stale by their number.
    pub(super) fn extend(&mut self, episode: &Episode, new: &[Step], config: &Config) {
        let Some(mut candidates) = self.candidates.take() else {
            self.stale += new.len();
            return;
        };
        for s in new {
            candidates.add(s);
        }
        let lines = candidates.select(episode, config.summary_budget_tokens);
        *self = Summary::assemble(lines, Some(self));
        self.candidates = Some(candidates);
    }

    /// Steps appended since the summary was written that it does not cover
    /// (0 for the extractive summarizer, which keeps up with every append).
    pub fn stale(&self) -> usize {
        self.stale
    }

    /// A summary from stored lines and their token count.
    pub fn from_parts(lines: Vec<SummaryLine>, tokens: usize) -> Summary {
        let line_terms = lines.iter().map(|l| term_hashes(&l.text)).collect();
        let text = join(&lines);
        Summary::with_terms(lines, text, line_terms, tokens, Vec::new())
    }

    /// A summary of `lines`, reusing `old`'s terms and token counts for the
    /// lines it shares with it (by text). The tokens are those of the
    /// joined text. When every line has a visible character and none holds
    /// a line break, cl100k's pre-tokenizer ends a piece at each single
    /// break between two lines, so they are each line's with its break,
    /// plus the last line's (a test checks this against the joined text on
    /// AMA-Bench); otherwise (consecutive breaks make one piece) the joined
    /// text is counted.
    fn assemble(lines: Vec<SummaryLine>, old: Option<&Summary>) -> Summary {
        let mut cached: std::collections::HashMap<&str, (&Vec<u64>, Option<usize>)> =
            Default::default();
        if let Some(old) = old {
            for (i, (l, t)) in old.lines.iter().zip(&old.line_terms).enumerate() {
                cached.insert(&l.text, (t, old.line_tokens.get(i).copied()));
            }
        }
        let by_line = !lines
            .iter()
            .any(|l| l.text.contains(['\n', '\r']) || l.text.trim().is_empty());
        let (mut line_terms, mut line_tokens) = (Vec::new(), Vec::new());
        for l in &lines {
            let hit = cached.get(l.text.as_str());
            line_terms.push(hit.map_or_else(|| term_hashes(&l.text), |c| c.0.clone()));
            if by_line {
                let n = hit.and_then(|c| c.1);
                line_tokens.push(n.unwrap_or_else(|| count_tokens(&format!("{}\n", l.text))));
            }
        }
        let text = join(&lines);
        let tokens = match lines.last() {
            Some(last) if by_line => {
                let before: usize = line_tokens[..line_tokens.len() - 1].iter().sum();
                before + count_tokens(&last.text)
            }
            _ => count_tokens(&text),
        };
        Summary::with_terms(lines, text, line_terms, tokens, line_tokens)
    }

    fn with_terms(
        lines: Vec<SummaryLine>,
        text: String,
        line_terms: Vec<Vec<u64>>,
        tokens: usize,
        line_tokens: Vec<usize>,
    ) -> Summary {
        // The text's terms are its lines' (no word spans a line break).
        let mut terms: Vec<u64> = line_terms.iter().flatten().copied().collect();
        terms.sort_unstable();
        terms.dedup();
        let mut steps: Vec<usize> = lines.iter().filter_map(|l| l.step).collect();
        steps.sort_unstable();
        steps.dedup();
        Summary {
            lines,
            text,
            tokens,
            terms,
            line_terms,
            steps,
            candidates: None,
            stale: 0,
            line_tokens,
        }
    }

    /// The lines.
    pub fn lines(&self) -> &[SummaryLine] {
        &self.lines
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its tokens.
    pub fn tokens(&self) -> usize {
        self.tokens
    }
}

fn join(lines: &[SummaryLine]) -> String {
    lines
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

impl MemoryStructure for Summary {
    fn structure(&self) -> Structure {
        Structure::Summary
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        if self.lines.is_empty() {
            return Ok(Evidence::empty(Structure::Summary));
        }
        let q = query.terms();
        let score = if q.is_empty() {
            0.0
        } else {
            q.iter()
                .filter(|t| self.terms.binary_search(t).is_ok())
                .count() as f64
                / q.len() as f64
        };
        let hits = self.line_terms.iter().filter(|l| intersects(q, l)).count();
        Ok(Evidence {
            structure: Structure::Summary,
            items: vec![EvidenceItem {
                structure: Structure::Summary,
                steps: self.steps.clone(),
                score,
                text: self.text.clone(),
                tokens: self.tokens,
            }],
            hits,
            stale: self.stale,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{game_episode, sql_episode};
    use super::*;

    #[test]
    fn keeps_errors_results_and_anchors() {
        let e = sql_episode();
        let s = Summary::build(&e, &ExtractiveSummarizer, &Config::default()).unwrap();
        let text = s.text();
        assert!(text.starts_with("Task: Find the average interest rate in 2020"));
        assert!(text.contains("[step 2] execute_sql: SELECT name, total_assets FROM FINANCE.BANKS LIMIT 5 → Error: invalid identifier 'TOTAL_ASSETS'"), "{text}");
        assert!(text.contains("[step 0]") && text.contains("[step 6]"));
        assert!(text.ends_with("Outcome: success"));
        assert_eq!(s.tokens(), count_tokens(text));
        let a = s
            .retrieve(&Query::new("Which identifier was invalid?"))
            .unwrap();
        let b = s
            .retrieve(&Query::new("What was the final answer?"))
            .unwrap();
        assert_eq!(a.items[0].text, b.items[0].text);
        assert!(a.items[0].score > 0.0 && a.hits >= 1);
        assert!(a.items[0].steps.contains(&2));
    }

    /// The summary's tokens, counted line by line and reused across
    /// appends, are the joined text's: for every AMA-Bench episode, and for
    /// each step of three of them appended one at a time.
    #[test]
    fn line_by_line_tokens_are_the_joined_texts() {
        let Some(loaded) = crate::testing::ama() else {
            return;
        };
        let config = Config::default();
        for e in &loaded.episodes {
            let s = Summary::build(e, &ExtractiveSummarizer, &config).unwrap();
            assert_eq!(s.tokens(), count_tokens(s.text()), "episode {}", e.id);
        }
        for e in loaded.episodes.iter().step_by(70) {
            let mut grown = e.clone();
            grown.steps.clear();
            let mut s = Summary::build(&grown, &ExtractiveSummarizer, &config).unwrap();
            for step in &e.steps {
                grown.steps.push(step.clone());
                s.extend(&grown, std::slice::from_ref(step), &config);
                assert_eq!(
                    s.tokens(),
                    count_tokens(s.text()),
                    "{} at {}",
                    e.id,
                    step.index
                );
            }
            let batch = Summary::build(e, &ExtractiveSummarizer, &config).unwrap();
            assert_eq!((s.text(), s.tokens()), (batch.text(), batch.tokens()));
        }
    }

    /// Blank lines (a summarizer's, not the extractive one's) make
    /// consecutive line breaks, which cl100k counts as one piece: the
    /// joined text is counted then.
    #[test]
    fn blank_lines_are_counted_in_the_joined_text() {
        let line = |t: &str| SummaryLine {
            step: None,
            text: t.into(),
        };
        let lines = vec![line("A."), line(""), line("  "), line("B")];
        let joined = count_tokens(&join(&lines));
        assert_eq!(Summary::assemble(lines, None).tokens(), joined);
    }

    #[test]
    fn stays_within_budget() {
        let e = game_episode(500);
        let c = Config {
            summary_budget_tokens: 300,
            ..Config::default()
        };
        let s = Summary::build(&e, &ExtractiveSummarizer, &c).unwrap();
        assert!(s.tokens() <= 300, "{}", s.tokens());
        assert!(s.text().contains("[step 0]"));
        assert!(s.text().contains("[step 499]"));
        assert!(s.text().contains("[step 20]"), "{}", s.text());
        assert!(s.text().contains("[step 10]"), "{}", s.text());
    }
}
