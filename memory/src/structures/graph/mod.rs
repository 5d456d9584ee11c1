//! G: a knowledge graph of (subject, relation, object, step) edges, kept
//! as flat arrays (entities and relations numbered as added; a forget or a
//! correction rebuilds the graph from the kept steps' relations). A built
//! store writes it as a petgraph `StableGraph` in `graph.json`
//! ([`Graph::relation_graph`], [`Graph::from_graph`]).
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

mod bits;
mod extract;
mod names;
#[cfg(test)]
mod reference;
mod retrieve;
mod stored;

pub use extract::{entities, RuleExtractor};

use super::PluginError;
use crate::config::Config;
use crate::dataset::{Episode, Step};
use crate::text::{term_hashes, TermIndex};
use names::Names;
use petgraph::stable_graph::{NodeIndex, StableGraph};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// The agent's node.
pub const AGENT: &str = "agent";

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
    /// Whether [`TripleExtractor::extract`] reads the episode's task, so
    /// that a changed task extracts every step's relations again
    /// (`Tenant::update_episode`). `true` unless an extractor says
    /// otherwise.
    fn reads_task(&self) -> bool {
        true
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

/// The graph as a built store keeps it (`graph.json`): entities as nodes,
/// relations as edges, numbered as [`Graph`] numbers them.
pub type RelationGraph = StableGraph<String, Relation>;

/// One relation: its step, its name (a number in the vocabulary) and its
/// endpoints. A relation's number is its position in [`Graph`]'s rows.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    step: usize,
    relation: u32,
    a: NodeIndex,
    b: NodeIndex,
}

/// The knowledge graph of one episode, with its retrieval indexes.
///
/// Entities are numbered as they are first seen (`names`), relations by
/// their position in `rows`, which is in step order (and, within a step,
/// in the order extracted); every index below holds positions:
///
/// ```text
/// question terms ──terms──▶ positions with lex > 0
/// question terms ──words──▶ linked nodes ──incident──▶ positions with ent > 0
/// named steps / a focal step ──binary search in rows or incident──▶ nearest positions
/// ```
///
/// so a question lists the relations of its short postings and linked
/// nodes, reads the long ones (the agent's thousands) as bit sets, a word
/// of 64 positions at a time, and scans out from a few steps; it never
/// scores every relation (see [`retrieve`](self) for the exact argument).
///
/// Every part is a few flat arrays (the names in one buffer, the three
/// indexes as [`TermIndex`]es), so a persisted graph is read back with a
/// copy per array rather than an allocation per entity and relation. The
/// maps from a name to its number are needed only to add steps, and are
/// built by the first step added after an opening.
#[derive(Debug, Clone)]
pub struct Graph {
    /// Entity names, by node.
    names: Names,
    /// The relations' vocabulary.
    relations: Names,
    rows: Vec<Row>,
    /// The agent's node (named [`AGENT`], in any case), once seen.
    agent: Option<NodeIndex>,
    /// Each node's name terms (none for [`AGENT`]), by node.
    words: TermIndex,
    /// How many terms each node's name has.
    word_counts: Vec<u32>,
    /// Each relation's terms (subject, relation, object), by position.
    terms: TermIndex,
    /// Each node's relations (either direction), by position, increasing:
    /// the "terms" of relation `p` are its two nodes' numbers.
    incident: TermIndex,
    last_step: usize,
    focal: usize,
    neighbours: usize,
    hops: usize,
    proximity: f64,
    /// Names (lowercased) and relations to their numbers, for adding
    /// steps; built on the first (not stored).
    lookup: Option<Lookup>,
    /// The long sources' bit sets, kept across questions (not stored).
    bit_sets: bits::BitSets,
}

