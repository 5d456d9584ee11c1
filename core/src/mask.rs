//! Structures and masks: which of the five memory structures a policy reads.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One of the five memory structures, in their fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Structure {
    /// S: the episode summary.
    Summary = 0,
    /// T: the turn-indexed temporal store.
    Temporal = 1,
    /// G: the knowledge graph.
    Graph = 2,
    /// V: the vector index.
    Vector = 3,
    /// R: raw episodic windows.
    Raw = 4,
}

impl Structure {
    /// All five, in mask-bit order.
    pub const ALL: [Structure; 5] = [
        Structure::Summary,
        Structure::Temporal,
        Structure::Graph,
        Structure::Vector,
        Structure::Raw,
    ];

    /// Bit index in a mask (0..5).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The one-letter name (`S T G V R`).
    pub fn letter(self) -> char {
        ['S', 'T', 'G', 'V', 'R'][self.index()]
    }

    /// The long name (`summary temporal graph vector raw`).
    pub fn long_name(self) -> &'static str {
        ["summary", "temporal", "graph", "vector", "raw"][self.index()]
    }

    /// Reads a letter or long name, ASCII case-insensitively for long names.
    /// Letters must be upper case (`S`, not `s`).
    pub fn from_name(name: &str) -> Option<Structure> {
        Structure::ALL.into_iter().find(|s| {
            name.len() == 1 && name.starts_with(s.letter())
                || name.eq_ignore_ascii_case(s.long_name())
        })
    }

    /// Every accepted spelling, for "did you mean" suggestions.
    pub fn spellings() -> impl Iterator<Item = &'static str> {
        [
            "S", "T", "G", "V", "R", "summary", "temporal", "graph", "vector", "raw",
        ]
        .into_iter()
    }
}

/// A set of structures: bit i is `Structure::ALL[i]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Mask(u8);

impl Mask {
    /// No structure.
    pub const EMPTY: Mask = Mask(0);
    /// All five structures.
    pub const ALL: Mask = Mask(0b11111);

    /// The mask with these bits; bits above 4 are dropped.
    pub fn from_bits(bits: u8) -> Mask {
        Mask(bits & 0b11111)
    }

    /// The mask's bits (0..32).
    pub fn bits(self) -> u8 {
        self.0
    }

    /// The mask with just `s`.
    pub fn single(s: Structure) -> Mask {
        Mask(1 << s.index())
    }

    /// Whether `s` is in the mask.
    pub fn contains(self, s: Structure) -> bool {
        self.0 & (1 << s.index()) != 0
    }

    /// How many structures.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether no structure is in the mask.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Union.
    pub fn union(self, other: Mask) -> Mask {
        Mask(self.0 | other.0)
    }

    /// Difference: `self` without `other`.
    pub fn without(self, other: Mask) -> Mask {
        Mask(self.0 & !other.0)
    }

    /// Adds one structure.
    pub fn with(self, s: Structure) -> Mask {
        Mask(self.0 | (1 << s.index()))
    }

    /// The structures in the mask, in order.
    pub fn iter(self) -> impl Iterator<Item = Structure> {
        Structure::ALL
            .into_iter()
            .filter(move |s| self.contains(*s))
    }

    /// The letters, e.g. `["S", "T"]`.
    pub fn letters(self) -> Vec<String> {
        self.iter().map(|s| s.letter().to_string()).collect()
    }

    /// How many non-empty masks there are: the length of the per-subset
    /// arrays of a sweep record, indexed by [`Mask::subset_index`].
    pub const SUBSETS: usize = 31;

    /// The non-empty mask at index `k` of the per-subset arrays (`k` in
    /// `0..31`; the mask's bits are `k + 1`).
    pub fn subset(k: usize) -> Mask {
        Mask::from_bits((k + 1) as u8)
    }

    /// This mask's index in the per-subset arrays; `None` for the empty mask.
    pub fn subset_index(self) -> Option<usize> {
        (!self.is_empty()).then(|| usize::from(self.0) - 1)
    }

    /// The 31 non-empty masks, in index order.
    pub fn subsets() -> impl Iterator<Item = Mask> {
        (0..Mask::SUBSETS).map(Mask::subset)
    }
}

