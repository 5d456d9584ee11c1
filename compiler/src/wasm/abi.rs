//! The embedding ABI, version 1: constants, the input layout, the result and
//! trace encodings, and the metadata section. docs/ABI.md is the prose
//! version of this file; both change together.

use crate::interp::{Input, Step, Trace};
use crate::ir::{Features, Program};
use mesa_core::{Mask, Structure};
use serde::{Deserialize, Serialize};

/// The ABI version this compiler emits and this crate's hosts accept.
pub const ABI_VERSION: u32 = 1;
/// Name of the custom section holding the JSON [`Metadata`].
pub const METADATA_SECTION: &str = "mesa.metadata";
/// Bytes of the input header before the feature array.
pub const HEADER_BYTES: u32 = 24;
/// A text length meaning "absent" (task, domain, qtype).
pub const ABSENT: u32 = u32::MAX;
/// Capacity of the input buffer, in bytes (header, features and texts).
pub const INPUT_CAPACITY: u32 = 128 * 1024;
/// Bytes per trace record.
pub const TRACE_RECORD_BYTES: u32 = 24;

/// `select` result: the input's lengths do not fit the buffer.
pub const ERR_INPUT_TOO_LARGE: i32 = -1;
/// `select` result: the header's feature count is not the module's.
pub const ERR_FEATURE_COUNT: i32 = -2;

/// Export names.
pub mod exports {
    /// The module's only memory.
    pub const MEMORY: &str = "memory";
    /// Immutable `i32` global: the ABI version.
    pub const ABI_VERSION: &str = "mesa_abi_version";
    /// `() -> i32`: offset of the input buffer in memory.
    pub const INPUT_PTR: &str = "input_ptr";
    /// `() -> i32`: capacity of the input buffer.
    pub const INPUT_CAP: &str = "input_cap";
    /// `() -> i32`: evaluate; the result encodes mask and deciding rule.
    pub const SELECT: &str = "select";
    /// `() -> i32`: offset of the trace records of the last `select`.
    pub const TRACE_PTR: &str = "trace_ptr";
    /// `() -> i32`: number of trace records of the last `select`.
    pub const TRACE_LEN: &str = "trace_len";
    /// `() -> i32`: offset of the metadata JSON in memory.
    pub const METADATA_PTR: &str = "metadata_ptr";
    /// `() -> i32`: length of the metadata JSON.
    pub const METADATA_LEN: &str = "metadata_len";
    /// Every exported function, all `() -> i32`.
    pub const FUNCTIONS: &[&str] = &[
        INPUT_PTR,
        INPUT_CAP,
        SELECT,
        TRACE_PTR,
        TRACE_LEN,
        METADATA_PTR,
        METADATA_LEN,
    ];
}

/// Trace record kinds (byte 0 of a record).
pub mod record {
    /// Start: `a` is the default mask.
    pub const START: u8 = 1;
    /// A rule evaluated: `a` fired (0/1), then before/after masks, `index`.
    pub const RULE: u8 = 2;
    /// The budget dropped structure `a`; `x` its tokens, `y` the estimate.
    pub const BUDGET: u8 = 3;
    /// The empty mask became the fallback `a`.
    pub const FALLBACK: u8 = 4;
    /// The trade kept the subset `after` of the mask `before`.
    pub const TRADE: u8 = 5;
}

/// The JSON carried in the `mesa.metadata` custom section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always [`ABI_VERSION`] for modules from this compiler.
    pub abi_version: u32,
    /// The policy's name.
    pub name: String,
    /// SHA-256 of the policy source, lower-case hex.
    pub source_sha256: String,
    /// Rule names, by index (the deciding rule and trace refer to these).
    pub rules: Vec<String>,
    /// Keyword set names, for tools.
    pub keyword_sets: Vec<String>,
    /// Pattern names, for tools.
    pub patterns: Vec<String>,
    /// What the host must supply; `previews` is the feature array's order.
    pub features: Features,
    /// Capacity of the input buffer.
    pub input_capacity: u32,
    /// The module's fixed memory size, in 64 KiB pages.
    pub memory_pages: u32,
    /// The compiler that produced the module.
    pub compiler: String,
}

/// The decoded result of `select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// The mask.
    pub mask: Mask,
    /// The deciding rule, if any.
    pub rule: Option<usize>,
}

/// Decodes a non-negative `select` result.
pub fn decode_result(result: i32) -> Option<Decoded> {
    if result < 0 {
        return None;
    }
    let r = result as u32;
    let rule = r >> 8;
    Some(Decoded {
        mask: Mask::from_bits((r & 0x1f) as u8),
        rule: rule.checked_sub(1).map(|i| i as usize),
    })
}

