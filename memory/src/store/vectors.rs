//! `vectors.bin`: an episode's step embeddings.
//!
//! Layout (all little-endian): the 8 magic bytes `MESAVEC1`, a `u32` layout
//! version (1), a `u32` dimension `d`, a `u64` row count `n`, then `n * d`
//! `f32`s, row by row (row i is the step at position i). 24 bytes of header.

use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"MESAVEC1";
const VERSION: u32 = 1;
const HEADER: usize = 24;

/// Writes the vectors and syncs the file.
pub fn write(path: &Path, dim: usize, data: &[f32]) -> std::io::Result<()> {
    let rows = data.len().checked_div(dim).unwrap_or(0);
    let mut bytes = Vec::with_capacity(HEADER + data.len() * 4);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(dim as u32).to_le_bytes());
    bytes.extend_from_slice(&(rows as u64).to_le_bytes());
    crate::le::extend_le(&mut bytes, data);
    let mut f = std::fs::File::create(path)?;
    f.write_all(&bytes)?;
    f.sync_all()
}

/// Reads vectors: `(dim, data)`, or a message saying what is wrong.
pub fn read(path: &Path) -> Result<(usize, Vec<f32>), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err("not a vectors file (bad magic)".into());
    }
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let version = u32_at(8);
    if version != VERSION {
        return Err(format!(
            "vectors layout version {version}, expected {VERSION}"
        ));
    }
    let dim = u32_at(12) as usize;
    let mut rows = [0u8; 8];
    rows.copy_from_slice(&bytes[16..24]);
    let rows = u64::from_le_bytes(rows);
    let want = usize::try_from(rows)
        .ok()
        .and_then(|r| r.checked_mul(dim))
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| n.checked_add(HEADER));
    if want != Some(bytes.len()) {
        return Err(format!(
            "{rows} rows of dimension {dim} do not fit a file of {} bytes",
            bytes.len()
        ));
    }
    // The length check above makes the rest whole values.
    let data = crate::le::f32s_from_le(&bytes[HEADER..]).unwrap_or_default();
    Ok((dim, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.bin");
        write(&p, 3, &[1.0, -2.5, 0.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!(read(&p).unwrap(), (3, vec![1.0, -2.5, 0.0, 4.0, 5.0, 6.0]));
        let mut bytes = std::fs::read(&p).unwrap();
        bytes.pop();
        std::fs::write(&p, &bytes).unwrap();
        assert!(read(&p).unwrap_err().contains("do not fit"));
        std::fs::write(&p, b"garbage").unwrap();
        assert!(read(&p).unwrap_err().contains("magic"));
    }
}
