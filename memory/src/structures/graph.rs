//! G: a knowledge graph of (subject, relation, object, step) edges
//! (petgraph `StableGraph`, so indices survive the removal of a step's
//! edges).
//!
//! The built-in [`RuleExtractor`] reads, per step (the action's first 2 KiB,
//! the observation's first 4 KiB):
//!
//! - entities: URLs, file paths and file names, element ids (`[5023]`), SQL
//!   tables (after FROM/JOIN/INTO/UPDATE/TABLE), dotted, snake_case,
//!   CamelCase and UPPER_CASE identifiers, called functions (`name()`),
//!   numbered game objects (`soapbar 1`), backticked spans;
//! - relations: `agent —verb→ entity` for the action's entities (the verb
//!   is the action's first word or tool name), the words between two action
//!   entities (`soapbar 1 —from→ sinkbasin 1`), `element —role→ label` for
//!   web elements, `key —is→ value` for `key: value` lines and `key=value`
//!   pairs, `entity —error→ message` for the first error line, and
//!   `entity —observed→ entity` for entities seen in the observation;
//!   at most `Config::graph_edges_per_step` per step, in that priority.
//!
//! Access: a node is linked to the question when all its name's terms occur
//! in the question. Each relation scores `lex + ent + prox`: `lex` is the
//! idf-weighted overlap of the question's terms with the relation's terms
//! (subject, relation, object), `ent` is 0.5 per linked endpoint, and `prox`
//! is `1.25 / (1 + |step - r|)` for the nearest step r the question names
//! (0 if it names none). The score is normalized by its maximum (2, or 3.25
//! when steps are named). The 8 best relations with a positive score are
//! focal; each gets up to 4 neighbour relations sharing an endpoint (1 hop),
//! then 2 hops, ranked by score and closeness in steps. `hits` counts the
//! relations that share a term or a linked entity with the question
//! (`lex + ent > 0`; proximity alone does not count).

use super::summary::action_kind;
use super::{Evidence, EvidenceItem, MemoryStructure, PluginError, Query, RetrieveError};
use crate::config::Config;
use crate::dataset::{Episode, Step};
use crate::text::{cut, term_hashes, Idf};
use crate::tokens::count_tokens;
use mesa_core::Structure;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// A relation extracted from one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triple {
    /// The subject entity.
    pub subject: String,
    /// The relation.
    pub relation: String,
    /// The object entity.
    pub object: String,
}

/// Extracts relations from steps.
pub trait TripleExtractor: Send + Sync {
    /// A name recorded in a store's manifest, e.g. `rules-v1`.
    fn name(&self) -> String;
    /// The relations of one step, most important first.
    fn extract(&self, episode: &Episode, step: &Step) -> Result<Vec<Triple>, PluginError>;
}

/// The built-in rule-based extractor (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleExtractor;

/// The agent's node.
pub const AGENT: &str = "agent";
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

/// A stored relation: its name and the step it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    /// The relation.
    pub relation: String,
    /// The step index.
    pub step: usize,
}

/// The graph as stored.
pub type RelationGraph = StableGraph<String, Relation>;

/// The knowledge graph of one episode, with its retrieval indexes.
#[derive(Debug, Clone)]
pub struct Graph {
    graph: RelationGraph,
    by_name: HashMap<String, NodeIndex>,
    node_terms: HashMap<NodeIndex, Vec<u64>>,
    term_nodes: HashMap<u64, Vec<NodeIndex>>,
    edges: Vec<(EdgeIndex, Vec<u64>)>,
    idf: Idf,
    last_step: usize,
    focal: usize,
    neighbours: usize,
    hops: usize,
    proximity: f64,
}

