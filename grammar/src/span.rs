//! Byte spans into a policy's source text.

use serde::Serialize;

/// A half-open byte range `start..end` into the source text of one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    /// First byte of the range.
    pub start: usize,
    /// One past the last byte of the range.
    pub end: usize,
}

impl Span {
    /// Builds a span from its two ends.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl From<pest::Span<'_>> for Span {
    fn from(span: pest::Span<'_>) -> Self {
        Span::new(span.start(), span.end())
    }
}

/// Line and column (both 1-based; the column counts Unicode scalar values)
/// of a byte offset in `source`. Offsets past the end map to the end.
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one_and_in_chars() {
        let src = "ab\ncé d";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 3), (2, 1));
        // 'é' is two bytes; the space after it is the third character.
        assert_eq!(line_column(src, 6), (2, 3));
        assert_eq!(line_column(src, 100), (2, 5));
    }
}

/// Line starts of a source, for turning many byte offsets into lines and
/// columns without rescanning the text each time.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes `source`'s lines.
    pub fn new(source: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The same as [`line_column`], for the source this index was built from.
    pub fn line_column(&self, source: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(source.len());
        while !source.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, source[start..offset].chars().count() + 1)
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;

    #[test]
    fn index_agrees_with_line_column() {
        let src = "ab\ncé d\n\nxyz";
        let index = LineIndex::new(src);
        for offset in 0..=src.len() + 2 {
            assert_eq!(
                index.line_column(src, offset),
                line_column(src, offset),
                "{offset}"
            );
        }
    }
}
