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
//!   each side of each named step (or, when no step is named, the first
//!   `m`);
//! - by score then distance to a step `s0` (a focal relation's neighbours)
//!   are among the `m` nearest on each side of each named step and of `s0`,
//!
//! where "nearest" takes whole steps at a time, so every relation tied at a
//! step is seen. Any relation left out has `m` others of its list strictly
//! before it.
//!
//! The same holds for any set of relations that share one `lex + ent`, and
//! that is what keeps a question's cost from growing with the episode. A
//! question's sources of matches are its terms' postings and its linked
//! nodes' relations. The long ones (from [`HEAVY_AT`] relations: the
//! agent's node, a word every relation of a kind has) are read as bit sets
//! and never listed. A relation matched by long sources only has the
//! `lex + ent` that the combination of long sources it is in gives (its
//! question terms are theirs, its linked endpoints their nodes), so those
//! relations fall into a few *classes*, one bit set each, split a word at a
//! time; the relations of short sources are listed and scored one by one.
//!
//! ```text
//! question ─▶ short sources ─▶ listed relations, each scored
//!          └▶ long sources ──▶ bit sets ─▶ classes (one lex + ent each)
//! focal: listed ∪ each class's and the unmatched ones' nearest named steps (or first m)
//! neighbours of a focal relation (a, b): per endpoint,
//!     short node: its matched relations by score (+ ties at the cut) ∪ unmatched nearest
//!     long node:  its listed ones ∪ (each class ∩ node) nearest ∪ (unmatched ∩ node) nearest
//! ```
//!
//! A question therefore scores its short sources' relations and reads the
//! long ones `len / 64` words at a time (building their bit sets, splitting
//! them, and a scan out from each anchor), and returns exactly what the
//! scan over every relation returns; `reference.rs` keeps that scan, and
//! the tests compare the two on AMA-Bench episodes and on random graphs,
//! with every source and node long from 1, 2, 3, ... relations on as well.

use super::bits::{split, Bits, Source, Sparse};
use super::Graph;
use crate::structures::top;
use crate::structures::{Evidence, EvidenceItem, MemoryStructure, Query, RetrieveError};
use crate::tokens::count_tokens;
use mesa_core::Structure;
use petgraph::stable_graph::NodeIndex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// A source of matches (a question term's postings, a linked node's
/// relations) at least this long is read as a bit set, and its relations
/// are not listed one by one; nor are a node's when a focal relation's
/// neighbours are looked for among them.
pub(super) const HEAVY_AT: usize = 1024;

/// At most this many sources are read as bit sets (the longest); the other
/// sources are listed, however long.
const MAX_HEAVY: usize = 6;

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
///
/// The matched relations are of two kinds. The *listed* ones, each with its
/// `lex + ent`: every relation of a light source (shorter than
/// `heavy_at`), and the self-loops of heavy linked nodes. The others are
/// matched by heavy sources only, and fall into *classes* by the heavy
/// sources they are in; a class's relations share one `lex + ent` (their
/// terms among the question's are the class's heavy terms, and their
/// linked endpoints its heavy nodes, one each), so each scores that
/// constant plus `prox`, which depends on the step alone, like the
/// unmatched relations (the class of constant 0). Within a class the
/// module docs' argument for the unmatched ones holds, so a class is read
/// only around the steps that matter, a word of its bit set at a time.
struct Scorer<'g> {
    g: &'g Graph,
    heavy_at: usize,
    /// The question's weighted terms and their postings.
    weights: Vec<(u64, f64)>,
    total: f64,
    postings: Vec<&'g [u32]>,
    /// The heavy terms' postings as bit sets, by term.
    term_bits: Vec<Option<Arc<Bits>>>,
    linked: Vec<NodeIndex>,
    /// The listed matched relations, increasing, with their `lex + ent`.
    listed: Vec<u32>,
    listed_lexent: Vec<f64>,
    listed_bits: Bits,
    /// The classes: `lex + ent` and members (disjoint, none listed).
    classes: Vec<(f64, Sparse)>,
    /// Every matched relation.
    matched: Bits,
    /// The unmatched relations, built on first use.
    unmatched_all: RefCell<Option<Rc<Sparse>>>,
    /// Heavy nodes' relations in each class and unmatched, for the nodes
    /// asked about.
    node_sets: PerNode<NodeSets>,
    /// Heavy nodes' listed matched relations, for the nodes asked about.
    listed_at: PerNode<Vec<u32>>,
    /// Light nodes' matched relations by score, for the nodes asked about.
    ranked_at: PerNode<RefCell<Ranked>>,
    /// Light nodes' unmatched relations, for the nodes asked about.
    unmatched_at: PerNode<Sparse>,
    /// The steps the question names.
    named: Vec<usize>,
}

