//! The store's files: JSON written and read whole, directories synced so
//! that a finished build survives a crash, and one episode's structures
//! written to its folder.

use super::*;

pub(super) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let file = File::create(path).map_err(io(path))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer(&mut w, value).map_err(|e| corrupt(path, e))?;
    w.flush().map_err(io(path))?;
    w.get_ref().sync_all().map_err(io(path))
}

pub(super) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, StoreError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    serde_json::from_slice(&bytes).map_err(|source| StoreError::Json {
        path: path.display().to_string(),
        source,
    })
}

/// Whether a build may replace `out_dir`: it is new, empty, or a store
/// holding nothing but its manifest and episodes.
pub(super) fn check_replaceable(out_dir: &Path) -> Result<(), StoreError> {
    if !out_dir.exists() {
        return Ok(());
    }
    let dir = out_dir.display().to_string();
    let Ok(entries) = std::fs::read_dir(out_dir) else {
        return Err(StoreError::NotReplaceable { dir });
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    if !out_dir.join(MANIFEST).is_file() {
        return Err(StoreError::NotReplaceable { dir });
    }
    names.retain(|n| n != MANIFEST && n != "episodes");
    if names.is_empty() {
        return Ok(());
    }
    names.sort();
    let shown: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    let more = names.len().saturating_sub(shown.len());
    let entries = match more {
        0 => shown.join(", "),
        n => format!("{} and {n} more", shown.join(", ")),
    };
    Err(StoreError::HoldsOtherFiles { dir, entries })
}

pub(super) fn sync_dir(path: &Path) -> Result<(), StoreError> {
    File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(io(path))
}

pub(super) fn sync_tree(path: &Path) -> Result<(), StoreError> {
    for entry in std::fs::read_dir(path).map_err(io(path))? {
        let entry = entry.map_err(io(path))?;
        if entry.file_type().map_err(io(path))?.is_dir() {
            sync_tree(&entry.path())?;
        }
    }
    sync_dir(path)
}

pub(super) fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

/// Where an episode's HNSW graph is saved (past the threshold, for an
/// embedder that is not the built-in hashed one): `ann/v.json` and the
/// dump's files beside it, in the episode's directory.
pub(super) fn ann_file(dir: &Path, write: bool) -> AnnFile {
    AnnFile {
        dir: dir.join("ann"),
        name: "v".into(),
        write,
    }
}

/// Writes one built episode into `dir` (the raw index is already there).
pub(super) fn write_episode(
    dir: &Path,
    memory: &EpisodeMemory,
    steps: &StepTexts,
) -> Result<(), StoreError> {
    write_json(
        &dir.join("episode.json"),
        &EpisodeFile {
            episode: (*memory.episode).clone(),
            step_tokens: steps.tokens.clone(),
        },
    )?;
    write_json(
        &dir.join("summary.json"),
        &SummaryFile {
            lines: memory.summary.lines().to_vec(),
            tokens: memory.summary.tokens(),
        },
    )?;
    write_json(&dir.join("graph.json"), &memory.graph.relation_graph())?;
    let v = dir.join("vectors.bin");
    vectors::write(&v, memory.vector.dim(), &memory.vector.data()).map_err(io(&v))?;
    let ann = ann_file(dir, true);
    memory.vector.index_and_save(&ann).map_err(io(&ann.dir))?;
    write_json(&dir.join("windows.json"), &memory.raw.windows())?;
    Ok(())
}
