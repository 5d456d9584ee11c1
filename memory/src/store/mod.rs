//! The on-disk store: every structure of every episode of a dataset, built
//! once and opened without rebuilding anything.
//!
//! ```text
//! <store>/
//!   manifest.json             format marker and version, configuration (caps and
//!                             parameters), plugin names, counts, load report,
//!                             and the episode list: id -> directory
//!   episodes/e000000/         one directory per episode (named by slot, not by id)
//!     episode.json            the episode as loaded (steps, questions, notes) and
//!                             the token count of each step's evidence text
//!     summary.json            S: the summary lines and their token count
//!     graph.json              G: the petgraph StableGraph (nodes, edges with step)
//!     vectors.bin             V: little-endian f32 rows with a header (vectors.rs)
//!     windows.json            R: the windows (step ranges, token counts)
//!     ann/                    V's HNSW graph, only past `vector_hnsw_threshold`
//!                             steps with a dense embedder: hnsw_rs's dump and
//!                             its manifest (digests of the rows and the files)
//! ```
//!
//! **Atomic builds.** [`Store::build`] writes into a hidden sibling
//! directory (`.<name>.tmp-<pid>-<nanos>`), syncs every file and directory,
//! then renames it into place; an existing store is first renamed aside
//! (`.<name>.old-…`) and deleted after the swap. A crash leaves the old
//! store, or (between the two renames) no store, never half of one: a
//! directory without its manifest is not a store, and the manifest is
//! written last.
//!
//! **What the layout allows next.** Everything about an episode lives in its
//! own directory, and every structure is per episode (R's BM25 statistics
//! too), so:
//! - *appending steps* to a live episode rebuilds that one directory (its
//!   windows change with L) into a temporary sibling and renames it over the
//!   old one, then swaps the in-memory `EpisodeMemory`: queryable at once;
//! - *deleting or correcting a step* is the same: the step leaves the
//!   episode file, so the summary, the graph's edges of that step (a
//!   `StableGraph`, so other indices stay valid), its vector row and every
//!   window that showed it are rebuilt without it; nothing else refers to it;
//! - *tenants* are separate store directories (no shared global index), so
//!   one tenant's data is never read, ranked or deleted with another's.
//!   The manifest's episode list is rewritten (temp file + rename) after each
//!   such change.

mod files;
mod vectors;

use files::{
    ann_file, check_replaceable, read_json, sync_dir, sync_tree, unique_suffix, write_episode,
    write_json,
};

use crate::config::Config;
use crate::dataset::{self, DatasetError, Episode, LoadOptions};
use crate::plugins::{Embedders, PluginOptions};
use crate::structures::graph::RelationGraph;
use crate::structures::{
    AnnFile, BuildError, EpisodeMemory, Graph, Plugins, Raw, StepTexts, Summary, SummaryLine,
    Temporal, Vector, Window,
};
use crate::Retrieval;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The manifest's `format` marker.
pub const FORMAT: &str = "mesa-memory-store";
/// The store layout version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;
const MANIFEST: &str = "manifest.json";

