//! R: raw episodic windows ranked with BM25.
//!
//! An episode of L steps is cut into overlapping windows of
//! `w = clip(ceil(L / 12), 3, 16)` steps, overlapping by `round(0.25 w)`,
//! so the stride is `w - overlap`; the last window ends at the last step.
//! Each window's text is `[steps a-b]` followed by its steps' evidence
//! texts, one per line; that text is indexed and shown.
//!
//! Access: the question's terms (tantivy's default tokenizer, stopwords
//! removed) as a disjunction; the top 3 windows with a positive BM25 score
//! (k1 = 1.2, b = 0.75), best first; if none scores above 0, the last window
//! (where the outcome usually is) with score 0. The score is normalized by
//! the BM25 upper bound of the question's terms that occur in the episode,
//! `sum(idf(t) * (k1 + 1))`. `hits` = windows with a positive score (at most 3).
//!
//! Layout: one small BM25 index per episode ([`bm25`]), in memory, derived
//! from the steps (a store keeps the windows and rebuilds the postings when
//! it opens an episode; the live store derives them from its step rows).
//! BM25 statistics (document count, document frequencies, average length)
//! are the episode's own, since windows are ranked within one trajectory.
//! The index scores as tantivy does and uses tantivy's analyzer; it is not a
//! tantivy index because an append replaces the tail window, and tantivy
//! counts a replaced document in its statistics until a merge, so a live
//! index would rank differently from a batch-built one. Appending a step
//! re-indexes only the windows whose range changed: the last one (extended)
//! or a new one, or every window when `w` changes (only while L <= 192).

mod bm25;
#[cfg(test)]
mod reference;

use super::{Evidence, EvidenceItem, MemoryStructure, Query, RetrieveError, StepTexts};
use crate::config::Config;
use crate::text::is_stopword;
use crate::tokens::count_tokens;
use bm25::Bm25;
use mesa_core::Structure;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// BM25's k1 (tantivy's).
const K1: f64 = 1.2;

/// One window: step positions `start..end` and its text's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// First step position.
    pub start: usize,
    /// One past the last step position.
    pub end: usize,
    /// Tokens of the window's text.
    pub tokens: usize,
}

/// The window width for an episode of `len` steps.
pub fn window_width(len: usize) -> usize {
    len.div_ceil(12).clamp(3, 16)
}

/// Whether `ws` are the windows of an episode of `len` steps (those of
/// [`windows`]), as a reopened state's must be.
pub(crate) fn tiles(ws: &[Window], len: usize) -> bool {
    ws.iter().map(|w| (w.start, w.end)).eq(windows(len))
}

/// The windows (as position ranges) of an episode of `len` steps.
pub fn windows(len: usize) -> Vec<(usize, usize)> {
    let w = window_width(len);
    let overlap = ((w as f64) * 0.25).round() as usize;
    let stride = (w - overlap).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < len {
        let end = (start + w).min(len);
        out.push((start, end));
        if end == len {
            break;
        }
        start += stride;
    }
    out
}

fn window_header(steps: &StepTexts, start: usize, end: usize) -> String {
    format!(
        "[steps {}-{}]",
        steps.indices[start],
        steps.indices[end - 1]
    )
}

fn window_text(steps: &StepTexts, start: usize, end: usize) -> String {
    let mut text = window_header(steps, start, end);
    for t in (start..end).map(|p| steps.text(p)) {
        text.push('\n');
        text.push_str(t);
    }
    text
}

/// The raw windows of one episode and their BM25 index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    /// Not kept in a persisted state: the memory's own rendering.
    #[serde(skip)]
    pub(in crate::structures) steps: Arc<StepTexts>,
    windows: Vec<Window>,
    index: Bm25,
    top_k: usize,
}

/// R's stored windows do not match the episode.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The stored windows are not the episode's.
    #[error("{0}")]
    Corrupt(String),
}

impl Raw {
    /// Cuts the windows and indexes them.
    pub fn build(steps: Arc<StepTexts>, config: &Config) -> Raw {
        let mut raw = Raw {
            steps: Arc::new(StepTexts::default()),
            windows: Vec::new(),
            index: Bm25::default(),
            top_k: config.raw_top_k,
        };
        raw.extend(steps);
        raw
    }

