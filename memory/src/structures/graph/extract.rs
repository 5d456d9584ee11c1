//! The built-in rule-based extractor of G's relations (see the
//! [module docs](super)).

use super::{Triple, TripleExtractor, AGENT};
use crate::dataset::{Episode, Step};
use crate::structures::summary::action_kind;
use crate::structures::PluginError;
use crate::text::cut;
use regex::Regex;
use std::collections::HashSet;
use std::sync::OnceLock;

/// The built-in rule-based extractor (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleExtractor;

const ACTION_BYTES: usize = 2048;
const OBSERVATION_BYTES: usize = 4096;
const NAME_BYTES: usize = 80;

fn entity_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let parts = [
            r#"https?://[^\s'"<>()\[\]{}]+"#,
            r"(?:\.{1,2}/|/)?(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+",
            r"\b[A-Za-z0-9_-]+\.(?:py|rs|js|ts|sql|json|csv|txt|md|yaml|yml|toml|html|c|h|cpp|java|go|sh|log|xml|ipynb|pdf)\b",
            r"\[\d{1,9}\]",
            r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z_][A-Za-z0-9_$]*)*",
            r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b(?:\(\))?",
            r"\b[A-Za-z_][A-Za-z0-9_]*\s*\(",
            r"\b_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b",
            r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b",
            r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b",
            r"\b[a-z]{3,} \d{1,3}\b",
            r"`[^`\n]{1,60}`",
        ];
        Regex::new(&parts.join("|")).unwrap_or_else(|e| panic!("entity pattern: {e}"))
    })
}

fn pair_regexes() -> &'static [Regex; 3] {
    static RE: OnceLock<[Regex; 3]> = OnceLock::new();
    RE.get_or_init(|| {
        let re = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("pair pattern: {e}"));
        [
            // `key: value` lines
            re(r"(?m)^[ \t\-*]*([A-Za-z][A-Za-z0-9 _'-]{0,40}?)\s*:\s+([^\n]{1,120}?)\s*$"),
            // key=value and 'key': value
            re(r#"\b([A-Za-z_][A-Za-z0-9_.]{0,40})\s*=\s*([^\s,;)\]}]{1,60})|'([A-Za-z_][A-Za-z0-9_]{0,40})':\s*('[^'\n]{0,80}'|[^,}\]\n]{1,40})"#),
            // web elements: [id] role 'label'
            re(r"(\[\d{1,9}\])\s+([A-Za-z]+)\s+'([^'\n]{1,80})'"),
        ]
    })
}

const NOT_OBJECTS: &[&str] = &[
    "and", "are", "code", "column", "columns", "for", "has", "have", "item", "items", "line",
    "lines", "page", "row", "rows", "step", "steps", "the", "turn", "turns", "was", "with",
];

/// The entities of a text, in order of appearance, deduplicated
/// (case-insensitively), at most `max`.
pub fn entities(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for m in entity_regex().find_iter(text) {
        let mut e = m.as_str().trim();
        let lower = e.to_ascii_lowercase();
        for kw in ["from", "join", "into", "update", "table"] {
            if lower.starts_with(kw) && lower[kw.len()..].starts_with(char::is_whitespace) {
                e = e[kw.len()..].trim_start();
                break;
            }
        }
        let e = e.trim_end_matches(|c: char| c == '(' || c.is_whitespace());
        let e = e.trim_matches('`');
        let e = e.trim_end_matches(['.', ',', ':', ';']);
        if e.len() < 2 {
            continue;
        }
        if let Some((word, _)) = e.split_once(' ') {
            if e.bytes().last().is_some_and(|b| b.is_ascii_digit()) && NOT_OBJECTS.contains(&word) {
                continue;
            }
        }
        let name = cut(e, NAME_BYTES).0.to_string();
        if seen.insert(name.to_lowercase()) {
            out.push(name);
            if out.len() >= max {
                break;
            }
        }
    }
    out
}

fn short(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&flat, max).0.to_string()
}

const ERROR_WORDS: &[&str] = &[
    "error",
    "exception",
    "traceback",
    "failed",
    "invalid",
    "denied",
    "timeout",
    "cannot",
];

impl TripleExtractor for RuleExtractor {
    fn name(&self) -> String {
        "rules-v1".into()
    }

    /// The rules read the step alone.
    fn reads_task(&self) -> bool {
        false
    }

