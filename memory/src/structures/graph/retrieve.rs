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
//! before it. For a node's matched relations, which a hub (the agent) may
//! have by the thousand, the same holds by score: the best `m` and the
//! ties at the cut contain the best `m` of any order that ranks by score
//! first, so each asked-about node's matched relations are ranked once per
//! question and read from the top (sorted only as far as they are read).
//! All matched relations are ranked once too (the focal relations are its
//! top), and a hub with at least a quarter of them reads its own off that
//! order instead of scoring and ranking its thousands again: positions
//! are in (step, edge index) order, so both orders are the same order.
//! Retrieval therefore reads the matched relations and a few
//! neighbourhoods found by binary search, and returns exactly what the scan
//! over every relation returns; `reference.rs` keeps that scan, and the tests
//! compare the two on AMA-Bench episodes.

use super::{Graph, AGENT};
use crate::structures::{Evidence, EvidenceItem, MemoryStructure, Query, RetrieveError};
use crate::tokens::count_tokens;
use mesa_core::Structure;
use petgraph::stable_graph::NodeIndex;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

/// A list of `len` positions, ordered by step: `at(k)` is the k-th.
type List<'a> = (usize, &'a dyn Fn(usize) -> u32);

/// Lists built per node on first use and kept for the question.
type PerNode<T> = RefCell<HashMap<NodeIndex, Rc<T>>>;

/// `cache`'s list for `n`, built by `make` if it has none.
fn per_node<T>(cache: &PerNode<T>, n: NodeIndex, make: impl FnOnce() -> T) -> Rc<T> {
    if let Some(r) = cache.borrow().get(&n) {
        return r.clone();
    }
    let r = Rc::new(make());
    cache.borrow_mut().insert(n, r.clone());
    r
}

/// One question's scores over one graph.
struct Scorer<'g> {
    g: &'g Graph,
    /// `lex + ent` of every relation, by position (0 when not matched).
    lexent: Vec<f64>,
    /// The matched relations, by position.
    matched: Vec<u32>,
    /// The other relations, by position.
    unmatched: Vec<u32>,
    /// Every matched relation by score (highest first, then position),
    /// built on first use and sorted only as far as it is read.
    all_ranked: RefCell<Option<Ranked>>,
    /// Each node's matched relations by score, for the nodes asked about.
    ranked_at: PerNode<RefCell<NodeRanked>>,
    /// Each node's unmatched relations by position, for the nodes asked
    /// about.
    unmatched_at: PerNode<Vec<u32>>,
    /// The steps the question names.
    named: Vec<usize>,
}

