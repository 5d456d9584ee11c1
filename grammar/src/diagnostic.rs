//! Diagnostics: a stable code, a severity, a message, a span and a help line.
//!
//! Every code the toolchain can emit is listed in [`Code`]; `docs/ERRORS.md`
//! documents each one with an example, and a test checks that every example
//! triggers its code and that every code is documented.

use crate::span::{line_column, Span};
use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The policy is rejected.
    Error,
    /// The policy is accepted, but something in it is likely a mistake.
    Warning,
}

macro_rules! codes {
    ($($code:ident => $sev:ident, $title:literal;)*) => {
        /// Every diagnostic code. Codes are stable: a code, once published, keeps
        /// its meaning. `E` codes are errors, `W` codes warnings.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Code {
            $(
                #[doc = $title]
                $code,
            )*
        }

        impl Code {
            /// All codes, in order.
            pub const ALL: &'static [Code] = &[$(Code::$code),*];

            /// The code as printed, e.g. `"E0200"`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$code => stringify!($code),)* }
            }

            /// A short title, as used in docs/ERRORS.md.
            pub fn title(self) -> &'static str {
                match self { $(Code::$code => $title,)* }
            }

            /// The severity every diagnostic with this code has.
            pub fn severity(self) -> Severity {
                match self { $(Code::$code => Severity::$sev,)* }
            }
        }
    };
}

codes! {
    E0001 => Error, "source is not valid UTF-8";
    E0002 => Error, "source file too large";
    E0003 => Error, "nesting too deep";
    E0100 => Error, "syntax error";
    E0101 => Error, "invalid escape in a string";
    E0102 => Error, "number out of range";
    E0103 => Error, "missing or misplaced header";
    E0104 => Error, "statement given twice";
    E0105 => Error, "missing default";
    E0106 => Error, "statement not allowed in a module";
    E0110 => Error, "condition written in another language's syntax";
    E0111 => Error, "mask written in another language's syntax";
    E0112 => Error, "statement written in another language's syntax";
    E0200 => Error, "unknown name";
    E0201 => Error, "unknown standard cue set";
    E0202 => Error, "`std` used without `use std`";
    E0203 => Error, "unknown structure";
    E0204 => Error, "unknown preview feature";
    E0205 => Error, "name defined twice";
    E0206 => Error, "rule name used twice";
    E0207 => Error, "`let` cycle";
    E0208 => Error, "reserved word used as a name";
    E0209 => Error, "structure scored twice";
    E0210 => Error, "unknown module";
    E0300 => Error, "type mismatch";
    E0301 => Error, "invalid pattern";
    E0302 => Error, "pattern cannot be compiled to a DFA";
    E0303 => Error, "empty keyword";
    E0304 => Error, "`top` count out of range";
    E0305 => Error, "invalid budget";
    E0306 => Error, "mask must be fixed";
    E0307 => Error, "invalid trade";
    E0400 => Error, "policy can return the empty mask";
    E0401 => Error, "empty fallback";
    E0500 => Error, "too many rules";
    E0501 => Error, "too many keywords";
    E0502 => Error, "keyword too long";
    E0503 => Error, "pattern too long";
    E0504 => Error, "pattern's DFA too large";
    E0505 => Error, "too many `let`s";
    E0506 => Error, "expression too large";
    E0507 => Error, "too many patterns";
    W0100 => Warning, "unreachable rule";
    W0101 => Warning, "rule can never fire";
    W0102 => Warning, "rule shadowed by an earlier `select`";
    W0103 => Warning, "unused `let`";
    W0104 => Warning, "duplicate keyword";
    W0105 => Warning, "rule cannot change the mask";
    W0106 => Warning, "fallback repeats the default";
    W0107 => Warning, "structure listed twice in a mask";
    W0108 => Warning, "empty keyword set";
    W0109 => Warning, "`use std` given twice or unused";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A secondary location that helps explain a diagnostic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What is there.
    pub message: String,
}

/// A machine-applicable fix: replace the text at `span` with `replacement`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    /// The text to replace.
    pub span: Span,
    /// What to write instead.
    pub replacement: String,
}

/// One diagnostic about one source text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// The stable code.
    pub code: Code,
    /// Error or warning (always `code.severity()`).
    pub severity: Severity,
    /// What is wrong, in one sentence.
    pub message: String,
    /// The primary location.
    pub span: Span,
    /// What to do about it.
    pub help: Option<String>,
    /// Other locations that explain the problem.
    pub labels: Vec<Label>,
    /// A fix that tools (and the optimizer's LLM) can apply as is.
    pub suggestion: Option<Suggestion>,
}

