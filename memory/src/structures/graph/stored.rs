//! How G is persisted: its names as two [`Names`] buffers, its relations as
//! four little-endian columns (step, relation, subject, object), and its
//! three indexes as [`TermIndex`]es in their sorted-array form.
//!
//! ```text
//! Graph ──serialize──► names, relations, steps | relation | a | b, agent,
//!                      words, word counts, terms, incident, parameters
//!       ◄─deserialize── one copy per array, then every number used as an
//!                       index range-checked (a damaged state is refused or
//!                       answers wrongly, never panics)
//! ```
//!
//! Reading it back allocates a few dozen buffers however large the graph
//! is; the name maps that adding steps needs are not stored (see
//! [`Graph`]).

use super::{bits, Graph, Names, Row, TermIndex};
use crate::le::{u32s_from_le, u32s_to_le, u64s_from_le, u64s_to_le};
use petgraph::stable_graph::NodeIndex;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The stored form: `N` and `I` are [`Names`] and [`TermIndex`] when read,
/// references to them when written.
#[derive(Serialize, Deserialize)]
struct Stored<'a, N, I> {
    names: N,
    relations: N,
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    steps: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    relation: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    a: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    b: &'a [u8],
    agent: Option<u32>,
    words: I,
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    word_counts: &'a [u8],
    terms: I,
    incident: I,
    last_step: u64,
    focal: u64,
    neighbours: u64,
    hops: u64,
    proximity: f64,
}

/// A number that fits in 32 bits, for serializing.
fn u32_of<E: serde::ser::Error>(n: usize) -> Result<u32, E> {
    u32::try_from(n).map_err(|_| E::custom("a graph over 2^32 entities or relations"))
}