/// The maps a graph needs to add steps.
#[derive(Debug, Clone, Default)]
struct Lookup {
    nodes: HashMap<String, NodeIndex>,
    relations: HashMap<String, u32>,
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
        let mut g = Graph::empty(config);
        g.extend(&episode.steps, triples, config);
        g
    }

    fn empty(config: &Config) -> Graph {
        Graph {
            names: Names::default(),
            relations: Names::default(),
            rows: Vec::new(),
            agent: None,
            words: TermIndex::default(),
            word_counts: Vec::new(),
            terms: TermIndex::default(),
            incident: TermIndex::default(),
            last_step: 0,
            focal: config.graph_focal,
            neighbours: config.graph_neighbours,
            hops: config.graph_hops,
            proximity: config.graph_proximity,
            lookup: Some(Lookup::default()),
            bit_sets: bits::BitSets::default(),
        }
    }

    /// Adds later steps' relations: the same graph and indexes as
    /// [`Graph::from_triples`] over all the steps, at the new steps' cost
    /// (and, on the first call after an opening, the cost of the name
    /// maps).
    pub(super) fn extend<'t>(
        &mut self,
        steps: &[Step],
        triples: impl IntoIterator<Item = &'t [Triple]>,
        config: &Config,
    ) {
        for (step, triples) in steps.iter().zip(triples) {
            self.add_step(step, triples, config);
        }
        if let Some(last) = steps.last() {
            self.last_step = last.index;
        }
    }

    /// Whether the graph indexes relations up to `episode`'s last step
    /// (a persisted graph opened over its episode).
    pub(in crate::structures) fn covers(&self, episode: &Episode) -> bool {
        self.last_step == episode.steps.last().map_or(0, |s| s.index)
    }

    /// Adds one step's relations (at most `graph_edges_per_step`, each
    /// once), indexing each new entity and relation.
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
            let relation = self.relation_number(r);
            self.add_row(Row {
                step: step.index,
                relation,
                a,
                b,
            });
            kept += 1;
        }
    }

    /// The name maps, built from the names if this graph was opened from
    /// a state.
    fn lookup(&mut self) -> &mut Lookup {
        let (names, relations) = (&self.names, &self.relations);
        self.lookup.get_or_insert_with(|| {
            let mut l = Lookup::default();
            for (i, name) in names.iter().enumerate() {
                l.nodes
                    .entry(name.to_lowercase())
                    .or_insert(NodeIndex::new(i));
            }
            for (i, r) in relations.iter().enumerate() {
                l.relations.entry(r.to_string()).or_insert(i as u32);
            }
            l
        })
    }

    /// The number of relation `r` in the vocabulary, added if new.
    fn relation_number(&mut self, r: &str) -> u32 {
        if let Some(&n) = self.lookup().relations.get(r) {
            return n;
        }
        let n = u32::try_from(self.relations.len()).unwrap_or(u32::MAX);
        self.relations.push(r);
        self.lookup().relations.insert(r.to_string(), n);
        n
    }

    /// Numbers and indexes a relation (added after every earlier one).
    fn add_row(&mut self, row: Row) {
        let terms = term_hashes(&format!(
            "{} {} {}",
            self.name(row.a),
            self.relations.get(row.relation as usize),
            self.name(row.b)
        ));
        self.terms.add(&terms);
        // A self-loop (only a hand-written `graph.json` has one) is its
        // node's relation once.
        let (a, b) = (row.a.index() as u64, row.b.index() as u64);
        let ends = [a, b];
        self.incident.add(if a == b { &ends[..1] } else { &ends });
        self.rows.push(row);
    }

    /// The entity named `name` (case-insensitively), added if new.
    fn entity(&mut self, name: &str) -> NodeIndex {
        let key = name.to_lowercase();
        if let Some(&n) = self.lookup().nodes.get(&key) {
            return n;
        }
        let n = self.add_node(name, &key);
        self.lookup().nodes.insert(key, n);
        n
    }

    /// Numbers and indexes an entity (`key`: its name lowercased).
    fn add_node(&mut self, name: &str, key: &str) -> NodeIndex {
        let n = NodeIndex::new(self.names.len());
        self.names.push(name);
        if key == AGENT && self.agent.is_none() {
            self.agent = Some(n);
        }
        let terms = if name == AGENT {
            Vec::new()
        } else {
            term_hashes(name)
        };
        self.words.add(&terms);
        self.word_counts
            .push(u32::try_from(terms.len()).unwrap_or(u32::MAX));
        n
    }

    /// Indexes a stored graph; fails if an edge ends at a vacant node.
    pub fn from_graph(
        graph: RelationGraph,
        last_step: usize,
        config: &Config,
    ) -> Result<Graph, String> {
        let mut edges = Vec::with_capacity(graph.edge_count());
        for e in graph.edge_indices() {
            let ends = graph.edge_endpoints(e).filter(|(a, b)| {
                graph.node_weight(*a).is_some() && graph.node_weight(*b).is_some()
            });
            let (Some((a, b)), Some(r)) = (ends, graph.edge_weight(e)) else {
                return Err(format!("relation {} ends at a missing entity", e.index()));
            };
            edges.push((r.step, e, a, b));
        }
        edges.sort_unstable_by_key(|&(step, e, _, _)| (step, e.index()));
        // The stored graph's nodes, numbered afresh in their order (a name
        // met twice keeps both nodes, as the stored graph has them); the
        // relations' map is filled as they are numbered, the names' is not
        // (a built store's graph takes no appends).
        let mut g = Graph::empty(config);
        let mut number = HashMap::new();
        for n in graph.node_indices() {
            let name = &graph[n];
            number.insert(n, g.add_node(name, &name.to_lowercase()));
        }
        for (step, e, a, b) in edges {
            let relation = g.relation_number(&graph[e].relation);
            g.add_row(Row {
                step,
                relation,
                a: number[&a],
                b: number[&b],
            });
        }
        g.lookup = None;
        g.last_step = last_step;
        Ok(g)
    }

    /// The graph as a built store keeps it: node `i` is entity `i`, edge
    /// `p` is relation `p`.
    pub fn relation_graph(&self) -> RelationGraph {
        let mut graph = RelationGraph::with_capacity(self.names.len(), self.rows.len());
        for name in self.names.iter() {
            graph.add_node(name.to_string());
        }
        for r in &self.rows {
            let relation = Relation {
                relation: self.relations.get(r.relation as usize).to_string(),
                step: r.step,
            };
            graph.add_edge(r.a, r.b, relation);
        }
        graph
    }

    /// How many relations the graph holds.
    pub fn relation_count(&self) -> usize {
        self.rows.len()
    }

    /// How many entities the graph holds.
    pub fn entity_count(&self) -> usize {
        self.names.len()
    }

    /// Node `n`'s name.
    fn name(&self, n: NodeIndex) -> &str {
        self.names.get(n.index())
    }

    /// Relation `p` as a line: `subject —relation→ object [step N]`.
    fn line(&self, p: usize) -> String {
        match self.rows.get(p) {
            Some(r) => format!(
                "{} —{}→ {} [step {}]",
                self.name(r.a),
                self.relations.get(r.relation as usize),
                self.name(r.b),
                r.step
            ),
            None => String::new(),
        }
    }

    /// The nodes whose every name term occurs in the question.
    fn linked(&self, terms: &[u64]) -> HashSet<NodeIndex> {
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for t in terms {
            for &n in self.words.postings(*t) {
                *counts.entry(n).or_insert(0) += 1;
            }
        }
        counts
            .into_iter()
            .filter(|&(n, c)| self.word_counts.get(n as usize) == Some(&c))
            .map(|(n, _)| NodeIndex::new(n as usize))
            .collect()
    }

    /// `source`'s bit set over the relations (`list` is its list).
    fn bit_set(&self, source: bits::Source, list: &[u32]) -> std::sync::Arc<bits::Bits> {
        self.bit_sets.get(source, self.rows.len(), list)
    }

    /// A node's relations, by position (by step).
    fn incident(&self, n: NodeIndex) -> &[u32] {
        self.incident.postings(n.index() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::sql_episode;
    use super::*;
    use crate::structures::{MemoryStructure, Query};

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
        let json = serde_json::to_string(&g.relation_graph()).unwrap();
        let back: RelationGraph = serde_json::from_str(&json).unwrap();
        let g2 = Graph::from_graph(back, 6, &c).unwrap();
        let q = Query::new("What error did the agent get at step 2?");
        assert_eq!(g.retrieve(&q).unwrap(), g2.retrieve(&q).unwrap());
    }

    /// A hand-written `graph.json` may hold a self-loop and a name twice
    /// in other cases; such a graph still answers as the scan does.
    #[test]
    fn a_stored_graph_with_a_self_loop_answers_as_the_scan() {
        let c = Config::default();
        let mut rg = RelationGraph::default();
        let names = ["Door", "key 1", "door", "agent", "box"];
        let n: Vec<NodeIndex> = names.iter().map(|x| rg.add_node(x.to_string())).collect();
        for (step, (a, b, r)) in [(0, 0, "opens"), (1, 2, "is"), (3, 1, "take"), (1, 1, "is")]
            .into_iter()
            .enumerate()
        {
            let relation = Relation {
                relation: r.into(),
                step,
            };
            rg.add_edge(n[a], n[b], relation);
        }
        rg.add_edge(
            n[3],
            n[4],
            Relation {
                relation: "open".into(),
                step: 3,
            },
        );
        let g = Graph::from_graph(rg, 3, &c).unwrap();
        for q in [
            "door key",
            "what is the key at step 1?",
            "agent box",
            "step 0",
        ] {
            let q = Query::new(q);
            let want = g.retrieve_by_scan(&q);
            for heavy_at in [1, 2, 1024] {
                assert_eq!(
                    g.retrieve_with(&q, heavy_at),
                    want,
                    "{heavy_at}: {}",
                    q.text()
                );
            }
        }
    }

    /// The questions the comparison asks: the episode's own, and ones
    /// naming steps (which make every relation score through proximity).
    fn questions(e: &Episode) -> Vec<String> {
        let n = e.steps.len();
        let mut out: Vec<String> = e.questions.iter().map(|q| q.question.clone()).collect();
        for k in [0, 1, n / 3, n / 2, n.saturating_sub(2)] {
            out.push(format!("What did the agent do at step {k}?"));
        }
        out.push(format!(
            "What changed between step {} and step {}?",
            n / 4,
            n / 2
        ));
        out.push("What was the final result of the last step?".into());
        out.push("agent".into());
        out
    }

    #[test]
    fn indexed_retrieval_equals_the_scan_on_ama_bench() {
        let Some(loaded) = crate::testing::ama() else {
            return;
        };
        let mut picked: Vec<&Episode> = loaded.episodes.iter().step_by(17).collect();
        let longest = loaded.episodes.iter().max_by_key(|e| e.steps.len());
        picked.extend(longest);
        let c = Config::default();
        let mut asked = 0;
        for e in picked {
            let g = Graph::build(e, &RuleExtractor, &c).unwrap();
            for q in questions(e) {
                let q = Query::new(&q);
                let want = g.retrieve_by_scan(&q);
                assert_eq!(g.retrieve(&q).unwrap(), want, "{}: {}", e.id, q.text());
                for heavy_at in [1, 4, 32] {
                    let got = g.retrieve_with(&q, heavy_at);
                    assert_eq!(got, want, "{heavy_at}: {}: {}", e.id, q.text());
                }
                asked += 1;
            }
        }
        assert!(asked > 100, "{asked}");
    }

    /// The bit sets a question keeps are grown, not rebuilt, when the graph
    /// grows: questions between appends get the scan's answers.
    #[test]
    fn kept_bit_sets_follow_appends() {
        let Some(loaded) = crate::testing::ama() else {
            return;
        };
        let e = loaded
            .episodes
            .iter()
            .max_by_key(|e| e.steps.len())
            .unwrap();
        let c = Config::default();
        let triples: Vec<Vec<Triple>> = e
            .steps
            .iter()
            .map(|s| RuleExtractor.extract(e, s).unwrap())
            .collect();
        let mut g = Graph::from_triples(e, std::iter::empty(), &c);
        let mut asked = 0;
        for (steps, triples) in e.steps.chunks(7).zip(triples.chunks(7)) {
            g.extend(steps, triples.iter().map(Vec::as_slice), &c);
            for q in questions(e).iter().take(6) {
                let q = Query::new(q);
                assert_eq!(
                    g.retrieve_with(&q, 8),
                    g.retrieve_by_scan(&q),
                    "{}",
                    q.text()
                );
                asked += 1;
            }
        }
        assert!(asked > 20, "{asked}");
    }

    mod prop {
        use super::super::*;
        use crate::structures::fixtures::sql_episode;
        use crate::structures::Query;
        use proptest::prelude::*;

        const NAMES: &[&str] = &["agent", "key 1", "door", "red box", "box", "table t", "x"];
        const RELATIONS: &[&str] = &["open", "observed", "is", "take from"];

        fn graph(steps: &[Vec<(usize, usize, usize)>], c: &Config) -> Graph {
            let mut e = sql_episode();
            e.steps = (0..steps.len())
                .map(|i| Step {
                    index: i * 2,
                    action: String::new(),
                    observation: String::new(),
                    timestamp: None,
                })
                .collect();
            let triples: Vec<Vec<Triple>> = steps
                .iter()
                .map(|ts| {
                    ts.iter()
                        .map(|&(s, r, o)| Triple {
                            subject: NAMES[s].into(),
                            relation: RELATIONS[r].into(),
                            object: NAMES[o].into(),
                        })
                        .collect()
                })
                .collect();
            Graph::from_triples(&e, triples.iter().map(Vec::as_slice), c)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]
            /// Small graphs with hubs and ties at every step, questions that
            /// name entities, relations and steps, and varied parameters.
            #[test]
            fn indexed_retrieval_equals_the_scan(
                steps in prop::collection::vec(
                    prop::collection::vec((0..7usize, 0..4usize, 0..7usize), 0..6),
                    0..40,
                ),
                words in prop::collection::vec(0..10usize, 0..4),
                heavy_at in prop::sample::select(vec![1, 2, 3, 5, 8, 1024]),
                named in prop::collection::vec(0..90usize, 0..3),
                focal in 1..10usize,
                neighbours in 1..10usize,
                hops in 1..3usize,
                proximity in prop::sample::select(vec![0.0, 0.3, 1.25]),
            ) {
                let c = Config {
                    graph_focal: focal,
                    graph_neighbours: neighbours,
                    graph_hops: hops,
                    graph_proximity: proximity,
                    ..Config::default()
                };
                let g = graph(&steps, &c);
                let vocab = [
                    "key", "door", "red", "box", "open", "observed", "table", "t", "zebra", "agent",
                ];
                let mut q: Vec<String> = words.iter().map(|w| vocab[*w].to_string()).collect();
                for n in named {
                    q.push(format!("at step {n}"));
                }
                let q = Query::new(&q.join(" "));
                prop_assert_eq!(g.retrieve_with(&q, heavy_at), g.retrieve_by_scan(&q));
            }
        }
    }
}
