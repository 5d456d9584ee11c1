//! V's approximate index past `Config::vector_hnsw_threshold`: an hnsw_rs
//! graph shared by a memory's clones, built on a background thread or
//! loaded from a saved dump, and saved where its owner says
//! ([`AnnFile`]: the live store keeps one per long episode beside the
//! tenant's database).
//!
//! ```text
//! snapshot made ──Vector::index_in_background(file)──► thread:
//!     FILE's manifest fits (same dimension, rows <= the episode's, the
//!     digest of those rows equals the episode's) ──► load the dump ──► insert the rows after it
//!     else ──► build over every row ──► save FILE (a writer only)
//! questions meanwhile ──► V's exact scan (no question waits)
//! an append ──Vector::extend──► the new rows inserted into a ready graph
//! ```
//!
//! A saved index is `NAME.json` (the manifest, replaced atomically and
//! written last) and hnsw_rs's dump `BASE.hnsw.graph` and
//! `BASE.hnsw.data` (the graph and a copy of the rows), synced before the
//! manifest names them. The manifest's digest covers the rows the dump
//! holds, so a dump is only used over the same rows: one left behind by a
//! crash, a forget or a correction is rebuilt over, never trusted.
//! hnsw_rs's loader trusts its files (on a damaged one it may assert, exit
//! the process or read past a buffer), so the manifest also holds a digest
//! of each dump file's bytes, and a dump is only loaded if both match; the
//! loader still runs under `catch_unwind`.

use hnsw_rs::prelude::{AnnT, DistCosine, Hnsw, HnswIo};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The graph's type: cosine distance over `f32` rows.
pub(super) type Graph = Hnsw<'static, f32, DistCosine>;

/// The manifest's format marker.
const FORMAT: &str = "mesa-ann";
/// Bumped when the saved layout changes; an older dump is rebuilt over.
const VERSION: u32 = 1;
/// hnsw_rs dumps only graphs made with its maximum of 16 layers.
const LAYERS: usize = 16;

/// Where an episode's approximate index is saved and loaded from: a
/// directory and a file name (without extension). Only a handle that
/// `write`s saves; any handle loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnFile {
    /// The directory (created on the first save).
    pub dir: PathBuf,
    /// The manifest's name, `NAME.json`; the dump's files begin with it.
    pub name: String,
    /// Whether this handle saves the index.
    pub write: bool,
}

/// How a memory's approximate index came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnnSource {
    /// Built over the rows (on a question or in the background).
    Built,
    /// Loaded from a saved dump (and extended by the rows after it).
    Loaded,
}

/// V's approximate index, shared by a memory's clones: the graph once
/// ready, how many rows it holds, whether a background build began, how
/// it came to be, and how many rows its saved dump holds (`usize::MAX`
/// once retired: never saved again).
#[derive(Default)]
pub(super) struct Ann {
    pub(super) graph: OnceLock<Graph>,
    pub(super) covered: Mutex<usize>,
    pub(super) background: AtomicBool,
    pub(super) source: OnceLock<AnnSource>,
    /// Where a built store keeps the graph: a question that needs it
    /// loads it from there instead of building it.
    pub(super) file: OnceLock<AnnFile>,
    saved: Mutex<usize>,
}

impl Ann {
    /// The count of rows the graph holds, locked: inserts and saves hold
    /// it, so a save never sees half an insert.
    pub(super) fn covered(&self) -> MutexGuard<'_, usize> {
        self.covered.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Saves the ready graph to `file` if it holds more rows than the
    /// last save (`rows` are the memory's rows, `dim` values each).
    /// Returns whether it wrote.
    pub(super) fn save_if_grown(
        &self,
        file: &AnnFile,
        rows: &[f32],
        dim: usize,
    ) -> std::io::Result<bool> {
        let Some(graph) = self.graph.get() else {
            return Ok(false);
        };
        let covered = self.covered();
        let mut saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        if !file.write || *covered <= *saved || rows.len() < *covered * dim {
            return Ok(false);
        }
        save(file, graph, &rows[..*covered * dim], dim)?;
        *saved = *covered;
        Ok(true)
    }

    /// Records that the saved dump holds `rows` rows (unless retired).
    pub(super) fn set_saved(&self, rows: usize) {
        let mut saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        if *saved != usize::MAX {
            *saved = rows;
        }
    }

    /// No save of this graph runs after this returns, nor ever starts:
    /// its rows are no longer the episode's (a forget or a correction).
    pub(super) fn retire(&self) {
        *self.saved.lock().unwrap_or_else(|p| p.into_inner()) = usize::MAX;
    }
}

