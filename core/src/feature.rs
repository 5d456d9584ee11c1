//! Preview features: what a policy may read about a structure's evidence
//! before it is selected.
//!
//! Seven features describe one structure's evidence (`tokens`, `top`,
//! `hits`, `steps`, `gap`, `share`, `named`) and one describes a pair
//! (`overlap_K`, the overlap of the steps two structures show; symmetric,
//! so `preview.T.overlap_R` and `preview.R.overlap_T` are one value and a
//! key is kept in the canonical order, the earlier structure first).

use crate::input::InputError;
use crate::Structure;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A preview feature, read in a policy as `preview.K.feature`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// Evidence tokens the structure would add.
    Tokens = 0,
    /// Best normalized retrieval score.
    Top = 1,
    /// Number of hits.
    Hits = 2,
    /// Number of distinct steps the evidence shows.
    Steps = 3,
    /// The best item's lead over the second: `(best - second) / best`
    /// (1 with one item, 0 with none).
    Gap = 4,
    /// The best item's share of all item scores: `best / sum` (0 with no
    /// scored item).
    Share = 5,
    /// The share of the steps the question names (by number or by time)
    /// that the evidence shows; -1 when it names no step of the episode.
    Named = 6,
    /// Overlap (Jaccard) of the shown steps with S's.
    OverlapS = 7,
    /// Overlap with T's.
    OverlapT = 8,
    /// Overlap with G's.
    OverlapG = 9,
    /// Overlap with V's.
    OverlapV = 10,
    /// Overlap with R's.
    OverlapR = 11,
}

impl Feature {
    /// How many features there are.
    pub const COUNT: usize = 12;

    /// All of them, in order.
    pub const ALL: [Feature; Feature::COUNT] = [
        Feature::Tokens,
        Feature::Top,
        Feature::Hits,
        Feature::Steps,
        Feature::Gap,
        Feature::Share,
        Feature::Named,
        Feature::OverlapS,
        Feature::OverlapT,
        Feature::OverlapG,
        Feature::OverlapV,
        Feature::OverlapR,
    ];

    /// The three features of the first language version (a host that
    /// computes only these serves every policy that reads no other).
    pub const BASIC: [Feature; 3] = [Feature::Tokens, Feature::Top, Feature::Hits];

    /// The position in [`Feature::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The feature's name as written after `preview.K.`.
    pub fn name(self) -> &'static str {
        [
            "tokens",
            "top",
            "hits",
            "steps",
            "gap",
            "share",
            "named",
            "overlap_S",
            "overlap_T",
            "overlap_G",
            "overlap_V",
            "overlap_R",
        ][self.index()]
    }

    /// Reads a feature name; an overlap's structure may be a letter or a
    /// long name (`overlap_R`, `overlap_raw`).
    pub fn from_name(name: &str) -> Option<Feature> {
        if let Some(other) = name.strip_prefix("overlap_") {
            return Structure::from_name(other).map(Feature::overlap);
        }
        Feature::ALL[..7].iter().copied().find(|f| f.name() == name)
    }

    /// The overlap with `other`'s shown steps.
    pub fn overlap(other: Structure) -> Feature {
        Feature::ALL[7 + other.index()]
    }

    /// The other structure of an overlap.
    pub fn partner(self) -> Option<Structure> {
        self.index().checked_sub(7).map(|i| Structure::ALL[i])
    }

    /// Every name, for "did you mean" suggestions and help texts.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Feature::ALL.into_iter().map(Feature::name)
    }
}

impl Serialize for Feature {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Feature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Feature::from_name(&text)
            .ok_or_else(|| serde::de::Error::custom(InputError::UnknownFeature(text)))
    }
}

/// One preview a policy can read, `preview.K.feature`: written and
/// serialized as `"R.tokens"`. Ordered by structure, then feature. An
/// overlap is kept with the earlier structure first ([`PreviewKey::new`]
/// swaps), and a structure's overlap with itself is no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PreviewKey {
    /// The structure previewed.
    pub structure: Structure,
    /// What is previewed.
    pub feature: Feature,
}

impl PreviewKey {
    /// The key for `structure` and `feature`, an overlap in canonical
    /// order (`R.overlap_T` is `T.overlap_R`).
    pub fn new(structure: Structure, feature: Feature) -> PreviewKey {
        match feature.partner() {
            Some(other) if other < structure => PreviewKey {
                structure: other,
                feature: Feature::overlap(structure),
            },
            _ => PreviewKey { structure, feature },
        }
    }

    /// A key, or `None` for a structure's overlap with itself.
    pub fn checked(structure: Structure, feature: Feature) -> Option<PreviewKey> {
        (feature.partner() != Some(structure)).then(|| PreviewKey::new(structure, feature))
    }

    /// All 45 keys (seven per structure, one per pair), in order.
    pub fn all() -> impl Iterator<Item = PreviewKey> {
        Structure::ALL.into_iter().flat_map(|s| {
            Feature::ALL
                .into_iter()
                .filter(move |f| f.partner().is_none_or(|o| o > s))
                .map(move |f| PreviewKey::new(s, f))
        })
    }