impl Serialize for Graph {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let column = |f: fn(&Row) -> usize| -> Result<Vec<u8>, S::Error> {
            let xs: Result<Vec<u32>, _> = self.rows.iter().map(|r| u32_of(f(r))).collect();
            Ok(u32s_to_le(&xs?))
        };
        let steps: Vec<u64> = self.rows.iter().map(|r| r.step as u64).collect();
        Stored {
            names: &self.names,
            relations: &self.relations,
            steps: &u64s_to_le(&steps),
            relation: &column(|r| r.relation as usize)?,
            a: &column(|r| r.a.index())?,
            b: &column(|r| r.b.index())?,
            agent: self.agent.map(|n| u32_of(n.index())).transpose()?,
            words: &self.words,
            word_counts: &u32s_to_le(&self.word_counts),
            terms: &self.terms,
            incident: &self.incident,
            last_step: self.last_step as u64,
            focal: self.focal as u64,
            neighbours: self.neighbours as u64,
            hops: self.hops as u64,
            proximity: self.proximity,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Graph {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Graph, D::Error> {
        let s: Stored<'de, Names, TermIndex> = Stored::deserialize(d)?;
        let bad = |what: &str| D::Error::custom(format!("G's stored {what}"));
        let whole = |what: &str| bad(&format!("{what} are not whole values"));
        let steps = u64s_from_le(s.steps).ok_or_else(|| whole("steps"))?;
        let relation = u32s_from_le(s.relation).ok_or_else(|| whole("relations"))?;
        let a = u32s_from_le(s.a).ok_or_else(|| whole("subjects"))?;
        let b = u32s_from_le(s.b).ok_or_else(|| whole("objects"))?;
        let word_counts = u32s_from_le(s.word_counts).ok_or_else(|| whole("word counts"))?;
        let rows = steps.len();
        let nodes = s.names.len();
        if [
            relation.len(),
            a.len(),
            b.len(),
            s.terms.docs(),
            s.incident.docs(),
        ] != [rows; 5]
        {
            return Err(bad("relation columns and indexes differ in length"));
        }
        if word_counts.len() != nodes || s.words.docs() != nodes {
            return Err(bad("entity names, words and word counts differ in number"));
        }
        if s.agent.is_some_and(|n| n as usize >= nodes) {
            return Err(bad("agent is not an entity"));
        }
        let as_usize = |x: u64, what: &str| usize::try_from(x).map_err(|_| bad(what));
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            let step = as_usize(steps[i], "step is too large")?;
            let ends = (a[i] as usize, b[i] as usize);
            if ends.0 >= nodes || ends.1 >= nodes || ends.0 == ends.1 {
                return Err(bad("relation does not join two of its entities"));
            }
            if relation[i] as usize >= s.relations.len() {
                return Err(bad("relation is not in its vocabulary"));
            }
            if out.last().is_some_and(|r: &Row| r.step > step) {
                return Err(bad("relations are not in step order"));
            }
            out.push(Row {
                step,
                relation: relation[i],
                a: NodeIndex::new(ends.0),
                b: NodeIndex::new(ends.1),
            });
        }
        Ok(Graph {
            names: s.names,
            relations: s.relations,
            rows: out,
            agent: s.agent.map(|n| NodeIndex::new(n as usize)),
            words: s.words,
            word_counts,
            terms: s.terms,
            incident: s.incident,
            last_step: as_usize(s.last_step, "last step is too large")?,
            focal: as_usize(s.focal, "focal count is too large")?,
            neighbours: as_usize(s.neighbours, "neighbour count is too large")?,
            hops: as_usize(s.hops, "hop count is too large")?,
            proximity: s.proximity,
            lookup: None,
            bit_sets: bits::BitSets::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Graph, RuleExtractor, Triple, TripleExtractor};
    use crate::config::Config;
    use crate::dataset::Episode;
    use crate::structures::fixtures::{game_episode, sql_episode};
    use crate::structures::{MemoryStructure, Query};

    fn questions(e: &Episode) -> Vec<Query> {
        let mut q: Vec<String> = e.questions.iter().map(|q| q.question.clone()).collect();
        q.extend(
            [
                "What did the agent do at step 3?",
                "key door error",
                "agent",
            ]
            .map(String::from),
        );
        q.iter().map(|q| Query::new(q)).collect()
    }

    fn triples(e: &Episode) -> Vec<Vec<Triple>> {
        let t = e.steps.iter().map(|s| RuleExtractor.extract(e, s).unwrap());
        t.collect()
    }

    /// A graph read back answers as the one written, and steps added to
    /// it afterwards (through the name maps it rebuilds) give the graph
    /// built over all the steps in one go, answer for answer.
    #[test]
    fn a_stored_graph_reads_back_and_grows_like_the_built_one() {
        let c = Config::default();
        let mut episodes = vec![sql_episode(), game_episode(60)];
        if let Some(loaded) = crate::testing::ama() {
            let longest = loaded.episodes.iter().max_by_key(|e| e.steps.len());
            episodes.extend(longest.cloned());
            episodes.extend(loaded.episodes.iter().step_by(41).cloned());
        }
        for e in &episodes {
            let all = triples(e);
            let whole = Graph::from_triples(e, all.iter().map(Vec::as_slice), &c);
            let cut = e.steps.len() / 2;
            let mut head = e.clone();
            head.steps.truncate(cut);
            let part = Graph::from_triples(&head, all.iter().map(Vec::as_slice), &c);
            let bytes = postcard::to_stdvec(&part).unwrap();
            let mut back: Graph = postcard::from_bytes(&bytes).unwrap();
            assert!(back.lookup.is_none());
            for q in &questions(e) {
                assert_eq!(
                    back.retrieve(q).unwrap(),
                    part.retrieve(q).unwrap(),
                    "{}",
                    e.id
                );
            }
            let rest = all[cut..].iter().map(Vec::as_slice);
            back.extend(&e.steps[cut..], rest, &c);
            assert_eq!(back.relation_count(), whole.relation_count(), "{}", e.id);
            assert_eq!(back.entity_count(), whole.entity_count(), "{}", e.id);
            assert_eq!(back.agent, whole.agent);
            for q in &questions(e) {
                let want = whole.retrieve(q).unwrap();
                assert_eq!(back.retrieve(q).unwrap(), want, "{}: {}", e.id, q.text());
            }
            let again = postcard::to_stdvec(&back).unwrap();
            assert_eq!(again, postcard::to_stdvec(&whole).unwrap(), "{}", e.id);
        }
    }

    /// Every cut of a stored graph, and every byte changed in a small one,
    /// reads back as an error or as a graph that answers without a panic.
    #[test]
    fn damaged_graphs_are_refused_or_harmless() {
        let c = Config::default();
        let e = sql_episode();
        let g = Graph::build(&e, &RuleExtractor, &c).unwrap();
        let bytes = postcard::to_stdvec(&g).unwrap();
        for n in 0..bytes.len() {
            assert!(
                postcard::from_bytes::<Graph>(&bytes[..n]).is_err(),
                "cut at {n}"
            );
        }
        let mut refused = 0;
        for i in 0..bytes.len() {
            for x in [1u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= x;
                match postcard::from_bytes::<Graph>(&b) {
                    Ok(g) => {
                        for q in &questions(&e) {
                            let _ = g.retrieve(q);
                        }
                    }
                    Err(_) => refused += 1,
                }
            }
        }
        assert!(refused > bytes.len(), "{refused} of {}", 3 * bytes.len());
    }
}
