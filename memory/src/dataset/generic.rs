//! The generic trajectory layout (docs/DATA.md): `{id, task, domain?,
//! outcome?, meta?, created?, steps: [{index?, action, observation,
//! timestamp?}], questions?: [{id?, question, answer?, type?, evidence?}]}`.

use super::{
    check_order, check_questions, Bad, Capper, Episode, Fields, LoadOptions, Question, Step,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Parses a generic episode; returns it with its (actions, observations) cut
/// counts.
pub(crate) fn parse(f: &Fields<'_>, options: &LoadOptions) -> Result<(Episode, [usize; 2]), Bad> {
    let id = f.id("id")?;
    let task = f.string("task")?;
    // Optional: a dataset without domains is one domain, "".
    let domain = f.opt_string("domain")?.unwrap_or_default();
    let outcome = f.opt_string("outcome")?;
    let mut meta = BTreeMap::new();
    if let Some(m) = f.obj.get("meta").and_then(|m| m.as_object()) {
        for (k, v) in m {
            if let Some(s) = v.as_str() {
                meta.insert(k.clone(), s.to_string());
            }
        }
    }
    let mut notes = Vec::new();
    let mut capper = Capper {
        max: options.max_text_bytes,
        notes: &mut notes,
        cut_actions: 0,
        cut_observations: 0,
    };
    let items = f.array("steps")?;
    let mut steps: Vec<Step> = Vec::with_capacity(items.len());
    for s in f.objects("steps", items)? {
        let index = match s.opt_index("index")? {
            Some(i) => i,
            None => steps.last().map_or(0, |p| p.index.saturating_add(1)),
        };
        let action = capper.cap(s.string("action")?, index, false);
        let observation = capper.cap(s.string("observation")?, index, true);
        steps.push(Step {
            index,
            action,
            observation,
            timestamp: s.opt_scalar("timestamp")?,
        });
    }
    let cuts = [capper.cut_actions, capper.cut_observations];
    if steps.is_empty() && !options.into_tenant {
        return Err(Bad::NoSteps(id));
    }
    check_order(&steps, "steps")?;
    let items = f.opt_array("questions")?;
    let mut questions = Vec::with_capacity(items.len());
    for (i, q) in f.objects("questions", items)?.into_iter().enumerate() {
        let mut evidence = Vec::new();
        for (j, v) in q.opt_array("evidence")?.iter().enumerate() {
            let field = format!("{}[{j}]", q.name("evidence"));
            let index = v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| Bad::Type {
                    field: field.clone(),
                    expected: "a step index",
                    found: v.to_string(),
                })?;
            if steps.binary_search_by_key(&index, |s| s.index).is_err() {
                return Err(Bad::Type {
                    field,
                    expected: "the index of a step of this episode",
                    found: index.to_string(),
                });
            }
            evidence.push(index);
        }
        evidence.sort_unstable();
        evidence.dedup();
        questions.push(Question {
            id: q.opt_id("id")?.unwrap_or_else(|| format!("{id}:{i}")),
            question: q.words("question")?,
            answer: q.opt_string("answer")?,
            qtype: q.opt_string("type")?,
            evidence,
        });
    }
    let episode = Episode {
        id,
        task,
        domain,
        outcome,
        meta,
        created: match options.into_tenant {
            true => f.opt_time("created")?,
            false => None,
        },
        steps,
        questions,
        notes,
    };
    check_questions(&episode)?;
    Ok((episode, cuts))
}

/// The episode as one line of the generic layout, which [`parse`] reads
/// back as the same episode (its `notes` aside, and with texts no longer
/// than the reader's cut): what `mesa export` writes.
pub fn line(e: &Episode) -> String {
    let steps: Vec<Value> = e
        .steps
        .iter()
        .map(|s| {
            let mut step =
                json!({"index": s.index, "action": s.action, "observation": s.observation});
            if let Some(t) = &s.timestamp {
                step["timestamp"] = json!(t);
            }
            step
        })
        .collect();
    let questions: Vec<Value> = e
        .questions
        .iter()
        .map(|q| {
            let mut question = json!({"id": q.id, "question": q.question});
            if let Some(a) = &q.answer {
                question["answer"] = json!(a);
            }
            if let Some(t) = &q.qtype {
                question["type"] = json!(t);
            }
            if !q.evidence.is_empty() {
                question["evidence"] = json!(q.evidence);
            }
            question
        })
        .collect();
    let mut episode = json!({"id": e.id, "task": e.task, "domain": e.domain});
    if let Some(o) = &e.outcome {
        episode["outcome"] = json!(o);
    }
    if !e.meta.is_empty() {
        episode["meta"] = json!(e.meta);
    }
    if let Some(c) = &e.created {
        episode["created"] = json!(c);
    }
    episode["steps"] = Value::Array(steps);
    if !questions.is_empty() {
        episode["questions"] = Value::Array(questions);
    }
    episode.to_string()
}
