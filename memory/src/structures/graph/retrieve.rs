//! G's retrieval: the scores of the [module docs](super), read from the
//! indexes instead of a scan over every relation.
//!
//! A relation is *matched* when `lex + ent > 0`: it shares a term with the
//! question (the term postings) or has a linked endpoint (the linked nodes'
//! relations). Every other relation scores `prox` alone, a function of its
//! step that strictly decreases with the distance to the nearest named step
//! (or is 0 everywhere). So, among the unmatched relations of a list
//! ordered by step, the best `m`
//!
//! - by score then step (the focal relations) are among the `m` nearest on
//!   each side of each named step;
//! - by score then distance to a step `s0` (a focal relation's neighbours)
//!   are among the `m` nearest on each side of each named step and of `s0`,
//!
//! where "nearest" takes whole steps at a time, so every relation tied at a
//! step is seen. Any unmatched relation left out has `m` others strictly
//! before it. Retrieval therefore reads the matched relations and a few
//! neighbourhoods found by binary search, and returns exactly what the scan
//! over every relation returns; `reference.rs` keeps that scan, and the tests
//! compare the two on AMA-Bench episodes.

use super::{Graph, AGENT};
use crate::structures::{Evidence, EvidenceItem, MemoryStructure, Query, RetrieveError};
use crate::tokens::count_tokens;
use mesa_core::Structure;
use petgraph::stable_graph::NodeIndex;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// A list of `len` positions, ordered by step: `at(k)` is the k-th.
type List<'a> = (usize, &'a dyn Fn(usize) -> u32);

/// One question's scores over one graph.
struct Scorer<'g> {
    g: &'g Graph,
    /// `lex + ent` of every relation, by position (0 when not matched).
    lexent: Vec<f64>,
    /// The matched relations, by position.
    matched: Vec<u32>,
    /// The matched relations of each node.
    matched_at: HashMap<NodeIndex, Vec<u32>>,
    /// The steps the question names.
    named: Vec<usize>,
}