/// Why a text is not a set of structures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MaskError {
    /// A name is not one of the structures.
    #[error("unknown structure `{0}` (structures are S, T, G, V, R, or their long names; `all` for the five)")]
    UnknownStructure(String),
    /// No structure is named.
    #[error("name at least one structure, e.g. `S,T` or `all`")]
    Empty,
    /// `all` among other names.
    #[error("`all` stands alone: give `all` for the five, or list the structures (e.g. `S,T`)")]
    AllInList,
}

impl FromStr for Mask {
    type Err = MaskError;

    /// `S,T`, `{S, T}`, `summary,raw` or `all`; at least one structure.
    fn from_str(text: &str) -> Result<Mask, MaskError> {
        let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
        if inner.trim().eq_ignore_ascii_case("all") {
            return Ok(Mask::ALL);
        }
        let mut mask = Mask::EMPTY;
        for name in inner.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name.eq_ignore_ascii_case("all") {
                return Err(MaskError::AllInList);
            }
            let s = Structure::from_name(name)
                .ok_or_else(|| MaskError::UnknownStructure(name.to_string()))?;
            mask = mask.with(s);
        }
        if mask.is_empty() {
            return Err(MaskError::Empty);
        }
        Ok(mask)
    }
}

impl fmt::Display for Mask {
    /// `{S, T, R}`; the empty mask is `{}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, s) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", s.letter())?;
        }
        f.write_str("}")
    }
}

impl Serialize for Structure {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_char(self.letter())
    }
}

impl<'de> Deserialize<'de> for Structure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Structure::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown structure `{name}` (structures are S, T, G, V, R)"
            ))
        })
    }
}

impl<'de> Deserialize<'de> for Mask {
    /// Reads the letters form written by `Serialize`: `["S", "T"]`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<Structure>::deserialize(d)?;
        Ok(names.into_iter().fold(Mask::EMPTY, Mask::with))
    }
}

impl Serialize for Mask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.letters().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_display() {
        assert_eq!(Structure::from_name("S"), Some(Structure::Summary));
        assert_eq!(Structure::from_name("Raw"), Some(Structure::Raw));
        assert_eq!(Structure::from_name("s"), None);
        assert_eq!(Structure::from_name("X"), None);
        let m = Mask::EMPTY.with(Structure::Summary).with(Structure::Raw);
        assert_eq!(m.to_string(), "{S, R}");
        assert_eq!(m.bits(), 0b10001);
        assert_eq!(Mask::EMPTY.to_string(), "{}");
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(json, r#"["S","R"]"#);
        assert_eq!(serde_json::from_str::<Mask>(&json).unwrap(), m);
        assert!(serde_json::from_str::<Mask>(r#"["X"]"#).is_err());
    }

    #[test]
    fn parsing_and_subsets() {
        let st = Mask::EMPTY
            .with(Structure::Summary)
            .with(Structure::Temporal);
        assert_eq!("S,T".parse::<Mask>(), Ok(st));
        assert_eq!("{S, T}".parse::<Mask>(), Ok(st));
        assert_eq!(" summary , temporal ".parse::<Mask>(), Ok(st));
        assert_eq!("all".parse::<Mask>(), Ok(Mask::ALL));
        assert_eq!("{ALL}".parse::<Mask>(), Ok(Mask::ALL));
        assert_eq!("S,S,all".parse::<Mask>(), Err(MaskError::AllInList));
        assert_eq!("".parse::<Mask>(), Err(MaskError::Empty));
        assert_eq!("{}".parse::<Mask>(), Err(MaskError::Empty));
        assert_eq!(
            "S,X".parse::<Mask>(),
            Err(MaskError::UnknownStructure("X".into()))
        );
        for m in Mask::subsets() {
            assert_eq!(m.to_string().parse::<Mask>(), Ok(m));
            assert_eq!(Mask::subset(m.subset_index().unwrap()), m);
        }
        assert_eq!(Mask::subset(0), Mask::from_bits(1));
        assert_eq!(Mask::subset(30), Mask::ALL);
        assert_eq!(Mask::EMPTY.subset_index(), None);
        assert_eq!(Mask::subsets().count(), Mask::SUBSETS);
    }
}
