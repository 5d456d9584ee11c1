//! From source text to the [`File`] syntax tree.
//!
//! Before pest sees the text, [`parse_bytes`] checks the encoding, the size and
//! a conservative bound on the nesting depth, so that no input can exhaust the
//! parser's stack. After parsing, the tree builder bounds the depth of the tree
//! it builds (operator chains fold into nested nodes) for the same reason.

use crate::ast::*;
use crate::diagnostic::{Code, Diagnostic};
use crate::lex::{Piece, Pieces};
use crate::span::Span;
use pest::iterators::Pair;
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

impl Builder<'_> {
    /// The span of a pair without the whitespace and comments pest includes
    /// after a trailing repetition.
    fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let span = Span::from(pair.as_span());
        let text = &self.source[span.start..span.end];
        // Most spans end in code; only scan the ones that may end in trivia.
        if !text.ends_with(|c: char| c.is_ascii_whitespace()) && !text.contains('#') {
            return span;
        }
        Span::new(span.start, span.start + code_len(text))
    }

    fn statement(&mut self, pair: Pair<'_, Rule>) -> Option<Statement> {
        let span = self.span(&pair);
        let rule = pair.as_rule();
        let mut inner = pair.into_inner();
        let kind = match rule {
            Rule::header => {
                let kind = match inner.next()?.into_inner().next()?.as_rule() {
                    Rule::kw_module => HeaderKind::Module,
                    _ => HeaderKind::Policy,
                };
                let name = self.string(inner.next()?);
                StatementKind::Header { kind, name }
            }
            Rule::use_stmt => {
                inner.next()?;
                StatementKind::Use {
                    module: ident(inner.next()?),
                }
            }
            Rule::let_stmt => {
                inner.next()?;
                let name = ident(inner.next()?);
                let value = self.top_expr(inner.next()?)?;
                StatementKind::Let { name, value }
            }
            Rule::score_stmt => {
                inner.next()?;
                let structure = ident(inner.next()?);
                let value = self.top_expr(inner.next()?)?;
                StatementKind::Score { structure, value }
            }
            Rule::rule_stmt => {
                inner.next()?;
                let name = ident(inner.next()?);
                let mut next = inner.next()?;
                let mut when = None;
                if next.as_rule() == Rule::kw_when {
                    when = Some(self.top_expr(inner.next()?)?);
                    next = inner.next()?;
                }
                let action_span = self.span(&next);
                let action = match next.into_inner().next()?.as_rule() {
                    Rule::kw_select => ActionKind::Select,
                    Rule::kw_add => ActionKind::Add,
                    _ => ActionKind::Remove,
                };
                let mask = self.top_expr(inner.next()?)?;
                StatementKind::Rule {
                    name,
                    when,
                    action,
                    action_span,
                    mask,
                }
            }
            Rule::default_stmt => {
                inner.next()?;
                StatementKind::Default(self.top_expr(inner.next()?)?)
            }
            Rule::fallback_stmt => {
                inner.next()?;
                StatementKind::Fallback(self.top_expr(inner.next()?)?)
            }
            Rule::budget_stmt => {
                inner.next()?;
                let n = inner.next()?;
                let amount_span = Span::from(n.as_span());
                let amount = self.number(&n);
                StatementKind::Budget {
                    amount,
                    amount_span,
                }
            }
            Rule::trade_stmt => {
                inner.next()?;
                let unit = inner.next()?;
                inner.next()?;
                let n = inner.next()?;
                StatementKind::Trade {
                    unit: unit.as_str().to_string(),
                    unit_span: Span::from(unit.as_span()),
                    price: self.number(&n),
                    price_span: Span::from(n.as_span()),
                }
            }
            _ => return None,
        };
        Some(Statement { kind, span })
    }

    /// An expression at statement level.
    fn top_expr(&mut self, pair: Pair<'_, Rule>) -> Option<Expr> {
        self.expr(pair).map(|(e, _)| e)
    }

    /// Reports a tree deeper than [`MAX_EXPR_DEPTH`]. Trees are checked while
    /// they are built, so no deeper tree ever exists (dropping one would
    /// recurse as deep as it is).
    fn deep(&mut self, depth: u32, span: Span) -> Option<()> {
        if depth <= MAX_EXPR_DEPTH {
            return Some(());
        }
        self.errors.push(
            Diagnostic::new(
                Code::E0003,
                span,
                format!("expression tree deeper than {MAX_EXPR_DEPTH} levels (a chain of N operators is N levels)"),
            )
            .with_help("split the expression into `let`s"),
        );
        None
    }

    fn number(&mut self, pair: &Pair<'_, Rule>) -> f64 {
        let span = self.span(pair);
        match pair.as_str().parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => {
                self.errors.push(
                    Diagnostic::new(
                        Code::E0102,
                        span,
                        format!("number `{}` is out of range", pair.as_str()),
                    )
                    .with_help("numbers must be finite 64-bit floating-point values"),
                );
                0.0
            }
        }
    }

    fn string(&mut self, pair: Pair<'_, Rule>) -> StrLit {
        let span = self.span(&pair);
        let Some(inner) = pair.into_inner().next() else {
            return StrLit {
                value: String::new(),
                raw: false,
                span,
            };
        };
        let raw = inner.as_rule() == Rule::raw_string;
        let body = inner.into_inner().next();
        let text = body.as_ref().map_or("", |b| b.as_str());
        let body_start = body.as_ref().map_or(span.start, |b| b.as_span().start());
        let value = if raw {
            text.to_string()
        } else {
            self.unescape(text, body_start)
        };
        StrLit { value, raw, span }
    }

    fn unescape(&mut self, text: &str, offset: usize) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some((_, e)) = chars.next() else { break };
            match e {
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'u' => {
                    let rest = &text[i + 2..];
                    let parsed = rest
                        .strip_prefix('{')
                        .and_then(|r| r.find('}').map(|end| &r[..end]))
                        .and_then(|hex| {
                            u32::from_str_radix(hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .map(|ch| (ch, hex.len() + 2))
                        });
                    match parsed {
                        Some((ch, len)) => {
                            out.push(ch);
                            for _ in 0..len {
                                chars.next();
                            }
                        }
                        None => self.bad_escape(offset + i, 2, "\\u"),
                    }
                }
                other => self.bad_escape(offset + i, 1 + other.len_utf8(), &format!("\\{other}")),
            }
        }
        out
    }

    fn bad_escape(&mut self, at: usize, len: usize, text: &str) {
        self.errors.push(
            Diagnostic::new(
                Code::E0101,
                Span::new(at, at + len),
                format!("invalid escape `{text}` in a string"),
            )
            .with_help(r#"valid escapes are \\ \" \n \t \r \0 \u{HEX}; for regexes a raw string r"..." needs none"#),
        );
    }

    fn expr(&mut self, pair: Pair<'_, Rule>) -> Option<Built> {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::expr => {
                let items: Vec<Pair<'_, Rule>> = pair.into_inner().collect();
                let mut pos = 0;
                let built = self.climb(&items, &mut pos, 0, 0)?;
                Some(built)
            }
            Rule::paren => {
                let (e, d) = self.expr(pair.into_inner().next()?)?;
                Some(mk(ExprKind::Paren(Box::new(e)), span, d + 1))
            }
            Rule::if_expr => {
                let mut inner = pair.into_inner().filter(|p| {
                    !matches!(p.as_rule(), Rule::kw_if | Rule::kw_then | Rule::kw_else)
                });
                let (c, d1) = self.expr(inner.next()?)?;
                let (t, d2) = self.expr(inner.next()?)?;
                let (o, d3) = self.expr(inner.next()?)?;
                Some(mk(
                    ExprKind::If {
                        cond: Box::new(c),
                        then: Box::new(t),
                        otherwise: Box::new(o),
                    },
                    span,
                    d1.max(d2).max(d3) + 1,
                ))
            }
            Rule::call => {
                let mut inner = pair.into_inner();
                let name = match inner.next()?.into_inner().next()?.as_rule() {
                    Rule::kw_min => CallName::Min,
                    _ => CallName::Max,
                };
                let mut args = Vec::new();
                let mut depth = 0;
                for p in inner {
                    let (e, d) = self.expr(p)?;
                    depth = depth.max(d);
                    args.push(e);
                }
                if args.len() < 2 {
                    let word = if name == CallName::Min { "min" } else { "max" };
                    self.errors.push(
                        Diagnostic::new(
                            Code::E0100,
                            span,
                            format!("`{word}` takes two or more arguments, got one"),
                        )
                        .with_help(format!(
                            "write `{word}(a, b)` or `{word}(a, b, c)`; with one value, write the value itself"
                        )),
                    );
                    return None;
                }
                Some(mk(ExprKind::Call { name, args }, span, depth + 1))
            }
            Rule::hits_call => {
                let mut inner = pair.into_inner();
                inner.next()?;
                let subject = subject(inner.next()?);
                let (set, d) = self.expr(inner.next()?)?;
                Some(mk(
                    ExprKind::Hits {
                        subject,
                        set: Box::new(set),
                    },
                    span,
                    d + 1,
                ))
            }
            Rule::top_mask => {
                let mut inner = pair.into_inner().filter(|p| {
                    !matches!(
                        p.as_rule(),
                        Rule::kw_top | Rule::kw_by | Rule::kw_score | Rule::kw_above
                    )
                });
                let k_pair = inner.next()?;
                let k_span = Span::from(k_pair.as_span());
                let Ok(k) = k_pair.as_str().parse::<u64>() else {
                    self.errors.push(
                        Diagnostic::new(
                            Code::E0102,
                            k_span,
                            format!("`top {}` is out of range", k_pair.as_str()),
                        )
                        .with_help("there are five structures: use a count from 1 to 5"),
                    );
                    return None;
                };
                let mut depth = 0;
                let above = match inner.next() {
                    Some(p) => {
                        let (e, d) = self.expr(p)?;
                        depth = d;
                        Some(Box::new(e))
                    }
                    None => None,
                };
                Some(mk(ExprKind::Top { k, k_span, above }, span, depth + 1))
            }
            Rule::has_pred | Rule::matches_pred => {
                let is_has = pair.as_rule() == Rule::has_pred;
                let mut inner = pair.into_inner();
                let subject = subject(inner.next()?);
                inner.next()?;
                let (operand, d) = self.expr(inner.next()?)?;
                let kind = if is_has {
                    ExprKind::Has {
                        subject,
                        set: Box::new(operand),
                    }
                } else {
                    ExprKind::Matches {
                        subject,
                        pattern: Box::new(operand),
                    }
                };
                Some(mk(kind, span, d + 1))
            }
            Rule::meta_is | Rule::meta_in => {
                let list = pair.as_rule() == Rule::meta_in;
                let mut inner = pair.into_inner();
                let field = match inner.next()?.into_inner().next()?.as_rule() {
                    Rule::kw_qtype => MetaField::Qtype,
                    _ => MetaField::Domain,
                };
                inner.next()?;
                let values = inner.map(|v| self.value(v)).collect::<Option<Vec<_>>>()?;
                Some(mk(
                    ExprKind::MetaIs {
                        field,
                        values,
                        list,
                    },
                    span,
                    1,
                ))
            }
            Rule::word_count => {
                let s = subject(pair.into_inner().next()?);
                Some(mk(ExprKind::WordCount(s), span, 1))
            }
            Rule::preview_ref => {
                let mut inner = pair.into_inner();
                inner.next()?;
                let structure = ident(inner.next()?);
                let feature = ident(inner.next()?);
                Some(mk(ExprKind::Preview { structure, feature }, span, 1))
            }
            Rule::size_ref => Some(mk(ExprKind::Size, span, 1)),
            Rule::words_lit => {
                let words = pair
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::string)
                    .map(|p| self.string(p))
                    .collect();
                Some(mk(ExprKind::Words(words), span, 1))
            }
            Rule::pattern_lit => {
                let s = pair.into_inner().find(|p| p.as_rule() == Rule::string)?;
                let lit = self.string(s);
                Some(mk(ExprKind::Pattern(lit), span, 1))
            }
            Rule::mask_lit => {
                let items = pair.into_inner().map(ident).collect();
                Some(mk(ExprKind::Mask(items), span, 1))
            }
            Rule::all_lit => Some(mk(ExprKind::All, span, 1)),
            Rule::bool_lit => {
                let v = pair.into_inner().next()?.as_rule() == Rule::kw_true;
                Some(mk(ExprKind::Bool(v), span, 1))
            }
            Rule::number => {
                let v = self.number(&pair);
                Some(mk(ExprKind::Number(v), span, 1))
            }
            Rule::std_ref => {
                let mut inner = pair.into_inner();
                inner.next()?;
                Some(mk(ExprKind::Std(ident(inner.next()?)), span, 1))
            }
            Rule::name_ref => {
                let w = ident(pair.into_inner().next()?);
                if crate::format::RESERVED.contains(&w.name.as_str()) {
                    self.errors.push(
                        Diagnostic::new(
                            Code::E0100,
                            w.span,
                            format!(
                                "syntax error: expected an expression, found the keyword `{}`",
                                w.name
                            ),
                        )
                        .with_help("see docs/LANGUAGE.md for the syntax of each statement"),
                    );
                    return None;
                }
                Some(mk(ExprKind::Name(w), span, 1))
            }
            _ => None,
        }
    }

    /// Precedence climbing over the flat operand/operator list of an `expr`.
    /// Binding, loosest first: `or`, `and`, prefix `not`, comparisons, `+ -`,
    /// `* /`, prefix `-`. Binary operators group to the left; comparisons do
    /// not chain. `level` counts recursion, bounded by [`MAX_EXPR_DEPTH`].
    fn climb(
        &mut self,
        items: &[Pair<'_, Rule>],
        pos: &mut usize,
        min_prec: u8,
        level: u32,
    ) -> Option<Built> {
        let first = items.get(*pos)?.clone();
        let span = Span::from(first.as_span());
        self.deep(level, span)?;
        let (mut lhs, mut depth) = match first.as_rule() {
            Rule::kw_not | Rule::neg => {
                *pos += 1;
                let is_not = first.as_rule() == Rule::kw_not;
                // `not` applies to a comparison; `-` to one operand.
                let (operand, d) = self.climb(
                    items,
                    pos,
                    if is_not { PREC_CMP } else { PREC_NEG },
                    level + 1,
                )?;
                let s = span.to(operand.span);
                let kind = if is_not {
                    ExprKind::Not(Box::new(operand))
                } else {
                    ExprKind::Neg(Box::new(operand))
                };
                self.deep(d + 1, s)?;
                mk(kind, s, d + 1)
            }
            _ => {
                *pos += 1;
                self.expr(first)?
            }
        };
        while let Some(op_pair) = items.get(*pos) {
            let prec = infix_prec(op_pair.as_rule());
            if prec < min_prec.max(1) {
                break;
            }
            let op_span = Span::from(op_pair.as_span());
            let op_rule = op_pair.as_rule();
            let op_text = op_pair.as_str();
            *pos += 1;
            let (rhs, d) = self.climb(items, pos, prec + 1, level + 1)?;
            let s = lhs.span.to(rhs.span);
            lhs = match op_rule {
                Rule::kw_and | Rule::kw_or => {
                    let is_and = op_rule == Rule::kw_and;
                    match lhs.kind {
                        ExprKind::And(mut v) if is_and => {
                            v.push(rhs);
                            depth = depth.max(d + 1);
                            Expr {
                                kind: ExprKind::And(v),
                                span: s,
                            }
                        }
                        ExprKind::Or(mut v) if !is_and => {
                            v.push(rhs);
                            depth = depth.max(d + 1);
                            Expr {
                                kind: ExprKind::Or(v),
                                span: s,
                            }
                        }
                        kind => {
                            depth = depth.max(d) + 1;
                            let v = vec![
                                Expr {
                                    kind,
                                    span: lhs.span,
                                },
                                rhs,
                            ];
                            Expr {
                                kind: if is_and {
                                    ExprKind::And(v)
                                } else {
                                    ExprKind::Or(v)
                                },
                                span: s,
                            }
                        }
                    }
                }
                _ => {
                    let op = binary_op(op_text);
                    if op.is_comparison() {
                        if let ExprKind::Binary { op: prev, .. } = &lhs.kind {
                            if prev.is_comparison() {
                                self.errors.push(
                                    Diagnostic::new(
                                        Code::E0100,
                                        op_span,
                                        "syntax error: comparisons cannot be chained",
                                    )
                                    .with_help("write `a < b and b < c`, or add parentheses"),
                                );
                                return None;
                            }
                        }
                    }
                    depth = depth.max(d) + 1;
                    Expr {
                        kind: ExprKind::Binary {
                            op,
                            lhs: Box::new(lhs),
                            rhs: Box::new(rhs),
                        },
                        span: s,
                    }
                }
            };
            self.deep(depth, s)?;
        }
        Some((lhs, depth))
    }

    /// A metadata value: a bare word or a string (the formatter writes a bare
    /// word where it can, so the two spellings are the same value).
    fn value(&mut self, pair: Pair<'_, Rule>) -> Option<StrLit> {
        let inner = pair.into_inner().next()?;
        Some(if inner.as_rule() == Rule::string {
            self.string(inner)
        } else {
            StrLit {
                value: inner.as_str().to_string(),
                raw: false,
                span: Span::from(inner.as_span()),
            }
        })
    }
}

fn ident(pair: Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().to_string(),
        span: Span::from(pair.as_span()),
    }
}

fn subject(pair: Pair<'_, Rule>) -> Subject {
    match pair.into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::kw_task) => Subject::Task,
        _ => Subject::Query,
    }
}

const PREC_CMP: u8 = 4;
const PREC_NEG: u8 = 7;

/// The binding strength of an infix operator; 0 for anything else.
fn infix_prec(rule: Rule) -> u8 {
    match rule {
        Rule::kw_or => 1,
        Rule::kw_and => 2,
        Rule::cmp_op => PREC_CMP,
        Rule::add_op => 5,
        Rule::mul_op => 6,
        _ => 0,
    }
}

fn binary_op(s: &str) -> BinaryOp {
    match s {
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        "==" => BinaryOp::Eq,
        _ => BinaryOp::Ne,
    }
}