    fn extract(&self, _episode: &Episode, step: &Step) -> Result<Vec<Triple>, PluginError> {
        let action = cut(&step.action, ACTION_BYTES).0;
        let obs = cut(&step.observation, OBSERVATION_BYTES).0;
        let mut out = Vec::new();
        let t = |s: &str, r: &str, o: &str| Triple {
            subject: s.to_string(),
            relation: r.to_string(),
            object: o.to_string(),
        };
        let verb = {
            let k = action_kind(action);
            if k.is_empty() {
                "did".to_string()
            } else {
                short(&k, 40)
            }
        };
        let act = entities(action, 6);
        if act.is_empty() {
            out.push(t(AGENT, &verb, &short(action, 60)));
        }
        for e in act.iter().take(3) {
            out.push(t(AGENT, &verb, e));
        }
        for pair in act.windows(2) {
            let between = action
                .find(pair[0].as_str())
                .and_then(|i| {
                    let rest = &action[i + pair[0].len()..];
                    rest.find(pair[1].as_str()).map(|j| rest[..j].trim())
                })
                .filter(|b| !b.is_empty() && b.split_whitespace().count() <= 3)
                .map(|b| short(b, 30))
                .unwrap_or_else(|| "with".into());
            out.push(t(&pair[0], &between, &pair[1]));
        }
        let primary = act.first().map_or(AGENT, String::as_str);
        if let Some(line) = obs.lines().find(|l| {
            let l = l.to_ascii_lowercase();
            ERROR_WORDS.iter().any(|w| l.contains(w))
        }) {
            out.push(t(primary, "error", &short(line, 100)));
        }
        let [lines, pairs, elements] = pair_regexes();
        let mut elems: Vec<Triple> = elements
            .captures_iter(obs)
            .filter_map(|c| {
                Some(t(
                    c.get(1)?.as_str(),
                    c.get(2)?.as_str(),
                    &short(c.get(3)?.as_str(), 80),
                ))
            })
            .collect();
        // Elements the action names come first.
        elems.sort_by_key(|e| !act.contains(&e.subject));
        out.extend(elems.into_iter().take(6));
        for c in lines.captures_iter(obs).take(6) {
            if let (Some(k), Some(v)) = (c.get(1), c.get(2)) {
                out.push(t(&short(k.as_str(), 40), "is", &short(v.as_str(), 80)));
            }
        }
        for c in pairs.captures_iter(obs).take(6) {
            let (k, v) = match (c.get(1), c.get(2), c.get(3), c.get(4)) {
                (Some(k), Some(v), _, _) | (_, _, Some(k), Some(v)) => (k, v),
                _ => continue,
            };
            out.push(t(
                k.as_str(),
                "=",
                &short(v.as_str().trim_matches('\''), 80),
            ));
        }
        for e in entities(obs, 6) {
            if e != primary {
                out.push(t(primary, "observed", &e));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::fixtures::sql_episode;
    use super::*;

    #[test]
    fn extracts_entities() {
        let e = entities("SELECT name FROM FINANCE.BANKS JOIN rates r ON x; from the kitchen; see https://a.org/x?y=1 and /db/FINANCE/DDL.csv, click [5023], take soapbar 1 from sinkbasin 1, call fetch_website_content(x) on `baba`", 20);
        for want in [
            "FINANCE.BANKS",
            "rates",
            "https://a.org/x?y=1",
            "/db/FINANCE/DDL.csv",
            "[5023]",
            "soapbar 1",
            "sinkbasin 1",
            "fetch_website_content",
            "baba",
        ] {
            assert!(e.iter().any(|x| x == want), "{want} not in {e:?}");
        }
        assert!(!entities("at step 12 the code 3", 10)
            .iter()
            .any(|x| x.contains("step")));
    }

    #[test]
    fn rules_extract_relations() {
        let ep = sql_episode();
        let t = RuleExtractor.extract(&ep, &ep.steps[2]).unwrap();
        assert!(
            t.contains(&Triple {
                subject: AGENT.into(),
                relation: "execute_sql".into(),
                object: "FINANCE.BANKS".into()
            }),
            "{t:?}"
        );
        assert!(
            t.iter()
                .any(|x| x.relation == "error" && x.object.contains("invalid identifier")),
            "{t:?}"
        );
        let web = Step {
            index: 0,
            action: "click [5023] where [5023] is link 'All Customers'".into(),
            observation: "[5023] link 'All Customers'\n[77] button 'Save'\nScore: 6\n(x=68, y=6)"
                .into(),
            timestamp: None,
        };
        let t = RuleExtractor.extract(&ep, &web).unwrap();
        for want in [
            ("[5023]", "link", "All Customers"),
            ("[77]", "button", "Save"),
            ("Score", "is", "6"),
            ("x", "=", "68"),
        ] {
            assert!(
                t.iter()
                    .any(|x| (x.subject.as_str(), x.relation.as_str(), x.object.as_str()) == want),
                "{want:?} not in {t:?}"
            );
        }
    }
}