impl Graph {
    /// Extracts and indexes an episode's relations.
    pub fn build(
        episode: &Episode,
        extractor: &dyn TripleExtractor,
        config: &Config,
    ) -> Result<Graph, PluginError> {
        let triples = episode
            .steps
            .iter()
            .map(|step| extractor.extract(episode, step))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Graph::from_triples(
            episode,
            triples.iter().map(Vec::as_slice),
            config,
        ))
    }

    /// Indexes relations extracted earlier, one list per step of
    /// `episode` in order (the live store keeps each step's list).
    pub fn from_triples<'t>(
        episode: &Episode,
        triples: impl IntoIterator<Item = &'t [Triple]>,
        config: &Config,
    ) -> Graph {
        let mut g = Graph::index(RelationGraph::default(), 0, config);
        for (step, triples) in episode.steps.iter().zip(triples) {
            g.add_step(step, triples, config);
        }
        g.last_step = episode.steps.last().map_or(0, |s| s.index);
        g
    }

    /// This graph with later steps' relations added: the same graph and
    /// indexes as [`Graph::from_triples`] over all the steps, at the cost
    /// of the new steps (and a copy).
    pub fn extended<'t>(
        &self,
        steps: &[Step],
        triples: impl IntoIterator<Item = &'t [Triple]>,
        config: &Config,
    ) -> Graph {
        let mut g = self.clone();
        for (step, triples) in steps.iter().zip(triples) {
            g.add_step(step, triples, config);
        }
        if let Some(last) = steps.last() {
            g.last_step = last.index;
        }
        g
    }

    /// Adds one step's relations (at most `graph_edges_per_step`, each
    /// once), indexing each new entity and relation as [`Graph::index`]
    /// does.
    fn add_step(&mut self, step: &Step, triples: &[Triple], config: &Config) {
        let mut seen = HashSet::new();
        let mut kept = 0;
        for tr in triples {
            if kept >= config.graph_edges_per_step {
                break;
            }
            let (s, r, o) = (tr.subject.trim(), tr.relation.trim(), tr.object.trim());
            if s.is_empty() || r.is_empty() || o.is_empty() {
                continue;
            }
            let (a, b) = (self.entity(s), self.entity(o));
            if a == b || !seen.insert((a, b, r)) {
                continue;
            }
            let e = self.graph.add_edge(
                a,
                b,
                Relation {
                    relation: r.to_string(),
                    step: step.index,
                },
            );
            let terms = term_hashes(&format!("{} {} {}", self.graph[a], r, self.graph[b]));
            self.idf.add(&terms);
            self.edges.push((e, terms));
            kept += 1;
        }
    }

    /// The entity named `name` (case-insensitively), added and indexed if new.
    fn entity(&mut self, name: &str) -> NodeIndex {
        let key = name.to_lowercase();
        if let Some(&n) = self.by_name.get(&key) {
            return n;
        }
        let n = self.graph.add_node(name.to_string());
        self.by_name.insert(key, n);
        if name != AGENT {
            let terms = term_hashes(name);
            for t in &terms {
                self.term_nodes.entry(*t).or_default().push(n);
            }
            self.node_terms.insert(n, terms);
        }
        n
    }

    /// Indexes a stored graph; fails if an edge ends at a vacant node.
    pub fn from_graph(
        graph: RelationGraph,
        last_step: usize,
        config: &Config,
    ) -> Result<Graph, String> {
        for e in graph.edge_indices() {
            let ok = graph.edge_endpoints(e).is_some_and(|(a, b)| {
                graph.node_weight(a).is_some() && graph.node_weight(b).is_some()
            });
            if !ok {
                return Err(format!("relation {} ends at a missing entity", e.index()));
            }
        }
        Ok(Graph::index(graph, last_step, config))
    }

    fn index(graph: RelationGraph, last_step: usize, config: &Config) -> Graph {
        let mut by_name = HashMap::new();
        let mut node_terms = HashMap::new();
        let mut term_nodes: HashMap<u64, Vec<NodeIndex>> = HashMap::new();
        for n in graph.node_indices() {
            let name = &graph[n];
            by_name.insert(name.to_lowercase(), n);
            if name == AGENT {
                continue;
            }
            let terms = term_hashes(name);
            for t in &terms {
                term_nodes.entry(*t).or_default().push(n);
            }
            node_terms.insert(n, terms);
        }
        let edges: Vec<(EdgeIndex, Vec<u64>)> = graph
            .edge_indices()
            .filter_map(|e| {
                let (a, b) = graph.edge_endpoints(e)?;
                let r = graph.edge_weight(e)?;
                Some((
                    e,
                    term_hashes(&format!("{} {} {}", graph[a], r.relation, graph[b])),
                ))
            })
            .collect();
        let idf = Idf::new(edges.iter().map(|(_, t)| t.as_slice()));
        Graph {
            graph,
            by_name,
            node_terms,
            term_nodes,
            edges,
            idf,
            last_step,
            focal: config.graph_focal,
            neighbours: config.graph_neighbours,
            hops: config.graph_hops,
            proximity: config.graph_proximity,
        }
    }

    /// The stored graph.
    pub fn graph(&self) -> &RelationGraph {
        &self.graph
    }

    /// The node of an entity, by name (case-insensitive).
    pub fn node(&self, name: &str) -> Option<NodeIndex> {
        self.by_name.get(&name.to_lowercase()).copied()
    }

    /// One relation as a line: `subject —relation→ object [step N]`.
    pub fn line(&self, e: EdgeIndex) -> String {
        match (self.graph.edge_endpoints(e), self.graph.edge_weight(e)) {
            (Some((a, b)), Some(r)) => format!(
                "{} —{}→ {} [step {}]",
                self.graph[a], r.relation, self.graph[b], r.step
            ),
            _ => String::new(),
        }
    }

    fn linked(&self, query: &Query) -> HashSet<NodeIndex> {
        let mut counts: HashMap<NodeIndex, usize> = HashMap::new();
        for t in query.terms() {
            for n in self.term_nodes.get(t).into_iter().flatten() {
                *counts.entry(*n).or_insert(0) += 1;
            }
        }
        counts
            .into_iter()
            .filter(|(n, c)| self.node_terms.get(n).is_some_and(|t| t.len() == *c))
            .map(|(n, _)| n)
            .collect()
    }

    fn incident(&self, n: NodeIndex) -> impl Iterator<Item = EdgeIndex> + '_ {
        self.graph
            .edges_directed(n, Direction::Outgoing)
            .chain(self.graph.edges_directed(n, Direction::Incoming))
            .map(|e| e.id())
    }
}

