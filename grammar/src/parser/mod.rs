//! From source text to the [`File`] syntax tree.
//!
//! Before pest sees the text, [`parse_bytes`] checks the encoding, the size and
//! a conservative bound on the nesting depth, so that no input can exhaust the
//! parser's stack. After parsing, the tree builder bounds the depth of the tree
//! it builds (operator chains fold into nested nodes) for the same reason.

mod builder;
mod expr;

use crate::ast::*;
use crate::diagnostic::{Code, Diagnostic};
use crate::lex::{Piece, Pieces};
use crate::span::Span;
use pest::Parser as _;

#[derive(pest_derive::Parser)]
#[grammar = "mesa.pest"]
struct MesaParser;

/// Largest source accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;
/// Deepest bracket / `if` / `above` nesting accepted before parsing.
pub const MAX_NESTING: usize = 64;
/// Deepest expression tree accepted (a chain of N binary operators is N deep).
pub const MAX_EXPR_DEPTH: u32 = 256;

/// Parses raw bytes: checks that they are UTF-8 first (E0001).
pub fn parse_bytes(bytes: &[u8]) -> Result<File, Vec<Diagnostic>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text),
        Err(e) => {
            let at = e.valid_up_to();
            Err(vec![Diagnostic::new(
                Code::E0001,
                Span::new(at, at + e.error_len().unwrap_or(1)),
                format!("the source is not valid UTF-8 (invalid byte at offset {at})"),
            )
            .with_help("save the policy as UTF-8 text")])
        }
    }
}

/// Parses a policy or module. On failure, returns at least one error.
pub fn parse(source: &str) -> Result<File, Vec<Diagnostic>> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(vec![Diagnostic::new(
            Code::E0002,
            Span::new(0, 0),
            format!(
                "the source is {} bytes; the limit is {MAX_SOURCE_BYTES} bytes",
                source.len()
            ),
        )
        .with_help("split the policy or remove unused keyword sets")]);
    }
    if let Some(span) = first_too_deep(source) {
        return Err(vec![too_deep(span)]);
    }
    match MesaParser::parse(Rule::file, source) {
        Ok(pairs) => build(source, pairs, Vec::new()),
        Err(first) => {
            // Recovery: blank out each statement that fails, so that the
            // rest is parsed (and built, for its own errors) and every
            // mistake in the file is reported, not just the first.
            let (text, syntax) = recover(source, first);
            match MesaParser::parse(Rule::file, &text) {
                Ok(pairs) => build(&text, pairs, syntax),
                Err(_) => Err(syntax),
            }
        }
    }
}

/// Most syntax errors reported for one source; recovery stops there.
pub const MAX_SYNTAX_ERRORS: usize = 20;

/// Builds the tree from a successful parse; `errors` are the syntax errors
/// of statements that recovery blanked out (the result is then an error).
fn build(
    text: &str,
    mut pairs: pest::iterators::Pairs<'_, Rule>,
    errors: Vec<Diagnostic>,
) -> Result<File, Vec<Diagnostic>> {
    let file = pairs.next().map(|p| p.into_inner()).into_iter().flatten();
    let mut builder = Builder {
        source: text,
        errors,
    };
    let mut statements = Vec::new();
    for pair in file {
        if pair.as_rule() == Rule::EOI {
            continue;
        }
        if let Some(stmt) = builder.statement(pair) {
            statements.push(stmt);
        }
    }
    if builder.errors.is_empty() {
        Ok(File { statements })
    } else {
        builder.errors.sort_by_key(|d| d.span.start);
        Err(builder.errors)
    }
}