/// Why a store could not be built or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The dataset could not be read.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// A structure could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The directory does not exist.
    #[error("{dir}: no such store directory")]
    NotFound {
        /// The directory.
        dir: String,
    },
    /// The directory is not a MESA store.
    #[error("{dir}: not a MESA memory store ({reason})")]
    NotAStore {
        /// The directory.
        dir: String,
        /// Why not.
        reason: String,
    },
    /// The store has another layout version.
    #[error("{dir}: store format version {found}, but this build reads version {expected}; rebuild the store")]
    Version {
        /// The directory.
        dir: String,
        /// The store's version.
        found: u64,
        /// The version this crate reads.
        expected: u32,
    },
    /// A store file is damaged.
    #[error("{path}: damaged store file: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A store file is not the JSON it should be.
    #[error("{path}: damaged store file: {source}")]
    Json {
        /// The file.
        path: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored BM25 index could not be opened.
    #[error("{path}: damaged BM25 index: {source}")]
    Index {
        /// The index directory.
        path: String,
        /// Why.
        #[source]
        source: crate::structures::raw::IndexError,
    },
    /// The store was built with another embedder than the one given.
    #[error("the store's vectors were made by `{stored}`, but the embedder given is `{given}`")]
    EmbedderMismatch {
        /// The manifest's embedder.
        stored: String,
        /// The embedder given to open.
        given: String,
    },
    /// The embedder that built the store cannot be set up here.
    #[error("{dir}: the store's embedder cannot be set up: {source}")]
    Embedder {
        /// The store.
        dir: String,
        /// Why.
        #[source]
        source: crate::plugins::SetupError,
    },
    /// The output directory exists and is not a store; it is not replaced.
    #[error("{dir}: exists and is not a MESA store; refusing to replace it")]
    NotReplaceable {
        /// The directory.
        dir: String,
    },
    /// The output directory is a store that also holds files a rebuild
    /// would delete; it is not replaced.
    #[error("{dir}: a MESA store, but it also holds {entries}, which replacing it would delete; move them out, or build into another directory")]
    HoldsOtherFiles {
        /// The directory.
        dir: String,
        /// The entries that are not the store's, quoted and joined.
        entries: String,
    },
    /// The input cannot make a store.
    #[error("{0}")]
    Invalid(String),
    /// The build was cancelled.
    #[error("the build was cancelled")]
    Cancelled,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn corrupt(path: &Path, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// Where the episodes come from.
#[derive(Debug)]
pub enum Source {
    /// A JSONL dataset file (AMA-Bench or generic), read with these options.
    Path(PathBuf, LoadOptions),
    /// Episodes already in memory.
    Episodes(Vec<Episode>),
}

impl From<&Path> for Source {
    fn from(p: &Path) -> Source {
        Source::Path(p.to_path_buf(), LoadOptions::default())
    }
}

impl From<PathBuf> for Source {
    fn from(p: PathBuf) -> Source {
        Source::Path(p, LoadOptions::default())
    }
}

impl From<Vec<Episode>> for Source {
    fn from(e: Vec<Episode>) -> Source {
        Source::Episodes(e)
    }
}

/// Build progress, reported after each episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Episodes done.
    pub done: usize,
    /// Episodes in all.
    pub total: usize,
    /// The episode just finished.
    pub episode: String,
    /// Its steps.
    pub steps: usize,
}

/// How to build a store.
#[derive(Default)]
pub struct BuildOptions<'a> {
    /// The builders (default: the built-in offline ones).
    pub plugins: Plugins,
    /// Called after each episode (from worker threads).
    pub progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
    /// Set it to stop the build: the temporary directory is removed, the old
    /// store (if any) is left as it was, and the build returns `Cancelled`.
    pub cancel: Option<&'a AtomicBool>,
    /// Tests: fail like a killed process after this many episodes (the
    /// temporary directory is left behind, as a crash would).
    #[cfg(test)]
    pub(crate) crash_after: Option<usize>,
}

/// The plugins a store was built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginNames {
    /// The embedder's name.
    pub embedder: String,
    /// Its dimension.
    pub dim: usize,
    /// The summarizer's name.
    pub summarizer: String,
    /// The relation extractor's name.
    pub extractor: String,
}

/// What a store holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Episodes.
    pub episodes: usize,
    /// Steps.
    pub steps: usize,
    /// Questions.
    pub questions: usize,
    /// R windows.
    pub windows: usize,
    /// G relations.
    pub relations: usize,
    /// S summary tokens, all episodes together.
    pub summary_tokens: usize,
}

/// What loading the dataset reported, kept in the manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// The dataset file.
    pub file: String,
    /// Lines read.
    pub lines: usize,
    /// Skipped lines and why.
    pub skipped: Vec<(usize, String)>,
    /// Observations cut at the cap.
    pub cut_observations: usize,
    /// Actions cut at the cap.
    pub cut_actions: usize,
    /// The cap in bytes.
    pub max_text_bytes: usize,
}