impl MemoryStructure for Graph {
    fn structure(&self) -> Structure {
        Structure::Graph
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        let linked = self.linked(query);
        let named = query.refs().named(self.last_step);
        let weights = self.idf.weigh(query.terms());
        let max = 2.0
            + if named.is_empty() {
                0.0
            } else {
                self.proximity
            };
        let mut scores: HashMap<EdgeIndex, f64> = HashMap::new();
        let mut hits = 0;
        for (e, terms) in &self.edges {
            let (Some((a, b)), Some(r)) =
                (self.graph.edge_endpoints(*e), self.graph.edge_weight(*e))
            else {
                continue;
            };
            let lex = self.idf.overlap(&weights, terms);
            let ent = 0.5 * f64::from(u8::from(linked.contains(&a)))
                + 0.5 * f64::from(u8::from(linked.contains(&b)));
            let prox = named
                .iter()
                .map(|&x| self.proximity / (1.0 + x.abs_diff(r.step) as f64))
                .fold(0.0, f64::max);
            let s = lex + ent + prox;
            if s > 0.0 {
                scores.insert(*e, s);
            }
            if lex + ent > 0.0 {
                hits += 1;
            }
        }
        let step_of = |e: EdgeIndex| self.graph.edge_weight(e).map_or(0, |r| r.step);
        let mut ranked: Vec<(EdgeIndex, f64)> = scores.iter().map(|(e, s)| (*e, *s)).collect();
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(step_of(a.0).cmp(&step_of(b.0)))
                .then(a.0.index().cmp(&b.0.index()))
        });
        ranked.truncate(self.focal);
        let focal: HashSet<EdgeIndex> = ranked.iter().map(|(e, _)| *e).collect();
        let mut items = Vec::with_capacity(ranked.len());
        for (e, s) in &ranked {
            let neighbours = self.neighbours_of(*e, &focal, &scores);
            let mut steps: Vec<usize> = std::iter::once(*e)
                .chain(neighbours.iter().copied())
                .map(step_of)
                .collect();
            steps.sort_unstable();
            steps.dedup();
            let mut text = self.line(*e);
            for n in &neighbours {
                text.push_str("\n  ");
                text.push_str(&self.line(*n));
            }
            let tokens = count_tokens(&text);
            items.push(EvidenceItem {
                structure: Structure::Graph,
                steps,
                score: (s / max).min(1.0),
                text,
                tokens,
            });
        }
        Ok(Evidence {
            structure: Structure::Graph,
            items,
            hits,
        })
    }
}

