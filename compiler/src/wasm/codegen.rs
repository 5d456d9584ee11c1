//! The code generator: a checked [`Program`] to a self-contained module.
//!
//! The module has no imports and one fixed-size memory. Its data segment
//! holds the keyword tables and the pattern DFAs; `scan` runs each pattern
//! group's function over a text (see `pattern_scan`), then one loop for the
//! keywords (normalizing on the fly) and the word count; `select` parses the
//! input header, scans the texts the policy reads, then runs the rules as
//! straight-line code, each recording what it saw, the budget and the
//! fallback; when a trace is asked for, `trace_rules` replays the rules'
//! records from what they saw. The semantics are the interpreter's
//! (`crate::interp`), operation for operation.

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
/// The first pattern group's scan; the others follow.
const F_PATTERNS: u32 = 16;

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

/// A raw byte's class in the scan: its normalized byte (ASCII lower case,
/// whitespace as a space) in the low 8 bits, [`kwscan::WORD`] when that is
/// a word byte, [`kwscan::SPACE`] when the byte is whitespace. One load gives
/// the scan everything it needs to know about a byte.
fn byte_class(b: u8) -> u32 {
    let c = if crate::cues::is_space(b) {
        b' '
    } else {
        b.to_ascii_lowercase()
    };
    let mut class = u32::from(c);
    if crate::cues::is_word_byte(c) {
        class |= kwscan::WORD;
    }
    if crate::cues::is_space(b) {
        class |= kwscan::SPACE;
    }
    class
}

fn subject_index(s: Subject) -> u32 {
    match s {
        Subject::Query => 0,
        Subject::Task => 1,
    }
}

fn field_index(f: MetaField) -> u64 {
    match f {
        MetaField::Domain => 2,
        MetaField::Qtype => 3,
    }
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
    // Byte maps shared by every scan: raw byte to class (see `byte_class`;
    // with `FIRST` where a word-hash keyword begins with the byte), and
    // normalized byte to word-byte flag.
    let first = scanner
        .as_ref()
        .map_or([false; 256], KeywordScanner::first_bytes);
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

    // Constant strings for `domain`/`qtype` comparisons, lower-cased.
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
        let at = intern(&mut data, v);
        meta_consts.push((v.to_string(), at));
    }

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
    // The metadata JSON goes after the input buffer; its size depends on
    // the page count it states, so settle the two together.
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

    let gen = Gen {
        program,
        layout: &layout,
        slots: program.features.preview_slots(),
        meta_consts,
        metadata_at: end,
        metadata_len: json.len() as u32,
    };
    Ok(gen.module(&data, pages, &json))
}

/// An expression node, for [`walk_program`].
enum Node<'a> {
    Bool(&'a BoolExpr),
    Num(&'a NumExpr),
}

/// Calls `f` on every expression node the code generator emits: rule
/// conditions, `top` thresholds and scores.
fn walk_program<'a>(p: &'a Program, f: &mut impl FnMut(Node<'a>)) {
    for rule in &p.rules {
        walk_bool(&rule.cond, f);
        if let MaskExpr::Top { above: Some(t), .. } = &rule.mask {
            walk_num(t, f);
        }
    }
    for score in p.scores.iter().flatten() {
        walk_num(score, f);
    }
}

fn walk_bool<'a>(e: &'a BoolExpr, f: &mut impl FnMut(Node<'a>)) {
    f(Node::Bool(e));
    match e {
        BoolExpr::And(v) | BoolExpr::Or(v) => v.iter().for_each(|x| walk_bool(x, f)),
        BoolExpr::Not(x) => walk_bool(x, f),
        BoolExpr::If(c, a, b) => {
            walk_bool(c, f);
            walk_bool(a, f);
            walk_bool(b, f);
        }
        BoolExpr::Cmp(_, a, b) => {
            walk_num(a, f);
            walk_num(b, f);
        }
        BoolExpr::Const(_) | BoolExpr::Has(..) | BoolExpr::Matches(..) | BoolExpr::MetaIn(..) => {}
    }
}

fn walk_num<'a>(e: &'a NumExpr, f: &mut impl FnMut(Node<'a>)) {
    f(Node::Num(e));
    match e {
        NumExpr::If(c, a, b) => {
            walk_bool(c, f);
            walk_num(a, f);
            walk_num(b, f);
        }
        NumExpr::Neg(a) => walk_num(a, f),
        NumExpr::Add(a, b) | NumExpr::Sub(a, b) | NumExpr::Mul(a, b) | NumExpr::Div(a, b) => {
            walk_num(a, f);
            walk_num(b, f);
        }
        NumExpr::Min(v) | NumExpr::Max(v) => v.iter().for_each(|x| walk_num(x, f)),
        NumExpr::Const(_)
        | NumExpr::Preview(..)
        | NumExpr::WordCount(_)
        | NumExpr::Hits(..)
        | NumExpr::Size => {}
    }
}

struct Gen<'a> {
    program: &'a Program,
    layout: &'a Layout,
    slots: Vec<Option<(Structure, Feature)>>,
    meta_consts: Vec<(String, u64)>,
    metadata_at: u64,
    metadata_len: u32,
}