/// Reports the statement that `first` failed in, blanks it out and parses
/// again, until the rest parses or [`MAX_SYNTAX_ERRORS`] are found. Returns
/// the text with the failed statements blanked (same length, same line
/// breaks, so spans still point into `source`) and their diagnostics.
fn recover(source: &str, first: pest::error::Error<Rule>) -> (String, Vec<Diagnostic>) {
    let starts = statement_starts(source);
    let mut text = source.to_string();
    let mut errors = Vec::new();
    let mut error = first;
    let mut blanked: Vec<Span> = Vec::new();
    loop {
        let pos = match error.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((a, _)) => a,
        };
        let statement = failed_statement(source, &starts, pos);
        if blanked.contains(&statement) {
            break; // no progress: should not happen, but never loop
        }
        errors.extend(syntax_errors(source, statement, error));
        blanked.push(statement);
        // Same bytes per character, same line breaks: spans stay valid.
        let mut blank = String::with_capacity(statement.end - statement.start);
        for c in source[statement.start..statement.end].chars() {
            if c == '\n' {
                blank.push('\n');
            } else {
                blank.extend(std::iter::repeat_n(' ', c.len_utf8()));
            }
        }
        text.replace_range(statement.start..statement.end, &blank);
        if errors.len() >= MAX_SYNTAX_ERRORS {
            break;
        }
        match MesaParser::parse(Rule::file, &text) {
            Ok(_) => break,
            Err(e) => error = e,
        }
    }
    (text, errors)
}

/// Byte offsets where statements begin: the first word of a line when it is
/// a statement keyword (see [`crate::mistakes::starts_statement`]).
fn statement_starts(source: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut line_start = true;
    for piece in Pieces::new(source) {
        match piece {
            Piece::Newline(_) => line_start = true,
            Piece::Comment(..) => {}
            Piece::Word(a, b) if line_start => {
                let line_end = source[a..].find('\n').map_or(source.len(), |n| a + n);
                if crate::mistakes::starts_statement(&source[a..b], &source[a..line_end]) {
                    starts.push(a);
                }
                line_start = false;
            }
            _ => line_start = false,
        }
    }
    starts
}

/// The statement a parse error at `pos` belongs to. pest reports an error
/// at the start of a statement both when that statement fails early and
/// when the statement before it is unfinished; parsing the statement alone
/// tells the two apart.
fn failed_statement(source: &str, starts: &[usize], pos: usize) -> Span {
    let k = starts.partition_point(|&s| s <= pos);
    let end_of = |k: usize| starts.get(k).copied().unwrap_or(source.len());
    if k == 0 {
        return Span::new(0, end_of(0));
    }
    let k = k - 1;
    let at_start = source[starts[k]..pos].trim().is_empty();
    if at_start && k > 0 {
        let alone = &source[starts[k]..end_of(k + 1)];
        if MesaParser::parse(Rule::single_statement, alone).is_ok() {
            return Span::new(starts[k - 1], starts[k]);
        }
    }
    Span::new(starts[k], end_of(k + 1))
}

/// The diagnostics for one failed statement: the mistakes recognized in
/// it, or else pest's "expected ..." in words, with the statement's shape
/// as help.
fn syntax_errors(source: &str, statement: Span, e: pest::error::Error<Rule>) -> Vec<Diagnostic> {
    let found = crate::mistakes::explain(source, statement);
    if !found.is_empty() {
        return found;
    }
    let mut d = syntax_error(e);
    let text = &source[statement.start..statement.end];
    if d.span.start >= statement.end || d.span.start < statement.start {
        // The error is past the statement (it is unfinished): point at its end.
        let end = statement.start + code_len(text);
        d.span = Span::new(end, end);
    }
    let head = text.split_whitespace().next().unwrap_or("");
    d.help = Some(statement_shape(head).to_string());
    vec![d]
}

/// How a statement that starts with `head` is written, with an example.
fn statement_shape(head: &str) -> &'static str {
    match head {
        "policy" => "the first line names the policy: `policy \"my-policy\"`",
        "module" => "a module starts with `module \"name\"`",
        "use" => "write `use std` to bring in the standard cue sets",
        "let" => "a `let` names a keyword set, a pattern or an expression: `let failing = words [\"error\", \"failed\"]`, `let stepref = pattern r\"\\bstep \\d+\"`",
        "score" => "a score gives a structure a number: `score G = 0.2 + 0.1 * hits(query, std.entities)`",
        "rule" => "a rule is written `rule NAME when CONDITION -> select|add|remove MASK`, e.g. `rule why when query has std.causal -> select {S, T, R}`",
        "default" => "the default mask is a set of structures: `default {S, T, V}`",
        "fallback" => "the fallback mask is a set of structures: `fallback {S}`",
        "budget" => "a budget is a number of tokens: `budget 12000 tokens`",
        "trade" => "a trade names what a subset shows and the price of its tokens: `trade words at 0.3`",
        _ => "a policy is a list of statements: `policy \"name\"`, `use std`, `let`, `rule NAME when CONDITION -> select {S, T}`, `default {S}`; see docs/LANGUAGE.md",
    }
}

