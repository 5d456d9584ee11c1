//! The code generator: a checked [`Program`] to a self-contained module.
//!
//! The module has no imports and one fixed-size memory. Its data segment
//! holds the keyword tables and the pattern DFAs; `scan` runs each pattern
//! group's function over a text (see `pattern_scan`), then one loop for the
//! keywords (normalizing on the fly) and the word count; `select` parses the
//! input header, scans the texts the policy reads, then runs the rules as
//! straight-line code, each recording what it saw, the trade, the budget
//! and the fallback; when a trace is asked for, `trace_rules` replays the rules'
//! records from what they saw. The semantics are the interpreter's
//! (`crate::interp`), operation for operation.
//!
//! This file lays out memory and assembles the module; `select` is in
//! [`select`], `scan` in [`scan`], the rules' expressions in [`expr`], the
//! helper functions (trace, budget, equality, top-k) in [`support`], the
//! trade in [`trade`].

use super::abi::{self, exports, record};
use super::asm::{ma, Asm, Data};
use super::kwscan::{
    self, event_buffer_bytes, FuncIds, KeywordScan, KeywordScanner, ScanLocals, Scratch,
    EVENT_CHUNK,
};
use super::pattern_scan::PatternScan;
use crate::ir::{BoolExpr, CmpOp, Feature, MaskExpr, NumExpr, Program};
use mesa_core::Structure;
use mesa_grammar::ast::{ActionKind, MetaField, Subject};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, CustomSection, DataSection, ExportKind, ExportSection,
    Function, FunctionSection, GlobalSection, GlobalType, Instruction as I, MemorySection,
    MemoryType, Module, TypeSection, ValType,
};

mod expr;
mod scan;
mod select;
mod support;
mod trade;
mod walk;

use scan::byte_class;
use select::action_code;
use support::{eq_ci_fn, top_k_fn};
use walk::{walk_program, Node};

// ---- fixed memory area (bytes 0..256) ----
const TRACE_N: u64 = 16;
const FIELD_PTR: u64 = 32; // 4 x i32: query, task, domain, qtype
const FIELD_LEN: u64 = 48; // 4 x i32, -1 when absent
const WORDS: u64 = 64; // 2 x f64
const PMASK: u64 = 80; // 2 x i64
const SCORES: u64 = 96; // 5 x f64
const TOKENS: u64 = 136; // 5 x f64
const FIXED_ZERO_START: u64 = 64;
const FIXED_ZERO_END: u64 = 176;
const DATA_BASE: u64 = 256;

// ---- function indices ----
const F_INPUT_PTR: u32 = 0;
const F_INPUT_CAP: u32 = 1;
const F_SELECT: u32 = 2;
const F_TRACE_PTR: u32 = 3;
const F_TRACE_LEN: u32 = 4;
const F_TRACE: u32 = 5;
const F_SCAN: u32 = 6;
const F_CHECK: u32 = 7;
const F_EQ_CI: u32 = 8;
const F_TOP_K: u32 = 9;
const F_BUDGET: u32 = 10;
const F_METADATA_PTR: u32 = 11;
const F_METADATA_LEN: u32 = 12;
const F_FOUND: u32 = 13;
const F_EVENTS: u32 = 14;
const F_TRACE_RULES: u32 = 15;
const F_TRADE: u32 = 16;
/// The first pattern group's scan; the others follow.
const F_PATTERNS: u32 = 17;

/// The functions the keyword scan calls.
const KEYWORD_FUNCS: FuncIds = FuncIds {
    check: F_CHECK,
    found: F_FOUND,
    events: F_EVENTS,
};

/// Why a program cannot be compiled to Wasm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// More patterns than one module supports.
    #[error("the policy has {count} patterns; a compiled module supports at most {limit}")]
    TooManyPatterns {
        /// Patterns in the policy.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// The patterns' DFA is larger than the limit.
    #[error("{}", match pattern {
        Some(p) => format!("pattern `{p}` compiles to a DFA larger than {limit} bytes (the limit); simplify it"),
        None => format!("the policy's patterns together compile to a DFA larger than {limit} bytes (the limit); use fewer or simpler patterns"),
    })]
    DfaTooBig {
        /// The pattern that is too big alone, if one is.
        pattern: Option<String>,
        /// The limit in bytes.
        limit: usize,
    },
    /// A table does not fit the module's encoding.
    #[error("the policy is too large to compile: {0}")]
    TooLarge(String),
}

