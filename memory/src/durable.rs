//! Replacing a small file so that a crash leaves the old one or the new
//! one, never part of either: the one way the live memory's marker and V's
//! saved-graph manifests are written.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to a sibling `.tmp` file, syncs it, renames it over
/// `path` and syncs the directory.
pub fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}