fn too_deep(span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::E0003,
        span,
        format!("expression nested more than {MAX_NESTING} levels deep (brackets, `if` and `above` count as levels)"),
    )
    .with_help("flatten the expression, or move parts of it into `let`s")
}

/// Finds the first place where the nesting bound is exceeded, if any.
///
/// The bound is conservative: every `(`, `[`, `{` opens a level closed by its
/// bracket, and every `if` / `above` opens a level that lasts until the
/// enclosing bracket closes or the statement ends. This over-approximates the
/// recursion depth pest needs.
fn first_too_deep(source: &str) -> Option<Span> {
    // One counter of open `if`/`above` levels per open bracket, plus the statement level.
    let mut levels: Vec<usize> = vec![0];
    let mut depth = 0usize;
    let mut prev_word = "";
    for piece in Pieces::new(source) {
        let span = match piece {
            Piece::Other(at) => {
                match source.as_bytes()[at] {
                    b'(' | b'[' | b'{' => {
                        levels.push(0);
                        depth += 1;
                    }
                    b')' | b']' | b'}' if levels.len() > 1 => {
                        depth -= 1 + levels.pop().unwrap_or(0);
                    }
                    _ => {}
                }
                Span::new(at, at + 1)
            }
            Piece::Word(start, end) => {
                let word = &source[start..end];
                let starts_statement = matches!(
                    word,
                    "policy"
                        | "module"
                        | "use"
                        | "let"
                        | "rule"
                        | "default"
                        | "fallback"
                        | "budget"
                        | "trade"
                ) || (word == "score" && prev_word != "by");
                if starts_statement && levels.len() == 1 {
                    depth -= levels[0];
                    levels[0] = 0;
                } else if word == "if" || word == "above" {
                    if let Some(last) = levels.last_mut() {
                        *last += 1;
                    }
                    depth += 1;
                }
                prev_word = word;
                Span::new(start, end)
            }
            Piece::Str(..) | Piece::Comment(..) | Piece::Newline(_) => continue,
        };
        if depth > MAX_NESTING {
            return Some(span);
        }
    }
    None
}

/// The length of `text` up to the end of its last token: trailing whitespace
/// and comments are not counted.
fn code_len(text: &str) -> usize {
    Pieces::new(text)
        .filter_map(|p| match p {
            Piece::Str(_, end) | Piece::Word(_, end) => Some(end),
            Piece::Other(at) => Some(at + 1),
            Piece::Comment(..) | Piece::Newline(_) => None,
        })
        .last()
        .map_or(0, |end| {
            let mut end = end.min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            end
        })
}