/// Choices that do not change what a module computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileOptions {
    /// The keyword automaton becomes a dense table (faster) when the table
    /// takes at most this many bytes, and stays a sparse trie otherwise.
    pub dense_keyword_table_limit: usize,
    /// Keywords that begin and end with a word byte are found by hashing
    /// words (`wordhash`), the others by the automaton. Off, the automaton
    /// finds every keyword (the earlier scheme, kept for comparison).
    pub word_hash: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            dense_keyword_table_limit: 16 * 1024,
            word_hash: true,
        }
    }
}

/// Every address the generated code uses.
struct Layout {
    /// Raw byte to class, 16 bits each ([`byte_class`]).
    classes: u64,
    word: u64,
    keywords: Option<KeywordScan>,
    /// One per pattern group (usually one).
    patterns: Vec<PatternScan>,
    counts: u64,
    kwbits: u64,
    zero_end: u64,
    nbuf: u64,
    /// The keyword scan's event buffer.
    events: u64,
    trace: u64,
    /// Per rule, what `select` saw (i32): the rule's mask with
    /// [`RULE_FIRED`] when it fired, 0 when not; read by `trace_rules`.
    rule_out: u64,
    /// Per rule, its action (u8, [`action_code`]).
    actions: u64,
    input: u64,
    nsets: u32,
    /// Whether any expression reads `query.words` / `task.words`.
    uses_words: bool,
}

/// Compiles a checked program; `source` is its text (hashed into the metadata).
pub fn compile(program: &Program, source: &str) -> Result<Vec<u8>, CompileError> {
    compile_with(program, source, &CompileOptions::default())
}

/// [`compile`] with explicit options.
pub fn compile_with(
    program: &Program,
    source: &str,
    options: &CompileOptions,
) -> Result<Vec<u8>, CompileError> {
    let mut data = Data::new(DATA_BASE);
    // Keywords numbered as the interpreter numbers them.
    let (distinct, sets_of) = program.distinct_keywords();
    let scanner = (!distinct.is_empty()).then(|| KeywordScanner::new(&distinct, options.word_hash));
    let (classes, word) = byte_maps(&mut data, scanner.as_ref());

    let nsets = program.keyword_sets.len() as u32;
    if nsets > u16::MAX as u32 {
        return Err(CompileError::TooLarge(format!(
            "{nsets} keyword sets (at most 65535)"
        )));
    }
    let keywords = match &scanner {
        None => None,
        Some(scanner) => Some(
            KeywordScan::put(
                scanner,
                &sets_of,
                options.dense_keyword_table_limit,
                &mut data,
            )
            .map_err(CompileError::TooLarge)?,
        ),
    };
    if program.pattern_dfas.is_empty() != program.patterns.is_empty() {
        return Err(CompileError::TooLarge(
            "the program's patterns were not compiled by the checker".into(),
        ));
    }
    let patterns = program
        .pattern_dfas
        .iter()
        .map(|dfa| PatternScan::put(dfa, &mut data))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CompileError::TooLarge)?;

    let (meta_consts, uses_words) = meta_constants(program, &mut data);

    let action_codes: Vec<u8> = program
        .rules
        .iter()
        .map(|r| action_code(r.action))
        .collect();
    let actions = data.put(1, &action_codes);

    // Scratch, trace and input regions after the tables.
    let kw_words = keywords.as_ref().map_or(0, |k| k.bitset_words) as u64;
    let mut at = data.end().next_multiple_of(8);
    let counts = at;
    at += 2 * nsets as u64 * 4;
    let kwbits = at;
    at += 2 * kw_words * 4;
    let zero_end = at;
    let nbuf = at.next_multiple_of(8);
    at = nbuf + abi::INPUT_CAPACITY as u64;
    let events = at.next_multiple_of(8);
    if keywords.is_some() {
        at = events + event_buffer_bytes();
    }
    let trace = at.next_multiple_of(8);
    at = trace + (program.rules.len() as u64 + 8) * abi::TRACE_RECORD_BYTES as u64;
    let rule_out = at.next_multiple_of(8);
    at = rule_out + 4 * program.rules.len() as u64;
    let input = at.next_multiple_of(8);
    let end = input + abi::INPUT_CAPACITY as u64;
    let layout = Layout {
        classes,
        word,
        keywords,
        patterns,
        counts,
        kwbits,
        zero_end,
        nbuf,
        events,
        trace,
        rule_out,
        actions,
        input,
        nsets,
        uses_words,
    };
    let (pages, json) = metadata_pages(program, source, end)?;

    let gen = Gen {
        program,
        layout: &layout,
        slots: program.features.previews.clone(),
        meta_consts,
        metadata_at: end,
        metadata_len: json.len() as u32,
    };
    Ok(gen.module(&data, pages, &json))
}