impl<'g> Scorer<'g> {
    fn new(g: &'g Graph, query: &Query) -> Scorer<'g> {
        let linked = g.linked(query.terms());
        let weights = g.terms.idf().weigh(query.terms());
        // lex, then + ent where an endpoint is linked: the scan's sum. `ent`
        // counts linked endpoints in halves (a self-loop is listed once and
        // counts both), so each relation gets one addition, as in the scan.
        let mut lexent = g.terms.overlaps(&weights);
        let linked: Vec<NodeIndex> = linked.into_iter().collect();
        let mut halves = vec![0u8; g.rows.len()];
        for &n in &linked {
            for &p in g.incident(n) {
                let row = g.rows[p as usize];
                halves[p as usize] =
                    u8::from(linked.contains(&row.a)) + u8::from(linked.contains(&row.b));
            }
        }
        let (mut matched, mut unmatched) = (Vec::new(), Vec::new());
        for (p, (s, h)) in lexent.iter_mut().zip(&halves).enumerate() {
            if *h > 0 {
                *s += 0.5 * f64::from(*h);
            }
            if *s > 0.0 {
                matched.push(p as u32);
            } else {
                unmatched.push(p as u32);
            }
        }
        Scorer {
            g,
            lexent,
            matched,
            unmatched,
            all_ranked: RefCell::new(None),
            ranked_at: RefCell::new(HashMap::new()),
            unmatched_at: RefCell::new(HashMap::new()),
            named: query.refs().named(g.last_step),
        }
    }

    /// The `i`-th matched relation of all, by score (highest first), then
    /// position.
    fn all_ranked(&self, i: usize) -> Option<(u32, f64)> {
        let mut all = self.all_ranked.borrow_mut();
        let all = all.get_or_insert_with(|| Ranked {
            r: self.matched.iter().map(|&p| (p, self.score(p))).collect(),
            sorted: 0,
        });
        all.get(i)
    }

    /// Node `n`'s matched relations by score (highest first, then by
    /// position), built on first use and kept for the question; sorted
    /// only as far as it is read. A hub that has at least a quarter of
    /// all matched relations (the agent) reads them off the order of all
    /// of them, which a question sorts anyway for its focal relations,
    /// instead of scoring and sorting its own thousands again.
    fn ranked(&self, n: NodeIndex) -> Rc<RefCell<NodeRanked>> {
        per_node(&self.ranked_at, n, || {
            let incident = self.g.incident(n);
            let count = incident.iter().filter(|p| self.is_matched(**p)).count();
            RefCell::new(if count * 4 >= self.matched.len() {
                NodeRanked::OfAll {
                    node: n,
                    count,
                    read: Vec::new(),
                    next: 0,
                }
            } else {
                NodeRanked::Own(self.own_ranked(n, count))
            })
        })
    }

    /// Node `n`'s `count` matched relations, ranked on their own.
    fn own_ranked(&self, n: NodeIndex, count: usize) -> Ranked {
        let mut r = Vec::with_capacity(count);
        let own = self.g.incident(n).iter().filter(|p| self.is_matched(**p));
        r.extend(own.map(|&p| (p, self.score(p))));
        Ranked { r, sorted: 0 }
    }

    /// The `i`-th entry of a node's [`Scorer::ranked`] list.
    fn ranked_get(&self, list: &mut NodeRanked, i: usize) -> Option<(u32, f64)> {
        match list {
            NodeRanked::Own(r) => r.get(i),
            NodeRanked::OfAll {
                node,
                count,
                read,
                next,
            } => {
                while read.len() <= i {
                    if *next >= OF_ALL_READS {
                        // Deep in the order (a long tie at a cut, or
                        // a hub with few of the top relations): ranked on
                        // its own from here, in the same order.
                        let own = self.own_ranked(*node, *count);
                        *list = NodeRanked::Own(own);
                        return self.ranked_get(list, i);
                    }
                    let (p, s) = self.all_ranked(*next)?;
                    *next += 1;
                    let row = self.g.rows[p as usize];
                    if row.a == *node || row.b == *node {
                        read.push((p, s));
                    }
                }
                read.get(i).copied()
            }
        }
    }

    /// Node `n`'s unmatched relations by position, built on first use
    /// and kept for the question.
    fn unmatched(&self, n: NodeIndex) -> Rc<Vec<u32>> {
        per_node(&self.unmatched_at, n, || {
            let list = self.g.incident(n).iter().copied();
            list.filter(|p| !self.is_matched(*p)).collect()
        })
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

    /// Adds to `out` the relations of a list of `len` unmatched positions
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
            if !skip(p) {
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
        // `nearest` adds only unmatched relations, so only those need
        // deduplicating.
        let mut near = Vec::new();
        if self.prox_varies() {
            let all: List<'_> = (self.unmatched.len(), &|k: usize| self.unmatched[k]);
            for &x in &self.named {
                self.nearest(all, x, self.g.focal, &|_| false, &mut near);
            }
        }
        near.sort_unstable();
        near.dedup();
        // The best matched ones come first in the order of all of them
        // (positions are in step, then edge index, order); every matched
        // relation scores above 0.
        let m = self.g.focal;
        let best = (0..m).map_while(|i| self.all_ranked(i));
        let near = near.into_iter().map(|p| (p, self.score(p)));
        let mut ranked: Vec<(u32, f64)> = best.chain(near).filter(|(_, s)| *s > 0.0).collect();
        let order = |a: &(u32, f64), b: &(u32, f64)| {
            b.1.total_cmp(&a.1)
                .then(self.step(a.0).cmp(&self.step(b.0)))
                .then(self.edge_index(a.0).cmp(&self.edge_index(b.0)))
        };
        top(&mut ranked, m, order);
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
        if m == 0 {
            return Vec::new();
        }
        let mut candidates = Vec::new();
        for n in nodes {
            // The matched ones: the best `m` that `skip` leaves, and every
            // one tied with the last of them (the order below breaks ties
            // by distance); any other scores lower than `m` of these.
            let mut cut = None;
            let mut got = 0;
            let ranked = self.ranked(*n);
            let mut ranked = ranked.borrow_mut();
            for (p, s) in (0..).map_while(|i| self.ranked_get(&mut ranked, i)) {
                if cut.is_some_and(|c: f64| s.total_cmp(&c).is_lt()) {
                    break;
                }
                if !skip(p) {
                    candidates.push(p);
                    got += 1;
                    if got == m {
                        cut = Some(s);
                    }
                }
            }
            let list = self.unmatched(*n);
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
    fn neighbours_of(&self, p: u32, focal: &[u32]) -> Vec<u32> {
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

/// A node's matched relations (position, score), in the order highest
/// score first, then position: `r[..sorted]` is that order's prefix, and
/// every later entry comes after all of it. Reading entry `i` sorts the
/// prefix on to at least `i + 1` (doubling, so a full read costs one sort),
/// which keeps a hub's thousands of matched relations from being sorted
/// when a question reads only its best few.
struct Ranked {
    r: Vec<(u32, f64)>,
    sorted: usize,
}

/// How far into the order of all matched relations a hub reads its own
/// before it ranks them on its own.
const OF_ALL_READS: usize = 64;

/// A node's matched relations in [`Ranked`]'s order: its own list, or
/// (for a hub, which has `count` of them) the ones read so far off the
/// order of all matched relations, `next` being the next entry of that
/// order to look at.
enum NodeRanked {
    Own(Ranked),
    OfAll {
        node: NodeIndex,
        count: usize,
        read: Vec<(u32, f64)>,
        next: usize,
    },
}

impl Ranked {
    fn get(&mut self, i: usize) -> Option<(u32, f64)> {
        if i >= self.sorted && i < self.r.len() {
            let order = |x: &(u32, f64), y: &(u32, f64)| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0));
            let to = (i + 1).max(2 * self.sorted).max(32).min(self.r.len());
            let rest = &mut self.r[self.sorted..];
            let want = to - self.sorted;
            if want < rest.len() {
                rest.select_nth_unstable_by(want - 1, order);
            }
            rest[..want].sort_unstable_by(order);
            self.sorted = to;
        }
        self.r.get(i).copied()
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
        let focal: Vec<u32> = ranked.iter().map(|(p, _)| *p).collect();
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