/// Describes a grammar rule for "expected ..." messages.
fn describe(rule: &Rule) -> String {
    let s = match rule {
        Rule::EOI => "end of file",
        Rule::header => "`policy \"name\"`",
        Rule::use_stmt
        | Rule::let_stmt
        | Rule::score_stmt
        | Rule::rule_stmt
        | Rule::default_stmt
        | Rule::fallback_stmt
        | Rule::budget_stmt
        | Rule::trade_stmt
        | Rule::kw_trade
        | Rule::kw_policy
        | Rule::kw_module
        | Rule::header_kind => {
            "a statement (policy, use, let, score, rule, default, fallback, budget, trade)"
        }
        Rule::expr | Rule::neg => "an expression",
        Rule::kw_not => "`not`",
        Rule::cmp_op => "a comparison (<, <=, >, >=, ==, !=)",
        Rule::add_op => "`+` or `-`",
        Rule::mul_op => "`*` or `/`",
        Rule::kw_and => "`and`",
        Rule::kw_or => "`or`",
        Rule::action | Rule::kw_select | Rule::kw_add | Rule::kw_remove => {
            "an action (select, add, remove)"
        }
        Rule::kw_when => "`when`",
        Rule::string | Rule::raw_string | Rule::cooked_string => "a string",
        Rule::number => "a number",
        Rule::integer => "a whole number",
        Rule::word | Rule::name_ref => "a name",
        Rule::value => "a name or a string",
        Rule::kw_tokens => "`tokens`",
        Rule::kw_at => "`at`",
        Rule::trade_unit => "what a trade counts (`words` or `steps`)",
        Rule::kw_then => "`then`",
        Rule::kw_else => "`else`",
        Rule::kw_by => "`by`",
        Rule::kw_score => "`score`",
        Rule::kw_above => "`above`",
        Rule::kw_words => "`words`",
        Rule::subject | Rule::kw_query | Rule::kw_task => "`query` or `task`",
        Rule::kw_has => "`has`",
        Rule::kw_matches => "`matches`",
        Rule::kw_is => "`is`",
        Rule::kw_in => "`in`",
        Rule::kw_std => "`std`",
        Rule::mask_lit => "a mask such as {S, T}",
        Rule::atom
        | Rule::paren
        | Rule::if_expr
        | Rule::call
        | Rule::call_name
        | Rule::kw_min
        | Rule::kw_max
        | Rule::hits_call
        | Rule::kw_hits
        | Rule::has_pred
        | Rule::matches_pred
        | Rule::meta_in
        | Rule::meta_is
        | Rule::meta_field
        | Rule::kw_domain
        | Rule::kw_qtype
        | Rule::word_count
        | Rule::preview_ref
        | Rule::kw_preview
        | Rule::size_ref
        | Rule::kw_size
        | Rule::bool_lit
        | Rule::kw_true
        | Rule::kw_false
        | Rule::kw_if
        | Rule::std_ref
        | Rule::operand
        | Rule::prefix_op
        | Rule::infix_op => {
            "a condition or value (e.g. `query has std.causal`, `domain is web`, `preview.R.tokens > 4000`)"
        }
        Rule::top_mask | Rule::kw_top | Rule::all_lit | Rule::kw_all => "a mask such as {S, T}",
        Rule::words_lit | Rule::pattern_lit | Rule::kw_pattern => {
            "a keyword set or pattern (`words [\"a\"]`, `pattern r\"...\"`, `std.causal` or a `let` name)"
        }
        _ => "something else",
    };
    s.to_string()
}

fn syntax_error(e: pest::error::Error<Rule>) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let span = match e.location {
        InputLocation::Pos(p) => Span::new(p, p),
        InputLocation::Span((a, b)) => Span::new(a, b),
    };
    let message = match &e.variant {
        ErrorVariant::ParsingError {
            positives,
            negatives,
        } => {
            let mut expected: Vec<String> = positives.iter().map(describe).collect();
            expected.sort();
            expected.dedup();
            let mut msg = match expected.len() {
                0 => "unexpected input".to_string(),
                1 => format!("expected {}", expected[0]),
                n => format!(
                    "expected {} or {}",
                    expected[..n - 1].join(", "),
                    expected[n - 1]
                ),
            };
            if !negatives.is_empty() {
                let unexpected: Vec<String> = negatives.iter().map(describe).collect();
                msg.push_str(&format!("; found {}", unexpected.join(", ")));
            }
            msg
        }
        ErrorVariant::CustomError { message } => message.clone(),
    };
    Diagnostic::new(Code::E0100, span, format!("syntax error: {message}"))
        .with_help("see docs/LANGUAGE.md for the syntax of each statement")
}

/// Builds the tree from pest's pairs, collecting non-syntax errors (bad
/// escapes, out-of-range numbers, trees that are too deep).
struct Builder<'s> {
    source: &'s str,
    errors: Vec<Diagnostic>,
}

/// An expression and the depth of its tree.
type Built = (Expr, u32);

fn mk(kind: ExprKind, span: Span, depth: u32) -> Built {
    (Expr { kind, span }, depth)
}
