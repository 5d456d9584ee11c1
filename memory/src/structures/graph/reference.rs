//! The reference semantics of G's retrieval: the scan over every relation
//! that the module docs describe, kept beside the indexed retrieval
//! ([`super::retrieve`]) so the tests can check that both return the same
//! evidence, bit for bit.

use super::{Graph, RelationGraph};
use crate::structures::{Evidence, EvidenceItem, Query};
use crate::text::term_hashes;
use crate::tokens::count_tokens;
use mesa_core::Structure;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::collections::{HashMap, HashSet};

fn all_incident(graph: &RelationGraph, n: NodeIndex) -> impl Iterator<Item = EdgeIndex> + '_ {
    graph
        .edges_directed(n, Direction::Outgoing)
        .chain(graph.edges_directed(n, Direction::Incoming))
        .map(|e| e.id())
}

/// A relation as a line, read off the stored graph.
fn line(graph: &RelationGraph, e: EdgeIndex) -> String {
    match (graph.edge_endpoints(e), graph.edge_weight(e)) {
        (Some((a, b)), Some(r)) => format!(
            "{} —{}→ {} [step {}]",
            graph[a], r.relation, graph[b], r.step
        ),
        _ => String::new(),
    }
}

impl Graph {
    /// Retrieval by scanning every relation of the graph as a built store
    /// keeps it ([`Graph::relation_graph`]), not through the indexes.
    pub(crate) fn retrieve_by_scan(&self, query: &Query) -> Evidence {
        let graph = &self.relation_graph();
        let linked = self.linked(query.terms());
        let named = query.refs().named(self.last_step);
        let idf = self.terms.idf();
        let weights = idf.weigh(query.terms());
        let max = 2.0
            + if named.is_empty() {
                0.0
            } else {
                self.proximity
            };
        let mut scores: HashMap<EdgeIndex, f64> = HashMap::new();
        let mut hits = 0;
        for e in graph.edge_indices() {
            let (Some((a, b)), Some(r)) = (graph.edge_endpoints(e), graph.edge_weight(e)) else {
                continue;
            };
            let terms = term_hashes(&format!("{} {} {}", graph[a], r.relation, graph[b]));
            let lex = idf.overlap(&weights, &terms);
            let ent = 0.5 * f64::from(u8::from(linked.contains(&a)))
                + 0.5 * f64::from(u8::from(linked.contains(&b)));
            let prox = named
                .iter()
                .map(|&x| self.proximity / (1.0 + x.abs_diff(r.step) as f64))
                .fold(0.0, f64::max);
            let s = lex + ent + prox;
            if s > 0.0 {
                scores.insert(e, s);
            }
            if lex + ent > 0.0 {
                hits += 1;
            }
        }
        let step_of = |e: EdgeIndex| graph.edge_weight(e).map_or(0, |r| r.step);
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
            let neighbours = self.neighbours_by_scan(graph, *e, &focal, &scores);
            let mut steps: Vec<usize> = std::iter::once(*e)
                .chain(neighbours.iter().copied())
                .map(step_of)
                .collect();
            steps.sort_unstable();
            steps.dedup();
            let mut text = line(graph, *e);
            for n in &neighbours {
                text.push_str("\n  ");
                text.push_str(&line(graph, *n));
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
        Evidence {
            structure: Structure::Graph,
            items,
            hits,
            stale: 0,
        }
    }

    fn neighbours_by_scan(
        &self,
        graph: &RelationGraph,
        e: EdgeIndex,
        focal: &HashSet<EdgeIndex>,
        scores: &HashMap<EdgeIndex, f64>,
    ) -> Vec<EdgeIndex> {
        let Some((a, b)) = graph.edge_endpoints(e) else {
            return Vec::new();
        };
        let step = graph.edge_weight(e).map_or(0, |r| r.step);
        let rank = |list: &mut Vec<EdgeIndex>| {
            list.sort_by(|x, y| {
                let sx = scores.get(x).copied().unwrap_or(0.0);
                let sy = scores.get(y).copied().unwrap_or(0.0);
                let d = |z: &EdgeIndex| {
                    graph
                        .edge_weight(*z)
                        .map_or(usize::MAX, |r| r.step.abs_diff(step))
                };
                sy.total_cmp(&sx)
                    .then(d(x).cmp(&d(y)))
                    .then(x.index().cmp(&y.index()))
            });
        };
        let mut seen: HashSet<EdgeIndex> = focal.clone();
        let mut hop1: Vec<EdgeIndex> = all_incident(graph, a)
            .chain(all_incident(graph, b))
            .filter(|x| seen.insert(*x))
            .collect();
        rank(&mut hop1);
        let mut out: Vec<EdgeIndex> = hop1.iter().take(self.neighbours).copied().collect();
        if out.len() < self.neighbours && self.hops >= 2 {
            // The agent's node, found by name as the stored graph has it.
            let agent = graph
                .node_indices()
                .find(|&n| graph[n].to_lowercase() == super::AGENT);
            let mut hop2 = Vec::new();
            for x in hop1.iter().take(8) {
                let Some((p, q)) = graph.edge_endpoints(*x) else {
                    continue;
                };
                for n in [p, q] {
                    if n == a || n == b || Some(n) == agent {
                        continue;
                    }
                    hop2.extend(all_incident(graph, n).filter(|y| seen.insert(*y)));
                }
            }
            rank(&mut hop2);
            out.extend(hop2.into_iter().take(self.neighbours - out.len()));
        }
        out
    }
}
