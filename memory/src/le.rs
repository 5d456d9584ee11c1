//! Little-endian `f32` rows as bytes: the one encoding of vectors the store
//! files, the live database's step rows and the persisted states share.

/// `xs` as little-endian bytes, four per value.
pub fn f32s_to_le(xs: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(xs.len() * 4);
    extend_le(&mut out, xs);
    out
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
    bytes.len().is_multiple_of(4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// `xs` as little-endian bytes, four per value.
pub fn u32s_to_le(xs: &[u32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The values of little-endian `bytes`; `None` if they are not whole
/// four-byte values.
pub fn u32s_from_le(bytes: &[u8]) -> Option<Vec<u32>> {
    bytes.len().is_multiple_of(4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// `xs` as little-endian bytes, eight per value.
pub fn u64s_to_le(xs: &[u64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The values of little-endian `bytes`; `None` if they are not whole
/// eight-byte values.
pub fn u64s_from_le(bytes: &[u8]) -> Option<Vec<u64>> {
    bytes.len().is_multiple_of(8).then(|| {
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect()
    })
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