/// The byte maps shared by every scan: raw byte to class (see
/// `byte_class`; with `FIRST` where a word-hash keyword begins with the
/// byte), and normalized byte to word-byte flag. Returns their addresses.
fn byte_maps(data: &mut Data, scanner: Option<&KeywordScanner>) -> (u64, u64) {
    let first = scanner.map_or([false; 256], KeywordScanner::first_bytes);
    let classes = data.put_w(
        2,
        (0..=255u8).map(|b| {
            let class = byte_class(b);
            if first[(class & 0xff) as usize] {
                class | kwscan::FIRST
            } else {
                class
            }
        }),
    );
    let word_map: Vec<u8> = (0..=255u8)
        .map(|b| u8::from(crate::cues::is_word_byte(b)))
        .collect();
    let word = data.put(1, &word_map);
    (classes, word)
}

/// The constant strings of `domain`/`qtype` comparisons, lower-cased and
/// interned in the data, by value; and whether the program counts words.
fn meta_constants(program: &Program, data: &mut Data) -> (Vec<(String, u64)>, bool) {
    let mut strings: Vec<(String, u64)> = Vec::new();
    let mut intern = |data: &mut Data, s: &str| -> u64 {
        let lower = s.to_ascii_lowercase();
        if let Some((_, at)) = strings.iter().find(|(x, _)| *x == lower) {
            return *at;
        }
        let at = data.put(1, lower.as_bytes());
        strings.push((lower, at));
        at
    };
    let mut meta_consts: Vec<(String, u64)> = Vec::new();
    let mut values: Vec<&str> = Vec::new();
    let mut uses_words = false;
    walk_program(program, &mut |node| match node {
        Node::Bool(BoolExpr::MetaIn(_, vs)) => values.extend(vs.iter().map(String::as_str)),
        Node::Num(NumExpr::WordCount(_)) => uses_words = true,
        _ => {}
    });
    for v in values {
        let at = intern(data, v);
        meta_consts.push((v.to_string(), at));
    }
    (meta_consts, uses_words)
}

/// The page count and the metadata JSON, which goes after the input buffer
/// (ending at `end`): its size depends on the page count it states, so the
/// two are settled together.
fn metadata_pages(
    program: &Program,
    source: &str,
    end: u64,
) -> Result<(u32, Vec<u8>), CompileError> {
    let mut pages = end.div_ceil(65536) as u32;
    let json = loop {
        let metadata = abi::metadata(program, source, pages);
        let json =
            serde_json::to_vec(&metadata).map_err(|e| CompileError::TooLarge(e.to_string()))?;
        let needed = (end + json.len() as u64).div_ceil(65536) as u32;
        if needed == pages {
            break json;
        }
        pages = needed;
    };
    Ok((pages, json))
}

/// The function types, by index (the comments name the functions using
/// each).
fn types() -> TypeSection {
    let mut types = TypeSection::new();
    types.ty().function([], [ValType::I32]); // 0
    types.ty().function(
        [
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::I32,
            ValType::F64,
            ValType::F64,
        ],
        [],
    ); // 1 trace
    types
        .ty()
        .function([ValType::I32, ValType::I32, ValType::I32], []); // 2 scan
    types
        .ty()
        .function([ValType::I32, ValType::I32, ValType::I32, ValType::I32], []); // 3 check
    types.ty().function(
        [ValType::I32, ValType::I32, ValType::I32, ValType::I32],
        [ValType::I32],
    ); // 4 eq_ci
    types
        .ty()
        .function([ValType::I32, ValType::I32, ValType::F64], [ValType::I32]); // 5 top_k
    types
        .ty()
        .function([ValType::I32, ValType::F64], [ValType::I32]); // 6 budget
    types.ty().function([ValType::I32, ValType::I32], []); // 7 found
    types
        .ty()
        .function([ValType::I32, ValType::I32], [ValType::I64]); // 8 pattern scan
    types
}