impl Diagnostic {
    /// A diagnostic with `code` at `span`.
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            span,
            help: None,
            labels: Vec::new(),
            suggestion: None,
        }
    }

    /// Adds a machine-applicable fix.
    pub fn with_suggestion(mut self, span: Span, replacement: impl Into<String>) -> Self {
        self.suggestion = Some(Suggestion {
            span,
            replacement: replacement.into(),
        });
        self
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Whether this is an error (rather than a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The machine-readable form printed by `--format json`.
    pub fn to_json(&self, file: &str, source: &str) -> JsonDiagnostic {
        let (line, column) = line_column(source, self.span.start);
        let (end_line, end_column) = line_column(source, self.span.end);
        JsonDiagnostic {
            file: file.to_string(),
            code: self.code,
            severity: self.severity,
            message: self.message.clone(),
            help: self.help.clone(),
            line,
            column,
            end_line,
            end_column,
            byte_start: self.span.start,
            byte_end: self.span.end,
            suggestion: self.suggestion.as_ref().map(|s| JsonSuggestion {
                byte_start: s.span.start,
                byte_end: s.span.end,
                replacement: s.replacement.clone(),
            }),
        }
    }

    /// Renders the diagnostic for people: the message, the source line with the
    /// span underlined, and the help line. `color` adds ANSI colors.
    pub fn render(&self, file: &str, source: &str, color: bool) -> String {
        use ariadne::{Config, IndexType, Label as ALabel, Report, ReportKind, Source};
        let kind = match self.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
        };
        // Spans may come from the raw bytes of a file that is not UTF-8 and is
        // shown lossily decoded: keep them inside the text, on char boundaries.
        let clamp = |s: Span| {
            let mut end = s.end.min(source.len());
            while !source.is_char_boundary(end) {
                end += 1;
            }
            let mut start = s.start.min(end);
            while !source.is_char_boundary(start) {
                start -= 1;
            }
            start..end
        };
        let mut report = Report::build(kind, (file, clamp(self.span)))
            .with_config(
                Config::default()
                    .with_color(color)
                    .with_index_type(IndexType::Byte),
            )
            .with_code(self.code.as_str())
            .with_message(&self.message)
            .with_label(ALabel::new((file, clamp(self.span))).with_message(self.code.title()));
        for label in &self.labels {
            report = report
                .with_label(ALabel::new((file, clamp(label.span))).with_message(&label.message));
        }
        if let Some(help) = &self.help {
            report = report.with_help(help);
        }
        let mut out = Vec::new();
        let written = report
            .finish()
            .write((file, Source::from(source)), &mut out);
        match written {
            Ok(()) => String::from_utf8_lossy(&out).into_owned(),
            // Writing to a Vec cannot fail; keep a plain rendering just in case.
            Err(_) => {
                let (line, column) = line_column(source, self.span.start);
                format!(
                    "{}[{}]: {} at {file}:{line}:{column}\n",
                    severity_word(self.severity),
                    self.code,
                    self.message
                )
            }
        }
    }
}

fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The JSON shape of a diagnostic (`mesa check --format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonDiagnostic {
    /// The file the diagnostic is about.
    pub file: String,
    /// The stable code.
    pub code: Code,
    /// `"error"` or `"warning"`.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub help: Option<String>,
    /// 1-based line of the span's start.
    pub line: usize,
    /// 1-based column (in characters) of the span's start.
    pub column: usize,
    /// 1-based line of the span's end.
    pub end_line: usize,
    /// 1-based column of the span's end.
    pub end_column: usize,
    /// Byte offset of the span's start.
    pub byte_start: usize,
    /// Byte offset one past the span's end.
    pub byte_end: usize,
    /// A fix to apply as is: replace bytes `byte_start..byte_end` of the
    /// source with `replacement`. Absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<JsonSuggestion>,
}

/// A machine-applicable fix in JSON output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonSuggestion {
    /// Byte offset of the text to replace.
    pub byte_start: usize,
    /// Byte offset one past it.
    pub byte_end: usize,
    /// The text to write instead.
    pub replacement: String,
}

/// The closest candidate to `name` by edit distance, if it is close enough to
/// be a likely typo. Used for "did you mean" help lines.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_severity_matches_prefix() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()));
            let expected = if code.as_str().starts_with('E') {
                Severity::Error
            } else {
                Severity::Warning
            };
            assert_eq!(code.severity(), expected, "{code}");
        }
    }

    #[test]
    fn did_you_mean_finds_typos_only() {
        let names = ["causal", "temporal", "state"];
        assert_eq!(did_you_mean("casual", names), Some("causal"));
        assert_eq!(did_you_mean("temporl", names), Some("temporal"));
        assert_eq!(did_you_mean("xyzzy", names), None);
    }

    #[test]
    fn render_underlines_the_span() {
        let src = "policy \"p\"\ndefault {X}\n";
        let d = Diagnostic::new(Code::E0203, Span::new(20, 21), "unknown structure `X`")
            .with_help("structures are S, T, G, V, R");
        let text = d.render("p.mesa", src, false);
        assert!(text.contains("E0203"), "{text}");
        assert!(text.contains("default {X}"), "{text}");
        assert!(text.contains("structures are S, T, G, V, R"), "{text}");
        // A span that cuts a character in two is widened, not a panic.
        let odd = Diagnostic::new(Code::E0001, Span::new(1, 2), "bad byte");
        assert!(odd.render("p.mesa", "a\u{fffd}b", false).contains("E0001"));
        let json = d.to_json("p.mesa", src);
        assert_eq!((json.line, json.column), (2, 10));
    }
}
