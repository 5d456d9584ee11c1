//! G with an LLM: open information extraction, one chat call per step.
//!
//! Each step is sent with [`OPENIE_SYSTEM_PROMPT`] and a user message
//! holding the task, the step's index, its action (first 2 KiB) and its
//! observation (first 4 KiB), with temperature 0, a fixed seed and, by
//! default, the JSON-object reply format. The reply must be JSON: an object
//! `{"triples": [{"subject": …, "relation": …, "object": …}, …]}` or the bare
//! array (a Markdown code fence around it is tolerated). Each field must be a
//! string (a number or a boolean is taken as its JSON text); triples with an
//! empty field are skipped; subjects and objects are cut at 80 bytes,
//! relations at 40; at most 24 triples are kept per step.
//!
//! **Malformed replies.** By default ([`OnMalformed::Error`]) a reply that
//! is not such JSON is a [`PluginError::BadOutput`] naming the episode and
//! the step, with the start of the reply. With [`OnMalformed::Fallback`]
//! the step's relations come from the rule-based extractor instead, each
//! such step is counted ([`LlmExtractor::fallbacks`]), and the extractor's
//! name says so (a store records it). A failed call (connection, timeout,
//! HTTP error after the client's retries) is always an error naming the
//! step: falling back then would silently build a rule-based graph.
//!
//! **Concurrency.** [`TripleExtractor::extract`] is called step by step, in
//! order, by the graph builder. So that the calls run concurrently, the
//! first call for a step fetches it and the next steps of its episode (up to
//! `4 × max_concurrency`, at least 8) at once through the client, and keeps
//! the others' results until they are asked for. A result is only used for a
//! step with the same action and observation; an episode's kept results are
//! dropped when one of its steps fails.

use super::llm_failure;
use crate::dataset::{Episode, Step};
use crate::structures::{PluginError, RuleExtractor, Triple, TripleExtractor};
use crate::text::{cut, hash};
use mesa_llm::{ChatOptions, Client, Message};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The system prompt of every step call.
pub const OPENIE_SYSTEM_PROMPT: &str = "\
You extract knowledge-graph relations (open information extraction) from one step of an AI \
agent's trajectory: the agent's action and the observation it got back. Return JSON only: an \
object {\"triples\": [{\"subject\": \"...\", \"relation\": \"...\", \"object\": \"...\"}]} with \
at most 12 triples, most important first. Subjects and objects are short entity names as \
written in the step (files, paths, tables, columns, URLs, identifiers, functions, objects, \
values), or \"agent\" for the agent itself; relations are short verb phrases. Include what the \
agent did (agent, verb, entity), errors (entity, error, message), and the facts the \
observation states. If there is nothing to extract, return {\"triples\": []}.";

/// Bytes of an action sent.
const ACTION_BYTES: usize = 2048;
/// Bytes of an observation sent.
const OBSERVATION_BYTES: usize = 4096;
/// Bytes of a subject or an object kept.
const NAME_BYTES: usize = 80;
/// Bytes of a relation kept.
const RELATION_BYTES: usize = 40;
/// Triples kept per step (the graph keeps `Config::graph_edges_per_step`,
/// 24 by default, of them).
const MAX_TRIPLES: usize = 24;
/// Characters of a malformed reply quoted in the error.
const EXCERPT_CHARS: usize = 160;

/// What the extractor does with a reply that is not JSON triples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnMalformed {
    /// Fail the step (the default).
    #[default]
    Error,
    /// Use the rule-based extractor for the step, and count it.
    Fallback,
}

type StepResult = Result<Vec<Triple>, PluginError>;
/// Results fetched ahead: episode id → step index → (text hash, result).
type Ahead = HashMap<String, HashMap<usize, (u64, StepResult)>>;

/// The LLM OpenIE extractor (see the module docs).
#[derive(Debug)]
pub struct LlmExtractor {
    client: Client,
    on_malformed: OnMalformed,
    json_mode: bool,
    fallbacks: AtomicUsize,
    ahead: Mutex<Ahead>,
}

