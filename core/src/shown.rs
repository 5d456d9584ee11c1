//! What a *set* of structures shows together: a count per non-empty subset
//! of the five, read by a policy's `trade` step.
//!
//! A preview describes one structure; what two structures show together is
//! not the sum of what each shows, because they often show the same step
//! or word. A host that serves a policy with `trade words at P` supplies,
//! per question, the 31 counts of one [`Shown`] unit (index `k` is
//! [`Mask::subset`](crate::Mask::subset)`(k)`; memory's `Coverage` computes
//! them).

use crate::input::InputError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What a subset's count counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shown {
    /// Distinct content words the subset's evidence shows (not stopwords,
    /// numbers, layout words or the question's own words).
    Words = 0,
    /// Distinct steps the subset's evidence shows.
    Steps = 1,
}

impl Shown {
    /// Both units, in order.
    pub const ALL: [Shown; 2] = [Shown::Words, Shown::Steps];

    /// The position in [`Shown::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The unit's name as written after `trade`.
    pub fn name(self) -> &'static str {
        ["words", "steps"][self.index()]
    }

    /// Reads a unit's name.
    pub fn from_name(name: &str) -> Option<Shown> {
        Shown::ALL.into_iter().find(|u| u.name() == name)
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Shown {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Shown {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Shown::from_name(&text)
            .ok_or_else(|| serde::de::Error::custom(InputError::UnknownShown(text)))
    }
}
