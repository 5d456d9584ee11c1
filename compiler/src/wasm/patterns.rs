//! The patterns compiled into a module: DFAs for a policy's patterns
//! (regex-automata, every pattern reported), each re-laid out as a flat
//! transition table over byte classes.
//!
//! [`compile_groups`] puts all patterns in one DFA when it fits, which is the
//! common case and costs at most one table lookup per byte. Unanchored DFAs for
//! several patterns can blow up as the product of their states (a
//! case-insensitive alternation beside an identifier pattern does), so when
//! the combined DFA is over the limit the patterns are packed greedily into
//! groups that each fit, and the module scans the text once per group.
//! A policy is refused only when a single pattern is too large alone, or the
//! groups together exceed [`MAX_TOTAL_DFA_BYTES`]; the checker runs the same
//! function, so a policy that checks also compiles.
//!
//! A pattern matches somewhere in a text exactly when the DFA, run over the
//! whole text and its end, passes through a match state for it: with
//! `MatchKind::All` and an unanchored start every match end is visited.
//! [`PatternDfa::scan`] is that loop in Rust, and
//! [`PatternDfa::scan_skipping`] the same loop passing over idle bytes, as
//! the generated code does; the tests check both against the interpreter's
//! `regex` on random texts.

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::{start, syntax};
use regex_automata::{Anchored, MatchKind};
use std::collections::HashMap;

/// Largest DFA accepted, in bytes, as regex-automata counts it.
pub const MAX_DFA_BYTES: usize = 1 << 20;
/// Most patterns one policy can have in the compiled module (one bit each).
pub const MAX_PATTERNS: usize = 64;
/// Largest total size of all of a policy's pattern tables, in bytes.
pub const MAX_TOTAL_DFA_BYTES: usize = 8 << 20;

/// A DFA over byte classes, states renumbered from the start state (0).
#[derive(Debug, Clone, PartialEq)]
pub struct PatternDfa {
    /// Byte to class.
    pub classes: [u8; 256],
    /// Number of classes (not counting end of text).
    pub class_count: usize,
    /// `next[state * class_count + class]`.
    pub next: Vec<u32>,
    /// The state after the end of the text.
    pub eoi: Vec<u32>,
    /// Per state: the patterns (bit i = the policy's pattern i, whatever
    /// group this DFA is) whose match ends here.
    pub matches: Vec<u64>,
}

/// The table layout of [`PatternDfa::entry_layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryLayout {
    /// Bytes per entry: 2 or 4.
    pub width: u32,
    /// log2 of the bytes per row.
    pub shift: u32,
}

/// Where a scan may skip bytes without stepping the DFA. In an *idle*
/// state, a byte `b` with `land[b] == Some(t)` leads to state `t` from every
/// idle state, `t` is idle, and it ends no match: a run of such bytes can be
/// passed over looking only at each byte, and the state after the run is
/// `land` of its last byte. For real patterns most bytes of a text are
/// skippable (all but the first bytes of the patterns' literals), so the
/// scan's chain of dependent table loads, one per byte, mostly disappears.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleSkip {
    /// Per state: whether it is idle.
    pub idle: Vec<bool>,
    /// Per byte: the state a skippable byte leads to.
    pub land: [Option<u32>; 256],
}

/// Compiles a policy's patterns into as few DFAs as fit (see the module
/// documentation). Scanning a text with every group and or-ing the results
/// gives the set of patterns that match.
pub fn compile_groups(patterns: &[String]) -> Result<Vec<PatternDfa>, DfaError> {
    if patterns.len() > MAX_PATTERNS {
        return Err(DfaError::TooManyPatterns(patterns.len()));
    }
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    let all: Vec<usize> = (0..patterns.len()).collect();
    match PatternDfa::build(patterns, &all) {
        Ok(dfa) => return Ok(vec![dfa]),
        Err(Failure::Size) => {}
        Err(Failure::Other(m)) => return Err(DfaError::Other(m)),
    }
    let mut groups = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut current_dfa: Option<PatternDfa> = None;
    for i in 0..patterns.len() {
        let mut trial = current.clone();
        trial.push(i);
        match PatternDfa::build(patterns, &trial) {
            Ok(dfa) => {
                current = trial;
                current_dfa = Some(dfa);
            }
            Err(Failure::Other(m)) => return Err(DfaError::Other(m)),
            Err(Failure::Size) => {
                groups.extend(current_dfa.take());
                current = vec![i];
                match PatternDfa::build(patterns, &current) {
                    Ok(dfa) => current_dfa = Some(dfa),
                    Err(Failure::Size) => return Err(DfaError::TooBig(Some(i))),
                    Err(Failure::Other(m)) => return Err(DfaError::Other(m)),
                }
            }
        }
    }
    groups.extend(current_dfa);
    if groups.iter().map(PatternDfa::table_bytes).sum::<usize>() > MAX_TOTAL_DFA_BYTES {
        return Err(DfaError::TooBig(None));
    }
    Ok(groups)
}

