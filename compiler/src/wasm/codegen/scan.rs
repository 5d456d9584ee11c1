//! `scan(ptr, len, subject)`: a text's pattern groups (each its own
//! function, see `pattern_scan`), then one loop for the keywords and the
//! word count.

use super::*;

/// A raw byte's class in the scan: its normalized byte (ASCII lower case,
/// whitespace as a space) in the low 8 bits, [`kwscan::WORD`] when that is
/// a word byte, [`kwscan::SPACE`] when the byte is whitespace. One load gives
/// the scan everything it needs to know about a byte.
pub(super) fn byte_class(b: u8) -> u32 {
    let c = crate::cues::normalize_byte(b);
    let mut class = u32::from(c);
    if crate::cues::is_word_byte(c) {
        class |= kwscan::WORD;
    }
    if crate::cues::is_space(b) {
        class |= kwscan::SPACE;
    }
    class
}

impl Gen<'_> {
    /// Scratch addresses for the keyword scan's functions.
    pub(super) fn scratch(&self) -> Scratch {
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

    /// `scan(ptr, len, subject)`: one pass over a text for patterns, word
    /// count and keywords.
    pub(super) fn scan_fn(&self) -> Function {
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
        self.emit_pattern_groups(&mut a, ptr, end, subj);
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
            emit_chunk_limit(&mut a, l.keywords.is_some(), ptr, end, lim);
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
                emit_word_step(&mut a, cls, b, in_word, words);
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

    /// Stores the text's pattern bits: each group's scan, or-ed together.
    fn emit_pattern_groups(&self, a: &mut Asm, ptr: u32, end: u32, subj: u32) {
        if self.layout.patterns.is_empty() {
            return;
        }
        a.ops([I::LocalGet(subj), I::I32Const(3), I::I32Shl]);
        for g in 0..self.layout.patterns.len() {
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
}

/// `lim = min(ptr + EVENT_CHUNK, end)` with keywords (their events are
/// flushed every chunk); `lim = end` without.
fn emit_chunk_limit(a: &mut Asm, keywords: bool, ptr: u32, end: u32, lim: u32) {
    if keywords {
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
}

/// One byte's step of the word count, without a branch: `in` = the byte is
/// not whitespace; `words += in & !in_word`; `in_word = in`. Uses `tmp`.
fn emit_word_step(a: &mut Asm, cls: u32, tmp: u32, in_word: u32, words: u32) {
    a.ops([
        I::LocalGet(cls),
        I::I32Const(kwscan::SPACE.trailing_zeros() as i32),
        I::I32ShrU,
        I::I32Const(1),
        I::I32And,
        I::I32Const(1),
        I::I32Xor,
        I::LocalTee(tmp),
        I::LocalGet(in_word),
        I::I32Const(1),
        I::I32Xor,
        I::I32And,
        I::LocalGet(words),
        I::I32Add,
        I::LocalSet(words),
        I::LocalGet(tmp),
        I::LocalSet(in_word),
    ]);
}
