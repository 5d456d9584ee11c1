//! Strings numbered 0, 1, … as added (G's entity names and its relations'
//! vocabulary), kept as one text buffer with the end of each string: one
//! allocation however many there are, persisted as it is and read back
//! with one copy and one check, not one allocation per string.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Numbered strings (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Names {
    text: String,
    /// Where each string ends in `text`.
    ends: Vec<usize>,
}

impl Names {
    /// How many strings there are.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Adds `s` as the next string.
    pub(super) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    /// String `i` (empty if there is none).
    pub(super) fn get(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            None => Some(0),
            Some(p) => self.ends.get(p).copied(),
        };
        let end = self.ends.get(i).copied();
        start
            .zip(end)
            .and_then(|(start, end)| self.text.get(start..end))
            .unwrap_or("")
    }

    /// Every string, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// How [`Names`] is stored: the text, then the ends as little-endian
/// `u32`s (a graph's names over 4 GiB do not serialize, and its memory is
/// then rebuilt from the steps when it is opened).
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    #[serde(borrow)]
    text: &'a str,
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    ends: &'a [u8],
}

impl Serialize for Names {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ends: Result<Vec<u32>, _> = self.ends.iter().map(|&e| u32::try_from(e)).collect();
        let ends = ends.map_err(|_| serde::ser::Error::custom("names over 4 GiB"))?;
        Stored {
            text: &self.text,
            ends: &crate::le::u32s_to_le(&ends),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Names, D::Error> {
        let s = Stored::deserialize(d)?;
        let bad = || D::Error::custom("a name list's ends are not increasing character boundaries");
        let ends = crate::le::u32s_from_le(s.ends).ok_or_else(bad)?;
        let ends: Vec<usize> = ends.into_iter().map(|e| e as usize).collect();
        if !crate::text::cuts_whole(s.text, &ends) {
            return Err(bad());
        }
        Ok(Names {
            text: s.text.to_string(),
            ends,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_round_trip_and_damage_refused() {
        let mut n = Names::default();
        for s in ["agent", "", "söup 1", "x"] {
            n.push(s);
        }
        assert_eq!(n.len(), 4);
        assert_eq!(n.iter().collect::<Vec<_>>(), ["agent", "", "söup 1", "x"]);
        assert_eq!(n.get(9), "");
        let bytes = postcard::to_stdvec(&n).unwrap();
        assert_eq!(postcard::from_bytes::<Names>(&bytes).unwrap(), n);
        // An end inside `ö` and ends past the text are refused.
        let stored = |text: &str, ends: &[u32]| {
            let ends = crate::le::u32s_to_le(ends);
            postcard::to_stdvec(&Stored { text, ends: &ends }).unwrap()
        };
        for (text, ends) in [
            ("sö", &[2u32][..]),
            ("ab", &[1, 3]),
            ("ab", &[2, 1]),
            ("ab", &[1]),
        ] {
            let err = postcard::from_bytes::<Names>(&stored(text, ends));
            assert!(err.is_err(), "{text:?} {ends:?}");
        }
    }
}
