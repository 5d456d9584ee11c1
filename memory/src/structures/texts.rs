//! The rendered steps of an episode, shared by T, V and R: the text an
//! evidence item shows for each step and its token count, kept as one
//! buffer with the end of each rendering (one allocation for the episode,
//! copied at memory speed when a snapshot is extended, and persisted as it
//! is, so that an opening from a state reads it instead of every step).

use crate::dataset::Step;
use crate::text::cut_marked;
use crate::tokens::count_tokens;
use mesa_core::Structure;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

use super::EvidenceItem;

/// The rendered steps of an episode (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepTexts {
    /// Step indices, increasing.
    pub indices: Vec<usize>,
    /// Every rendering (`[step N] action: …\nobservation: …`, each part cut
    /// at `Config::evidence_text_bytes`), one after another.
    text: String,
    /// Where each rendering ends in `text`.
    ends: Vec<usize>,
    /// Tokens of each text.
    pub tokens: Vec<u32>,
}

impl StepTexts {
    /// Renders the steps (without counting tokens: `tokens` is empty).
    fn render(steps: &[Step], max_bytes: usize) -> StepTexts {
        let mut t = StepTexts::default();
        t.push_rendered(steps, max_bytes);
        t
    }

    /// Renders `steps` after these (their tokens not added).
    fn push_rendered(&mut self, steps: &[Step], max_bytes: usize) {
        self.indices.reserve(steps.len());
        self.ends.reserve(steps.len());
        for s in steps {
            self.indices.push(s.index);
            render_into(&mut self.text, s, max_bytes);
            self.ends.push(self.text.len());
        }
    }

    /// Renders and counts.
    pub fn build(steps: &[Step], max_bytes: usize) -> StepTexts {
        let mut t = StepTexts::render(steps, max_bytes);
        t.tokens = t
            .texts()
            .map(|s| u32::try_from(count_tokens(s)).unwrap_or(u32::MAX))
            .collect();
        t
    }

    /// Renders with token counts computed earlier (a stored episode).
    /// Returns `None` if the counts do not match the steps.
    pub fn with_tokens(steps: &[Step], max_bytes: usize, tokens: Vec<u32>) -> Option<StepTexts> {
        if tokens.len() != steps.len() {
            return None;
        }
        let mut t = StepTexts::render(steps, max_bytes);
        t.tokens = tokens;
        Some(t)
    }

    /// Adds `new` after these steps (their tokens given).
    pub fn extend(&mut self, new: &[Step], tokens: &[u32], max_bytes: usize) {
        let n = new.len().min(tokens.len());
        self.push_rendered(&new[..n], max_bytes);
        self.tokens.extend_from_slice(&tokens[..n]);
    }

    /// The first `n` steps (all of them if there are fewer).
    pub fn prefix(&self, n: usize) -> StepTexts {
        let n = n.min(self.len());
        let end = n.checked_sub(1).map_or(0, |last| self.ends[last]);
        StepTexts {
            indices: self.indices[..n].to_vec(),
            text: self.text[..end].to_string(),
            ends: self.ends[..n].to_vec(),
            tokens: self.tokens[..n].to_vec(),
        }
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether there are no steps.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The rendering of the step at `pos`.
    ///
    /// # Panics
    /// If `pos` is not below [`StepTexts::len`].
    pub fn text(&self, pos: usize) -> &str {
        let start = pos.checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.text[start..self.ends[pos]]
    }

    /// Every step's rendering, in order.
    pub fn texts(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|p| self.text(p))
    }

    /// An evidence item showing one step (by position).
    pub fn item(&self, structure: Structure, pos: usize, score: f64) -> EvidenceItem {
        EvidenceItem {
            structure,
            steps: vec![self.indices[pos]],
            score,
            text: self.text(pos).to_string(),
            tokens: self.tokens[pos] as usize,
        }
    }

    /// The persisted form, with the steps' timestamps (`times`, one per
    /// step) beside the renderings, and the renderings' text (kept apart:
    /// it is most of the bytes, read into its own buffer).
    pub(super) fn stored(&self, times: Vec<Option<String>>) -> (StoredSteps, &str) {
        let steps = StoredSteps {
            indices: self.indices.iter().map(|&i| i as u64).collect(),
            ends: self.ends.iter().map(|&e| e as u64).collect(),
            tokens: self.tokens.clone(),
            times,
        };
        (steps, &self.text)
    }
}