/// An empty graph for about `n` rows (M = 16, ef_construction = 200).
pub(super) fn new_graph(n: usize) -> Graph {
    Hnsw::new(16, n.max(1), LAYERS, 200, DistCosine)
}

/// A graph over every row of `data` (`dim` values a row).
pub(super) fn build(data: &[f32], dim: usize) -> Graph {
    let n = data.len() / dim.max(1);
    let graph = new_graph(n);
    insert_rows(&graph, data, dim, 0..n);
    graph
}

/// The graph over every row of `data` (`dim` values a row): loaded from
/// `file` if its dump fits the rows (and the rows after the dump's
/// inserted), built otherwise; how it came to be, and how many rows the
/// saved dump holds (0 when built).
pub(super) fn load_or_build(
    file: Option<&AnnFile>,
    data: &[f32],
    dim: usize,
) -> (Graph, AnnSource, usize) {
    let n = data.len() / dim.max(1);
    match file.and_then(|f| load(f, data, dim)) {
        Some((graph, rows)) => {
            insert_rows_checked(&graph, data, dim, rows..n);
            (graph, AnnSource::Loaded, rows)
        }
        None => (build(data, dim), AnnSource::Built, 0),
    }
}

/// Inserts the rows `range` of `data` (`dim` values a row) into `graph`,
/// each under its position.
pub(super) fn insert_rows(graph: &Graph, data: &[f32], dim: usize, range: Range<usize>) {
    for p in range {
        insert(graph, &data[p * dim..(p + 1) * dim], p);
    }
}

/// The smallest `ef` a search of the graph uses.
pub(super) const SEARCH_EF: usize = 200;

/// Times a row added to a finished graph is inserted again when a search
/// for its own vector does not reach it.
const RETRIES: usize = 3;

/// [`insert_rows`] for rows added to a graph already built or loaded (a
/// live append, the rows after a saved dump). hnsw_rs can leave a new
/// point with no neighbour pointing back at it (the neighbours' lists are
/// full and pruned), where no search reaches it: a just-appended step
/// would then be invisible to V. Each row is searched for with its own
/// vector, and inserted again (at most [`RETRIES`] times) until found;
/// the copies share its position, which the search's callers dedup.
pub(super) fn insert_rows_checked(graph: &Graph, data: &[f32], dim: usize, range: Range<usize>) {
    for p in range {
        let row = &data[p * dim..(p + 1) * dim];
        insert(graph, row, p);
        if !indexed(row) {
            continue;
        }
        for _ in 0..RETRIES {
            if graph
                .search(row, 8, SEARCH_EF)
                .iter()
                .any(|nb| nb.d_id == p)
            {
                break;
            }
            graph.insert((row, p));
        }
    }
}

/// Inserts row `p` into `graph`, unless the row is zero: hnsw_rs's cosine
/// puts a zero row at distance 0 from every query, where it would crowd
/// out the real neighbours (its cosine with any question is 0, so the
/// exact re-scoring never ranks it above a row that shares anything).
fn insert(graph: &Graph, row: &[f32], p: usize) {
    if indexed(row) {
        graph.insert((row, p));
    }
}

/// Whether a row goes into the graph (see [`insert`]).
fn indexed(row: &[f32]) -> bool {
    row.iter().any(|x| *x != 0.0)
}

/// A saved index's manifest.
#[derive(Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    /// Rows in the dump (the first `rows` of the episode's).
    rows: usize,
    dim: usize,
    /// [`digest`] of those rows, in hex.
    digest: String,
    /// The dump's file name, without `.hnsw.graph` / `.hnsw.data`.
    basename: String,
    /// [`file_digest`] of the two dump files, in that order: hnsw_rs's
    /// loader is only given files exactly as it wrote them.
    files: [String; 2],
}