/// Why an input cannot be laid out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The texts and features do not fit the module's input buffer.
    #[error("input of {needed} bytes does not fit the module's {capacity}-byte input buffer")]
    TooLarge {
        /// Bytes the input needs.
        needed: usize,
        /// The buffer's capacity.
        capacity: usize,
    },
}

/// Header flag (offset 20): record the trace.
pub const FLAG_TRACE: u32 = 1;

/// The number of bytes [`write_input`] needs for `input` with `features`.
pub fn input_size(features: &Features, input: &Input) -> usize {
    HEADER_BYTES as usize
        + 8 * features.slots()
        + input.query.len()
        + [&input.task, &input.domain, &input.qtype]
            .iter()
            .map(|t| t.as_ref().map_or(0, String::len))
            .sum::<usize>()
}

/// Lays out an input as the module expects it (little-endian) directly into
/// `dest` (the module's input buffer): the header, the values of
/// [`Features::previews`] in order, then, when the policy trades
/// ([`Features::shown`]), the 31 shown counts in mask order, then the texts.
/// `flags` is [`FLAG_TRACE`] or 0. Returns the number of bytes written.
pub fn write_input(
    features: &Features,
    input: &Input,
    flags: u32,
    dest: &mut [u8],
) -> Result<usize, LayoutError> {
    let needed = input_size(features, input);
    if needed > dest.len() {
        return Err(LayoutError::TooLarge {
            needed,
            capacity: dest.len(),
        });
    }
    let texts: [Option<&str>; 4] = [
        Some(&input.query),
        input.task.as_deref(),
        input.domain.as_deref(),
        input.qtype.as_deref(),
    ];
    let mut at = 0;
    let mut put = |bytes: &[u8], at: &mut usize| {
        dest[*at..*at + bytes.len()].copy_from_slice(bytes);
        *at += bytes.len();
    };
    for t in texts {
        put(&t.map_or(ABSENT, |t| t.len() as u32).to_le_bytes(), &mut at);
    }
    put(&(features.slots() as u32).to_le_bytes(), &mut at);
    put(&flags.to_le_bytes(), &mut at);
    for slot in &features.previews {
        let v = input.previews.value(*slot);
        put(&v.to_le_bytes(), &mut at);
    }
    if let Some(unit) = features.shown {
        for m in Mask::subsets() {
            put(&input.previews.shown_value(unit, m).to_le_bytes(), &mut at);
        }
    }
    for t in texts.into_iter().flatten() {
        put(t.as_bytes(), &mut at);
    }
    Ok(at)
}

/// Decodes trace records (`count` records of [`TRACE_RECORD_BYTES`]).
/// Returns `None` if the bytes are malformed: the first record must be the
/// one start record (a trace without it would claim an empty default).
pub fn decode_trace(bytes: &[u8], count: usize) -> Option<Trace> {
    let mut trace = Trace::default();
    if bytes.first() != Some(&record::START) {
        return None;
    }
    for i in 0..count {
        let r = bytes.get(i * 24..i * 24 + 24)?;
        let u32_at = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
        let f64_at = |o: usize| f64::from_le_bytes(r[o..o + 8].try_into().unwrap_or([0; 8]));
        match r[0] {
            record::START if i == 0 => trace.start = Mask::from_bits(r[1]),
            record::RULE => trace.steps.push(Step::Rule {
                index: u32_at(4) as usize,
                fired: r[1] != 0,
                before: Mask::from_bits(r[2]),
                after: Mask::from_bits(r[3]),
            }),
            record::BUDGET => trace.steps.push(Step::Budget {
                dropped: *Structure::ALL.get(r[1] as usize)?,
                tokens: f64_at(8),
                estimate: f64_at(16),
            }),
            record::FALLBACK => trace.steps.push(Step::Fallback {
                mask: Mask::from_bits(r[1]),
            }),
            record::TRADE => trace.steps.push(Step::Trade {
                before: Mask::from_bits(r[2]),
                after: Mask::from_bits(r[3]),
            }),
            _ => return None,
        }
    }
    Some(trace)
}

/// The metadata for a program compiled from `source`.
pub fn metadata(program: &Program, source: &str, memory_pages: u32) -> Metadata {
    use sha2::Digest;
    Metadata {
        abi_version: ABI_VERSION,
        name: program.name.clone(),
        source_sha256: hex::encode(sha2::Sha256::digest(source.as_bytes())),
        rules: program.rules.iter().map(|r| r.name.clone()).collect(),
        keyword_sets: program
            .keyword_sets
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        patterns: program.patterns.iter().map(|p| p.name.clone()).collect(),
        features: program.features.clone(),
        input_capacity: INPUT_CAPACITY,
        memory_pages,
        compiler: format!("mesa-compiler {}", env!("CARGO_PKG_VERSION")),
    }
}
