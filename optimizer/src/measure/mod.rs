//! Producing a sweep from a memory store: for every question of a dataset,
//! the previews of all five structures and, for each of the 31 non-empty
//! subsets, its utility and its evidence tokens.
//!
//! Each structure retrieves once per question; the 31 subsets are derived
//! from those five results (their steps, words and token counts combine),
//! so a sweep costs five retrievals per question, not 31 compositions. The
//! `judge` utility is the exception: it needs each subset's composed text.

pub mod items;
pub mod judge;
pub mod utility;

use crate::sweep::{SweepHeader, SweepRecord, SweepWriter, UtilityKind};
use items::{ItemsRecord, Wanted};
use judge::{Judge, JudgeError};
use mesa_core::{Mask, Previews, Structure};
use mesa_memory::dataset::{Episode, Question};
use mesa_memory::{composed_tokens, Coverage, Evidence, Retrieval, RetrieveError, Store};
use rayon::prelude::*;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use utility::LabelSource;

/// Why a sweep could not be produced.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// A dataset episode is not in the store.
    #[error("episode `{0}` of the dataset is not in the store; build the store from the same dataset (`mesa build DATA -o STORE`)")]
    UnknownEpisode(String),
    /// A dataset episode's steps are not the store's.
    #[error("episode `{episode}` has {dataset} step(s) in the dataset and {store} in the store{}; the store was built from other data: build it from this dataset (`mesa build DATA -o STORE`)", if dataset == store { " (with other indices)" } else { "" })]
    StepsDiffer {
        /// The episode.
        episode: String,
        /// Its steps in the dataset.
        dataset: usize,
        /// Its steps in the store.
        store: usize,
    },
    /// A structure failed to retrieve.
    #[error("retrieving for question `{question}` failed: {source}")]
    Retrieve {
        /// The question id.
        question: String,
        /// The memory's error.
        source: RetrieveError,
    },
    /// The judge utility was asked for without a judge.
    #[error("the judge utility needs an OpenAI-compatible endpoint (MESA_LLM_BASE_URL, MESA_LLM_API_KEY)")]
    NoJudge,
    /// The judge failed.
    #[error(transparent)]
    Judge(#[from] JudgeError),
    /// The sweep file could not be written.
    #[error(transparent)]
    Sweep(#[from] crate::sweep::SweepError),
}

/// What a sweep run reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasureReport {
    /// Questions written.
    pub questions: usize,
    /// Questions with labels (used in evaluation).
    pub labelled: usize,
    /// Evidence-recall labels taken from the dataset's `evidence` field.
    pub labels_from_dataset: usize,
    /// Evidence-recall labels taken from step numbers in the question or answer.
    pub labels_from_named_steps: usize,
}

/// How to produce a sweep.
pub struct MeasureOptions<'a> {
    /// The utility.
    pub utility: UtilityKind,
    /// The judge, for [`UtilityKind::Judge`].
    pub judge: Option<&'a Judge>,
    /// Called with (questions done, questions in all), from worker threads.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// Where to write each question's evidence item by item
    /// ([`items::ItemsRecord`], one JSON line per question in dataset
    /// order); `None` writes none.
    pub items: Option<&'a Path>,
}

/// One question's five evidence sections, in structure order.
struct Sections([Evidence; 5]);