impl Graph {
    fn neighbours_of(
        &self,
        e: EdgeIndex,
        focal: &HashSet<EdgeIndex>,
        scores: &HashMap<EdgeIndex, f64>,
    ) -> Vec<EdgeIndex> {
        let Some((a, b)) = self.graph.edge_endpoints(e) else {
            return Vec::new();
        };
        let step = self.graph.edge_weight(e).map_or(0, |r| r.step);
        let rank = |list: &mut Vec<EdgeIndex>| {
            list.sort_by(|x, y| {
                let sx = scores.get(x).copied().unwrap_or(0.0);
                let sy = scores.get(y).copied().unwrap_or(0.0);
                let dx = self
                    .graph
                    .edge_weight(*x)
                    .map_or(usize::MAX, |r| r.step.abs_diff(step));
                let dy = self
                    .graph
                    .edge_weight(*y)
                    .map_or(usize::MAX, |r| r.step.abs_diff(step));
                sy.total_cmp(&sx)
                    .then(dx.cmp(&dy))
                    .then(x.index().cmp(&y.index()))
            });
        };
        let mut seen: HashSet<EdgeIndex> = focal.clone();
        let mut hop1: Vec<EdgeIndex> = self
            .incident(a)
            .chain(self.incident(b))
            .filter(|x| seen.insert(*x))
            .collect();
        rank(&mut hop1);
        let mut out: Vec<EdgeIndex> = hop1.iter().take(self.neighbours).copied().collect();
        if out.len() < self.neighbours && self.hops >= 2 {
            let agent = self.node(AGENT);
            let mut hop2 = Vec::new();
            for x in hop1.iter().take(8) {
                let Some((p, q)) = self.graph.edge_endpoints(*x) else {
                    continue;
                };
                for n in [p, q] {
                    if n == a || n == b || Some(n) == agent {
                        continue;
                    }
                    hop2.extend(self.incident(n).filter(|y| seen.insert(*y)));
                }
            }
            rank(&mut hop2);
            out.extend(hop2.into_iter().take(self.neighbours - out.len()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::sql_episode;
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

    #[test]
    fn retrieval_links_and_prefers_named_steps() {
        let ep = sql_episode();
        let c = Config::default();
        let g = Graph::build(&ep, &RuleExtractor, &c).unwrap();
        let ev = g
            .retrieve(&Query::new(
                "Which columns of FINANCE.BANKS did the agent query?",
            ))
            .unwrap();
        assert!(!ev.items.is_empty() && ev.items.len() <= 8);
        assert!(
            ev.items[0].text.contains("FINANCE.BANKS"),
            "{}",
            ev.items[0].text
        );
        assert!(ev
            .items
            .iter()
            .all(|i| i.score > 0.0 && i.score <= 1.0 && i.tokens > 0));
        assert!(ev.items.iter().all(|i| i.text.lines().count() <= 5));
        let near = g
            .retrieve(&Query::new("What error did the agent get at step 2?"))
            .unwrap();
        assert!(near.items[0].steps.contains(&2), "{:?}", near.items[0]);
        assert!(near.hits >= near.items.len());
        let nothing = g.retrieve(&Query::new("zebra")).unwrap();
        assert!(nothing.items.is_empty());
    }

    #[test]
    fn graph_round_trips_through_json() {
        let ep = sql_episode();
        let c = Config::default();
        let g = Graph::build(&ep, &RuleExtractor, &c).unwrap();
        let json = serde_json::to_string(g.graph()).unwrap();
        let back: RelationGraph = serde_json::from_str(&json).unwrap();
        let g2 = Graph::from_graph(back, 6, &c).unwrap();
        let q = Query::new("What error did the agent get at step 2?");
        assert_eq!(g.retrieve(&q).unwrap(), g2.retrieve(&q).unwrap());
    }
}
