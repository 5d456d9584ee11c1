//! Little-endian values as bytes: the one encoding of vectors the store
//! files, the live database's step rows and the persisted states share, and
//! of the persisted states' integer arrays.

/// `xs` as little-endian bytes, four per value.
pub fn f32s_to_le(xs: &[f32]) -> Vec<u8> {
    to_le(xs, f32::to_le_bytes)
}

/// Appends `xs` to `out` as little-endian bytes, four per value.
pub fn extend_le(out: &mut Vec<u8>, xs: &[f32]) {
    out.reserve(xs.len() * 4);
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// The values of little-endian `bytes`; `None` if they are not whole
/// four-byte values.
pub fn f32s_from_le(bytes: &[u8]) -> Option<Vec<f32>> {
    from_le(bytes, f32::from_le_bytes)
}

/// `xs` as little-endian bytes, four per value.
pub fn u32s_to_le(xs: &[u32]) -> Vec<u8> {
    to_le(xs, u32::to_le_bytes)
}

/// The values of little-endian `bytes`; `None` if they are not whole
/// four-byte values.
pub fn u32s_from_le(bytes: &[u8]) -> Option<Vec<u32>> {
    from_le(bytes, u32::from_le_bytes)
}

/// `xs` as little-endian bytes, eight per value.
pub fn u64s_to_le(xs: &[u64]) -> Vec<u8> {
    to_le(xs, u64::to_le_bytes)
}

/// The values of little-endian `bytes`; `None` if they are not whole
/// eight-byte values.
pub fn u64s_from_le(bytes: &[u8]) -> Option<Vec<u64>> {
    from_le(bytes, u64::from_le_bytes)
}

/// `xs` as bytes, `N` per value by `to`.
fn to_le<T: Copy, const N: usize>(xs: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(xs.len() * N);
    for &x in xs {
        out.extend_from_slice(&to(x));
    }
    out
}

/// The values of `bytes`, `N` per value by `from`; `None` if they are not
/// whole values. The output is allocated once at its length and filled in
/// one pass (collecting into an `Option<Vec>` does not know the length, and
/// grew the vector by doubling: a third of an opening's time went there).
fn from_le<T, const N: usize>(bytes: &[u8], from: fn([u8; N]) -> T) -> Option<Vec<T>> {
    if !bytes.len().is_multiple_of(N) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / N);
    // `chunks_exact` gives `N` bytes each time, so the conversion never
    // falls back to zeros.
    out.extend(
        bytes
            .chunks_exact(N)
            .map(|c| from(<[u8; N]>::try_from(c).unwrap_or([0; N]))),
    );
    Some(out)
}

/// Serializes bytes as one byte string (serde writes a `&[u8]` as a
/// sequence of values otherwise; postcard encodes both the same, but a byte
/// string is written at once), for `#[serde(serialize_with = ...)]`.
pub fn as_bytes<S: serde::Serializer>(bytes: &&[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_ragged() {
        let xs = [0.0, -1.5, f32::MAX, f32::NAN, 1e-30];
        let back = f32s_from_le(&f32s_to_le(&xs)).unwrap();
        assert_eq!(back.len(), xs.len());
        assert!(xs
            .iter()
            .zip(&back)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(f32s_from_le(&[1, 2, 3]), None);
        assert_eq!(f32s_from_le(&[]), Some(vec![]));
        let (a, b) = ([0, 7, u32::MAX], [1, u64::MAX, 1 << 40]);
        assert_eq!(u32s_from_le(&u32s_to_le(&a)).unwrap(), a);
        assert_eq!(u64s_from_le(&u64s_to_le(&b)).unwrap(), b);
        assert_eq!(u32s_from_le(&[1, 2]), None);
        assert_eq!(u64s_from_le(&[0; 12]), None);
    }
}