/// Measures every question of `episodes` against `store` and writes the
/// sweep to `out`. Questions are measured in parallel and written in
/// dataset order.
pub fn measure(
    store: &Store,
    episodes: &[Episode],
    dataset_name: &str,
    store_name: &str,
    options: &MeasureOptions<'_>,
    out: &Path,
) -> Result<MeasureReport, MeasureError> {
    if options.utility == UtilityKind::Judge && options.judge.is_none() {
        return Err(MeasureError::NoJudge);
    }
    let mut work: Vec<(&Episode, &Question)> = Vec::new();
    for e in episodes {
        let Some(m) = store.episode(&e.id) else {
            return Err(MeasureError::UnknownEpisode(e.id.clone()));
        };
        let stored = &m.episode.steps;
        if !stored
            .iter()
            .map(|s| s.index)
            .eq(e.steps.iter().map(|s| s.index))
        {
            return Err(MeasureError::StepsDiffer {
                episode: e.id.clone(),
                dataset: e.steps.len(),
                store: stored.len(),
            });
        }
        work.extend(e.questions.iter().map(|q| (e, q)));
    }
    let done = AtomicUsize::new(0);
    let results: Vec<Result<Measured, MeasureError>> = work
        .par_iter()
        .map(|(e, q)| {
            let r = measure_one(store, e, q, options);
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(p) = options.progress {
                p(n, work.len());
            }
            r
        })
        .collect();
    let mut records = Vec::with_capacity(results.len());
    let mut items = Vec::new();
    let mut report = MeasureReport::default();
    for r in results {
        let Measured {
            record,
            source,
            items: item_record,
        } = r?;
        items.extend(item_record);
        report.questions += 1;
        report.labelled += usize::from(record.labelled);
        match source {
            LabelSource::Dataset => report.labels_from_dataset += 1,
            LabelSource::Named => report.labels_from_named_steps += 1,
            LabelSource::None => {}
        }
        records.push(record);
    }
    let header = SweepHeader::new(
        options.utility,
        dataset_name,
        store_name,
        report.questions,
        report.labelled,
    );
    let mut writer = SweepWriter::create(out, &header)?;
    for r in &records {
        writer.write(r)?;
    }
    writer.finish().map_err(|e| io_error(out, e))?;
    if let Some(path) = options.items {
        write_items(path, &items)?;
    }
    Ok(report)
}

