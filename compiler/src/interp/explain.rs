//! `mesa explain`: an evaluation told in words.

use super::{Input, Outcome, Selector, Step};
use mesa_grammar::ast::{ActionKind, Subject};
use std::fmt::Write as _;

impl Selector {
    /// The keywords of set `set` found in `text`, in the set's order.
    pub fn matched_keywords(&self, text: &str, set: usize) -> Vec<String> {
        let found = self.found_keywords(text);
        let present: std::collections::HashSet<&str> = self
            .keywords
            .iter()
            .zip(&found)
            .filter(|(_, f)| **f)
            .map(|(k, _)| k.as_str())
            .collect();
        self.program.keyword_sets[set]
            .keywords
            .iter()
            .filter(|k| present.contains(k.as_str()))
            .cloned()
            .collect()
    }

    /// The first match of pattern `pattern` in `text`, if any.
    pub fn pattern_match(&self, text: &str, pattern: usize) -> Option<String> {
        self.regexes[pattern]
            .find(text.as_bytes())
            .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// Describes an evaluation for people: the inputs, which cues matched, each
/// rule in order (fired or not, and what it did), the budget and fallback
/// steps, and the result.
pub fn explain(selector: &Selector, input: &Input, outcome: &Outcome) -> String {
    let p = selector.program();
    let mut out = String::new();
    let _ = writeln!(out, "policy {}", quote(&p.name));
    let _ = writeln!(out, "query: {}", quote(&input.query));
    let meta = |v: &Option<String>| v.as_deref().map_or("(none)".to_string(), quote);
    let _ = writeln!(
        out,
        "domain: {}, task: {}, qtype: {}",
        meta(&input.domain),
        meta(&input.task),
        meta(&input.qtype)
    );
    cues(selector, input, &mut out);
    let _ = writeln!(out, "start: default {}", outcome.trace.start);
    let mut evaluated = 0;
    for step in &outcome.trace.steps {
        if matches!(step, Step::Rule { .. }) {
            evaluated += 1;
        }
        step_line(p, step, &mut out);
    }
    let skipped = p.rules.len() - evaluated;
    if skipped > 0 {
        let _ = writeln!(out, "({skipped} later rule(s) not evaluated)");
    }
    let decided = match outcome.rule {
        Some(i) => format!(
            "decided by rule {} (line {})",
            p.rules[i].name, p.rules[i].line
        ),
        None => "no rule changed the default".to_string(),
    };
    let _ = writeln!(out, "result: {} ({decided})", outcome.mask);
    out
}

/// The `cues:` lines: each keyword set and pattern that matches the query
/// or the task, with what it matched.
fn cues(selector: &Selector, input: &Input, out: &mut String) {
    let p = selector.program();
    let subjects = [
        (Subject::Query, Some(input.query.as_str())),
        (Subject::Task, input.task.as_deref()),
    ];
    let mut cue_lines = Vec::new();
    for (subject, text) in subjects {
        let Some(text) = text else { continue };
        for (i, set) in p.keyword_sets.iter().enumerate() {
            let found = selector.matched_keywords(text, i);
            if !found.is_empty() {
                let quoted: Vec<String> = found.iter().map(|k| quote(k)).collect();
                cue_lines.push(format!(
                    "  {} has {}: {}",
                    subject.keyword(),
                    set.name,
                    quoted.join(", ")
                ));
            }
        }
        for (i, pat) in p.patterns.iter().enumerate() {
            if let Some(m) = selector.pattern_match(text, i) {
                cue_lines.push(format!(
                    "  {} matches {}: {}",
                    subject.keyword(),
                    pat.name,
                    quote(&m)
                ));
            }
        }
    }
    if cue_lines.is_empty() {
        out.push_str("cues: none of the policy's keyword sets or patterns match\n");
    } else {
        out.push_str("cues:\n");
        for l in cue_lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
}

/// One line of the evaluation's trace.
fn step_line(p: &crate::ir::Program, step: &Step, out: &mut String) {
    match step {
        Step::Rule {
            index,
            fired,
            before,
            after,
        } => {
            let rule = &p.rules[*index];
            let head = format!("rule {} (line {})", rule.name, rule.line);
            if !fired {
                let _ = writeln!(out, "{head}: not fired, `{}` does not hold", rule.cond_text);
                return;
            }
            let effect = match rule.action {
                ActionKind::Select => format!("mask {after}; evaluation stops"),
                _ if before == after => format!("mask stays {after}"),
                _ => format!("mask {before} -> {after}"),
            };
            let _ = writeln!(
                out,
                "{head}: fired, `{}` holds -> {} {}: {effect}",
                rule.cond_text,
                rule.action.keyword(),
                rule.mask_text
            );
        }
        Step::Budget {
            dropped,
            tokens,
            estimate,
        } => {
            let _ = writeln!(
                out,
                "budget {} tokens: estimate {estimate} is over; dropped {} ({tokens} tokens)",
                p.budget.unwrap_or(0.0),
                dropped.letter()
            );
        }
        Step::Trade { before, after } => {
            let (unit, price) = p.trade.map_or(("?", 0.0), |t| (t.unit.name(), t.price));
            let effect = if before == after {
                format!("mask stays {after}")
            } else {
                format!("mask {before} -> {after}")
            };
            let _ = writeln!(out, "trade {unit} at {price}: {effect}");
        }
        Step::Fallback { mask } => {
            let _ = writeln!(out, "the mask is empty: fallback {mask}");
        }
    }
}
