//! Preview features: what a policy may read about a structure's evidence
//! before it is selected.

use crate::input::InputError;
use crate::Structure;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A preview feature, read in a policy as `preview.K.feature`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// Evidence tokens the structure would add.
    Tokens = 0,
    /// Best normalized retrieval score.
    Top = 1,
    /// Number of hits.
    Hits = 2,
}

impl Feature {
    /// All three, in order.
    pub const ALL: [Feature; 3] = [Feature::Tokens, Feature::Top, Feature::Hits];

    /// The feature's name as written after `preview.K.`.
    pub fn name(self) -> &'static str {
        ["tokens", "top", "hits"][self as usize]
    }

    /// Reads a feature name.
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// One preview a policy can read, `preview.K.feature`: written and
/// serialized as `"R.tokens"`. Ordered by structure, then feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PreviewKey {
    /// The structure previewed.
    pub structure: Structure,
    /// What is previewed.
    pub feature: Feature,
}

impl PreviewKey {
    /// The key for `structure` and `feature`.
    pub fn new(structure: Structure, feature: Feature) -> PreviewKey {
        PreviewKey { structure, feature }
    }

    /// All fifteen keys, in order.
    pub fn all() -> impl Iterator<Item = PreviewKey> {
        Structure::ALL
            .into_iter()
            .flat_map(|s| Feature::ALL.into_iter().map(move |f| PreviewKey::new(s, f)))
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
        Ok(PreviewKey { structure, feature })
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(all.len(), 15);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }
}
