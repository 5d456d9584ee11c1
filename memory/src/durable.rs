//! Replacing a small file so that a crash leaves the old one or the new
//! one, never part of either: the one way the live memory's marker and V's
//! saved-graph manifests are written.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` over `path` through [`replace`]: a sibling of this call's
/// own, synced, renamed over `path`, the directory synced. Two processes
/// writing the same file at once each rename a whole file of their own.
pub fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, |out, _| out.write_all(bytes), |e, _| e)
}

/// Whether `name` is a sibling that [`replace`] writes before its rename
/// over `file` (one a crash may leave behind).
pub fn is_part_of(name: &std::ffi::OsStr, file: &str) -> bool {
    name.to_str()
        .is_some_and(|n| n.starts_with(&format!(".{file}.part-")))
}

/// Writes the file at `path` through `fill`, into a sibling made for this
/// call alone (created new, so two calls never share one), syncs it,
/// renames it over `path` and syncs the directory: readers see the old
/// file or the whole new one. If `fill`, the sync or the rename fails (or
/// `fill` panics), the sibling is removed and `path` is left as it was; a
/// directory that cannot be synced after the rename is an error with the
/// new file in place. `io` makes an I/O error (on the path it names) the
/// caller's error.
pub fn replace<T, E>(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<File>, &Path) -> Result<T, E>,
    io: impl Fn(std::io::Error, &Path) -> E,
) -> Result<T, E> {
    /// Removes the sibling unless the rename took it.
    struct Part(Option<std::path::PathBuf>);
    impl Drop for Part {
        fn drop(&mut self) {
            if let Some(p) = self.0.take() {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    let (part, file) = sibling(path).map_err(|(e, part)| io(e, &part))?;
    let mut guard = Part(Some(part.clone()));
    let mut out = std::io::BufWriter::new(file);
    let done = fill(&mut out, &part)?;
    let file = out.into_inner().map_err(|e| io(e.into_error(), &part))?;
    file.sync_all().map_err(|e| io(e, &part))?;
    std::fs::rename(&part, path).map_err(|e| io(e, path))?;
    guard.0 = None;
    // A bare file name's directory is the working one.
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(e, parent))?;
    Ok(done)
}

/// A new sibling of `path` for one [`replace`]: named by the process, the
/// time and a count, so neither a process of the same id (a container's
/// PID 1 after a restart) nor one a crash interrupted collides with it;
/// a name that exists all the same is passed over for the next.
fn sibling(
    path: &Path,
) -> Result<(std::path::PathBuf, File), (std::io::Error, std::path::PathBuf)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut tries = 0;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let part = path.with_file_name(format!(".{name}.part-{}-{nanos}-{n}", std::process::id()));
        match File::options().write(true).create_new(true).open(&part) {
            Ok(file) => return Ok((part, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
            Err(e) => return Err((e, part)),
        }
    }
}