/// The steps a persisted state covers: their indices and timestamps, and
/// where each rendering ends in the text stored beside them, with its
/// token count.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct StoredSteps {
    indices: Vec<u64>,
    ends: Vec<u64>,
    tokens: Vec<u32>,
    times: Vec<Option<String>>,
}

impl StoredSteps {
    /// The renderings over `text` and the steps (indices and timestamps;
    /// no action or observation), or what is wrong with them.
    pub(super) fn open(self, text: Vec<u8>) -> Result<(StepTexts, Vec<Step>), String> {
        let n = self.indices.len();
        if [self.ends.len(), self.tokens.len(), self.times.len()] != [n; 3] {
            return Err("the steps' columns are not of one length".into());
        }
        let text = String::from_utf8(text).map_err(|_| "the renderings are not UTF-8")?;
        let to_usize = |x: u64| usize::try_from(x).ok();
        let indices: Option<Vec<usize>> = self.indices.iter().map(|&i| to_usize(i)).collect();
        let ends: Option<Vec<usize>> = self.ends.iter().map(|&e| to_usize(e)).collect();
        let (Some(indices), Some(ends)) = (indices, ends) else {
            return Err("a step's index or end does not fit".into());
        };
        if !indices.windows(2).all(|w| w[0] < w[1]) {
            return Err("the steps' indices do not increase".into());
        }
        if !crate::text::cuts_whole(&text, &ends) {
            return Err("the renderings' ends do not cut the text one after another".into());
        }
        let steps = indices
            .iter()
            .zip(self.times)
            .map(|(&index, timestamp)| Step {
                index,
                action: String::new(),
                observation: String::new(),
                timestamp,
            })
            .collect();
        let texts = StepTexts {
            indices,
            text,
            ends,
            tokens: self.tokens,
        };
        Ok((texts, steps))
    }
}

/// How a step is shown in evidence: `[step N] action: …\nobservation: …`,
/// the action and the observation each cut at `max_bytes`.
pub fn render_step(step: &Step, max_bytes: usize) -> String {
    let mut out = String::new();
    render_into(&mut out, step, max_bytes);
    out
}

/// [`render_step`], written at the end of `out`.
fn render_into(out: &mut String, step: &Step, max_bytes: usize) {
    // Writing into a String cannot fail.
    let _ = write!(out, "[step {}", step.index);
    if let Some(t) = step.timestamp.as_deref().map(str::trim) {
        if !t.is_empty() {
            let _ = write!(out, " · {t}");
        }
    }
    let _ = write!(
        out,
        "] action: {}\nobservation: {}",
        cut_marked(step.action.trim(), max_bytes),
        cut_marked(step.observation.trim(), max_bytes)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::fixtures::game_episode;

    /// One buffer renders what one string per step did, a prefix and an
    /// extension agree with a build over the same steps, and the
    /// persisted form opens to the same renderings; a damaged one is
    /// refused.
    #[test]
    fn renderings_extend_store_and_reopen() {
        let e = game_episode(40);
        let all = StepTexts::build(&e.steps, 60);
        for (p, s) in e.steps.iter().enumerate() {
            assert_eq!(all.text(p), render_step(s, 60));
        }
        let mut grown = all.prefix(15);
        grown.extend(&e.steps[15..], &all.tokens[15..], 60);
        assert_eq!(grown, all);
        assert_eq!(all.prefix(0), StepTexts::default());
        let times: Vec<Option<String>> = e.steps.iter().map(|s| s.timestamp.clone()).collect();
        let (stored, text) = all.stored(times.clone());
        let bytes = postcard::to_stdvec(&stored).unwrap();
        let back: StoredSteps = postcard::from_bytes(&bytes).unwrap();
        let (texts, steps) = back.open(text.as_bytes().to_vec()).unwrap();
        assert_eq!(texts, all);
        let stamps: Vec<Option<String>> = steps.iter().map(|s| s.timestamp.clone()).collect();
        assert_eq!(stamps, times);
        assert!(steps.iter().zip(&e.steps).all(|(a, b)| a.index == b.index));
        let bytes = text.as_bytes().to_vec();
        let (mut bad, _) = all.stored(times.clone());
        bad.ends.swap(3, 4);
        assert!(bad.open(bytes.clone()).is_err());
        let (mut short, _) = all.stored(times.clone());
        short.tokens.pop();
        assert!(short.open(bytes.clone()).is_err());
        let (whole, _) = all.stored(times);
        assert!(whole.open(bytes[..bytes.len() - 1].to_vec()).is_err());
    }
}
