//! Preview features: what a policy may read about a structure's evidence
//! before it is selected.

use crate::Structure;
use serde::{Deserialize, Serialize};

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
    /// Preview features read, as `"R.tokens"`, in structure then feature order.
    pub previews: Vec<String>,
}

impl Features {
    /// The previews read, as (structure, feature) pairs in the order of
    /// [`Features::previews`]; `None` for a name this crate does not know.
    pub fn preview_slots(&self) -> Vec<Option<(Structure, Feature)>> {
        self.previews
            .iter()
            .map(|p| crate::input::parse_preview_key(p).ok())
            .collect()
    }
}