fn io_error(path: &Path, source: std::io::Error) -> MeasureError {
    MeasureError::Sweep(crate::sweep::SweepError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes the items records, one JSON line each.
fn write_items(path: &Path, items: &[ItemsRecord]) -> Result<(), MeasureError> {
    use std::io::Write;
    let file = std::fs::File::create(path).map_err(|e| io_error(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    for r in items {
        serde_json::to_writer(&mut out, r).map_err(|e| io_error(path, e.into()))?;
        out.write_all(b"\n").map_err(|e| io_error(path, e))?;
    }
    out.flush().map_err(|e| io_error(path, e))
}

/// One measured question: its sweep record, where its labels came from,
/// and its items record when asked for.
struct Measured {
    record: SweepRecord,
    source: LabelSource,
    items: Option<ItemsRecord>,
}

/// The record of one question.
fn measure_one(
    store: &Store,
    episode: &Episode,
    q: &Question,
    options: &MeasureOptions<'_>,
) -> Result<Measured, MeasureError> {
    let memory = store
        .episode(&episode.id)
        .ok_or_else(|| MeasureError::UnknownEpisode(episode.id.clone()))?;
    let retrieval = Retrieval::new(memory, &q.question);
    let failed = failed(q);
    let retrieve = |s: Structure| retrieval.evidence(s).cloned().map_err(&failed);
    let sections = Sections([
        retrieve(Structure::Summary)?,
        retrieve(Structure::Temporal)?,
        retrieve(Structure::Graph)?,
        retrieve(Structure::Vector)?,
        retrieve(Structure::Raw)?,
    ]);
    // The same function a query's host calls, so a policy reads the same
    // values in the sweep and at query time.
    let previews = retrieval.all_previews().map_err(&failed)?;
    let coverage = retrieval.coverage().map_err(&failed)?;
    let mut tokens = [0.0; Mask::SUBSETS];
    for (k, t) in tokens.iter_mut().enumerate() {
        let mask = Mask::subset(k);
        *t = composed_tokens(sections.0.iter().filter(|e| mask.contains(e.structure))) as f64;
    }
    let items = |wanted| {
        options
            .items
            .map(|_| ItemsRecord::new(&q.id, &episode.id, &q.question, &sections.0, wanted))
    };
    let (utility, labelled, source, wanted) = match options.utility {
        UtilityKind::EvidenceRecall | UtilityKind::AnswerOnlyRecall => {
            let answer_only = options.utility == UtilityKind::AnswerOnlyRecall;
            recall_utility(&retrieval, episode, q, answer_only)?
        }
        UtilityKind::AnswerCoverage => coverage_utility(&retrieval, q)?,
        UtilityKind::Judge => {
            let judge = options.judge.ok_or(MeasureError::NoJudge)?;
            let Some(reference) = q.answer.as_deref() else {
                let items = items(Wanted::Nothing);
                return Ok(Measured {
                    record: record(
                        episode,
                        q,
                        (previews, coverage),
                        [0.0; Mask::SUBSETS],
                        tokens,
                        false,
                    ),
                    source: LabelSource::None,
                    items,
                });
            };
            // The texts first: a Retrieval is not shared across threads.
            let texts: Vec<String> = (0..Mask::SUBSETS)
                .map(|k| mesa_memory::compose(Mask::subset(k), sections.0.to_vec()).render())
                .collect();
            let scores = judge.client().map_concurrent(&texts, |text| {
                judge
                    .score(&q.id, &q.question, reference, text)
                    .map_err(MeasureError::from)
            });
            let mut u = [0.0; Mask::SUBSETS];
            for (k, s) in scores.into_iter().enumerate() {
                u[k] = s?;
            }
            (u, true, LabelSource::None, Wanted::Nothing)
        }
    };
    Ok(Measured {
        record: record(episode, q, (previews, coverage), utility, tokens, labelled),
        source,
        items: items(wanted),
    })
}

/// What one question's utility per subset comes to: the utilities, whether
/// the question is labelled, where its labels came from, and what the items
/// record looks for.
type Utilities = ([f64; Mask::SUBSETS], bool, LabelSource, Wanted);

/// A retrieval failure of question `q`, as a measuring error.
fn failed(q: &Question) -> impl Fn(RetrieveError) -> MeasureError + '_ {
    |source| MeasureError::Retrieve {
        question: q.id.clone(),
        source,
    }
}

/// Evidence recall per subset, on all labels or on the answer-only ones.
fn recall_utility(
    retrieval: &Retrieval<'_>,
    episode: &Episode,
    q: &Question,
    answer_only: bool,
) -> Result<Utilities, MeasureError> {
    let failed = failed(q);
    let (mut labels, source) = utility::evidence_labels(episode, q);
    let mut source = source;
    if answer_only {
        labels = utility::answer_only(episode, q, labels);
        if labels.is_empty() {
            source = LabelSource::None;
        }
    }
    // The same lists the previews read.
    let by_structure = Structure::ALL
        .iter()
        .map(|&s| retrieval.shown(s).map_err(&failed))
        .collect::<Result<Vec<&[usize]>, _>>()?;
    let u = per_mask(&by_structure, |chosen| utility::recall(&labels, chosen));
    let labelled = !labels.is_empty();
    Ok((u, labelled, source, Wanted::Labels(labels)))
}

/// Answer coverage per subset.
fn coverage_utility(retrieval: &Retrieval<'_>, q: &Question) -> Result<Utilities, MeasureError> {
    let failed = failed(q);
    // The answer words are content words of the same question,
    // so the evidence's content words are the ones to look in.
    let wanted = utility::answer_words(q);
    let words = Structure::ALL
        .iter()
        .map(|&s| retrieval.content_words(s).map_err(&failed))
        .collect::<Result<Vec<&HashSet<String>>, _>>()?;
    let u = per_mask(&words, |chosen| utility::coverage(&wanted, chosen));
    let labelled = !wanted.is_empty();
    Ok((u, labelled, LabelSource::None, Wanted::AnswerWords(wanted)))
}

/// The utility of every non-empty mask, from what each structure shows
/// (`by_structure`, in S T G V R order): `f` gets the mask's structures' parts.
fn per_mask<T: Copy>(by_structure: &[T], f: impl Fn(&[T]) -> f64) -> [f64; Mask::SUBSETS] {
    let mut out = [0.0; Mask::SUBSETS];
    let mut chosen = Vec::with_capacity(Structure::ALL.len());
    for (k, u) in out.iter_mut().enumerate() {
        let mask = Mask::subset(k);
        chosen.clear();
        chosen.extend(
            Structure::ALL
                .into_iter()
                .filter(|s| mask.contains(*s))
                .map(|s| by_structure[s.index()]),
        );
        *u = f(&chosen);
    }
    out
}

fn record(
    episode: &Episode,
    q: &Question,
    (previews, coverage): (Previews, Coverage),
    utility: [f64; Mask::SUBSETS],
    tokens: [f64; Mask::SUBSETS],
    labelled: bool,
) -> SweepRecord {
    SweepRecord {
        episode: episode.id.clone(),
        question_id: q.id.clone(),
        domain: episode.domain.clone(),
        qtype: q.qtype.clone(),
        task: episode.task.clone(),
        query: q.question.clone(),
        labelled,
        previews,
        utility,
        tokens,
        coverage: Some(coverage),
    }
}