impl<'g> Scorer<'g> {
    fn new(g: &'g Graph, query: &Query) -> Scorer<'g> {
        let linked = g.linked(query.terms());
        let weights = g.terms.idf().weigh(query.terms());
        // lex, then + ent where an endpoint is linked: the scan's sum.
        let mut lexent = g.terms.overlaps(&weights);
        let mut with_ent: Vec<u32> = linked
            .iter()
            .flat_map(|n| g.incident(*n).iter().copied())
            .collect();
        with_ent.sort_unstable();
        with_ent.dedup();
        for p in with_ent {
            let row = g.rows[p as usize];
            let ent = 0.5 * f64::from(u8::from(linked.contains(&row.a)))
                + 0.5 * f64::from(u8::from(linked.contains(&row.b)));
            lexent[p as usize] += ent;
        }
        let mut matched = Vec::new();
        let mut matched_at: HashMap<NodeIndex, Vec<u32>> = HashMap::new();
        for (p, s) in lexent.iter().enumerate() {
            if *s > 0.0 {
                let p = p as u32;
                let row = g.rows[p as usize];
                matched.push(p);
                matched_at.entry(row.a).or_default().push(p);
                matched_at.entry(row.b).or_default().push(p);
            }
        }
        Scorer {
            g,
            lexent,
            matched,
            matched_at,
            named: query.refs().named(g.last_step),
        }
    }

    fn is_matched(&self, p: u32) -> bool {
        self.lexent[p as usize] > 0.0
    }

    fn step(&self, p: u32) -> usize {
        self.g.rows[p as usize].step
    }

    fn edge_index(&self, p: u32) -> usize {
        self.g.rows[p as usize].edge.index()
    }

    /// `lex + ent + prox`.
    fn score(&self, p: u32) -> f64 {
        let step = self.step(p);
        let prox = self
            .named
            .iter()
            .map(|&x| self.g.proximity / (1.0 + x.abs_diff(step) as f64))
            .fold(0.0, f64::max);
        self.lexent[p as usize] + prox
    }

    /// Whether unmatched relations can score above 0.
    fn prox_varies(&self) -> bool {
        self.g.proximity > 0.0 && !self.named.is_empty()
    }

    /// Adds to `out` the unmatched relations of a list of `len` positions
    /// ordered by step (`at(k)` is the k-th) that `skip` does not exclude,
    /// nearest to step `anchor`: on each side, whole steps until at least
    /// `m` are taken.
    fn nearest(
        &self,
        (len, at): List<'_>,
        anchor: usize,
        m: usize,
        skip: &dyn Fn(u32) -> bool,
        out: &mut Vec<u32>,
    ) {
        let step = |k: usize| self.step(at(k));
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if step(mid) < anchor {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut take = |k: usize, got: &mut usize| {
            let p = at(k);
            if !skip(p) && !self.is_matched(p) {
                out.push(p);
                *got += 1;
            }
        };
        let (mut k, mut got) = (lo, 0);
        while k < len && got < m {
            let s = step(k);
            while k < len && step(k) == s {
                take(k, &mut got);
                k += 1;
            }
        }
        let (mut k, mut got) = (lo, 0);
        while k > 0 && got < m {
            let s = step(k - 1);
            while k > 0 && step(k - 1) == s {
                take(k - 1, &mut got);
                k -= 1;
            }
        }
    }

    /// The focal relations: the best `focal` with a positive score, by
    /// score, then step, then edge index.
    fn focal(&self) -> Vec<(u32, f64)> {
        let mut candidates: Vec<u32> = self.matched.clone();
        if self.prox_varies() {
            let all: List<'_> = (self.g.rows.len(), &|k: usize| k as u32);
            for &x in &self.named {
                self.nearest(all, x, self.g.focal, &|_| false, &mut candidates);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut ranked: Vec<(u32, f64)> = candidates
            .into_iter()
            .map(|p| (p, self.score(p)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        let order = |a: &(u32, f64), b: &(u32, f64)| {
            b.1.total_cmp(&a.1)
                .then(self.step(a.0).cmp(&self.step(b.0)))
                .then(self.edge_index(a.0).cmp(&self.edge_index(b.0)))
        };
        top(&mut ranked, self.g.focal, order);
        ranked
    }

    /// The best `m` relations of `nodes` (either direction) that `skip`
    /// does not exclude, in the neighbour order around `s0`.
    fn best(
        &self,
        nodes: &[NodeIndex],
        m: usize,
        s0: usize,
        skip: &dyn Fn(u32) -> bool,
    ) -> Vec<u32> {
        let mut candidates = Vec::new();
        for n in nodes {
            for &p in self.matched_at.get(n).into_iter().flatten() {
                if !skip(p) {
                    candidates.push(p);
                }
            }
            let list = self.g.incident(*n);
            let list: List<'_> = (list.len(), &|k: usize| list[k]);
            self.nearest(list, s0, m, skip, &mut candidates);
            if self.prox_varies() {
                for &x in &self.named {
                    self.nearest(list, x, m, skip, &mut candidates);
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        // The neighbour order around `s0`: score (0 when not positive),
        // then distance in steps, then edge index.
        let mut keyed: Vec<(u32, f64, usize, usize)> = candidates
            .into_iter()
            .map(|p| {
                let s = self.score(p);
                let s = if s > 0.0 { s } else { 0.0 };
                (p, s, self.step(p).abs_diff(s0), self.edge_index(p))
            })
            .collect();
        top(&mut keyed, m, |x, y| {
            y.1.total_cmp(&x.1).then(x.2.cmp(&y.2)).then(x.3.cmp(&y.3))
        });
        keyed.into_iter().map(|(p, ..)| p).collect()
    }

    /// A focal relation's neighbours: up to `neighbours` sharing an
    /// endpoint, then (with 2 hops, when those are too few) relations of
    /// their other endpoints.
    fn neighbours_of(&self, p: u32, focal: &HashSet<u32>) -> Vec<u32> {
        let g = self.g;
        let row = g.rows[p as usize];
        let (a, b, s0) = (row.a, row.b, row.step);
        let first = if g.hops >= 2 {
            g.neighbours.max(8)
        } else {
            g.neighbours
        };
        let hop1 = self.best(&[a, b], first, s0, &|x| focal.contains(&x));
        let mut out: Vec<u32> = hop1.iter().take(g.neighbours).copied().collect();
        if out.len() < g.neighbours && g.hops >= 2 {
            let agent = g.node(AGENT);
            let mut nodes = Vec::new();
            for &x in hop1.iter().take(8) {
                let r = g.rows[x as usize];
                for n in [r.a, r.b] {
                    if n != a && n != b && Some(n) != agent && !nodes.contains(&n) {
                        nodes.push(n);
                    }
                }
            }
            let seen = |x: u32| {
                let r = g.rows[x as usize];
                focal.contains(&x) || [r.a, r.b].iter().any(|n| *n == a || *n == b)
            };
            out.extend(self.best(&nodes, g.neighbours - out.len(), s0, &seen));
        }
        out
    }
}

/// Keeps the first `m` of `v` in `order`, sorted (a partial selection,
/// then a sort of those `m`).
fn top<T>(v: &mut Vec<T>, m: usize, order: impl Fn(&T, &T) -> Ordering) {
    if v.len() > m && m > 0 {
        v.select_nth_unstable_by(m - 1, &order);
    }
    v.truncate(m);
    v.sort_by(order);
}

impl MemoryStructure for Graph {
    fn structure(&self) -> Structure {
        Structure::Graph
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        let scorer = Scorer::new(self, query);
        let max = 2.0
            + if scorer.named.is_empty() {
                0.0
            } else {
                self.proximity
            };
        let ranked = scorer.focal();
        let focal: HashSet<u32> = ranked.iter().map(|(p, _)| *p).collect();
        let mut items = Vec::with_capacity(ranked.len());
        for &(p, s) in &ranked {
            let neighbours = scorer.neighbours_of(p, &focal);
            let mut steps: Vec<usize> = std::iter::once(p)
                .chain(neighbours.iter().copied())
                .map(|x| scorer.step(x))
                .collect();
            steps.sort_unstable();
            steps.dedup();
            let mut text = self.line(self.rows[p as usize].edge);
            for n in &neighbours {
                text.push_str("\n  ");
                text.push_str(&self.line(self.rows[*n as usize].edge));
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
            hits: scorer.matched.len(),
            stale: 0,
        })
    }
}