/// One episode's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeEntry {
    /// The episode id.
    pub id: String,
    /// Its directory under `episodes/`.
    pub dir: String,
    /// Its steps.
    pub steps: usize,
    /// Its questions.
    pub questions: usize,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// The layout version, [`FORMAT_VERSION`].
    pub version: u32,
    /// The crate that wrote it, e.g. `mesa-memory 0.1.0`.
    pub created_by: String,
    /// The structures' parameters.
    pub config: Config,
    /// The builders.
    pub plugins: PluginNames,
    /// What the store holds.
    pub counts: Counts,
    /// The dataset load report, when built from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSummary>,
    /// The episodes, in dataset order.
    pub episodes: Vec<EpisodeEntry>,
}

#[derive(Serialize, Deserialize)]
struct EpisodeFile {
    episode: Episode,
    step_tokens: Vec<u32>,
}

#[derive(Serialize, Deserialize)]
struct SummaryFile {
    lines: Vec<SummaryLine>,
    tokens: usize,
}

/// An opened store.
pub struct Store {
    dir: PathBuf,
    manifest: Manifest,
    episodes: Vec<EpisodeMemory>,
    by_id: HashMap<String, usize>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("counts", &self.manifest.counts)
            .finish()
    }
}

impl Store {
    /// Builds every structure of every episode in parallel and writes the
    /// store to `out_dir`, atomically replacing a store already there (see
    /// the module docs). Returns the store, opened from disk.
    pub fn build(
        source: impl Into<Source>,
        config: &Config,
        out_dir: &Path,
        options: BuildOptions<'_>,
    ) -> Result<Store, StoreError> {
        let (episodes, load) = match source.into() {
            Source::Episodes(e) => (e, None),
            Source::Path(p, opts) => {
                let loaded = dataset::load(&p, &opts)?;
                let r = loaded.report;
                let summary = LoadSummary {
                    file: p.display().to_string(),
                    lines: r.lines,
                    skipped: r
                        .skipped
                        .iter()
                        .map(|s| (s.line, s.reason.to_string()))
                        .collect(),
                    cut_observations: r.cut_observations,
                    cut_actions: r.cut_actions,
                    max_text_bytes: opts.max_text_bytes,
                };
                (loaded.episodes, Some(summary))
            }
        };
        let mut seen = HashMap::new();
        for e in &episodes {
            if e.steps.is_empty() {
                return Err(StoreError::Invalid(format!(
                    "episode `{}` has no steps",
                    e.id
                )));
            }
            if seen.insert(e.id.as_str(), ()).is_some() {
                return Err(StoreError::Invalid(format!(
                    "duplicate episode id `{}`",
                    e.id
                )));
            }
        }
        let name = out_dir
            .file_name()
            .ok_or_else(|| {
                StoreError::Invalid(format!("{}: not a directory name", out_dir.display()))
            })?
            .to_string_lossy()
            .to_string();
        let parent = match out_dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        check_replaceable(out_dir)?;
        std::fs::create_dir_all(&parent).map_err(io(&parent))?;
        let tmp = parent.join(format!(".{name}.tmp-{}", unique_suffix()));
        if let Err(e) = Store::write_all(&tmp, &episodes, config, &options, load) {
            #[cfg(test)]
            if options.crash_after.is_some() {
                // A simulated crash leaves its temporary directory behind.
                return Err(e);
            }
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        // Swap into place.
        let old = parent.join(format!(".{name}.old-{}", unique_suffix()));
        let had_old = out_dir.exists();
        if had_old {
            std::fs::rename(out_dir, &old).map_err(io(out_dir))?;
        }
        if let Err(e) = std::fs::rename(&tmp, out_dir) {
            if had_old {
                let _ = std::fs::rename(&old, out_dir);
            }
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(io(out_dir)(e));
        }
        sync_dir(&parent)?;
        if had_old {
            std::fs::remove_dir_all(&old).map_err(io(&old))?;
        }
        Store::open_with(out_dir, options.plugins)
    }

    fn write_all(
        tmp: &Path,
        episodes: &[Episode],
        config: &Config,
        options: &BuildOptions<'_>,
        load: Option<LoadSummary>,
    ) -> Result<Manifest, StoreError> {
        let root = tmp.join("episodes");
        std::fs::create_dir_all(&root).map_err(io(&root))?;
        let done = AtomicUsize::new(0);
        let total = episodes.len();
        let stats: Vec<(usize, usize, usize)> = episodes
            .par_iter()
            .enumerate()
            .map(|(slot, episode)| {
                if options.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return Err(StoreError::Cancelled);
                }
                #[cfg(test)]
                if options
                    .crash_after
                    .is_some_and(|n| done.load(Ordering::SeqCst) >= n)
                {
                    return Err(StoreError::Invalid("crash".into()));
                }
                let dir = root.join(format!("e{slot:06}"));
                std::fs::create_dir_all(&dir).map_err(io(&dir))?;
                let memory =
                    EpisodeMemory::build(Arc::new(episode.clone()), config, &options.plugins)?;
                let steps = memory.temporal.steps();
                write_episode(&dir, &memory, steps)?;
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                if let Some(p) = options.progress {
                    p(&Progress {
                        done: n,
                        total,
                        episode: episode.id.clone(),
                        steps: episode.steps.len(),
                    });
                }
                Ok((
                    memory.raw.windows().len(),
                    memory.graph.relation_count(),
                    memory.summary.tokens(),
                ))
            })
            .collect::<Result<_, _>>()?;
        let p = &options.plugins;
        let manifest = Manifest {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            created_by: format!("mesa-memory {}", env!("CARGO_PKG_VERSION")),
            config: config.clone(),
            plugins: PluginNames {
                embedder: p.embedder.name(),
                dim: p.embedder.dim(),
                summarizer: p.summarizer.name(),
                extractor: p.extractor.name(),
            },
            counts: Counts {
                episodes: episodes.len(),
                steps: episodes.iter().map(|e| e.steps.len()).sum(),
                questions: episodes.iter().map(|e| e.questions.len()).sum(),
                windows: stats.iter().map(|s| s.0).sum(),
                relations: stats.iter().map(|s| s.1).sum(),
                summary_tokens: stats.iter().map(|s| s.2).sum(),
            },
            load,
            episodes: episodes
                .iter()
                .enumerate()
                .map(|(slot, e)| EpisodeEntry {
                    id: e.id.clone(),
                    dir: format!("e{slot:06}"),
                    steps: e.steps.len(),
                    questions: e.questions.len(),
                })
                .collect(),
        };
        sync_tree(tmp)?;
        // The manifest last: a directory without it is not a store.
        write_json(&tmp.join(MANIFEST), &manifest)?;
        sync_dir(tmp)?;
        Ok(manifest)
    }