// Locals of `select`.
const L_MASK: u32 = 0;
const L_DECIDED: u32 = 1;
const L_BEFORE: u32 = 2;
const L_T: u32 = 3;
const L_P: u32 = 4;
const L_LEN: u32 = 5;
const L_TRACE: u32 = 6;
/// The number of rules evaluated (all, or up to the `select` that fired).
const L_EVALUATED: u32 = 7;
const SELECT_I32_LOCALS: u32 = 8;

/// In a rule's `rule_out` entry: the rule fired (masks use bits 0-4).
const RULE_FIRED: i32 = 0x100;

/// A rule's action as `trace_rules` reads it.
fn action_code(action: ActionKind) -> u8 {
    match action {
        ActionKind::Select => 0,
        ActionKind::Add => 1,
        ActionKind::Remove => 2,
    }
}

impl Gen<'_> {
    fn module(&self, data: &Data, pages: u32, json: &[u8]) -> Vec<u8> {
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
        let mut funcs = FunctionSection::new();
        // In function-index order; found, events and trace_rules, then the
        // pattern scans.
        for ty in [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 7, 7, 7] {
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
        for p in &self.layout.patterns {
            code.function(&p.function());
        }
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

    /// Scratch addresses for the keyword scan's functions.
    fn scratch(&self) -> Scratch {
        let l = self.layout;
        Scratch {
            nbuf: l.nbuf,
            classes: l.classes,
            counts_words: l.uses_words,
            word: l.word,
            counts: l.counts,
            kwbits: l.kwbits,
            nsets: l.nsets,
            events: l.events,
        }
    }

    /// `trace_rules(evaluated, default)`: the trace records of the first
    /// `evaluated` rules, replayed from `rule_out` and the actions: the
    /// masks before and after each rule follow from the default, each
    /// rule's mask and its action, as `select` applied them.
    fn trace_rules_fn(&self) -> Function {
        let (evaluated, mask) = (0, 1);
        let (i, v, t, act, after) = (2, 3, 4, 5, 6);
        let l = self.layout;
        let mut a = Asm::new(0);
        a.ops([I::I32Const(0), I::LocalSet(i)]);
        a.counted_loop(i, I::LocalGet(evaluated), |a| {
            a.ops([
                I::LocalGet(i),
                I::I32Const(2),
                I::I32Shl,
                I::I32Load(ma(l.rule_out, 2)),
                I::LocalTee(v),
                I::I32Const(RULE_FIRED),
                I::I32And,
                I::If(BlockType::Empty),
                I::LocalGet(v),
                I::I32Const(0xff),
                I::I32And,
                I::LocalSet(t),
                I::LocalGet(i),
                I::I32Load8U(ma(l.actions, 0)),
                I::LocalSet(act),
                // select: t; add: mask | t; remove: mask & !t
                I::LocalGet(t),
                I::LocalGet(mask),
                I::LocalGet(t),
                I::I32Or,
                I::LocalGet(mask),
                I::LocalGet(t),
                I::I32Const(-1),
                I::I32Xor,
                I::I32And,
                I::LocalGet(act),
                I::I32Const(1),
                I::I32Eq,
                I::Select,
                I::LocalGet(act),
                I::I32Eqz,
                I::Select,
                I::LocalSet(after),
                I::I32Const(record::RULE as i32),
                I::I32Const(1),
                I::LocalGet(mask),
                I::LocalGet(after),
                I::LocalGet(i),
                I::F64Const(0.0.into()),
                I::F64Const(0.0.into()),
                I::Call(F_TRACE),
                I::LocalGet(after),
                I::LocalSet(mask),
                I::Else,
                I::I32Const(record::RULE as i32),
                I::I32Const(0),
                I::LocalGet(mask),
                I::LocalGet(mask),
                I::LocalGet(i),
                I::F64Const(0.0.into()),
                I::F64Const(0.0.into()),
                I::Call(F_TRACE),
                I::End,
            ]);
        });
        a.finish(vec![(5, ValType::I32)])
    }

    /// `trace(kind, a, before, after, index, x, y)`: appends one record.
    fn trace_fn(&self) -> Function {
        let mut a = Asm::new(0);
        let p = 7;
        a.ops([
            I::I32Const(0),
            I::I32Load(ma(TRACE_N, 2)),
            I::I32Const(abi::TRACE_RECORD_BYTES as i32),
            I::I32Mul,
            I::I32Const(self.layout.trace as i32),
            I::I32Add,
            I::LocalSet(p),
        ]);
        for (param, off) in [(0, 0), (1, 1), (2, 2), (3, 3)] {
            a.ops([I::LocalGet(p), I::LocalGet(param), I::I32Store8(ma(off, 0))]);
        }
        a.ops([I::LocalGet(p), I::LocalGet(4), I::I32Store(ma(4, 2))]);
        a.ops([I::LocalGet(p), I::LocalGet(5), I::F64Store(ma(8, 3))]);
        a.ops([I::LocalGet(p), I::LocalGet(6), I::F64Store(ma(16, 3))]);
        a.ops([
            I::I32Const(0),
            I::I32Const(0),
            I::I32Load(ma(TRACE_N, 2)),
            I::I32Const(1),
            I::I32Add,
            I::I32Store(ma(TRACE_N, 2)),
        ]);
        a.finish(vec![(1, ValType::I32)])
    }

    /// `scan(ptr, len, subject)`: one pass over a text for patterns, word
    /// count and keywords.
    fn scan_fn(&self) -> Function {
        let l = self.layout;
        // `ptr` walks the text up to `end` (the `len` parameter, made an
        // address): one register fewer in the loop than an index.
        let (ptr, end, subj) = (0, 1, 2);
        let (b, cls, c, ac, prev, words, in_word, j, k, e, lim, live) =
            (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17);
        let kw_locals = ScanLocals {
            c,
            cls,
            j,
            subj,
            prev,
            ac,
            k,
            e,
            h: [14, 15, 16],
            live,
            ptr,
            end,
        };
        let scratch = self.scratch();
        let mut a = Asm::new(0);
        a.ops([
            I::LocalGet(ptr),
            I::LocalGet(end),
            I::I32Add,
            I::LocalSet(end),
        ]);
        // Patterns first, a loop per group (see `pattern_scan`).
        if !l.patterns.is_empty() {
            a.ops([I::LocalGet(subj), I::I32Const(3), I::I32Shl]);
            for g in 0..l.patterns.len() {
                a.ops([
                    I::LocalGet(ptr),
                    I::LocalGet(end),
                    I::Call(F_PATTERNS + g as u32),
                ]);
                if g > 0 {
                    a.op(I::I64Or);
                }
            }
            a.op(I::I64Store(ma(PMASK, 3)));
        }
        if let Some(k_t) = &l.keywords {
            k_t.emit_start(&mut a, &kw_locals, &scratch);
        }
        // Chunks of input between runs of the keyword events (one chunk
        // when there are no keywords). The byte loop calls nothing, so that
        // its state can stay in registers. Without keywords or a word
        // count there is nothing to do per byte.
        let per_byte = l.keywords.is_some() || l.uses_words;
        if per_byte {
            a.op(I::Block(BlockType::Empty)); // $done
            a.op(I::Loop(BlockType::Empty)); // $chunk
            if l.keywords.is_some() {
                // lim = min(ptr + EVENT_CHUNK, end)
                a.ops([
                    I::LocalGet(ptr),
                    I::I32Const(EVENT_CHUNK as i32),
                    I::I32Add,
                    I::LocalTee(lim),
                    I::LocalGet(end),
                    I::LocalGet(lim),
                    I::LocalGet(end),
                    I::I32LtU,
                    I::Select,
                    I::LocalSet(lim),
                ]);
            } else {
                a.ops([I::LocalGet(end), I::LocalSet(lim)]);
            }
            a.op(I::Block(BlockType::Empty)); // $chunk_done
            a.op(I::Loop(BlockType::Empty)); // $next
            a.ops([
                I::LocalGet(ptr),
                I::LocalGet(lim),
                I::I32GeU,
                I::BrIf(1),
                I::LocalGet(ptr),
                I::I32Load8U(ma(0, 0)),
                I::LocalSet(b),
            ]);
            a.incr(ptr);
            // The byte's class and normalized byte; word count over raw
            // whitespace, when a policy reads it.
            a.ops([
                I::LocalGet(b),
                I::I32Const(1),
                I::I32Shl,
                I::I32Load16U(ma(l.classes, 1)),
                I::LocalTee(cls),
                I::I32Const(0xff),
                I::I32And,
                I::LocalSet(c),
            ]);
            if l.uses_words {
                // Without a branch: in = byte is not whitespace;
                // words += in & !in_word; in_word = in.
                a.ops([
                    I::LocalGet(cls),
                    I::I32Const(kwscan::SPACE.trailing_zeros() as i32),
                    I::I32ShrU,
                    I::I32Const(1),
                    I::I32And,
                    I::I32Const(1),
                    I::I32Xor,
                    I::LocalTee(b),
                    I::LocalGet(in_word),
                    I::I32Const(1),
                    I::I32Xor,
                    I::I32And,
                    I::LocalGet(words),
                    I::I32Add,
                    I::LocalSet(words),
                    I::LocalGet(b),
                    I::LocalSet(in_word),
                ]);
            }
            if let Some(k_t) = &l.keywords {
                k_t.emit_byte(&mut a, &kw_locals, &scratch);
            }
            a.op(I::Br(0));
            a.op(I::End); // loop $next
            a.op(I::End); // block $chunk_done
            if let Some(k_t) = &l.keywords {
                k_t.emit_flush(&mut a, &kw_locals, &scratch, &KEYWORD_FUNCS);
            }
            a.ops([I::LocalGet(ptr), I::LocalGet(end), I::I32GeU, I::BrIf(1)]);
            a.op(I::Br(0));
            a.op(I::End); // loop $chunk
            a.op(I::End); // block $done
        }
        a.ops([
            I::LocalGet(subj),
            I::I32Const(3),
            I::I32Shl,
            I::LocalGet(words),
            I::F64ConvertI32U,
            I::F64Store(ma(WORDS, 3)),
        ]);
        if let Some(k_t) = &l.keywords {
            k_t.emit_end(&mut a, &kw_locals, &scratch, &KEYWORD_FUNCS);
        }
        a.finish(vec![(15, ValType::I32)])
    }

    /// `budget(mask, limit) -> mask`, with the token estimates in TOKENS.
    fn budget_fn(&self) -> Function {
        let (mask, limit) = (0, 1);
        let (s, drop, est) = (2, 3, 4);
        let tokens_at = |local: u32| {
            [
                I::LocalGet(local),
                I::I32Const(3),
                I::I32Shl,
                I::F64Load(ma(TOKENS, 3)),
            ]
        };
        let mut a = Asm::new(0);
        a.op(I::Loop(BlockType::Empty));
        // est = sum of tokens over the mask, in structure order from +0.0.
        a.ops([
            I::F64Const(0.0.into()),
            I::LocalSet(est),
            I::I32Const(0),
            I::LocalSet(s),
        ]);
        a.counted_loop(s, I::I32Const(5), |a| {
            a.bit(mask, s);
            a.ops([I::If(BlockType::Empty), I::LocalGet(est)]);
            a.ops(tokens_at(s));
            a.ops([I::F64Add, I::LocalSet(est), I::End]);
        });
        a.ops([
            I::LocalGet(mask),
            I::I32Popcnt,
            I::I32Const(1),
            I::I32LeU,
            I::LocalGet(est),
            I::LocalGet(limit),
            I::F64Gt,
            I::I32Eqz,
            I::I32Or,
            I::If(BlockType::Empty),
            I::LocalGet(mask),
            I::Return,
            I::End,
        ]);
        // drop = the costliest; ties go to the later structure.
        a.ops([
            I::I32Const(-1),
            I::LocalSet(drop),
            I::I32Const(0),
            I::LocalSet(s),
        ]);
        a.counted_loop(s, I::I32Const(5), |a| {
            a.bit(mask, s);
            a.ops([
                I::If(BlockType::Empty),
                I::LocalGet(drop),
                I::I32Const(0),
                I::I32LtS,
                I::If(BlockType::Result(ValType::I32)),
                I::I32Const(1),
                I::Else,
            ]);
            a.ops(tokens_at(s));
            a.ops(tokens_at(drop));
            a.ops([
                I::F64Ge,
                I::End,
                I::If(BlockType::Empty),
                I::LocalGet(s),
                I::LocalSet(drop),
                I::End,
                I::End,
            ]);
        });
        a.ops([
            I::I32Const(0),
            I::I32Load(ma(self.layout.input + 20, 2)),
            I::I32Const(abi::FLAG_TRACE as i32),
            I::I32And,
            I::If(BlockType::Empty),
            I::I32Const(record::BUDGET as i32),
            I::LocalGet(drop),
            I::I32Const(0),
            I::I32Const(0),
            I::I32Const(0),
        ]);
        a.ops(tokens_at(drop));
        a.ops([I::LocalGet(est), I::Call(F_TRACE), I::End]);
        a.ops([
            I::LocalGet(mask),
            I::I32Const(1),
            I::LocalGet(drop),
            I::I32Shl,
            I::I32Const(-1),
            I::I32Xor,
            I::I32And,
            I::LocalSet(mask),
            I::Br(0),
        ]);
        a.op(I::End);
        a.op(I::LocalGet(mask));
        a.finish(vec![(2, ValType::I32), (1, ValType::F64)])
    }

    fn slot(&self, s: Structure, f: Feature) -> Option<u64> {
        self.slots
            .iter()
            .position(|x| *x == Some((s, f)))
            .map(|i| i as u64)
    }

    fn feature(&self, a: &mut Asm, s: Structure, f: Feature) {
        match self.slot(s, f) {
            Some(i) => {
                a.ops([
                    I::I32Const(0),
                    I::F64Load(ma(self.layout.input + abi::HEADER_BYTES as u64 + 8 * i, 3)),
                ]);
            }
            None => {
                a.op(I::F64Const(0.0.into()));
            }
        }
    }

    fn select(&self) -> Function {
        let l = self.layout;
        let p = self.program;
        let nfeat = self.slots.len() as u32;
        let mut a = Asm::new(SELECT_I32_LOCALS);
        let input = l.input as i32;
        // Feature count.
        a.ops([
            I::I32Const(input),
            I::I32Load(ma(16, 2)),
            I::I32Const(nfeat as i32),
            I::I32Ne,
            I::If(BlockType::Empty),
            I::I32Const(abi::ERR_FEATURE_COUNT),
            I::Return,
            I::End,
        ]);
        // Total size, in 64-bit arithmetic so lengths cannot wrap.
        // The query is never absent: its length counts as written, so an
        // "absent" query (0xFFFFFFFF) is simply too large.
        a.op(I::I64Const((abi::HEADER_BYTES + 8 * nfeat) as i64));
        a.ops([
            I::I32Const(input),
            I::I32Load(ma(0, 2)),
            I::I64ExtendI32U,
            I::I64Add,
        ]);
        for f in 1..4u64 {
            a.ops([
                I::I32Const(input),
                I::I32Load(ma(4 * f, 2)),
                I::LocalTee(L_T),
                I::I64ExtendI32U,
                I::I64Const(0),
                I::LocalGet(L_T),
                I::I32Const(-1),
                I::I32Ne,
                I::Select,
                I::I64Add,
            ]);
        }
        a.ops([
            I::I64Const(abi::INPUT_CAPACITY as i64),
            I::I64GtU,
            I::If(BlockType::Empty),
            I::I32Const(abi::ERR_INPUT_TOO_LARGE),
            I::Return,
            I::End,
        ]);
        // Text pointers and lengths.
        a.ops([
            I::I32Const(input + (abi::HEADER_BYTES + 8 * nfeat) as i32),
            I::LocalSet(L_P),
        ]);
        for f in 0..4u64 {
            a.ops([
                I::I32Const(input),
                I::I32Load(ma(4 * f, 2)),
                I::LocalSet(L_LEN),
                I::I32Const(0),
                I::LocalGet(L_P),
                I::I32Store(ma(FIELD_PTR + 4 * f, 2)),
                I::I32Const(0),
                I::LocalGet(L_LEN),
                I::I32Store(ma(FIELD_LEN + 4 * f, 2)),
                I::LocalGet(L_P),
                I::LocalGet(L_LEN),
                I::I32Const(0),
                I::LocalGet(L_LEN),
                I::I32Const(-1),
                I::I32Ne,
                I::Select,
                I::I32Add,
                I::LocalSet(L_P),
            ]);
        }
        // Reset the scratch state of the previous call.
        a.ops([
            I::I32Const(FIXED_ZERO_START as i32),
            I::I32Const(0),
            I::I32Const((FIXED_ZERO_END - FIXED_ZERO_START) as i32),
            I::MemoryFill(0),
            I::I32Const(0),
            I::I32Const(0),
            I::I32Store(ma(TRACE_N, 2)),
        ]);
        if l.zero_end > l.counts {
            a.ops([
                I::I32Const(l.counts as i32),
                I::I32Const(0),
                I::I32Const((l.zero_end - l.counts) as i32),
                I::MemoryFill(0),
            ]);
        }
        // Scan the texts the policy reads.
        if p.features.query {
            a.ops([
                I::I32Const(0),
                I::I32Load(ma(FIELD_PTR, 2)),
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN, 2)),
                I::I32Const(0),
                I::Call(F_SCAN),
            ]);
        }
        if p.features.task {
            a.ops([
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN + 4, 2)),
                I::I32Const(-1),
                I::I32Ne,
                I::If(BlockType::Empty),
                I::I32Const(0),
                I::I32Load(ma(FIELD_PTR + 4, 2)),
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN + 4, 2)),
                I::I32Const(1),
                I::Call(F_SCAN),
                I::End,
            ]);
        }
        a.ops([
            I::I32Const(input),
            I::I32Load(ma(20, 2)),
            I::I32Const(abi::FLAG_TRACE as i32),
            I::I32And,
            I::LocalSet(L_TRACE),
        ]);
        let default = p.default.bits() as i32;
        a.ops([
            I::I32Const(default),
            I::LocalSet(L_MASK),
            I::I32Const(0),
            I::LocalSet(L_DECIDED),
        ]);
        trace_call(
            &mut a,
            record::START,
            I::I32Const(default),
            I::I32Const(0),
            I::I32Const(0),
            0,
        );
        // The rules record what they saw in `rule_out`; the trace's rule
        // records are written from it afterwards, by one loop
        // (`trace_rules`), rather than by a call per rule: a call site per
        // rule doubled the code Cranelift compiles.
        a.ops([I::I32Const(p.rules.len() as i32), I::LocalSet(L_EVALUATED)]);
        a.op(I::Block(BlockType::Empty)); // $rules
        for (index, rule) in p.rules.iter().enumerate() {
            let out = ma(self.layout.rule_out + 4 * index as u64, 2);
            self.boolean(&mut a, &rule.cond);
            a.op(I::If(BlockType::Empty));
            a.ops([I::LocalGet(L_MASK), I::LocalSet(L_BEFORE)]);
            self.mask_value(&mut a, &rule.mask);
            a.ops([
                I::LocalSet(L_T),
                I::I32Const(0),
                I::LocalGet(L_T),
                I::I32Const(RULE_FIRED),
                I::I32Or,
                I::I32Store(out),
            ]);
            match rule.action {
                ActionKind::Select => {
                    a.ops([
                        I::LocalGet(L_T),
                        I::LocalSet(L_MASK),
                        I::I32Const(index as i32 + 1),
                        I::LocalTee(L_DECIDED),
                        I::LocalSet(L_EVALUATED),
                        I::Br(1),
                    ]);
                }
                ActionKind::Add | ActionKind::Remove => {
                    a.ops([I::LocalGet(L_BEFORE), I::LocalGet(L_T)]);
                    if rule.action == ActionKind::Remove {
                        a.ops([I::I32Const(-1), I::I32Xor, I::I32And]);
                    } else {
                        a.op(I::I32Or);
                    }
                    a.ops([
                        I::LocalTee(L_MASK),
                        I::LocalGet(L_BEFORE),
                        I::I32Ne,
                        I::If(BlockType::Empty),
                        I::I32Const(index as i32 + 1),
                        I::LocalSet(L_DECIDED),
                        I::End,
                    ]);
                }
            }
            a.ops([
                I::Else,
                I::I32Const(0),
                I::I32Const(0),
                I::I32Store(out),
                I::End,
            ]);
        }
        a.op(I::End); // $rules
        if !p.rules.is_empty() {
            a.ops([
                I::LocalGet(L_TRACE),
                I::If(BlockType::Empty),
                I::LocalGet(L_EVALUATED),
                I::I32Const(default),
                I::Call(F_TRACE_RULES),
                I::End,
            ]);
        }
        if let Some(limit) = p.budget {
            for s in Structure::ALL {
                a.op(I::I32Const(0));
                self.feature(&mut a, s, Feature::Tokens);
                a.op(I::F64Store(ma(TOKENS + 8 * s.index() as u64, 3)));
            }
            a.ops([
                I::LocalGet(L_MASK),
                I::F64Const(limit.into()),
                I::Call(F_BUDGET),
                I::LocalSet(L_MASK),
            ]);
        }
        let fallback = p.fallback.bits() as i32;
        a.ops([I::LocalGet(L_MASK), I::I32Eqz, I::If(BlockType::Empty)]);
        a.ops([I::I32Const(fallback), I::LocalSet(L_MASK)]);
        trace_call(
            &mut a,
            record::FALLBACK,
            I::I32Const(fallback),
            I::I32Const(0),
            I::I32Const(0),
            0,
        );
        a.op(I::End);
        a.ops([
            I::LocalGet(L_MASK),
            I::LocalGet(L_DECIDED),
            I::I32Const(8),
            I::I32Shl,
            I::I32Or,
        ]);
        let f64s = a.f64_max;
        a.finish(vec![
            (SELECT_I32_LOCALS, ValType::I32),
            (f64s, ValType::F64),
        ])
    }

    fn boolean(&self, a: &mut Asm, e: &BoolExpr) {
        let l = self.layout;
        match e {
            BoolExpr::Const(b) => {
                a.op(I::I32Const(i32::from(*b)));
            }
            BoolExpr::Has(s, set) => {
                let off = (subject_index(*s) as u64 * l.nsets as u64 + *set as u64) * 4;
                a.ops([
                    I::I32Const(0),
                    I::I32Load(ma(l.counts + off, 2)),
                    I::I32Const(0),
                    I::I32Ne,
                ]);
            }
            BoolExpr::Matches(s, pat) => {
                a.ops([
                    I::I32Const(0),
                    I::I64Load(ma(PMASK + 8 * subject_index(*s) as u64, 3)),
                    I::I64Const(1i64 << *pat),
                    I::I64And,
                    I::I64Const(0),
                    I::I64Ne,
                ]);
            }
            BoolExpr::MetaIn(field, values) => {
                let f = field_index(*field);
                if values.is_empty() {
                    a.op(I::I32Const(0));
                }
                for (n, v) in values.iter().enumerate() {
                    let at = self
                        .meta_consts
                        .iter()
                        .find(|(x, _)| x == v)
                        .map_or(0, |(_, at)| *at);
                    if n > 0 {
                        a.ops([
                            I::If(BlockType::Result(ValType::I32)),
                            I::I32Const(1),
                            I::Else,
                        ]);
                    }
                    a.ops([
                        I::I32Const(0),
                        I::I32Load(ma(FIELD_PTR + 4 * f, 2)),
                        I::I32Const(0),
                        I::I32Load(ma(FIELD_LEN + 4 * f, 2)),
                        I::I32Const(at as i32),
                        I::I32Const(v.len() as i32),
                        I::Call(F_EQ_CI),
                    ]);
                }
                for _ in 1..values.len() {
                    a.op(I::End);
                }
            }
            BoolExpr::Cmp(op, x, y) => {
                self.num(a, x);
                self.num(a, y);
                a.op(match op {
                    CmpOp::Lt => I::F64Lt,
                    CmpOp::Le => I::F64Le,
                    CmpOp::Gt => I::F64Gt,
                    CmpOp::Ge => I::F64Ge,
                    CmpOp::Eq => I::F64Eq,
                    CmpOp::Ne => I::F64Ne,
                });
            }
            // An empty `and` is true and an empty `or` false, as in the
            // interpreter (the checker never builds them).
            BoolExpr::And(v) if v.is_empty() => {
                a.op(I::I32Const(1));
            }
            BoolExpr::Or(v) if v.is_empty() => {
                a.op(I::I32Const(0));
            }
            BoolExpr::And(v) => {
                // `a and b and c` is `if a { if b { c } else { 0 } } else { 0 }`:
                // each operand nests in the previous one's `then` branch.
                self.boolean(a, &v[0]);
                for x in &v[1..] {
                    a.op(I::If(BlockType::Result(ValType::I32)));
                    self.boolean(a, x);
                }
                for _ in 1..v.len() {
                    a.ops([I::Else, I::I32Const(0), I::End]);
                }
            }
            BoolExpr::Or(v) => {
                self.boolean(a, &v[0]);
                for x in &v[1..] {
                    a.ops([
                        I::If(BlockType::Result(ValType::I32)),
                        I::I32Const(1),
                        I::Else,
                    ]);
                    self.boolean(a, x);
                }
                for _ in 1..v.len() {
                    a.op(I::End);
                }
            }
            BoolExpr::Not(x) => {
                self.boolean(a, x);
                a.op(I::I32Eqz);
            }
            BoolExpr::If(c, x, y) => {
                self.choice(
                    a,
                    c,
                    ValType::I32,
                    |a| self.boolean(a, x),
                    |a| self.boolean(a, y),
                );
            }
        }
    }

    /// `if c then .. else ..` producing a value of type `ty`.
    fn choice(
        &self,
        a: &mut Asm,
        c: &BoolExpr,
        ty: ValType,
        then: impl FnOnce(&mut Asm),
        otherwise: impl FnOnce(&mut Asm),
    ) {
        self.boolean(a, c);
        a.op(I::If(BlockType::Result(ty)));
        then(a);
        a.op(I::Else);
        otherwise(a);
        a.op(I::End);
    }

    fn num(&self, a: &mut Asm, e: &NumExpr) {
        let l = self.layout;
        match e {
            NumExpr::Const(v) => {
                a.op(I::F64Const((*v).into()));
            }
            NumExpr::Preview(s, f) => self.feature(a, *s, *f),
            NumExpr::WordCount(s) => {
                a.ops([
                    I::I32Const(0),
                    I::F64Load(ma(WORDS + 8 * subject_index(*s) as u64, 3)),
                ]);
            }
            NumExpr::Hits(s, set) => {
                let off = (subject_index(*s) as u64 * l.nsets as u64 + *set as u64) * 4;
                a.ops([
                    I::I32Const(0),
                    I::I32Load(ma(l.counts + off, 2)),
                    I::F64ConvertI32U,
                ]);
            }
            NumExpr::Size => {
                a.ops([I::LocalGet(L_MASK), I::I32Popcnt, I::F64ConvertI32U]);
            }
            NumExpr::Neg(x) => {
                self.num(a, x);
                a.op(I::F64Neg);
            }
            NumExpr::Add(x, y) | NumExpr::Sub(x, y) | NumExpr::Mul(x, y) => {
                self.num(a, x);
                self.num(a, y);
                a.op(match e {
                    NumExpr::Add(..) => I::F64Add,
                    NumExpr::Sub(..) => I::F64Sub,
                    _ => I::F64Mul,
                });
            }
            NumExpr::Div(x, y) => {
                // x / y, or 0 when y == 0.
                let tx = a.temp();
                let ty = a.temp();
                self.num(a, x);
                a.op(I::LocalSet(tx));
                self.num(a, y);
                a.op(I::LocalSet(ty));
                a.ops([
                    I::F64Const(0.0.into()),
                    I::LocalGet(tx),
                    I::LocalGet(ty),
                    I::F64Div,
                    I::LocalGet(ty),
                    I::F64Const(0.0.into()),
                    I::F64Eq,
                    I::Select,
                ]);
                a.free();
                a.free();
            }
            NumExpr::Min(v) | NumExpr::Max(v) if v.is_empty() => {
                a.op(I::F64Const(f64::NAN.into()));
            }
            NumExpr::Min(v) | NumExpr::Max(v) => {
                // acc = first; acc = x when x is strictly better.
                let acc = a.temp();
                let tx = a.temp();
                self.num(a, &v[0]);
                a.op(I::LocalSet(acc));
                for x in &v[1..] {
                    self.num(a, x);
                    a.op(I::LocalSet(tx));
                    a.ops([
                        I::LocalGet(tx),
                        I::LocalGet(acc),
                        I::LocalGet(tx),
                        I::LocalGet(acc),
                        if matches!(e, NumExpr::Min(_)) {
                            I::F64Lt
                        } else {
                            I::F64Gt
                        },
                        I::Select,
                        I::LocalSet(acc),
                    ]);
                }
                a.op(I::LocalGet(acc));
                a.free();
                a.free();
            }
            NumExpr::If(c, x, y) => {
                self.choice(a, c, ValType::F64, |a| self.num(a, x), |a| self.num(a, y));
            }
        }
    }

    fn mask_value(&self, a: &mut Asm, m: &MaskExpr) {
        match m {
            MaskExpr::Const(m) => {
                a.op(I::I32Const(m.bits() as i32));
            }
            MaskExpr::Top { k, above } => {
                for s in Structure::ALL {
                    a.op(I::I32Const(0));
                    match &self.program.scores[s.index()] {
                        Some(e) => self.num(a, e),
                        None => self.feature(a, s, Feature::Top),
                    }
                    a.op(I::F64Store(ma(SCORES + 8 * s.index() as u64, 3)));
                }
                a.op(I::I32Const(*k as i32));
                match above {
                    Some(x) => {
                        a.op(I::I32Const(1));
                        self.num(a, x);
                    }
                    None => {
                        a.ops([I::I32Const(0), I::F64Const(0.0.into())]);
                    }
                }
                a.op(I::Call(F_TOP_K));
            }
        }
    }
}