/// FNV-1a's step over whole words instead of bytes (fast, and enough to
/// tell a changed file or row from the one saved).
fn fnv(words: impl Iterator<Item = u64>) -> u64 {
    words.fold(0xcbf2_9ce4_8422_2325, |h, w| {
        (h ^ w).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The rows' digest: [`fnv`] over their bits, one value at a time.
fn digest(rows: &[f32]) -> String {
    format!("{:016x}", fnv(rows.iter().map(|x| u64::from(x.to_bits()))))
}

/// A file's digest: [`fnv`] over its bytes eight at a time (then the
/// bytes left one at a time), and its length.
fn file_digest(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    let words = bytes.chunks_exact(8);
    let tail = words.remainder().iter().map(|&b| u64::from(b));
    let words = words.map(|w| {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        u64::from_le_bytes(b)
    });
    Ok(format!("{:016x}-{}", fnv(words.chain(tail)), bytes.len()))
}

fn manifest_path(file: &AnnFile) -> PathBuf {
    file.dir.join(format!("{}.json", file.name))
}

fn read_manifest(path: &Path) -> Option<Manifest> {
    let m: Manifest = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    // The basename names files in the same directory, nothing else.
    (m.format == FORMAT && m.version == VERSION && m.basename.chars().all(plain)).then_some(m)
}

fn dump_files(dir: &Path, basename: &str) -> [PathBuf; 2] {
    ["graph", "data"].map(|ext| dir.join(format!("{basename}.hnsw.{ext}")))
}

/// The saved index in `file`, if its manifest fits `rows` (the memory's
/// rows, `dim` values each) and its dump loads; with the count of rows it
/// holds (the first of `rows`).
pub(super) fn load(file: &AnnFile, rows: &[f32], dim: usize) -> Option<(Graph, usize)> {
    let m = read_manifest(&manifest_path(file))?;
    let values = m.rows.checked_mul(dim)?;
    if m.dim != dim || m.rows == 0 || values > rows.len() || digest(&rows[..values]) != m.digest {
        return None;
    }
    // hnsw_rs's loader trusts its files (it may exit the process or read
    // past a buffer on a damaged one), so it only sees files whose bytes
    // are the ones it wrote.
    let paths = dump_files(&file.dir, &m.basename);
    for (path, want) in paths.iter().zip(&m.files) {
        if file_digest(path).ok().as_ref() != Some(want) {
            return None;
        }
    }
    let (dir, basename) = (file.dir.clone(), m.basename.clone());
    let graph = std::panic::catch_unwind(move || {
        // The loaded graph borrows its loader for its lifetime; the loader
        // (a path and options, no data: the rows are read into the graph)
        // is kept for the process, once per loaded index.
        let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(&dir, &basename)));
        io.load_hnsw::<f32, DistCosine>().ok()
    })
    .ok()??;
    let held = rows[..values]
        .chunks(dim.max(1))
        .filter(|r| indexed(r))
        .count();
    (graph.get_nb_point() == held).then_some((graph, m.rows))
}

/// Saves `graph`, which holds exactly the rows of `rows` (`dim` values
/// each), to `file`: the dump, synced, then the manifest, replaced
/// atomically; the previous dump's files are removed after.
pub(super) fn save(file: &AnnFile, graph: &Graph, rows: &[f32], dim: usize) -> std::io::Result<()> {
    // One save at a time in the process: two saves of one episode (a
    // background build that outlived its snapshot, say) must not write the
    // same dump files at once. Across processes, one handle writes a
    // tenant.
    static SAVING: Mutex<()> = Mutex::new(());
    let _one = SAVING.lock().unwrap_or_else(|p| p.into_inner());
    std::fs::create_dir_all(&file.dir)?;
    let n = rows.len() / dim.max(1);
    let old = read_manifest(&manifest_path(file)).map(|m| m.basename);
    let wanted = format!("{}-{n}", file.name);
    let basename = graph
        .file_dump(&file.dir, &wanted)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let paths = dump_files(&file.dir, &basename);
    for path in &paths {
        File::open(path)?.sync_all()?;
    }
    let files = [file_digest(&paths[0])?, file_digest(&paths[1])?];
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        rows: n,
        dim,
        digest: digest(rows),
        basename: basename.clone(),
        files,
    };
    let text = serde_json::to_string(&manifest).map_err(std::io::Error::other)?;
    crate::durable::write_synced(&manifest_path(file), text.as_bytes())?;
    if let Some(old) = old.filter(|o| *o != basename) {
        for p in dump_files(&file.dir, &old) {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

/// Removes `file`'s saved index (its manifest first, then the dump), if
/// there is one.
pub fn remove(file: &AnnFile) -> std::io::Result<()> {
    let path = manifest_path(file);
    let Some(m) = read_manifest(&path) else {
        return remove_if_there(&path);
    };
    remove_if_there(&path)?;
    for p in dump_files(&file.dir, &m.basename) {
        remove_if_there(&p)?;
    }
    Ok(())
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes from `dir` every file that is not the manifest of a name in
/// `keep` or the dump such a manifest names: the indexes of episodes that
/// are gone, and what an interrupted save left.
pub fn clean(dir: &Path, keep: &HashSet<String>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    let mut kept: HashSet<String> = HashSet::new();
    for name in keep {
        if let Some(m) = read_manifest(&dir.join(format!("{name}.json"))) {
            kept.insert(format!("{name}.json"));
            let files = dump_files(dir, &m.basename);
            kept.extend(
                files
                    .iter()
                    .filter_map(|p| p.file_name()?.to_str().map(String::from)),
            );
        }
    }
    for entry in entries {
        let entry = entry?;
        if !kept.contains(entry.file_name().to_string_lossy().as_ref()) {
            remove_if_there(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{game_episode, Dense};
    use super::super::{Evidence, MemoryStructure, Query, StepTexts, Vector};
    use super::*;
    use crate::config::Config;
    use crate::dataset::Episode;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn config() -> Config {
        Config {
            vector_hnsw_threshold: 100,
            ..Config::default()
        }
    }

    fn vector(e: &Episode) -> Vector {
        let steps = Arc::new(StepTexts::build(&e.steps, config().evidence_text_bytes));
        Vector::build(steps, Arc::new(Dense), &config()).unwrap()
    }

    /// The graph made in the background from `file`, once it is ready.
    fn ready(v: &Vector, file: &AnnFile) -> AnnSource {
        v.index_in_background(Some(file.clone()));
        wait_until("ready", || v.ann_source().is_some());
        v.ann_source().unwrap()
    }

    /// A graph over `v`'s first `n` rows.
    fn graph_over(v: &Vector, n: usize) -> Graph {
        build(&v.data()[..n * 16], 16)
    }

    /// A directory holding the saved graph over all the rows of a game
    /// episode of `n` steps.
    fn saved(n: usize) -> (tempfile::TempDir, AnnFile, Vector, Graph) {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        let v = vector(&game_episode(n));
        let graph = graph_over(&v, n);
        save(&f, &graph, &v.data(), 16).unwrap();
        (dir, f, v, graph)
    }

    /// Waits (at most a minute) until `ok`.
    fn wait_until(what: &str, ok: impl Fn() -> bool) {
        let start = Instant::now();
        while !ok() {
            assert!(start.elapsed() < Duration::from_secs(60), "never {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn file(dir: &Path) -> AnnFile {
        AnnFile {
            dir: dir.join("ann"),
            name: "e1".into(),
            write: true,
        }
    }

    fn asked(v: &Vector) -> Vec<Evidence> {
        [
            "The door 2 is locked",
            "pick up the key",
            "a wall 3 steps north",
        ]
        .iter()
        .map(|q| v.retrieve(&Query::new(q)).unwrap())
        .collect()
    }

    /// Saved once built, loaded by the next memory over the same rows, and
    /// answering as the built graph does (the same graph).
    #[test]
    fn a_saved_graph_loads_and_answers_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let (e, f) = (game_episode(300), file(dir.path()));
        let built = vector(&e);
        assert_eq!(ready(&built, &f), AnnSource::Built);
        // The save follows the build on the same thread.
        wait_until("saved", || f.dir.join("e1.json").is_file());
        let loaded = vector(&e);
        assert_eq!(ready(&loaded, &f), AnnSource::Loaded);
        assert_eq!(asked(&built), asked(&loaded));
        // A reader loads but does not save.
        let reader = AnnFile {
            write: false,
            ..f.clone()
        };
        assert_eq!(ready(&vector(&e), &reader), AnnSource::Loaded);
    }

    /// A longer episode with the same first rows loads the saved graph and
    /// inserts the rest; other rows, or a damaged dump, are built over.
    #[test]
    fn only_the_same_rows_load_and_damage_is_rebuilt_over() {
        let (_dir, f, first, graph) = saved(200);
        // Longer, same prefix: loaded, and the new rows are found.
        let longer = vector(&game_episode(260));
        assert_eq!(ready(&longer, &f), AnnSource::Loaded);
        // Its background thread then saves the 260 rows; wait for that.
        wait_until("saved", || load(&f, &longer.data(), 16).is_some());
        let q = Query::new("You see a wall 4 steps to the north.");
        let exact =
            Vector::build(longer.steps.clone(), Arc::new(Dense), &Config::default()).unwrap();
        assert_eq!(
            longer.retrieve(&q).unwrap().items[0].score,
            exact.retrieve(&q).unwrap().items[0].score
        );
        // A changed row: built over.
        save(&f, &graph, &first.data(), 16).unwrap();
        let mut other = game_episode(200);
        other.steps[7].observation = "something else entirely".into();
        let other = vector(&other);
        assert_eq!(ready(&other, &f), AnnSource::Built);
        wait_until("saved", || load(&f, &other.data(), 16).is_some());
        // Damaged dump files under a manifest that fits: built over (no
        // panic), and saved again, so the next opening loads.
        save(&f, &graph, &first.data(), 16).unwrap();
        let m = read_manifest(&manifest_path(&f)).unwrap();
        for p in dump_files(&f.dir, &m.basename) {
            std::fs::write(p, b"damaged").unwrap();
        }
        assert_eq!(ready(&vector(&game_episode(200)), &f), AnnSource::Built);
        wait_until("saved", || load(&f, &first.data(), 16).is_some());
        assert_eq!(ready(&vector(&game_episode(200)), &f), AnnSource::Loaded);
    }

    #[test]
    fn remove_and_clean_leave_only_what_a_manifest_names() {
        let (_dir, f, v, graph) = saved(150);
        let g = AnnFile {
            name: "e2".into(),
            ..f.clone()
        };
        save(&g, &graph, &v.data(), 16).unwrap();
        std::fs::write(f.dir.join("e3-9.hnsw.graph"), b"left by a crash").unwrap();
        let names = |d: &Path| {
            let mut n: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(&f.dir).len(), 7);
        clean(&f.dir, &HashSet::from(["e1".to_string()])).unwrap();
        assert_eq!(
            names(&f.dir),
            ["e1-150.hnsw.data", "e1-150.hnsw.graph", "e1.json"]
        );
        remove(&f).unwrap();
        assert!(names(&f.dir).is_empty());
        remove(&f).unwrap();
    }

    /// A loaded graph takes inserts: every row added after the load is
    /// found as its own nearest row, as in the graph it was saved from.
    #[test]
    fn a_loaded_graph_takes_inserts() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        let v = vector(&game_episode(200));
        let data = v.data();
        let row = |p: usize| &data[p * 16..(p + 1) * 16];
        let graph = graph_over(&v, 150);
        save(&f, &graph, &v.data()[..150 * 16], 16).unwrap();
        let (back, rows) = load(&f, &v.data(), 16).unwrap();
        assert_eq!(rows, 150);
        insert_rows(&back, &v.data(), 16, 150..200);
        for p in 150..200 {
            let best = back.search(row(p), 5, 64)[0].d_id;
            // Rows may repeat (the fixture's texts do); the best is one
            // with the same vector.
            assert_eq!(row(best), row(p), "row {p}");
        }
    }

    /// A checked insert leaves every added row reachable by a search for
    /// its own vector, on a loaded graph and on a freshly built one.
    #[test]
    fn checked_inserts_are_found_by_their_own_vector() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        let v = vector(&game_episode(400));
        let data = v.data();
        let row = |p: usize| &data[p * 16..(p + 1) * 16];
        let graph = graph_over(&v, 100);
        save(&f, &graph, &v.data()[..100 * 16], 16).unwrap();
        let (back, _) = load(&f, &v.data(), 16).unwrap();
        for g in [&back, &graph] {
            insert_rows_checked(g, &data, 16, 100..400);
            for p in 100..400 {
                let found = g.search(row(p), 8, SEARCH_EF);
                assert!(found.iter().any(|nb| nb.d_id == p), "row {p}");
            }
        }
    }

    /// Zero rows stay out of the graph: at distance 0 from everything,
    /// they would be every question's nearest.
    #[test]
    fn zero_rows_are_left_out() {
        let rows: Vec<f32> = (0..100)
            .flat_map(|p| match p % 2 {
                0 => vec![0.0; 4],
                _ => vec![1.0, p as f32, 0.5, -(p as f32)],
            })
            .collect();
        let g = build(&rows, 4);
        assert_eq!(g.get_nb_point(), 50);
        let found = g.search(&rows[37 * 4..38 * 4], 5, 64);
        assert!(found.iter().all(|nb| nb.d_id % 2 == 1), "{found:?}");
    }

    /// A retired graph is never saved, whatever it grows to.
    #[test]
    fn a_retired_graph_is_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path());
        let v = vector(&game_episode(150));
        v.retire_ann();
        assert_eq!(ready(&v, &f), AnnSource::Built);
        assert!(!v.save_ann(&f).unwrap());
        assert!(!f.dir.join("e1.json").exists());
    }
}