/// The module's exports: memory, ABI version and the ABI's functions.
fn exports() -> ExportSection {
    let mut exps = ExportSection::new();
    exps.export(exports::MEMORY, ExportKind::Memory, 0);
    exps.export(exports::ABI_VERSION, ExportKind::Global, 0);
    exps.export(exports::INPUT_PTR, ExportKind::Func, F_INPUT_PTR);
    exps.export(exports::INPUT_CAP, ExportKind::Func, F_INPUT_CAP);
    exps.export(exports::SELECT, ExportKind::Func, F_SELECT);
    exps.export(exports::TRACE_PTR, ExportKind::Func, F_TRACE_PTR);
    exps.export(exports::TRACE_LEN, ExportKind::Func, F_TRACE_LEN);
    exps.export(exports::METADATA_PTR, ExportKind::Func, F_METADATA_PTR);
    exps.export(exports::METADATA_LEN, ExportKind::Func, F_METADATA_LEN);
    exps
}

struct Gen<'a> {
    program: &'a Program,
    layout: &'a Layout,
    slots: Vec<mesa_core::PreviewKey>,
    meta_consts: Vec<(String, u64)>,
    metadata_at: u64,
    metadata_len: u32,
}

impl Gen<'_> {
    pub(super) fn module(&self, data: &Data, pages: u32, json: &[u8]) -> Vec<u8> {
        let types = types();
        let mut funcs = FunctionSection::new();
        // In function-index order; found, events, trace_rules and trade,
        // then the pattern scans.
        for ty in [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 7, 7, 7, 6] {
            funcs.function(ty);
        }
        for _ in &self.layout.patterns {
            funcs.function(8);
        }
        let mut memories = MemorySection::new();
        memories.memory(MemoryType {
            minimum: pages as u64,
            maximum: Some(pages as u64),
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        let mut globals = GlobalSection::new();
        globals.global(
            GlobalType {
                val_type: ValType::I32,
                mutable: false,
                shared: false,
            },
            &ConstExpr::i32_const(abi::ABI_VERSION as i32),
        );
        let exps = exports();
        let code = self.code();
        let mut datas = DataSection::new();
        datas.active(
            0,
            &ConstExpr::i32_const(DATA_BASE as i32),
            data.bytes.iter().copied(),
        );
        datas.active(
            0,
            &ConstExpr::i32_const(self.metadata_at as i32),
            json.iter().copied(),
        );
        let mut module = Module::new();
        module
            .section(&types)
            .section(&funcs)
            .section(&memories)
            .section(&globals)
            .section(&exps)
            .section(&code)
            .section(&datas)
            .section(&CustomSection {
                name: abi::METADATA_SECTION.into(),
                data: json.to_vec().into(),
            });
        module.finish()
    }

    /// The code of every function, in function-index order.
    fn code(&self) -> CodeSection {
        let mut code = CodeSection::new();
        let constant = |v: i32| {
            let mut a = Asm::new(0);
            a.op(I::I32Const(v));
            a.finish(vec![])
        };
        code.function(&constant(self.layout.input as i32));
        code.function(&constant(abi::INPUT_CAPACITY as i32));
        code.function(&self.select());
        code.function(&constant(self.layout.trace as i32));
        code.function(&{
            let mut a = Asm::new(0);
            a.ops([I::I32Const(0), I::I32Load(ma(TRACE_N, 2))]);
            a.finish(vec![])
        });
        code.function(&self.trace_fn());
        code.function(&self.scan_fn());
        let empty = || Asm::new(0).finish(vec![]);
        let [check, found, events] = match &self.layout.keywords {
            Some(k) => k.functions(&self.scratch(), &KEYWORD_FUNCS),
            None => [empty(), empty(), empty()],
        };
        code.function(&check);
        code.function(&eq_ci_fn());
        code.function(&top_k_fn());
        code.function(&self.budget_fn());
        code.function(&constant(self.metadata_at as i32));
        code.function(&constant(self.metadata_len as i32));
        code.function(&found);
        code.function(&events);
        code.function(&self.trace_rules_fn());
        code.function(&self.trade_fn());
        for p in &self.layout.patterns {
            code.function(&p.function());
        }
        code
    }
}