    /// The fifteen keys of the first language version.
    pub fn basic() -> impl Iterator<Item = PreviewKey> {
        Structure::ALL.into_iter().flat_map(|s| {
            Feature::BASIC
                .into_iter()
                .map(move |f| PreviewKey::new(s, f))
        })
    }

    /// The structures whose evidence the value needs: the one, or the pair.
    pub fn structures(&self) -> crate::Mask {
        let m = crate::Mask::single(self.structure);
        match self.feature.partner() {
            Some(o) => m.with(o),
            None => m,
        }
    }
}

impl fmt::Display for PreviewKey {
    /// `R.tokens`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.structure.letter(), self.feature.name())
    }
}

impl FromStr for PreviewKey {
    type Err = InputError;

    /// `K.feature`, K a structure's letter or long name.
    fn from_str(key: &str) -> Result<PreviewKey, InputError> {
        let (s, f) = key
            .split_once('.')
            .ok_or_else(|| InputError::BadAssignment(key.to_string()))?;
        let structure =
            Structure::from_name(s).ok_or_else(|| InputError::UnknownStructure(s.to_string()))?;
        let feature =
            Feature::from_name(f).ok_or_else(|| InputError::UnknownFeature(f.to_string()))?;
        PreviewKey::checked(structure, feature)
            .ok_or_else(|| InputError::SelfOverlap(key.to_string()))
    }
}

impl Serialize for PreviewKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PreviewKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|e| serde::de::Error::custom(format!("preview `{text}`: {e}")))
    }
}

/// What a program needs from its host, so a host computes only that.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// The query text is read.
    pub query: bool,
    /// The task text is read.
    pub task: bool,
    /// The domain is read.
    pub domain: bool,
    /// The question type is read.
    pub qtype: bool,
    /// Preview features read, in structure then feature order (serialized
    /// as `"R.tokens"`).
    pub previews: Vec<PreviewKey>,
    /// The subset counts a `trade` step reads, if the program trades: the
    /// host supplies all 31 after the previews (absent from the metadata
    /// of a program that does not trade).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<crate::Shown>,
}

impl Features {
    /// How many numbers the host supplies: the previews, then 31 subset
    /// counts when the program trades.
    pub fn slots(&self) -> usize {
        self.previews.len()
            + if self.shown.is_some() {
                crate::Mask::SUBSETS
            } else {
                0
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mask;

    #[test]
    fn keys_read_write_and_order() {
        let k: PreviewKey = "R.tokens".parse().unwrap();
        assert_eq!(k, PreviewKey::new(Structure::Raw, Feature::Tokens));
        assert_eq!(k.to_string(), "R.tokens");
        assert_eq!(
            "raw.top".parse::<PreviewKey>().unwrap().to_string(),
            "R.top"
        );
        assert!(matches!(
            "X.top".parse::<PreviewKey>(),
            Err(InputError::UnknownStructure(_))
        ));
        assert!(matches!(
            "R.tok".parse::<PreviewKey>(),
            Err(InputError::UnknownFeature(_))
        ));
        assert!(matches!(
            "R".parse::<PreviewKey>(),
            Err(InputError::BadAssignment(_))
        ));
        assert_eq!(serde_json::to_string(&k).unwrap(), r#""R.tokens""#);
        assert_eq!(
            serde_json::from_str::<PreviewKey>(r#""R.tokens""#).unwrap(),
            k
        );
        assert!(serde_json::from_str::<PreviewKey>(r#""Q.tokens""#).is_err());
        let all: Vec<PreviewKey> = PreviewKey::all().collect();
        assert_eq!(all.len(), 45);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(PreviewKey::basic().count(), 15);
    }

    #[test]
    fn overlaps_are_one_key_per_pair() {
        let tr: PreviewKey = "T.overlap_R".parse().unwrap();
        let rt: PreviewKey = "raw.overlap_temporal".parse().unwrap();
        assert_eq!(tr, rt);
        assert_eq!(rt.to_string(), "T.overlap_R");
        assert_eq!(
            tr.structures(),
            Mask::single(Structure::Temporal).with(Structure::Raw)
        );
        assert!(matches!(
            "T.overlap_T".parse::<PreviewKey>(),
            Err(InputError::SelfOverlap(_))
        ));
        assert!(matches!(
            "T.overlap_X".parse::<PreviewKey>(),
            Err(InputError::UnknownFeature(_))
        ));
        for f in Feature::ALL {
            assert_eq!(Feature::from_name(f.name()), Some(f));
            assert_eq!(
                serde_json::from_str::<Feature>(&serde_json::to_string(&f).unwrap()).unwrap(),
                f
            );
        }
        assert_eq!(
            Feature::overlap(Structure::Graph).partner(),
            Some(Structure::Graph)
        );
        assert_eq!(Feature::Named.partner(), None);
        assert!(PreviewKey::checked(Structure::Vector, Feature::OverlapV).is_none());
    }
}
