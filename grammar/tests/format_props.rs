//! Property tests for the formatter: formatting keeps the syntax tree, and
//! formatting twice changes nothing.

use mesa_grammar::ast::*;
use mesa_grammar::{format_file, format_source, parse, Span};
use proptest::prelude::*;

fn sp() -> Span {
    Span::default()
}

fn ident(name: &str) -> Ident {
    Ident {
        name: name.to_string(),
        span: sp(),
    }
}

fn e(kind: ExprKind) -> Expr {
    Expr { kind, span: sp() }
}

/// Parenthesizes anything that is not an atom, as a person would have to.
fn wrap(x: Expr) -> Box<Expr> {
    let atomic = !matches!(
        x.kind,
        ExprKind::Neg(_)
            | ExprKind::Not(_)
            | ExprKind::Binary { .. }
            | ExprKind::And(_)
            | ExprKind::Or(_)
            | ExprKind::If { .. }
            | ExprKind::Has { .. }
            | ExprKind::Matches { .. }
            | ExprKind::MetaIs { .. }
            | ExprKind::Top { .. }
    );
    Box::new(if atomic {
        x
    } else {
        e(ExprKind::Paren(Box::new(x)))
    })
}

fn text() -> impl Strategy<Value = String> {
    prop::string::string_regex("[a-zA-Z0-9 _\\-\\\\\"'#é中\\t\\n]{0,12}").unwrap()
}

fn str_lit() -> impl Strategy<Value = StrLit> {
    (text(), any::<bool>()).prop_map(|(value, raw)| {
        let raw = raw && !value.contains('"') && !value.contains('\n');
        StrLit {
            value,
            raw,
            span: sp(),
        }
    })
}

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "failing", "x1", "_k", "stepref"]).prop_map(String::from)
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        (0u32..100000).prop_map(|n| f64::from(n) / 100.0),
        0.0f64..1e300,
    ]
}

fn subject() -> impl Strategy<Value = Subject> {
    prop::sample::select(vec![Subject::Query, Subject::Task])
}

fn leaf() -> impl Strategy<Value = Expr> {
    let structure = prop::sample::select(vec!["S", "T", "G", "V", "R", "raw", "X"]);
    prop_oneof![
        number().prop_map(|v| e(ExprKind::Number(v))),
        any::<bool>().prop_map(|b| e(ExprKind::Bool(b))),
        name().prop_map(|n| e(ExprKind::Name(ident(&n)))),
        name().prop_map(|n| e(ExprKind::Std(ident(&n)))),
        prop::collection::vec(str_lit(), 0..4).prop_map(|w| e(ExprKind::Words(w))),
        str_lit().prop_map(|p| e(ExprKind::Pattern(p))),
        prop::collection::vec(structure.clone(), 0..4)
            .prop_map(|v| e(ExprKind::Mask(v.into_iter().map(ident).collect()))),
        Just(e(ExprKind::All)),
        Just(e(ExprKind::Size)),
        subject().prop_map(|s| e(ExprKind::WordCount(s))),
        (
            structure,
            prop::sample::select(vec!["tokens", "top", "hits", "tok"])
        )
            .prop_map(|(s, f)| e(ExprKind::Preview {
                structure: ident(s),
                feature: ident(f)
            })),
        (subject(), name()).prop_map(|(s, n)| e(ExprKind::Hits {
            subject: s,
            set: Box::new(e(ExprKind::Name(ident(&n))))
        })),
    ]
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(4, 32, 3, |inner| {
        let op = prop::sample::select(vec![
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Lt,
            BinaryOp::Le,
            BinaryOp::Gt,
            BinaryOp::Ge,
            BinaryOp::Eq,
            BinaryOp::Ne,
        ]);
        let field = prop::sample::select(vec![MetaField::Domain, MetaField::Qtype]);
        prop_oneof![
            inner.clone().prop_map(|x| e(ExprKind::Neg(wrap(x)))),
            inner.clone().prop_map(|x| e(ExprKind::Not(wrap(x)))),
            (op, inner.clone(), inner.clone()).prop_map(|(op, l, r)| e(ExprKind::Binary {
                op,
                lhs: wrap(l),
                rhs: wrap(r)
            })),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| e(ExprKind::And(v.into_iter().map(|x| *wrap(x)).collect()))),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| e(ExprKind::Or(v.into_iter().map(|x| *wrap(x)).collect()))),
            (any::<bool>(), prop::collection::vec(inner.clone(), 2..4)).prop_map(|(min, args)| e(
                ExprKind::Call {
                    name: if min { CallName::Min } else { CallName::Max },
                    args
                }
            )),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, t, o)| e(ExprKind::If {
                cond: Box::new(c),
                then: Box::new(t),
                otherwise: Box::new(o)
            })),
            inner.clone().prop_map(|x| e(ExprKind::Paren(Box::new(x)))),
            (0u64..10, prop::option::of(inner.clone())).prop_map(|(k, a)| e(ExprKind::Top {
                k,
                k_span: sp(),
                above: a.map(wrap)
            })),
            (subject(), name()).prop_map(|(s, n)| e(ExprKind::Has {
                subject: s,
                set: Box::new(e(ExprKind::Name(ident(&n))))
            })),
            (subject(), str_lit()).prop_map(|(s, p)| e(ExprKind::Matches {
                subject: s,
                pattern: Box::new(e(ExprKind::Pattern(p)))
            })),
            (field.clone(), str_lit()).prop_map(|(f, v)| e(ExprKind::MetaIs {
                field: f,
                values: vec![StrLit { raw: false, ..v }],
                list: false
            })),
            (field, prop::collection::vec(str_lit(), 1..3)).prop_map(|(f, vs)| e(
                ExprKind::MetaIs {
                    field: f,
                    values: vs.into_iter().map(|v| StrLit { raw: false, ..v }).collect(),
                    list: true
                }
            )),
        ]
    })
}