/// Why one DFA could not be built.
enum Failure {
    Size,
    Other(String),
}

/// Why the patterns cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DfaError {
    /// More patterns than [`MAX_PATTERNS`].
    TooManyPatterns(usize),
    /// The DFA for this pattern (by index) alone exceeds [`MAX_DFA_BYTES`];
    /// `None` when only the patterns together do.
    TooBig(Option<usize>),
    /// Any other failure (the checker rejects these first).
    Other(String),
}

fn build(patterns: &[&str]) -> Result<dense::DFA<Vec<u32>>, Box<dense::BuildError>> {
    dense::Builder::new()
        .configure(
            dense::DFA::config()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Unanchored)
                .byte_classes(true)
                .dfa_size_limit(Some(MAX_DFA_BYTES))
                .determinize_size_limit(Some(4 * MAX_DFA_BYTES)),
        )
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .thompson(thompson::Config::new().utf8(false))
        .build_many(patterns)
        .map_err(Box::new)
}

impl PatternDfa {
    /// Compiles all the patterns (regex sources) into one DFA, or fails.
    /// [`compile_groups`] is what the compiler uses.
    pub fn new(patterns: &[String]) -> Result<PatternDfa, DfaError> {
        if patterns.len() > MAX_PATTERNS {
            return Err(DfaError::TooManyPatterns(patterns.len()));
        }
        let all: Vec<usize> = (0..patterns.len()).collect();
        PatternDfa::build(patterns, &all).map_err(|e| match e {
            Failure::Size => {
                let culprit = (0..patterns.len())
                    .find(|&i| matches!(PatternDfa::build(patterns, &[i]), Err(Failure::Size)));
                DfaError::TooBig(culprit)
            }
            Failure::Other(m) => DfaError::Other(m),
        })
    }

