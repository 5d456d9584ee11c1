//! The offline utilities of a subset's evidence for one question.
//!
//! - **evidence recall**: the share of the question's labelled evidence
//!   steps that the evidence shows (an item shows the steps of its
//!   provenance). Labels are the dataset's `evidence` step indices when it
//!   gives them; otherwise the steps the question or its reference answer
//!   names ("at step 12", "steps 3-5", "the last 2 steps", "the final
//!   step"...), read with the temporal structure's step-reference parser and
//!   kept only when the episode has them. A question with neither is
//!   unlabelled and left out of evaluation.
//! - **answer-only recall**: evidence recall over the labels the question
//!   does not name itself (the steps it names are retrieved by T by
//!   construction, so they do not test retrieval). "Named" means named
//!   explicitly ("step 12", "steps 3-5", "the last 2 steps"), resolved
//!   like the labels, without T's window around named steps, its cap, or
//!   time references; so the neighbours T shows around "before step 8"
//!   still count as answer-only labels. A question whose labels are all
//!   named in it is unlabelled.
//! - **answer coverage**: the share of the reference answer's content words
//!   (lower-cased words that are not stopwords, not bare numbers, not the
//!   words the evidence layout itself prints, and do not occur in the
//!   question) that occur in the evidence text. A question without an
//!   answer, or whose answer has no such word, is unlabelled.

use mesa_memory::coverage::is_content_word;
use mesa_memory::dataset::{Episode, Question};
use mesa_memory::structures::stepref::StepRefs;
use mesa_memory::text::words;
use std::collections::{BTreeSet, HashSet};

/// Where a question's evidence labels came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelSource {
    /// The dataset's `evidence` field.
    Dataset,
    /// Step numbers named in the question or the answer.
    Named,
    /// No labels.
    None,
}

/// The labelled evidence steps of a question (step indices, increasing),
/// and where they came from.
pub fn evidence_labels(episode: &Episode, q: &Question) -> (Vec<usize>, LabelSource) {
    let indices: Vec<usize> = episode.steps.iter().map(|s| s.index).collect();
    let exists = |i: &usize| indices.binary_search(i).is_ok();
    let given: Vec<usize> = q.evidence.iter().copied().filter(exists).collect();
    if !given.is_empty() {
        return (given, LabelSource::Dataset);
    }
    let text = match &q.answer {
        Some(a) => format!("{}\n{a}", q.question),
        None => q.question.clone(),
    };
    let refs = StepRefs::parse(&text);
    // Window 0: "before step 8" labels step 8 itself, not its neighbours.
    let positions = refs.resolve(&indices, 0, usize::MAX);
    let named: Vec<usize> = positions.into_iter().map(|p| indices[p]).collect();
    if named.is_empty() {
        (Vec::new(), LabelSource::None)
    } else {
        (named, LabelSource::Named)
    }
}

/// The labels of `q` (from [`evidence_labels`]) that the question text
/// does not name.
pub fn answer_only(episode: &Episode, q: &Question, labels: Vec<usize>) -> Vec<usize> {
    let indices: Vec<usize> = episode.steps.iter().map(|s| s.index).collect();
    let named: BTreeSet<usize> = StepRefs::parse(&q.question)
        .resolve(&indices, 0, usize::MAX)
        .into_iter()
        .map(|p| indices[p])
        .collect();
    labels.into_iter().filter(|l| !named.contains(l)).collect()
}

/// The share of `labels` shown by any of `shown` (each the increasing
/// list of steps one structure's evidence shows,
/// [`mesa_memory::Retrieval::shown`]); 0 without labels.
pub fn recall(labels: &[usize], shown: &[&[usize]]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    let found = labels
        .iter()
        .filter(|l| shown.iter().any(|s| s.binary_search(l).is_ok()))
        .count();
    found as f64 / labels.len() as f64
}