fn statement() -> impl Strategy<Value = StatementKind> {
    let action = prop::sample::select(vec![
        ActionKind::Select,
        ActionKind::Add,
        ActionKind::Remove,
    ]);
    prop_oneof![
        Just(StatementKind::Use {
            module: ident("std")
        }),
        (name(), expr()).prop_map(|(n, v)| StatementKind::Let {
            name: ident(&n),
            value: v
        }),
        (prop::sample::select(vec!["S", "R", "vector"]), expr()).prop_map(|(s, v)| {
            StatementKind::Score {
                structure: ident(s),
                value: v,
            }
        }),
        (name(), prop::option::of(expr()), action, expr()).prop_map(|(n, w, a, m)| {
            StatementKind::Rule {
                name: ident(&n),
                when: w,
                action: a,
                action_span: sp(),
                mask: m,
            }
        }),
        expr().prop_map(StatementKind::Default),
        expr().prop_map(StatementKind::Fallback),
        number().prop_map(|amount| StatementKind::Budget {
            amount,
            amount_span: sp()
        }),
    ]
}

fn file() -> impl Strategy<Value = File> {
    (str_lit(), prop::collection::vec(statement(), 0..8)).prop_map(|(name, rest)| {
        let mut statements = vec![Statement {
            kind: StatementKind::Header {
                kind: HeaderKind::Policy,
                name,
            },
            span: sp(),
        }];
        statements.extend(rest.into_iter().map(|kind| Statement { kind, span: sp() }));
        File { statements }
    })
}

fn parsed(text: &str) -> File {
    let mut f =
        parse(text).unwrap_or_else(|d| panic!("formatted text does not parse: {d:?}\n{text}"));
    f.erase_spans();
    f
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Printing a tree and parsing it back gives the same tree.
    #[test]
    fn format_keeps_the_tree(file in file()) {
        let text = format_file(&file, "");
        prop_assert_eq!(parsed(&text), file);
    }

    /// With comments and blank lines mixed in, formatting keeps the tree and
    /// is idempotent.
    #[test]
    fn format_is_idempotent(file in file(), seps in prop::collection::vec(prop::sample::select(vec![" ", "\n", "\n\n", "  # note\n", "\n# own line\n", "\n\n\n# a\n# b\n\n"]), 8)) {
        let printed = format_file(&file, "");
        // Re-join the statements with varied separators.
        let mut messy = String::new();
        for (i, line) in printed.lines().enumerate() {
            messy.push_str(line);
            let sep = seps[i % seps.len()];
            // A separator without a newline would glue a comment onto code.
            messy.push_str(if line.trim_start().starts_with('#') && !sep.contains('\n') { "\n" } else { sep });
        }
        let once = format_source(&messy).unwrap_or_else(|d| panic!("{d:?}\n{messy}"));
        let twice = format_source(&once).unwrap_or_else(|d| panic!("{d:?}\n{once}"));
        prop_assert_eq!(&once, &twice);
        prop_assert_eq!(parsed(&once), parsed(&messy));
        prop_assert_eq!(parsed(&once), file);
    }
}
