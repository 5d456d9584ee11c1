//! A small scanner that splits source text into words, strings, comments and
//! other bytes. It is not the parser: the nesting pre-check, span trimming and
//! the formatter's comment recovery use it, and all need the same answer to
//! "is this `#` in a string or a comment?".

/// One piece of source text; ranges are byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// `# ...` up to (not including) the end of the line.
    Comment(usize, usize),
    /// A string literal, quotes included (raw strings include the `r`).
    Str(usize, usize),
    /// A run of `[A-Za-z_][A-Za-z0-9_]*` (or digits following them).
    Word(usize, usize),
    /// A line break.
    Newline(usize),
    /// Any other non-blank byte.
    Other(usize),
}

/// Iterates over the pieces of a text, skipping blanks other than newlines.
pub(crate) struct Pieces<'a> {
    bytes: &'a [u8],
    i: usize,
}

impl<'a> Pieces<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Pieces {
            bytes: text.as_bytes(),
            i: 0,
        }
    }

    fn skip_string(&mut self, raw: bool) {
        // self.i is on the opening quote.
        self.i += 1;
        while self.i < self.bytes.len() && self.bytes[self.i] != b'"' && self.bytes[self.i] != b'\n'
        {
            self.i += if self.bytes[self.i] == b'\\' && !raw {
                2
            } else {
                1
            };
        }
        if self.bytes.get(self.i) == Some(&b'"') {
            self.i += 1;
        }
        self.i = self.i.min(self.bytes.len());
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Iterator for Pieces<'_> {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        while let Some(&b) = self.bytes.get(self.i) {
            let start = self.i;
            match b {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\n' => {
                    self.i += 1;
                    return Some(Piece::Newline(start));
                }
                b'#' => {
                    while self.i < self.bytes.len() && self.bytes[self.i] != b'\n' {
                        self.i += 1;
                    }
                    return Some(Piece::Comment(start, self.i));
                }
                b'"' => {
                    self.skip_string(false);
                    return Some(Piece::Str(start, self.i));
                }
                _ if is_word_byte(b) => {
                    while self.i < self.bytes.len() && is_word_byte(self.bytes[self.i]) {
                        self.i += 1;
                    }
                    if self.i == start + 1 && b == b'r' && self.bytes.get(self.i) == Some(&b'"') {
                        self.skip_string(true);
                        return Some(Piece::Str(start, self.i));
                    }
                    return Some(Piece::Word(start, self.i));
                }
                _ => {
                    self.i += 1;
                    return Some(Piece::Other(start));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_hide_hashes_and_raw_strings_have_no_escapes() {
        let src = "a \"x#\\\"\" r\"\\\" # c\n";
        let pieces: Vec<Piece> = Pieces::new(src).collect();
        assert_eq!(
            pieces,
            vec![
                Piece::Word(0, 1),
                Piece::Str(2, 8),
                Piece::Str(9, 13),
                Piece::Comment(14, 17),
                Piece::Newline(17)
            ]
        );
    }
}