impl LlmExtractor {
    /// An extractor using the client's chat model; malformed replies are
    /// errors, and the JSON-object reply format is asked for.
    pub fn new(client: Client) -> LlmExtractor {
        LlmExtractor {
            client,
            on_malformed: OnMalformed::Error,
            json_mode: true,
            fallbacks: AtomicUsize::new(0),
            ahead: Mutex::new(HashMap::new()),
        }
    }

    /// Sets what a malformed reply does.
    pub fn on_malformed(mut self, policy: OnMalformed) -> LlmExtractor {
        self.on_malformed = policy;
        self
    }

    /// Whether to send `response_format: {"type": "json_object"}` (default
    /// true; turn it off for servers that reject it).
    pub fn with_json_mode(mut self, on: bool) -> LlmExtractor {
        self.json_mode = on;
        self
    }

    /// Steps whose relations came from the rule-based fallback so far.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks.load(Ordering::Relaxed)
    }

    fn prompt(episode: &Episode, step: &Step) -> String {
        format!(
            "Task of the agent: {}\n\nStep {}\naction: {}\nobservation: {}",
            cut(episode.task.trim(), 500).0,
            step.index,
            cut(step.action.trim(), ACTION_BYTES).0,
            cut(step.observation.trim(), OBSERVATION_BYTES).0
        )
    }

    /// One step, with one chat call.
    fn fetch(&self, episode: &Episode, step: &Step) -> StepResult {
        let messages = [
            Message::system(OPENIE_SYSTEM_PROMPT),
            Message::user(LlmExtractor::prompt(episode, step)),
        ];
        let options = ChatOptions::default()
            .temperature(0.0)
            .seed(0)
            .max_tokens(1024)
            .json_object(self.json_mode);
        let what = format!("episode `{}`, step {}", episode.id, step.index);
        let reply = self
            .client
            .chat(&messages, &options)
            .map_err(|e| llm_failure(self.name(), &what, &e))?;
        match parse_triples(&reply.content) {
            Ok(triples) => Ok(triples),
            Err(_) if self.on_malformed == OnMalformed::Fallback => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                RuleExtractor.extract(episode, step)
            }
            Err(why) => Err(PluginError::BadOutput {
                plugin: self.name(),
                message: format!(
                    "{what}: the reply is not JSON triples ({why}); it starts: {:?}",
                    excerpt(&reply.content)
                ),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ahead> {
        // A poisoned lock only means another thread panicked; the map is
        // still a valid cache.
        self.ahead.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A result fetched ahead for this step, if any (removed from the cache).
    fn take(&self, episode: &Episode, step: &Step) -> Option<StepResult> {
        let mut ahead = self.lock();
        let kept = ahead.get_mut(&episode.id)?;
        let result = match kept.remove(&step.index) {
            Some((h, r)) if h == step_hash(episode, step) => Some(r),
            _ => None,
        };
        if kept.is_empty() || matches!(result, Some(Err(_))) {
            ahead.remove(&episode.id);
        }
        result
    }
}

/// What a result fetched ahead was fetched from: the step's text and the
/// episode's task (which the prompt gives), so that a changed task or step
/// fetches again.
fn step_hash(episode: &Episode, step: &Step) -> u64 {
    hash(step.action.as_bytes()).rotate_left(1)
        ^ hash(step.observation.as_bytes())
        ^ hash(episode.task.as_bytes()).rotate_left(2)
}

/// The triples of a reply, or why it is malformed.
fn parse_triples(reply: &str) -> Result<Vec<Triple>, String> {
    let mut text = reply.trim();
    // A Markdown fence: ```json … ```.
    if let Some(rest) = text.strip_prefix("```") {
        let body = rest.split_once('\n').map_or("", |(_, b)| b);
        text = body.trim_end().trim_end_matches("```").trim();
    }
    let root: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let items = match &root {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("triples") {
            Some(Value::Array(a)) => a,
            Some(_) => return Err("`triples` is not an array".into()),
            None => return Err("an object without a `triples` array".into()),
        },
        _ => return Err("neither an array nor an object".into()),
    };
    let mut out = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let Value::Object(o) = item else {
            return Err(format!("triple {k} is not an object"));
        };
        let field = |name: &str, max: usize| -> Result<String, String> {
            let text = match o.get(name) {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                Some(_) => return Err(format!("triple {k}: `{name}` is not a string")),
                None => return Err(format!("triple {k}: `{name}` is missing")),
            };
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            Ok(cut(&flat, max).0.to_string())
        };
        let t = Triple {
            subject: field("subject", NAME_BYTES)?,
            relation: field("relation", RELATION_BYTES)?,
            object: field("object", NAME_BYTES)?,
        };
        if !(t.subject.is_empty() || t.relation.is_empty() || t.object.is_empty())
            && out.len() < MAX_TRIPLES
        {
            out.push(t);
        }
    }
    Ok(out)
}

fn excerpt(text: &str) -> String {
    let mut s: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().nth(EXCERPT_CHARS).is_some() {
        s.push('…');
    }
    s
}

impl TripleExtractor for LlmExtractor {
    /// `llm-openie-v1:MODEL`, with `+rules-fallback` under
    /// [`OnMalformed::Fallback`].
    fn name(&self) -> String {
        let fallback = match self.on_malformed {
            OnMalformed::Error => "",
            OnMalformed::Fallback => "+rules-fallback",
        };
        format!(
            "llm-openie-v1:{}{fallback}",
            self.client.config().chat_model
        )
    }

    fn extract(&self, episode: &Episode, step: &Step) -> Result<Vec<Triple>, PluginError> {
        if let Some(r) = self.take(episode, step) {
            return r;
        }
        // This step and the next ones, fetched at once.
        let Some(pos) = episode.position(step.index) else {
            return self.fetch(episode, step);
        };
        let ahead = (4 * self.client.config().max_concurrency).max(8);
        let end = (pos + ahead).min(episode.steps.len());
        let batch = &episode.steps[pos..end];
        let mut results = self
            .client
            .map_concurrent(batch, |s| self.fetch(episode, s))
            .into_iter();
        let own = results.next().unwrap_or_else(|| self.fetch(episode, step));
        if own.is_ok() {
            let kept: HashMap<usize, (u64, StepResult)> = batch[1..]
                .iter()
                .zip(results)
                .map(|(s, r)| (s.index, (step_hash(episode, s), r)))
                .collect();
            if !kept.is_empty() {
                self.lock().insert(episode.id.clone(), kept);
            }
        }
        own
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chat_reply, start, step_of, triples_for, Reply};
    use super::*;
    use crate::config::Config;
    use crate::structures::fixtures::{game_episode, sql_episode};
    use crate::structures::Graph;

    #[test]
    fn valid_replies_build_a_graph() {
        let server = start(|req, _| chat_reply(&triples_for(step_of(req))));
        let x = LlmExtractor::new(server.client());
        let e = sql_episode();
        let g = Graph::build(&e, &x, &Config::default()).unwrap();
        assert_eq!(g.relation_count(), 14);
        assert_eq!(server.requests(), 7, "one call per step");
        for s in &e.steps {
            assert_eq!(
                x.extract(&e, s).unwrap()[1],
                Triple {
                    subject: format!("command {}", s.index),
                    relation: "returned".into(),
                    object: s.index.to_string(),
                }
            );
        }
        let body = server.log()[0].json();
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["response_format"]["type"], "json_object");
        assert_eq!(body["messages"][0]["content"], OPENIE_SYSTEM_PROMPT);
        assert!(x.name().starts_with("llm-openie-v1:chat-test"));
        assert!(x.lock().is_empty(), "nothing is left in the cache");
    }

    #[test]
    fn fetched_ahead_concurrently_and_in_order() {
        let server = start(|req, _| chat_reply(&triples_for(step_of(req))));
        let x = LlmExtractor::new(server.client());
        let e = game_episode(40);
        Graph::build(&e, &x, &Config::default()).unwrap();
        assert_eq!(server.requests(), 40);
        let mut asked: Vec<usize> = server.log().iter().map(step_of).collect();
        asked.sort_unstable();
        assert_eq!(asked, (0..40).collect::<Vec<_>>());
        // A changed step is not served from the cache.
        let mut e2 = e.clone();
        x.extract(&e, &e.steps[0]).unwrap();
        e2.steps[1].observation = "changed".into();
        let before = server.requests();
        x.extract(&e2, &e2.steps[1]).unwrap();
        assert!(server.requests() > before);
    }

    #[test]
    fn malformed_replies_name_the_step() {
        let server = start(|req, _| {
            if step_of(req) == 3 {
                chat_reply("Sure! Here are the triples: (agent, ran, query)")
            } else {
                chat_reply(&triples_for(step_of(req)))
            }
        });
        let x = LlmExtractor::new(server.client());
        let e = sql_episode();
        let err = Graph::build(&e, &x, &Config::default()).unwrap_err();
        assert!(matches!(err, PluginError::BadOutput { .. }), "{err}");
        let m = err.to_string();
        assert!(
            m.contains("episode `sql-1`, step 3") && m.contains("not JSON"),
            "{m}"
        );
        assert!(m.contains("Sure! Here are"), "{m}");
        assert!(
            x.lock().is_empty(),
            "a failed episode's results are dropped"
        );

        // The counted fallback.
        let x = LlmExtractor::new(server.client()).on_malformed(OnMalformed::Fallback);
        let g = Graph::build(&e, &x, &Config::default()).unwrap();
        assert_eq!(x.fallbacks(), 1);
        assert!(x.name().ends_with("+rules-fallback"));
        let rules = RuleExtractor.extract(&e, &e.steps[3]).unwrap();
        assert_eq!(x.extract(&e, &e.steps[3]).unwrap(), rules);
        assert!(g.relation_count() > 12);
    }

    #[test]
    fn http_errors_are_errors_even_with_fallback() {
        let server =
            start(|_, _| Reply::text(500, "{\"error\": {\"message\": \"model crashed\"}}"));
        let x = LlmExtractor::new(server.client()).on_malformed(OnMalformed::Fallback);
        let e = sql_episode();
        let err = x.extract(&e, &e.steps[0]).unwrap_err();
        assert!(matches!(err, PluginError::Llm { .. }), "{err}");
        let m = err.to_string();
        assert!(
            m.contains("step 0") && m.contains("HTTP 500") && m.contains("model crashed"),
            "{m}"
        );
        assert_eq!(x.fallbacks(), 0);
    }

    #[test]
    fn reply_shapes() {
        let ok = |s: &str| parse_triples(s).unwrap();
        let bad = |s: &str| parse_triples(s).unwrap_err();
        assert_eq!(ok("[]"), vec![]);
        assert_eq!(ok("{\"triples\": []}"), vec![]);
        let fenced = "```json\n[{\"subject\": \"a\", \"relation\": \"is\", \"object\": true}]\n```";
        assert_eq!(ok(fenced)[0].object, "true");
        assert!(bad("{\"relations\": []}").contains("without a `triples`"));
        assert!(bad("{\"triples\": {}}").contains("not an array"));
        assert!(bad("[1]").contains("triple 0 is not an object"));
        assert!(bad("[{\"subject\": \"a\", \"relation\": \"b\"}]").contains("`object` is missing"));
        assert!(
            bad("[{\"subject\": [], \"relation\": \"b\", \"object\": \"c\"}]")
                .contains("not a string")
        );
        assert!(bad("\"text\"").contains("neither"));
        let long = format!(
            "[{{\"subject\": \"{}\", \"relation\": \"r\", \"object\": \"o\"}}]",
            "x".repeat(500)
        );
        assert_eq!(ok(&long)[0].subject.len(), NAME_BYTES);
        let many: Vec<String> = (0..40)
            .map(|i| format!("{{\"subject\": \"s{i}\", \"relation\": \"r\", \"object\": \"o\"}}"))
            .collect();
        assert_eq!(ok(&format!("[{}]", many.join(","))).len(), MAX_TRIPLES);
    }
}