    /// Indexes stored windows, which must be the windows of the steps.
    pub fn open(
        steps: Arc<StepTexts>,
        windows: Vec<Window>,
        config: &Config,
    ) -> Result<Raw, IndexError> {
        let raw = Raw::build(steps, config);
        if raw.windows != windows {
            return Err(IndexError::Corrupt(format!(
                "{} stored windows are not the {} windows of the episode's {} steps",
                windows.len(),
                raw.windows.len(),
                raw.steps.len()
            )));
        }
        Ok(raw)
    }

    /// Takes in the steps as they are now (`steps`: the earlier ones, then
    /// appended ones): the windows whose range changed are re-indexed (the
    /// tail, or every window when the width changes), giving the same
    /// windows and index as [`Raw::build`] over all the steps.
    pub(in crate::structures) fn extend(&mut self, steps: Arc<StepTexts>) {
        let want = windows(steps.len());
        // The steps before: the last window ends at the last step.
        let before = self.windows.last().map_or(0, |w| w.end);
        let keep = if window_width(steps.len()) == window_width(before) {
            self.windows
                .iter()
                .zip(&want)
                .take_while(|(have, w)| (have.start, have.end) == **w)
                .count()
        } else {
            0
        };
        self.windows.truncate(keep);
        self.index.truncate(keep);
        for &(start, end) in &want[keep..] {
            let tokens = count_tokens(&window_header(&steps, start, end))
                + steps.tokens[start..end]
                    .iter()
                    .map(|t| *t as usize + 1)
                    .sum::<usize>();
            self.windows.push(Window { start, end, tokens });
            self.index.push(&window_text(&steps, start, end));
        }
        self.steps = steps;
    }

    /// The windows.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    fn item(&self, i: usize, score: f64) -> EvidenceItem {
        let w = self.windows[i];
        EvidenceItem {
            structure: Structure::Raw,
            steps: self.steps.indices[w.start..w.end].to_vec(),
            score,
            text: window_text(&self.steps, w.start, w.end),
            tokens: w.tokens,
        }
    }

    /// The question's distinct terms that are not stopwords, in order.
    fn terms(query: &Query) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        for t in bm25::tokens(query.text()) {
            if !is_stopword(&t) && !words.contains(&t) {
                words.push(t);
            }
        }
        words
    }

    /// Window numbers and (raw BM25, normalized) scores, best first.
    pub fn search(&self, query: &Query) -> Vec<(usize, f64, f64)> {
        let n = self.index.len() as f64;
        let mut bound = 0.0;
        let mut terms = Vec::new();
        for w in Raw::terms(query) {
            let df = self.index.doc_freq(&w) as f64;
            if df == 0.0 {
                continue;
            }
            bound += (1.0 + (n - df + 0.5) / (df + 0.5)).ln() * (K1 + 1.0);
            terms.push(w);
        }
        let mut top: Vec<(u32, f32)> = self.index.scores(&terms).into_iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(self.top_k);
        top.into_iter()
            .map(|(i, score)| (i as usize, f64::from(score)))
            .filter(|(_, raw)| *raw > 0.0)
            .map(|(i, raw)| (i, raw, (raw / bound).clamp(0.0, 1.0)))
            .collect()
    }
}

