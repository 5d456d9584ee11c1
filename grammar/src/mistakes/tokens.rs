//! A forgiving tokenizer for statements that failed to parse.
//!
//! The grammar only knows MESA; the mistakes it must explain are written in
//! the tokens of other languages (`==`, `&&`, `'single quotes'`, `::`,
//! `/regex/`). This tokenizer accepts all of them so that the recognizers in
//! [`super::recognize`] can look at a failed statement token by token.

use crate::span::Span;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    Word,
    /// A string in double quotes (`r"..."` included).
    Str,
    /// A string in single quotes.
    SingleStr,
    /// Digits, with an optional fraction and exponent.
    Number,
    /// An operator or a bracket: the longest of [`OPERATORS`], or one
    /// character.
    Punct,
}

/// One token; `span` is a range of the whole source.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tok<'s> {
    pub kind: Kind,
    pub text: &'s str,
    pub span: Span,
}

impl Tok<'_> {
    /// Whether this is the word `w` (exactly).
    pub fn is(&self, w: &str) -> bool {
        self.kind == Kind::Word && self.text == w
    }

    /// Whether this is the operator or bracket `p`.
    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == Kind::Punct && self.text == p
    }

    /// Whether this is a string in either kind of quotes.
    pub fn is_str(&self) -> bool {
        matches!(self.kind, Kind::Str | Kind::SingleStr)
    }

    /// The text of a string token without its quotes (escapes left as
    /// written); other tokens as they are.
    pub fn inner(&self) -> &str {
        match self.kind {
            Kind::Str => {
                let t = self.text.strip_prefix('r').unwrap_or(self.text);
                t.strip_prefix('"')
                    .map(|t| t.strip_suffix('"').unwrap_or(t))
                    .unwrap_or(t)
            }
            Kind::SingleStr => {
                let t = &self.text[1..];
                t.strip_suffix('\'').unwrap_or(t)
            }
            _ => self.text,
        }
    }
}

/// Operators of MESA and of the languages people bring with them, longest
/// first within each leading character.
const OPERATORS: &[&str] = &[
    "->", "=>", "==", "=~", "!=", "!~", "<=", ">=", "<>", "&&", "||", ":=", "::", "//", "/*",
];

/// The tokens of `source[start..end]`, skipping blanks and `#` comments.
pub(crate) fn tokenize(source: &str, start: usize, end: usize) -> Vec<Tok<'_>> {
    let bytes = source.as_bytes();
    let end = end.min(bytes.len());
    let mut out = Vec::new();
    let mut i = start;
    while i < end {
        let b = bytes[i];
        let from = i;
        let kind = match b {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < end && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => {
                i = string_end(bytes, i, end, b'"', true);
                Kind::Str
            }
            b'\'' => {
                i = string_end(bytes, i, end, b'\'', true);
                Kind::SingleStr
            }
            b'r' if bytes.get(i + 1) == Some(&b'"') => {
                i = string_end(bytes, i + 1, end, b'"', false);
                Kind::Str
            }
            b'0'..=b'9' => {
                while i < end && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                    i += 1;
                }
                Kind::Number
            }
            _ if b.is_ascii_alphabetic() || b == b'_' => {
                while i < end && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                Kind::Word
            }
            _ => {
                let rest = &source[i..end];
                let len = OPERATORS
                    .iter()
                    .find(|op| rest.starts_with(*op))
                    .map_or_else(
                        || rest.chars().next().map_or(1, char::len_utf8),
                        |op| op.len(),
                    );
                i += len;
                Kind::Punct
            }
        };
        out.push(Tok {
            kind,
            text: &source[from..i],
            span: Span::new(from, i),
        });
    }
    out
}

/// The offset after a string that opens at `i` with `quote`: at the closing
/// quote, or at the end of the line when it is not closed.
fn string_end(bytes: &[u8], mut i: usize, end: usize, quote: u8, escapes: bool) -> usize {
    i += 1;
    while i < end && bytes[i] != quote && bytes[i] != b'\n' {
        i += if escapes && bytes[i] == b'\\' { 2 } else { 1 };
    }
    (i + usize::from(i < end && bytes[i] == quote)).min(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_tokens() {
        let src = "qtype == 'C' && x := r\"a\\b\" # c\n->{S}→";
        let toks: Vec<(Kind, &str)> = tokenize(src, 0, src.len())
            .iter()
            .map(|t| (t.kind, t.text))
            .collect();
        assert_eq!(
            toks,
            vec![
                (Kind::Word, "qtype"),
                (Kind::Punct, "=="),
                (Kind::SingleStr, "'C'"),
                (Kind::Punct, "&&"),
                (Kind::Word, "x"),
                (Kind::Punct, ":="),
                (Kind::Str, "r\"a\\b\""),
                (Kind::Punct, "->"),
                (Kind::Punct, "{"),
                (Kind::Word, "S"),
                (Kind::Punct, "}"),
                (Kind::Punct, "→"),
            ]
        );
    }
}