/// Emits `trace(kind, a, before, after, index, 0, 0)`.
fn trace_call(
    a: &mut Asm,
    kind: u8,
    x: I<'static>,
    before: I<'static>,
    after: I<'static>,
    index: usize,
) {
    // Only when the call asked for a trace.
    a.ops([
        I::LocalGet(L_TRACE),
        I::If(BlockType::Empty),
        I::I32Const(kind as i32),
        x,
        before,
        after,
        I::I32Const(index as i32),
        I::F64Const(0.0.into()),
        I::F64Const(0.0.into()),
        I::Call(F_TRACE),
        I::End,
    ]);
}

/// `eq_ci(a_ptr, a_len, b_ptr, b_len) -> i32`: ASCII case-insensitive
/// equality with a lower-cased constant.
fn eq_ci_fn() -> Function {
    let (pa, la, pb, lb) = (0, 1, 2, 3);
    let (i, c) = (4, 5);
    let mut a = Asm::new(0);
    a.ops([
        I::LocalGet(la),
        I::LocalGet(lb),
        I::I32Ne,
        I::If(BlockType::Empty),
        I::I32Const(0),
        I::Return,
        I::End,
    ]);
    a.op(I::Loop(BlockType::Empty));
    a.ops([
        I::LocalGet(i),
        I::LocalGet(la),
        I::I32GeU,
        I::If(BlockType::Empty),
        I::I32Const(1),
        I::Return,
        I::End,
    ]);
    a.byte_at(pa, i);
    a.ops([
        I::LocalSet(c),
        I::LocalGet(c),
        I::I32Const(32),
        I::I32Add,
        I::LocalGet(c),
        I::LocalGet(c),
        I::I32Const(65),
        I::I32Sub,
        I::I32Const(26),
        I::I32LtU,
        I::Select,
    ]);
    a.byte_at(pb, i);
    a.ops([
        I::I32Ne,
        I::If(BlockType::Empty),
        I::I32Const(0),
        I::Return,
        I::End,
    ]);
    a.incr(i).op(I::Br(0));
    a.op(I::End);
    a.op(I::I32Const(0));
    a.finish(vec![(2, ValType::I32)])
}