    /// One DFA for the patterns at `pattern_ids` (indices into `patterns`);
    /// match bits are those indices.
    fn build(patterns: &[String], pattern_ids: &[usize]) -> Result<PatternDfa, Failure> {
        let refs: Vec<&str> = pattern_ids.iter().map(|&i| patterns[i].as_str()).collect();
        let dfa = match build(&refs) {
            Ok(dfa) => dfa,
            Err(e) if e.is_size_limit_exceeded() => return Err(Failure::Size),
            Err(e) => return Err(Failure::Other(e.to_string())),
        };
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::No))
            .map_err(|e| Failure::Other(e.to_string()))?;
        let byte_classes = dfa.byte_classes();
        let mut classes = [0u8; 256];
        let mut representative: Vec<u8> = Vec::new();
        for b in 0..=255u8 {
            let c = byte_classes.get(b);
            classes[b as usize] = c;
            if c as usize >= representative.len() {
                representative.resize(c as usize + 1, b);
            }
        }
        let class_count = representative.len();
        // Breadth-first renumbering of the states reachable from the start.
        let mut ids: HashMap<regex_automata::util::primitives::StateID, u32> = HashMap::new();
        let mut order = vec![start];
        ids.insert(start, 0);
        let mut next = Vec::new();
        let mut eoi = Vec::new();
        let mut matches = Vec::new();
        let mut i = 0;
        let mut intern = |id, order: &mut Vec<_>| -> u32 {
            let n = ids.len() as u32;
            *ids.entry(id).or_insert_with(|| {
                order.push(id);
                n
            })
        };
        while i < order.len() {
            let s = order[i];
            for &rep in &representative {
                let t = dfa.next_state(s, rep);
                next.push(intern(t, &mut order));
            }
            let e = dfa.next_eoi_state(s);
            eoi.push(intern(e, &mut order));
            let mut bits = 0u64;
            if dfa.is_match_state(s) {
                for m in 0..dfa.match_len(s) {
                    bits |= 1 << pattern_ids[dfa.match_pattern(s, m).as_usize()];
                }
            }
            matches.push(bits);
            i += 1;
        }
        Ok(PatternDfa {
            classes,
            class_count,
            next,
            eoi,
            matches,
        })
    }

    /// How the module lays out the transition table: entries of `width`
    /// bytes, rows of `1 << shift` bytes (the classes' entries, padded to a
    /// power of two of at least 4 bytes, so that a state's entry can be its
    /// row's offset with two flag bits below).
    pub fn entry_layout(&self) -> EntryLayout {
        let row = |width: usize| (self.class_count * width).next_power_of_two().max(4);
        let width = if self.len() * row(2) <= 0x1_0000 {
            2
        } else {
            4
        };
        EntryLayout {
            width: width as u32,
            shift: row(width).trailing_zeros(),
        }
    }

    /// The bytes its tables take in a module (see [`PatternDfa::entry_layout`]):
    /// rows, end-of-text targets, match masks, and the per-byte class
    /// offsets and landing states.
    pub fn table_bytes(&self) -> usize {
        let EntryLayout { width, shift } = self.entry_layout();
        let w = width as usize;
        (self.len() << shift) + self.len() * (w + 8) + 256 * (2 + w)
    }

    /// The idle states and the bytes a scan may skip in them (see
    /// [`IdleSkip`]): a greatest fixed point. The candidates start as the
    /// start state and every state one byte from it; a byte is skippable
    /// when every candidate goes on it to one and the same candidate that
    /// ends no match; the candidates are then cut down to the start state
    /// and those targets, until nothing changes. (Growing the set from the
    /// start state instead would keep the state after the first byte of a
    /// literal, which then blocks skipping the literal's second byte.)
    /// Skipping is left off (no idle state) when fewer than half the bytes
    /// are skippable.
    pub fn idle_skip(&self) -> IdleSkip {
        let n = self.len();
        let c = self.class_count;
        let mut idle = vec![false; n];
        idle[0] = true;
        for &t in &self.next[..c] {
            idle[t as usize] = true;
        }
        loop {
            let members: Vec<usize> = (0..n).filter(|&s| idle[s]).collect();
            let land_class: Vec<Option<u32>> = (0..c)
                .map(|k| {
                    let first = self.next[k];
                    let same = members.iter().all(|&s| self.next[s * c + k] == first);
                    (same && idle[first as usize] && self.matches[first as usize] == 0)
                        .then_some(first)
                })
                .collect();
            let mut kept = vec![false; n];
            kept[0] = true;
            for &t in land_class.iter().flatten() {
                kept[t as usize] = true;
            }
            if kept == idle {
                let mut land = [None; 256];
                for (b, slot) in land.iter_mut().enumerate() {
                    *slot = land_class[self.classes[b] as usize];
                }
                if land.iter().filter(|l| l.is_some()).count() < 128 {
                    break;
                }
                return IdleSkip { idle, land };
            }
            idle = kept;
        }
        IdleSkip {
            idle: vec![false; n],
            land: [None; 256],
        }
    }

    /// The reference for the generated loop, which skips idle bytes: the
    /// same answer as [`PatternDfa::scan`].
    pub fn scan_skipping(&self, skip: &IdleSkip, text: &[u8]) -> u64 {
        let mut s = 0usize;
        let mut found = self.matches[0];
        let mut i = 0;
        loop {
            if skip.idle[s] {
                while let Some(&t) = text.get(i).and_then(|&b| skip.land[b as usize].as_ref()) {
                    s = t as usize;
                    i += 1;
                }
            }
            let Some(&b) = text.get(i) else { break };
            i += 1;
            s = self.next[s * self.class_count + self.classes[b as usize] as usize] as usize;
            found |= self.matches[s];
        }
        found | self.matches[self.eoi[s] as usize]
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.eoi.len()
    }

    /// Whether the DFA has no states (never: there is always a start state).
    pub fn is_empty(&self) -> bool {
        self.eoi.is_empty()
    }

    /// Which patterns match in `text`, one DFA step per byte: the plain
    /// loop that [`PatternDfa::scan_skipping`] (the generated loop's
    /// reference) must agree with.
    pub fn scan(&self, text: &[u8]) -> u64 {
        let mut s = 0usize;
        let mut found = self.matches[0];
        for &b in text {
            s = self.next[s * self.class_count + self.classes[b as usize] as usize] as usize;
            found |= self.matches[s];
        }
        s = self.eoi[s] as usize;
        found | self.matches[s]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(patterns: &[String], text: &[u8]) -> u64 {
        patterns
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                crate::cues::build_regex(p)
                    .map(|r| r.is_match(text))
                    .unwrap_or(false)
            })
            .fold(0, |acc, (i, _)| acc | (1 << i))
    }

    #[test]
    fn agrees_with_regex_on_examples() {
        let pats: Vec<String> = [
            r"\bsteps?\s+\d+",
            r"(?i)error",
            r"^$",
            r"^why",
            r"\?$",
            r"a\b",
            r"[^a]",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let dfa = PatternDfa::new(&pats).unwrap();
        for text in [
            "",
            "at step 12",
            "ERROR!",
            "why?",
            "xa b",
            "aaa",
            "steps  3",
            "é",
        ] {
            assert_eq!(
                dfa.scan(text.as_bytes()),
                reference(&pats, text.as_bytes()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn blowup_names_the_pattern() {
        let pats = vec!["abc".to_string(), r"(?u:\w){1000}".to_string()];
        match PatternDfa::new(&pats) {
            Err(DfaError::TooBig(Some(1))) => {}
            Err(DfaError::Other(_)) => {} // the NFA limit may trip first
            other => panic!("{other:?}"),
        }
        let pats = vec![r"[01]*1[01]{20}".to_string()];
        assert_eq!(
            PatternDfa::new(&pats).err(),
            Some(DfaError::TooBig(Some(0)))
        );
    }

    /// The reported case: a case-insensitive alternation beside the standard
    /// identifier pattern blows the combined DFA up; in groups it compiles,
    /// and the groups together still answer exactly as `regex` does.
    #[test]
    fn blowup_of_the_combination_is_split_into_groups() {
        let ident = crate::stdlib::lookup("identifiers")
            .and_then(|e| match e {
                crate::check::Export::Pattern(p) => Some(p.source),
                _ => None,
            })
            .expect("std.identifiers is a pattern");
        let pats = vec![r"(?i)traceback|exception".to_string(), ident];
        assert!(matches!(
            PatternDfa::new(&pats),
            Err(DfaError::TooBig(None))
        ));
        let groups = compile_groups(&pats).expect("groups");
        assert_eq!(groups.len(), 2);
        for text in [
            "Traceback in my_func",
            "no exception",
            "x",
            "",
            "EXCEPTION foo_bar",
        ] {
            let found = groups
                .iter()
                .fold(0, |acc, g| acc | g.scan(text.as_bytes()));
            assert_eq!(found, reference(&pats, text.as_bytes()), "{text:?}");
        }
    }

    /// The bench's patterns: every byte but `s` is skippable, `s` is not
    /// (it may begin `step`), and the skipping scan answers as the plain one.
    #[test]
    fn idle_bytes_of_a_literal_pattern() {
        let pats = vec![r"\bstep1\s+\d+".to_string(), r"\bstep2\s+\d+".to_string()];
        let dfa = PatternDfa::new(&pats).unwrap();
        let skip = dfa.idle_skip();
        assert!(skip.land[b's' as usize].is_none());
        assert!(skip.land[b'x' as usize].is_some() && skip.land[b' ' as usize].is_some());
        let stops: Vec<usize> = (0..256).filter(|&b| skip.land[b].is_none()).collect();
        assert_eq!(stops, vec![b's' as usize]);
        for text in [
            "at step1 12",
            "steps",
            "xstep2 3",
            "step2  9 and step1 1",
            "",
        ] {
            let t = text.as_bytes();
            assert_eq!(dfa.scan_skipping(&skip, t), dfa.scan(t), "{text:?}");
            assert_eq!(dfa.scan(t), reference(&pats, t), "{text:?}");
        }
    }

    /// A pattern that can begin with almost any byte leaves nothing to skip.
    #[test]
    fn no_skipping_when_most_bytes_start_a_match() {
        let dfa = PatternDfa::new(&[r"[^q]{2}z".to_string()]).unwrap();
        let skip = dfa.idle_skip();
        assert!(skip.idle.iter().all(|i| !i));
        assert!(skip.land.iter().all(Option::is_none));
    }

    proptest! {
        #[test]
        fn skipping_agrees_with_stepping(
            pats in prop::collection::vec(prop::sample::select(vec![
                r"ab", r"a+b?", r"\bab\b", r"^a", r"b$", r"(?i)AB", r"[0-9]{2}", r"a|b\s", r"\Ba", r"x*", r"[^ab]b",
                r"\bstep\s+\d+", r"(?m)^x", r"(?i)traceback|exception",
            ]), 1..5),
            text in prop::collection::vec(prop::sample::select(vec![
                b'a', b'b', b'A', b'B', b' ', b'1', b'2', b'x', 0xc3, b'\n', b's', b't', b'e', b'p', b'q',
            ]), 0..40),
        ) {
            let pats: Vec<String> = pats.into_iter().map(String::from).collect();
            let dfa = PatternDfa::new(&pats).unwrap();
            let skip = dfa.idle_skip();
            prop_assert_eq!(dfa.scan_skipping(&skip, &text), reference(&pats, &text));
        }

        #[test]
        fn agrees_with_regex(
            pats in prop::collection::vec(prop::sample::select(vec![
                r"ab", r"a+b?", r"\bab\b", r"^a", r"b$", r"(?i)AB", r"[0-9]{2}", r"a|b\s", r"\Ba", r"x*", r"[^ab]b",
            ]), 1..5),
            text in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'A', b'B', b' ', b'1', b'2', b'x', 0xc3]), 0..24),
        ) {
            let pats: Vec<String> = pats.into_iter().map(String::from).collect();
            let dfa = PatternDfa::new(&pats).unwrap();
            prop_assert_eq!(dfa.scan(&text), reference(&pats, &text));
        }
    }
}
