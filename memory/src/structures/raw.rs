//! R: raw episodic windows ranked with BM25 (tantivy).
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
//! Layout: one small tantivy index per episode. BM25 statistics (document
//! count, document frequencies, average length) must be the episode's own,
//! since windows are ranked within one trajectory; tantivy computes them
//! over a whole searcher, so a shared index with an episode filter would mix
//! every episode's statistics into each ranking. A per-episode index gives
//! the right statistics for free, searches a few dozen documents (well under
//! a millisecond), and lets one episode be re-indexed alone when steps are
//! appended or removed (which changes `w`, so all its windows).

use super::{Evidence, EvidenceItem, MemoryStructure, Query, RetrieveError, StepTexts};
use crate::config::Config;
use crate::text::is_stopword;
use crate::tokens::count_tokens;
use mesa_core::Structure;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query as TantivyQuery, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED,
};
use tantivy::{Index, IndexReader, ReloadPolicy, SingleSegmentIndexWriter, TantivyDocument, Term};

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
    for t in &steps.texts[start..end] {
        text.push('\n');
        text.push_str(t);
    }
    text
}

/// The raw windows of one episode and their BM25 index.
pub struct Raw {
    steps: Arc<StepTexts>,
    windows: Vec<Window>,
    index: Index,
    reader: IndexReader,
    body: Field,
    win: Field,
    top_k: usize,
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Raw")
            .field("windows", &self.windows)
            .finish()
    }
}

fn schema() -> (Schema, Field, Field) {
    let mut b = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer("default")
        .set_index_option(IndexRecordOption::WithFreqs);
    let body = b.add_text_field(
        "body",
        TextOptions::default().set_indexing_options(indexing),
    );
    let win = b.add_u64_field("win", FAST | STORED);
    (b.build(), body, win)
}

/// The BM25 index of R could not be written, opened or read.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// Tantivy failed.
    #[error("{0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// The stored index does not match its windows.
    #[error("{0}")]
    Corrupt(String),
}

impl Raw {
    /// Cuts the windows and indexes them, in memory or in `dir` (an
    /// existing empty directory).
    pub fn build(
        steps: Arc<StepTexts>,
        config: &Config,
        dir: Option<&Path>,
    ) -> Result<Raw, IndexError> {
        let (schema, body, win) = schema();
        let index = match dir {
            Some(d) => Index::create_in_dir(d, schema)?,
            None => Index::create_in_ram(schema),
        };
        let mut writer: SingleSegmentIndexWriter<TantivyDocument> =
            SingleSegmentIndexWriter::new(index, 16 << 20)?;
        let mut windows = Vec::new();
        for (i, (start, end)) in self::windows(steps.len()).into_iter().enumerate() {
            let text = window_text(&steps, start, end);
            let tokens = count_tokens(&window_header(&steps, start, end))
                + steps.tokens[start..end]
                    .iter()
                    .map(|t| *t as usize + 1)
                    .sum::<usize>();
            windows.push(Window { start, end, tokens });
            let mut doc = TantivyDocument::default();
            doc.add_text(body, &text);
            doc.add_u64(win, i as u64);
            writer.add_document(doc)?;
        }
        let index = writer.finalize()?;
        Raw::from_index(steps, windows, index, config)
    }

    /// Opens a stored index.
    pub fn open(
        steps: Arc<StepTexts>,
        windows: Vec<Window>,
        dir: &Path,
        config: &Config,
    ) -> Result<Raw, IndexError> {
        if windows
            .iter()
            .any(|w| w.start >= w.end || w.end > steps.len())
        {
            return Err(IndexError::Corrupt(
                "a window is out of the episode's steps".into(),
            ));
        }
        let index = Index::open_in_dir(dir)?;
        Raw::from_index(steps, windows, index, config)
    }

    fn from_index(
        steps: Arc<StepTexts>,
        windows: Vec<Window>,
        index: Index,
        config: &Config,
    ) -> Result<Raw, IndexError> {
        let schema = index.schema();
        let (body, win) = match (schema.get_field("body"), schema.get_field("win")) {
            (Ok(b), Ok(w)) => (b, w),
            _ => {
                return Err(IndexError::Corrupt(
                    "the index lacks the `body` or `win` field".into(),
                ))
            }
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(Raw {
            steps,
            windows,
            index,
            reader,
            body,
            win,
            top_k: config.raw_top_k,
        })
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

    /// Window numbers and (raw BM25, normalized) scores, best first.
    pub fn search(&self, query: &Query) -> Result<Vec<(usize, f64, f64)>, RetrieveError> {
        let e = |e: tantivy::TantivyError| RetrieveError::Index(e.into());
        let mut analyzer = self.index.tokenizer_for_field(self.body).map_err(e)?;
        let mut stream = analyzer.token_stream(query.text());
        let mut words = Vec::new();
        while stream.advance() {
            let t = &stream.token().text;
            if !is_stopword(t) && !words.contains(t) {
                words.push(t.clone());
            }
        }
        let searcher = self.reader.searcher();
        let n = searcher.num_docs() as f64;
        let mut bound = 0.0;
        let mut clauses: Vec<(Occur, Box<dyn TantivyQuery>)> = Vec::new();
        for w in words {
            let term = Term::from_field_text(self.body, &w);
            let df = searcher.doc_freq(&term).map_err(e)? as f64;
            if df == 0.0 {
                continue;
            }
            bound += (1.0 + (n - df + 0.5) / (df + 0.5)).ln() * (K1 + 1.0);
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
            ));
        }
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let top = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(self.top_k),
            )
            .map_err(e)?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr).map_err(e)?;
            let Some(i) = doc.get_first(self.win).and_then(|v| v.as_u64()) else {
                return Err(RetrieveError::Index(IndexError::Corrupt(
                    "a window without its number".into(),
                )));
            };
            let i = i as usize;
            if i >= self.windows.len() {
                return Err(RetrieveError::Index(IndexError::Corrupt(format!(
                    "window {i} is out of range"
                ))));
            }
            let raw = f64::from(score);
            if raw > 0.0 {
                out.push((i, raw, (raw / bound).clamp(0.0, 1.0)));
            }
        }
        Ok(out)
    }
}

impl MemoryStructure for Raw {
    fn structure(&self) -> Structure {
        Structure::Raw
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        let found = self.search(query)?;
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
        Raw::build(steps, &Config::default(), None).unwrap()
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
        assert_eq!(a.search(&q).unwrap(), b.search(&q).unwrap());
    }
}