impl MemoryStructure for Raw {
    fn structure(&self) -> Structure {
        Structure::Raw
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        let found = self.search(query);
        let hits = found.len();
        let items = if found.is_empty() {
            match self.windows.len() {
                0 => Vec::new(),
                n => vec![self.item(n - 1, 0.0)],
            }
        } else {
            found.into_iter().map(|(i, _, s)| self.item(i, s)).collect()
        };
        Ok(Evidence {
            structure: Structure::Raw,
            items,
            hits,
            stale: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{game_episode, sql_episode};
    use super::*;

    #[test]
    fn window_parameters() {
        assert_eq!(window_width(1), 3);
        assert_eq!(window_width(40), 4);
        assert_eq!(window_width(100), 9);
        assert_eq!(window_width(525), 16);
        assert_eq!(windows(2), [(0, 2)]);
        assert_eq!(windows(7), [(0, 3), (2, 5), (4, 7)]);
        // L = 100: w = 9, overlap = round(2.25) = 2, stride 7.
        let w = windows(100);
        assert_eq!(w[0], (0, 9));
        assert_eq!(w[1], (7, 16));
        assert_eq!(*w.last().unwrap(), (91, 100));
        // L = 525: w = 16, overlap 4, stride 12; every step covered.
        let w = windows(525);
        assert!(w.windows(2).all(|p| p[1].0 == p[0].0 + 12));
        assert_eq!(w.last().unwrap().1, 525);
    }

    fn raw(e: &crate::dataset::Episode) -> Raw {
        let steps = Arc::new(StepTexts::build(&e.steps, 2000));
        Raw::build(steps, &Config::default())
    }

    #[test]
    fn bm25_top_windows() {
        let e = game_episode(100);
        let r = raw(&e);
        let ev = r.retrieve(&Query::new("Why was the door locked?")).unwrap();
        assert!(!ev.items.is_empty() && ev.items.len() <= 3);
        assert!(ev.items[0].steps.contains(&20), "{:?}", ev.items[0].steps);
        assert!(ev.items[0].text.starts_with("[steps "));
        assert!(ev.items.iter().all(|i| i.score > 0.0 && i.score <= 1.0));
        assert_eq!(
            ev.items[0].tokens,
            r.windows()[ev.items[0].steps[0] / 7].tokens
        );
        assert!(ev.items.windows(2).all(|w| w[0].score >= w[1].score));
        let text_tokens = count_tokens(&ev.items[0].text);
        assert!(ev.items[0].tokens >= text_tokens && ev.items[0].tokens <= text_tokens + 12);
    }

    #[test]
    fn no_match_gives_the_last_window() {
        let e = sql_episode();
        let r = raw(&e);
        let ev = r.retrieve(&Query::new("zebra giraffe")).unwrap();
        assert_eq!(ev.items.len(), 1);
        assert_eq!(ev.hits, 0);
        assert_eq!(ev.items[0].score, 0.0);
        assert_eq!(*ev.items[0].steps.last().unwrap(), 6);
    }

    #[test]
    fn statistics_are_per_episode() {
        // The same window text scores the same whatever else is indexed
        // elsewhere: each episode has its own index.
        let a = raw(&sql_episode());
        let b = raw(&sql_episode());
        let _other = raw(&game_episode(200));
        let q = Query::new("invalid identifier");
        assert_eq!(a.search(&q), b.search(&q));
    }

    /// Building over all the steps and taking them in one at a time give
    /// the same windows, postings and statistics (through every change of
    /// the window width).
    #[test]
    fn appending_equals_building() {
        let e = game_episode(230);
        let c = Config::default();
        let all = Arc::new(StepTexts::build(&e.steps, 2000));
        let built = Raw::build(all.clone(), &c);
        let mut grown = Raw::build(Arc::new(StepTexts::default()), &c);
        for n in 1..=e.steps.len() {
            grown.extend(Arc::new(all.prefix(n)));
            let ranges: Vec<(usize, usize)> =
                grown.windows.iter().map(|w| (w.start, w.end)).collect();
            assert_eq!(ranges, windows(n));
        }
        assert_eq!(grown.windows, built.windows);
        assert!(grown.index.canonical() == built.index.canonical());
        let q = Query::new("Why was the door locked? key 1");
        assert_eq!(grown.search(&q), built.search(&q));
    }

    /// R's own index ranks as a tantivy index of the same windows: the same
    /// windows with the same scores (up to f32 rounding in the order tantivy
    /// adds a window's term scores; windows may swap only where their
    /// scores tie to that precision).
    #[test]
    fn ranks_as_tantivy_on_ama_bench() {
        let Some(loaded) = crate::testing::ama() else {
            return;
        };
        let c = Config::default();
        let mut compared = 0;
        for e in loaded.episodes.iter().step_by(11) {
            let r = Raw::build(
                Arc::new(StepTexts::build(&e.steps, c.evidence_text_bytes)),
                &c,
            );
            for q in &e.questions {
                let q = Query::new(&q.question);
                let ours: Vec<(usize, f32)> = r
                    .search(&q)
                    .into_iter()
                    .map(|(i, s, _)| (i, s as f32))
                    .collect();
                let theirs = r.search_with_tantivy(&q);
                assert_eq!(ours.len(), theirs.len(), "{}: {}", e.id, q.text());
                let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * a.abs().max(1.0);
                for (x, y) in ours.iter().zip(&theirs) {
                    assert!(
                        close(x.1, y.1),
                        "{}: {}: {ours:?} {theirs:?}",
                        e.id,
                        q.text()
                    );
                    if x.0 != y.0 {
                        let tie = theirs.iter().any(|z| z.0 == x.0 && close(z.1, x.1));
                        assert!(tie, "{}: {}: {ours:?} {theirs:?}", e.id, q.text());
                    }
                }
                compared += 1;
            }
        }
        assert!(compared > 100, "{compared}");
    }
}
