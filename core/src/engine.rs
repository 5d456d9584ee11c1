//! The one interface both policy engines offer: the reference interpreter
//! and a compiled module in the Wasm sandbox. The runtime and the
//! optimizer select through it without knowing which engine they hold.

use crate::{Input, Mask, PreviewKey, Shown};

/// The answer to one question: the mask, and the rule that decided it
/// (`None` when no rule changed the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Selection {
    /// The structures to read.
    pub mask: Mask,
    /// The deciding rule's index in the policy.
    pub rule: Option<usize>,
}

/// A policy ready to select.
pub trait Engine {
    /// Why a selection failed (the interpreter never fails).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Selects for one input.
    fn select(&mut self, input: &Input) -> Result<Selection, Self::Error>;

    /// Selects for every input, writing the answers into `out` (cleared
    /// first). `out` is reused from call to call, so a warm engine selects a
    /// whole split without allocating per question.
    fn select_batch(
        &mut self,
        inputs: &[Input],
        out: &mut Vec<Selection>,
    ) -> Result<(), Self::Error> {
        out.clear();
        out.reserve(inputs.len());
        for input in inputs {
            out.push(self.select(input)?);
        }
        Ok(())
    }

    /// The policy's rule names, by index.
    fn rule_names(&self) -> Vec<String>;

    /// The previews the policy reads: a host computes only these.
    fn previews(&self) -> Vec<PreviewKey>;

    /// The subset counts the policy's `trade` step reads, if it trades: a
    /// host computes them only then.
    fn shown(&self) -> Option<Shown>;
}
