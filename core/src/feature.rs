//! Preview features: what a policy may read about a structure's evidence
//! before it is selected.

use serde::Serialize;

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