/// `top_k(k, has_threshold, threshold) -> mask`, with the scores in SCORES.
fn top_k_fn() -> Function {
    let (k, has_thr, thr) = (0, 1, 2);
    let (chosen, n, best, s, v, bestv) = (3, 4, 5, 6, 7, 8);
    let mut a = Asm::new(0);
    // Scores not strictly above the threshold are never chosen (made NaN).
    a.op(I::LocalGet(has_thr));
    a.op(I::If(BlockType::Empty));
    for i in 0..5u64 {
        a.ops([
            I::I32Const(0),
            I::F64Load(ma(SCORES + 8 * i, 3)),
            I::LocalGet(thr),
            I::F64Gt,
            I::I32Eqz,
            I::If(BlockType::Empty),
            I::I32Const(0),
            I::F64Const(f64::NAN.into()),
            I::F64Store(ma(SCORES + 8 * i, 3)),
            I::End,
        ]);
    }
    a.op(I::End);
    // k rounds; each takes the highest remaining score (earlier wins ties).
    a.counted_loop(n, I::LocalGet(k), |a| {
        a.ops([
            I::I32Const(-1),
            I::LocalSet(best),
            I::I32Const(0),
            I::LocalSet(s),
        ]);
        a.counted_loop(s, I::I32Const(5), |a| {
            a.ops([
                I::LocalGet(s),
                I::I32Const(3),
                I::I32Shl,
                I::F64Load(ma(SCORES, 3)),
                I::LocalSet(v),
            ]);
            // not chosen, not NaN, and (no best yet or strictly better)
            a.bit(chosen, s);
            a.ops([
                I::I32Eqz,
                I::LocalGet(v),
                I::LocalGet(v),
                I::F64Eq,
                I::I32And,
                I::LocalGet(best),
                I::I32Const(0),
                I::I32LtS,
                I::LocalGet(v),
                I::LocalGet(bestv),
                I::F64Gt,
                I::I32Or,
                I::I32And,
                I::If(BlockType::Empty),
                I::LocalGet(s),
                I::LocalSet(best),
                I::LocalGet(v),
                I::LocalSet(bestv),
                I::End,
            ]);
        });
        // No candidate left: stop.
        a.ops([I::LocalGet(best), I::I32Const(0), I::I32LtS, I::BrIf(1)]);
        a.ops([
            I::LocalGet(chosen),
            I::I32Const(1),
            I::LocalGet(best),
            I::I32Shl,
            I::I32Or,
            I::LocalSet(chosen),
        ]);
    });
    a.op(I::LocalGet(chosen));
    a.finish(vec![(4, ValType::I32), (2, ValType::F64)])
}
