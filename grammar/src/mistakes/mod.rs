//! Syntax errors that teach: what a statement that failed to parse most
//! likely meant, said in MESA.
//!
//! The parser hands over the statement that failed (its byte range) and the
//! place pest stopped. [`explain`] tokenizes the statement forgivingly,
//! runs every recognizer of [`recognize`] over it and returns one diagnostic
//! per mistake found, each with the MESA text to write instead (also as a
//! machine-applicable [`crate::diagnostic::Suggestion`]). When nothing is
//! recognized, the caller falls back to a plain "expected ..." message.

mod recognize;
mod tokens;

use crate::diagnostic::Diagnostic;
use crate::span::Span;

/// Diagnostics for the mistakes recognized in `source[statement]`, in
/// source order; empty when none is recognized.
pub(crate) fn explain(source: &str, statement: Span) -> Vec<Diagnostic> {
    let toks = tokens::tokenize(source, statement.start, statement.end);
    let cx = recognize::Cx {
        src: source,
        toks: &toks,
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let found = recognize::RECOGNIZERS.iter().find_map(|r| r(&cx, i));
        match found {
            Some(hit) => {
                i += hit.len.max(1);
                let mut d = Diagnostic::new(hit.code, hit.span, hit.message).with_help(hit.help);
                if let Some(fix) = hit.fix {
                    d = d.with_suggestion(hit.span, fix);
                }
                out.push(d);
            }
            None => i += 1,
        }
    }
    out
}

/// Statement keywords, as a line's first word: where recovery resumes.
pub(crate) const STATEMENT_WORDS: &[&str] = &[
    "policy", "module", "use", "let", "score", "rule", "default", "fallback", "budget", "trade",
];

/// Whether a line that starts with `word` and reads `line` in full begins a
/// statement of its own, for recovery: MESA's statement keywords in any
/// case, and `if ... then select|add|remove ...`, the rule written as an
/// `if` statement.
pub(crate) fn starts_statement(word: &str, line: &str) -> bool {
    if STATEMENT_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
        return true;
    }
    if !word.eq_ignore_ascii_case("if") {
        return false;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).any(|w| {
        (w[0] == "then" || w[0] == ":" || w[0].ends_with(':'))
            && ["select", "add", "remove", "{"]
                .iter()
                .any(|a| w[1].starts_with(a))
    })
}