/// The reference answer's content words that the question does not
/// already contain, deduplicated.
pub fn answer_words(q: &Question) -> Vec<String> {
    let Some(answer) = &q.answer else {
        return Vec::new();
    };
    let in_question: HashSet<String> = words(&q.question).collect();
    let mut seen = HashSet::new();
    words(answer)
        .filter(|w| is_content_word(w, &in_question))
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// The share of `wanted` words found in any of `sections`; 0 without words.
pub fn coverage(wanted: &[String], sections: &[&HashSet<String>]) -> f64 {
    if wanted.is_empty() {
        return 0.0;
    }
    let found = wanted
        .iter()
        .filter(|w| sections.iter().any(|s| s.contains(*w)))
        .count();
    found as f64 / wanted.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesa_memory::dataset::Step;

    fn episode(n: usize) -> Episode {
        Episode {
            id: "e".into(),
            task: "t".into(),
            domain: "d".into(),
            outcome: None,
            meta: Default::default(),
            created: None,
            steps: (0..n)
                .map(|i| Step {
                    index: i,
                    action: format!("a{i}"),
                    observation: format!("o{i}"),
                    timestamp: None,
                })
                .collect(),
            questions: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn question(text: &str, answer: Option<&str>, evidence: Vec<usize>) -> Question {
        Question {
            id: "q".into(),
            question: text.into(),
            answer: answer.map(str::to_string),
            qtype: None,
            evidence,
        }
    }

    #[test]
    fn labels_prefer_the_dataset_then_named_steps() {
        let e = episode(10);
        let (l, src) = evidence_labels(&e, &question("at step 3?", None, vec![1, 2, 99]));
        assert_eq!((l, src), (vec![1, 2], LabelSource::Dataset));
        let (l, src) = evidence_labels(
            &e,
            &question(
                "What happened at step 3?",
                Some("It failed, as at step 7."),
                vec![],
            ),
        );
        assert_eq!((l, src), (vec![3, 7], LabelSource::Named));
        let (l, src) = evidence_labels(&e, &question("What changed in steps 2-4?", None, vec![]));
        assert_eq!((l, src), (vec![2, 3, 4], LabelSource::Named));
        let (l, src) =
            evidence_labels(&e, &question("Why did it fail?", Some("a timeout"), vec![]));
        assert_eq!((l, src), (vec![], LabelSource::None));
        // A step the episode does not have is no label.
        let (l, _) = evidence_labels(&e, &question("at step 42?", None, vec![]));
        assert!(l.is_empty());
    }

    #[test]
    fn answer_only_labels_drop_the_steps_the_question_names() {
        let e = episode(10);
        let q = question(
            "What happened at step 3?",
            Some("It failed, as at step 7."),
            vec![],
        );
        let (labels, _) = evidence_labels(&e, &q);
        assert_eq!(answer_only(&e, &q, labels), vec![7]);
        let q = question(
            "What happened in steps 2-4?",
            Some("At step 3 it broke."),
            vec![],
        );
        let (labels, _) = evidence_labels(&e, &q);
        assert!(answer_only(&e, &q, labels).is_empty());
    }

    #[test]
    fn recall_and_coverage_by_hand() {
        let (a, b): (&[usize], &[usize]) = (&[1, 2], &[2, 5]);
        assert_eq!(recall(&[1, 3], &[a, b]), 0.5);
        assert_eq!(recall(&[1, 5, 3, 7], &[a, b]), 0.5);
        assert_eq!(recall(&[5], &[a]), 0.0);
        assert_eq!(recall(&[5], &[]), 0.0);
        assert_eq!(recall(&[], &[a, b]), 0.0);
        let q = question(
            "Which table did the agent query?",
            Some("The agent queried the orders table, then customers."),
            vec![],
        );
        let w = answer_words(&q);
        assert_eq!(w, vec!["queried", "orders", "customers"]);
        // Numbers and the evidence layout's own words are not counted.
        let q2 = question(
            "What did it run?",
            Some("At step 12 the action ran pytest 3 times"),
            vec![],
        );
        assert_eq!(answer_words(&q2), vec!["ran", "pytest", "times"]);
        let a: HashSet<String> = ["orders".to_string()].into();
        let b: HashSet<String> = ["customers".to_string(), "x".to_string()].into();
        assert!((coverage(&w, &[&a]) - 1.0 / 3.0).abs() < 1e-12);
        assert!((coverage(&w, &[&a, &b]) - 2.0 / 3.0).abs() < 1e-12);
    }
}
