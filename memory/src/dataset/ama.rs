//! AMA-Bench's layout: `{episode_id, task_type, domain, source, success,
//! task, num_turns, trajectory: [{turn_idx, action, observation}], qa_pairs:
//! [{question, answer, type}]}`.

use super::{check_order, check_questions, Bad, Capper, Episode, Fields, Question, Step};
use std::collections::BTreeMap;

/// Parses an AMA-Bench episode; returns it with its (actions, observations)
/// cut counts.
pub(crate) fn parse(f: &Fields<'_>, max_text: usize) -> Result<(Episode, [usize; 2]), Bad> {
    let id = f.id("episode_id")?;
    let task = f.string("task")?;
    let domain = f.string("domain")?;
    let outcome = f
        .opt_bool("success")?
        .map(|s| if s { "success" } else { "failure" }.to_string());
    let mut meta = BTreeMap::new();
    for key in ["task_type", "source"] {
        if let Some(v) = f.opt_string(key)? {
            meta.insert(key.to_string(), v);
        }
    }
    let mut notes = Vec::new();
    let mut capper = Capper {
        max: max_text,
        notes: &mut notes,
        cut_actions: 0,
        cut_observations: 0,
    };
    let items = f.array("trajectory")?;
    let mut steps = Vec::with_capacity(items.len());
    for s in f.objects("trajectory", items)? {
        let index = s.index("turn_idx")?;
        let action = capper.cap(s.string("action")?, index, false);
        let observation = capper.cap(s.string("observation")?, index, true);
        steps.push(Step {
            index,
            action,
            observation,
            timestamp: None,
        });
    }
    let cuts = [capper.cut_actions, capper.cut_observations];
    if steps.is_empty() {
        return Err(Bad::NoSteps(id));
    }
    check_order(&steps, "trajectory")?;
    let items = f.opt_array("qa_pairs")?;
    let mut questions = Vec::with_capacity(items.len());
    for (i, q) in f.objects("qa_pairs", items)?.into_iter().enumerate() {
        questions.push(Question {
            id: format!("{id}:{i}"),
            question: q.words("question")?,
            answer: q.opt_string("answer")?,
            qtype: q.opt_string("type")?,
            evidence: Vec::new(),
        });
    }
    let episode = Episode {
        id,
        task,
        domain,
        outcome,
        meta,
        created: None,
        steps,
        questions,
        notes,
    };
    check_questions(&episode)?;
    Ok((episode, cuts))
}