    /// Opens a store with the built-in plugins.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with(dir, Plugins::default())
    }

    /// Opens a store with the embedder that built it, as its manifest
    /// records it (questions must be embedded as the steps were): the
    /// built-in one, MiniLM from `options.minilm_dir`, or the endpoint of
    /// `options`.
    pub fn open_recorded(dir: &Path, options: &PluginOptions) -> Result<Store, StoreError> {
        match Store::open(dir) {
            Err(StoreError::EmbedderMismatch { stored, .. }) => {
                let embedder = Embedders::from_recorded(&stored, options).map_err(|source| {
                    StoreError::Embedder {
                        dir: dir.display().to_string(),
                        source,
                    }
                })?;
                let plugins = Plugins {
                    embedder,
                    ..Plugins::default()
                };
                Store::open_with(dir, plugins)
            }
            other => other,
        }
    }

    /// Opens a store; `plugins.embedder` must be the one the store was built
    /// with (it embeds questions).
    pub fn open_with(dir: &Path, plugins: Plugins) -> Result<Store, StoreError> {
        let shown = dir.display().to_string();
        if !dir.is_dir() {
            return Err(StoreError::NotFound { dir: shown });
        }
        let path = dir.join(MANIFEST);
        let not = |reason: &str| StoreError::NotAStore {
            dir: shown.clone(),
            reason: reason.to_string(),
        };
        if !path.is_file() {
            return Err(not("no manifest.json"));
        }
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| not("manifest.json is not JSON"))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(not("manifest.json lacks the format marker"));
        }
        let found = value.get("version").and_then(|v| v.as_u64());
        if found != Some(u64::from(FORMAT_VERSION)) {
            return Err(StoreError::Version {
                dir: shown,
                found: found.unwrap_or(0),
                expected: FORMAT_VERSION,
            });
        }
        let manifest: Manifest = serde_json::from_value(value).map_err(|e| corrupt(&path, e))?;
        let given = plugins.embedder.name();
        if manifest.plugins.embedder != given || manifest.plugins.dim != plugins.embedder.dim() {
            return Err(StoreError::EmbedderMismatch {
                stored: manifest.plugins.embedder.clone(),
                given,
            });
        }
        // Load the tokenizer now rather than in the first question.
        crate::tokens::count_tokens("warm up");
        let root = dir.join("episodes");
        let episodes = manifest
            .episodes
            .par_iter()
            .map(|entry| Store::open_episode(&root, entry, &manifest, &plugins))
            .collect::<Result<Vec<_>, _>>()?;
        let by_id = episodes
            .iter()
            .enumerate()
            .map(|(i, m)| (m.episode.id.clone(), i))
            .collect();
        Ok(Store {
            dir: dir.to_path_buf(),
            manifest,
            episodes,
            by_id,
        })
    }

    fn open_episode(
        root: &Path,
        entry: &EpisodeEntry,
        manifest: &Manifest,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, StoreError> {
        if entry.dir.is_empty() || entry.dir.contains(['/', '\\']) || entry.dir.starts_with('.') {
            return Err(corrupt(
                &root.join(&entry.dir),
                "bad episode directory name",
            ));
        }
        let dir = root.join(&entry.dir);
        let config = &manifest.config;
        let path = dir.join("episode.json");
        let file: EpisodeFile = read_json(&path)?;
        if file.episode.id != entry.id {
            return Err(corrupt(
                &path,
                format!(
                    "episode `{}`, the manifest says `{}`",
                    file.episode.id, entry.id
                ),
            ));
        }
        if file.episode.steps.is_empty()
            || file
                .episode
                .steps
                .windows(2)
                .any(|w| w[1].index <= w[0].index)
        {
            return Err(corrupt(&path, "steps are empty or out of order"));
        }
        let steps = StepTexts::with_tokens(
            &file.episode.steps,
            config.evidence_text_bytes,
            file.step_tokens,
        )
        .ok_or_else(|| corrupt(&path, "one token count per step expected"))?;
        let steps = Arc::new(steps);
        let episode = Arc::new(file.episode);
        let s: SummaryFile = read_json(&dir.join("summary.json"))?;
        let summary = Summary::from_parts(s.lines, s.tokens);
        let temporal = Temporal::new(&episode, steps.clone(), config);
        let path = dir.join("graph.json");
        let g: RelationGraph = read_json(&path)?;
        let graph = Graph::from_graph(g, episode.steps.last().map_or(0, |s| s.index), config)
            .map_err(|m| corrupt(&path, m))?;
        let path = dir.join("vectors.bin");
        let (dim, data) = vectors::read(&path).map_err(|m| corrupt(&path, m))?;
        if dim != manifest.plugins.dim {
            return Err(corrupt(
                &path,
                format!(
                    "dimension {dim}, the manifest says {}",
                    manifest.plugins.dim
                ),
            ));
        }
        let vector = Vector::from_stored(steps.clone(), data, plugins.embedder.clone(), config)
            .ok_or_else(|| corrupt(&path, "one vector per step expected"))?;
        vector.use_saved_ann(ann_file(&dir, false));
        let path = dir.join("windows.json");
        let windows: Vec<Window> = read_json(&path)?;
        let raw = Raw::open(steps, windows, config).map_err(|source| StoreError::Index {
            path: path.display().to_string(),
            source,
        })?;
        Ok(EpisodeMemory {
            episode,
            summary,
            temporal,
            graph,
            vector,
            raw,
            elided: 0,
        })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Every episode's structures, in dataset order.
    pub fn episodes(&self) -> &[EpisodeMemory] {
        &self.episodes
    }

    /// One episode's structures, by id.
    pub fn episode(&self, id: &str) -> Option<&EpisodeMemory> {
        self.by_id.get(id).map(|&i| &self.episodes[i])
    }

    /// A lazy retrieval of `question` against episode `id`.
    pub fn retrieval(&self, id: &str, question: &str) -> Option<Retrieval<'_>> {
        self.episode(id).map(|m| Retrieval::new(m, question))
    }
}

#[cfg(test)]
mod tests;