impl<'g> Scorer<'g> {
    fn new(g: &'g Graph, query: &Query, heavy_at: usize) -> Scorer<'g> {
        let len = g.rows.len();
        let mut weights = g.terms.idf().weigh(query.terms());
        let total: f64 = weights.iter().map(|(_, w)| w).sum();
        if total <= 0.0 {
            weights.clear();
        }
        let linked: Vec<NodeIndex> = g.linked(query.terms()).into_iter().collect();
        let postings: Vec<&[u32]> = weights.iter().map(|(t, _)| g.terms.postings(*t)).collect();
        // Sources: the terms, then the linked nodes; the longest are heavy.
        let lens = postings.iter().map(|p| p.len());
        let lens = lens.chain(linked.iter().map(|n| g.incident(*n).len()));
        let mut heavy: Vec<(usize, usize)> = lens
            .enumerate()
            .filter(|(_, l)| *l >= heavy_at.max(1))
            .map(|(i, l)| (l, i))
            .collect();
        heavy.sort_unstable_by(|x, y| y.cmp(x));
        heavy.truncate(MAX_HEAVY);
        let is_heavy = |i: usize| heavy.iter().any(|(_, h)| *h == i);
        let term_bits: Vec<Option<Arc<Bits>>> = (0..weights.len())
            .map(|i| is_heavy(i).then(|| g.bit_set(Source::Term(weights[i].0), postings[i])))
            .collect();
        let mut listed: Vec<u32> = Vec::new();
        for (i, p) in postings.iter().enumerate() {
            if !is_heavy(i) {
                listed.extend_from_slice(p);
            }
        }
        let mut heavy_nodes = Vec::new();
        for (j, &n) in linked.iter().enumerate() {
            let incident = g.incident(n);
            if is_heavy(weights.len() + j) {
                let rows = incident.iter().map(|&p| (p, g.rows[p as usize]));
                listed.extend(rows.filter(|(_, r)| r.a == r.b).map(|(p, _)| p));
                heavy_nodes.push(g.bit_set(Source::Node(n.index()), incident));
            } else {
                listed.extend_from_slice(incident);
            }
        }
        listed.sort_unstable();
        listed.dedup();
        let listed_bits = Bits::of(len, &listed);
        let mut s = Scorer {
            g,
            heavy_at,
            weights,
            total,
            postings,
            term_bits,
            linked,
            listed,
            listed_lexent: Vec::new(),
            listed_bits,
            classes: Vec::new(),
            matched: Bits::new(len),
            unmatched_all: RefCell::new(None),
            node_sets: RefCell::new(HashMap::new()),
            listed_at: RefCell::new(HashMap::new()),
            ranked_at: RefCell::new(HashMap::new()),
            unmatched_at: RefCell::new(HashMap::new()),
            named: query.refs().named(g.last_step),
        };
        s.listed_lexent = s.listed_lexent();
        let mut sources: Vec<&Bits> = s.term_bits.iter().flatten().map(|b| &**b).collect();
        sources.extend(heavy_nodes.iter().map(|b| &**b));
        let (matched, classes) = split(&s.listed_bits, &sources);
        s.matched = matched;
        s.classes = classes
            .into_iter()
            .map(|b| (b.first().map_or(0.0, |p| s.lexent_of(p)), b))
            .collect();
        s
    }

    /// The listed relations' `lex + ent`: [`TermIndex::overlaps`]'s sums
    /// (the terms added in the question's order, then divided by their
    /// total), then `ent` in halves, as the scan adds them.
    ///
    /// [`TermIndex::overlaps`]: crate::text::TermIndex::overlaps
    fn listed_lexent(&self) -> Vec<f64> {
        let mut acc = vec![0.0; self.listed.len()];
        for (i, (_, w)) in self.weights.iter().enumerate() {
            match &self.term_bits[i] {
                Some(b) => {
                    for (a, p) in acc.iter_mut().zip(&self.listed) {
                        if b.has(*p) {
                            *a += w;
                        }
                    }
                }
                None => {
                    for p in self.postings[i] {
                        if let Ok(k) = self.listed.binary_search(p) {
                            acc[k] += w;
                        }
                    }
                }
            }
        }
        for (a, p) in acc.iter_mut().zip(&self.listed) {
            *a = self.finish(*a, *p);
        }
        acc
    }

    /// Any relation's `lex + ent`, from its terms and endpoints (the same
    /// additions as [`Scorer::listed_lexent`]).
    fn lexent_of(&self, p: u32) -> f64 {
        let mut got = 0.0;
        for (i, (_, w)) in self.weights.iter().enumerate() {
            let has = match &self.term_bits[i] {
                Some(b) => b.has(p),
                None => self.postings[i].binary_search(&p).is_ok(),
            };
            if has {
                got += w;
            }
        }
        self.finish(got, p)
    }

    /// `got` (the sum of the weights of `p`'s terms) divided by the total,
    /// plus `ent`.
    fn finish(&self, got: f64, p: u32) -> f64 {
        let mut s = if self.weights.is_empty() {
            got
        } else {
            got / self.total
        };
        let row = self.g.rows[p as usize];
        let h = u8::from(self.linked.contains(&row.a)) + u8::from(self.linked.contains(&row.b));
        if h > 0 {
            s += 0.5 * f64::from(h);
        }
        s
    }

    /// `lex + ent` of relation `p`.
    fn lexent(&self, p: u32) -> f64 {
        if self.listed_bits.has(p) {
            return self
                .listed
                .binary_search(&p)
                .map_or(0.0, |k| self.listed_lexent[k]);
        }
        if !self.matched.has(p) {
            return 0.0;
        }
        let class = self.classes.iter().find(|(_, b)| b.has(p));
        class.map_or(0.0, |(l, _)| *l)
    }

    /// Whether node `n`'s relations are read as a bit set.
    fn heavy(&self, n: NodeIndex) -> bool {
        self.g.incident(n).len() >= self.heavy_at.max(1)
    }

    /// A heavy node's relations in each class and unmatched.
    fn node_sets(&self, n: NodeIndex) -> Rc<NodeSets> {
        per_node(&self.node_sets, n, || {
            let own = self.g.bit_set(Source::Node(n.index()), self.g.incident(n));
            let classes = self.classes.iter().map(|(_, c)| {
                let words = c.nonzero().map(|(i, w)| (i, w & own.word(i)));
                let mut s = Sparse::default();
                words.for_each(|(i, w)| s.push(i, w));
                s
            });
            NodeSets {
                classes: classes.collect(),
                unmatched: Sparse::of(0..own.words(), |i| self.unmatched_word(i) & own.word(i)),
            }
        })
    }

    /// The unmatched relations.
    fn unmatched_all(&self) -> Rc<Sparse> {
        let mut all = self.unmatched_all.borrow_mut();
        all.get_or_insert_with(|| {
            Rc::new(Sparse::of(0..self.matched.words(), |i| {
                self.unmatched_word(i)
            }))
        })
        .clone()
    }

    /// Node `n`'s listed matched relations.
    fn listed_at(&self, n: NodeIndex) -> Rc<Vec<u32>> {
        per_node(&self.listed_at, n, || {
            let rows = self.listed.iter().map(|&p| (p, self.g.rows[p as usize]));
            rows.filter(|(_, r)| r.a == n || r.b == n)
                .map(|(p, _)| p)
                .collect()
        })
    }

    /// Node `n`'s matched relations by score (highest first, then by
    /// position), built on first use and kept for the question; sorted
    /// only as far as it is read.
    fn ranked(&self, n: NodeIndex) -> Rc<RefCell<Ranked>> {
        per_node(&self.ranked_at, n, || {
            let own = self.g.incident(n).iter().filter(|p| self.is_matched(**p));
            RefCell::new(Ranked {
                r: own.map(|&p| (p, self.score(p))).collect(),
                sorted: 0,
            })
        })
    }

    /// Node `n`'s unmatched relations, built on first use and kept for
    /// the question.
    fn unmatched(&self, n: NodeIndex) -> Rc<Sparse> {
        per_node(&self.unmatched_at, n, || {
            let list = self.g.incident(n).iter().copied();
            Sparse::of_sorted(list.filter(|p| !self.is_matched(*p)))
        })
    }

    fn is_matched(&self, p: u32) -> bool {
        self.matched.has(p)
    }

    fn step(&self, p: u32) -> usize {
        self.g.rows[p as usize].step
    }

    /// `prox` at relation `p`'s step.
    fn prox(&self, p: u32) -> f64 {
        let step = self.step(p);
        self.named
            .iter()
            .map(|&x| self.g.proximity / (1.0 + x.abs_diff(step) as f64))
            .fold(0.0, f64::max)
    }

    /// `lex + ent + prox`.
    fn score(&self, p: u32) -> f64 {
        self.lexent(p) + self.prox(p)
    }

    /// Whether unmatched relations can score above 0.
    fn prox_varies(&self) -> bool {
        self.g.proximity > 0.0 && !self.named.is_empty()
    }

    /// Adds to `out` the relations of `set` that `skip` does not exclude,
    /// nearest to step `anchor`: on each side, whole steps until at least
    /// `m` are taken.
    fn nearest_in(
        &self,
        set: &Sparse,
        anchor: usize,
        m: usize,
        skip: &dyn Fn(u32) -> bool,
        out: &mut Vec<u32>,
    ) {
        let at = self.g.rows.partition_point(|r| r.step < anchor);
        self.whole_steps(set.up(at), m, skip, out);
        self.whole_steps(set.down(at), m, skip, out);
    }

    /// Takes relations off `side` (away from an anchor, step by step) that
    /// `skip` does not exclude, whole steps at a time, until at least `m`.
    fn whole_steps(
        &self,
        side: impl Iterator<Item = u32>,
        m: usize,
        skip: &dyn Fn(u32) -> bool,
        out: &mut Vec<u32>,
    ) {
        let (mut got, mut at) = (0, None);
        for p in side {
            let s = self.step(p);
            if at != Some(s) {
                if got >= m {
                    break;
                }
                at = Some(s);
            }
            if !skip(p) {
                out.push(p);
                got += 1;
            }
        }
    }

    /// The candidates of a class of relations scoring one constant plus
    /// `prox` (within `set`), in an order that ranks by score, then by
    /// distance to `s0` (or, without `s0`, by step and position): the `m`
    /// nearest around `s0` and each named step, or the first `m`.
    fn around(
        &self,
        set: &Sparse,
        s0: Option<usize>,
        m: usize,
        skip: &dyn Fn(u32) -> bool,
        out: &mut Vec<u32>,
    ) {
        if let Some(s0) = s0 {
            self.nearest_in(set, s0, m, skip, out);
        }
        if self.prox_varies() {
            for &x in &self.named {
                self.nearest_in(set, x, m, skip, out);
            }
        } else if s0.is_none() {
            out.extend(set.up(0).filter(|p| !skip(*p)).take(m));
        }
    }

    /// Positions `64 i ..` that are not matched.
    fn unmatched_word(&self, i: usize) -> u64 {
        let len = self.g.rows.len();
        let valid = if (i + 1) * 64 <= len {
            u64::MAX
        } else if i * 64 < len {
            (1u64 << (len % 64)) - 1
        } else {
            0
        };
        !self.matched.word(i) & valid
    }

    /// The focal relations: the best `focal` with a positive score, by
    /// score, then step, then position.
    fn focal(&self) -> Vec<(u32, f64)> {
        let m = self.g.focal;
        let mut others = Vec::new();
        for (_, class) in &self.classes {
            self.around(class, None, m, &|_| false, &mut others);
        }
        if self.prox_varies() {
            let unmatched = self.unmatched_all();
            for &x in &self.named {
                self.nearest_in(&unmatched, x, m, &|_| false, &mut others);
            }
        }
        others.sort_unstable();
        others.dedup();
        let listed = self.listed.iter().zip(&self.listed_lexent);
        let listed = listed.map(|(&p, l)| (p, l + self.prox(p)));
        let others = others.into_iter().map(|p| (p, self.score(p)));
        let mut ranked: Vec<(u32, f64)> = listed.chain(others).filter(|(_, s)| *s > 0.0).collect();
        let order = |a: &(u32, f64), b: &(u32, f64)| {
            b.1.total_cmp(&a.1)
                .then(self.step(a.0).cmp(&self.step(b.0)))
                .then(a.0.cmp(&b.0))
        };
        top(&mut ranked, m, order);
        ranked
    }

    /// Adds to `out` the candidates among a light node's relations: the
    /// best `m` matched ones by score that `skip` leaves, and every one
    /// tied with the last of them (the neighbour order breaks ties by
    /// distance; any other scores lower than `m` of these), then the
    /// unmatched ones around `s0` and the named steps.
    fn light_candidates(
        &self,
        n: NodeIndex,
        m: usize,
        s0: usize,
        skip: &dyn Fn(u32) -> bool,
        out: &mut Vec<u32>,
    ) {
        let mut cut = None;
        let mut got = 0;
        let ranked = self.ranked(n);
        let mut ranked = ranked.borrow_mut();
        for (p, s) in (0..).map_while(|i| ranked.get(i)) {
            if cut.is_some_and(|c: f64| s.total_cmp(&c).is_lt()) {
                break;
            }
            if !skip(p) {
                out.push(p);
                got += 1;
                if got == m {
                    cut = Some(s);
                }
            }
        }
        self.around(&self.unmatched(n), Some(s0), m, skip, out);
    }

    /// Adds to `out` the candidates among a heavy node's relations: all its
    /// listed ones, and each class's and the unmatched ones' around `s0`
    /// and the named steps, read through the node's bit set.
    fn heavy_candidates(
        &self,
        n: NodeIndex,
        m: usize,
        s0: usize,
        skip: &dyn Fn(u32) -> bool,
        out: &mut Vec<u32>,
    ) {
        out.extend(self.listed_at(n).iter().filter(|p| !skip(**p)));
        let sets = self.node_sets(n);
        for set in sets.classes.iter().chain([&sets.unmatched]) {
            self.around(set, Some(s0), m, skip, out);
        }
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
        for &n in nodes {
            if self.heavy(n) {
                self.heavy_candidates(n, m, s0, skip, &mut candidates);
            } else {
                self.light_candidates(n, m, s0, skip, &mut candidates);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        // The neighbour order around `s0`: score (0 when not positive),
        // then distance in steps, then position.
        let mut keyed: Vec<(u32, f64, usize, u32)> = candidates
            .into_iter()
            .map(|p| {
                let s = self.score(p);
                let s = if s > 0.0 { s } else { 0.0 };
                (p, s, self.step(p).abs_diff(s0), p)
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
            let agent = g.agent;
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

/// A heavy node's relations in each of a question's classes (in the same
/// order) and among its unmatched relations.
struct NodeSets {
    classes: Vec<Sparse>,
    unmatched: Sparse,
}

/// A light node's matched relations (position, score), in the order highest
/// score first, then position: `r[..sorted]` is that order's prefix, and
/// every later entry comes after all of it. Reading entry `i` sorts the
/// prefix on to at least `i + 1` (doubling, so a full read costs one sort),
/// which keeps a hub's thousands of matched relations from being sorted
/// when a question reads only its best few.
struct Ranked {
    r: Vec<(u32, f64)>,
    sorted: usize,
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

impl Graph {
    /// G's retrieval, with sources read as bit sets from `heavy_at`
    /// relations on ([`HEAVY_AT`] outside the tests, which also try small
    /// values so that every path is taken on small graphs).
    pub(super) fn retrieve_with(&self, query: &Query, heavy_at: usize) -> Evidence {
        let scorer = Scorer::new(self, query, heavy_at);
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
            let mut text = self.line(p as usize);
            for n in &neighbours {
                text.push_str("\n  ");
                text.push_str(&self.line(*n as usize));
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
            hits: scorer.matched.count(),
            stale: 0,
        }
    }
}

impl MemoryStructure for Graph {
    fn structure(&self) -> Structure {
        Structure::Graph
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        Ok(self.retrieve_with(query, HEAVY_AT))
    }
}
