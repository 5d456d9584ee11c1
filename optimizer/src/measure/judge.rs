//! The `judge` utility: an answer model answers the question from the
//! evidence, and an LLM judge grades the answer against the reference
//! (1 correct, 0 not), both through the OpenAI-compatible client.
//!
//! The prompts follow AMA-Bench's protocol (answer only from the given
//! memory; a binary judgement against the reference answer). AMA-Bench's
//! exact prompt texts could not be read here, so these are MESA's own
//! wording of that protocol; they are constants, so a run is reproducible.
//!
//! Every request is cached on disk, keyed by a hash of the request (model,
//! messages, options): a killed sweep resumes without paying for a request
//! twice, and identical evidence for two subsets (a structure that
//! retrieved nothing) costs one request.

use mesa_llm::{ChatOptions, Client, Message};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The answer model's instructions.
pub const ANSWER_PROMPT: &str = "You answer questions about an AI agent's past trajectory \
using only the memory given below (summaries, steps, relations and excerpts of the trajectory). \
Answer concisely. If the memory does not contain the answer, say what you can infer from it.";

/// The judge's instructions.
pub const JUDGE_PROMPT: &str = "You grade an answer to a question about an AI agent's \
trajectory against the reference answer. Reply with exactly one word: CORRECT if the answer \
conveys the same facts as the reference (wording may differ), INCORRECT otherwise.";

/// Why a judged utility could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// The endpoint failed.
    #[error("the LLM endpoint failed for question `{question}`: {source}")]
    Llm {
        /// The question id.
        question: String,
        /// The client's error.
        source: mesa_llm::Error,
    },
    /// The judge replied with neither CORRECT nor INCORRECT.
    #[error(
        "the judge's reply for question `{question}` is neither CORRECT nor INCORRECT: {reply:?}"
    )]
    Verdict {
        /// The question id.
        question: String,
        /// The reply, cut to 200 bytes.
        reply: String,
    },
    /// The cache file could not be read or written.
    #[error("cannot {action} the judge cache `{}`: {source}", path.display())]
    Cache {
        /// What was being done.
        action: &'static str,
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A disk-backed cache of chat replies: one JSON line per request,
/// `{"key": "<sha256>", "reply": "..."}`, appended and flushed as replies
/// arrive.
struct Cache {
    path: PathBuf,
    replies: Mutex<HashMap<String, String>>,
    file: Mutex<File>,
}

impl Cache {
    /// Opens (or creates) the cache; a torn last line from a killed run is
    /// ignored and counted.
    fn open(path: &Path) -> Result<(Cache, usize), JudgeError> {
        let err = |action, source| JudgeError::Cache {
            action,
            path: path.to_path_buf(),
            source,
        };
        let mut replies = HashMap::new();
        let mut torn = 0;
        if path.exists() {
            let f = File::open(path).map_err(|e| err("read", e))?;
            for line in BufReader::new(f).lines() {
                let line = line.map_err(|e| err("read", e))?;
                match serde_json::from_str::<serde_json::Value>(&line) {
                    Ok(v) => {
                        if let (Some(k), Some(r)) = (v["key"].as_str(), v["reply"].as_str()) {
                            replies.insert(k.to_string(), r.to_string());
                        }
                    }
                    Err(_) => torn += 1,
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| err("open", e))?;
        Ok((
            Cache {
                path: path.to_path_buf(),
                replies: Mutex::new(replies),
                file: Mutex::new(file),
            },
            torn,
        ))
    }

    fn get(&self, key: &str) -> Option<String> {
        self.replies.lock().ok()?.get(key).cloned()
    }

    fn put(&self, key: &str, reply: &str) -> Result<(), JudgeError> {
        let line = serde_json::json!({"key": key, "reply": reply}).to_string();
        if let Ok(mut f) = self.file.lock() {
            // Start on a new line in case a killed run left a torn one.
            writeln!(f, "\n{line}")
                .and_then(|_| f.flush())
                .map_err(|source| JudgeError::Cache {
                    action: "write",
                    path: self.path.clone(),
                    source,
                })?;
        }
        if let Ok(mut m) = self.replies.lock() {
            m.insert(key.to_string(), reply.to_string());
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.replies.lock().map(|m| m.len()).unwrap_or(0)
    }
}

/// An answer model and a judge sharing one client and one cache.
pub struct Judge {
    client: Client,
    answer_options: ChatOptions,
    judge_options: ChatOptions,
    cache: Cache,
    /// Torn cache lines found on opening.
    pub torn_cache_lines: usize,
}

impl Judge {
    /// A judge using `client`'s chat model for both roles (override with
    /// `answer_model`/`judge_model`), caching in `cache_path`.
    pub fn new(
        client: Client,
        answer_model: Option<String>,
        judge_model: Option<String>,
        cache_path: &Path,
    ) -> Result<Judge, JudgeError> {
        let (cache, torn) = Cache::open(cache_path)?;
        let base = ChatOptions::default().temperature(0.0);
        let answer_options = match answer_model {
            Some(m) => base.clone().model(m),
            None => base.clone(),
        }
        .max_tokens(256);
        let judge_options = match judge_model {
            Some(m) => base.model(m),
            None => base,
        }
        .max_tokens(8);
        Ok(Judge {
            client,
            answer_options,
            judge_options,
            cache,
            torn_cache_lines: torn,
        })
    }

    /// Cached requests.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    fn chat(
        &self,
        question_id: &str,
        messages: &[Message],
        options: &ChatOptions,
    ) -> Result<String, JudgeError> {
        let key = request_key(messages, options, &self.client.config().chat_model);
        if let Some(reply) = self.cache.get(&key) {
            return Ok(reply);
        }
        let reply = self
            .client
            .chat(messages, options)
            .map_err(|source| JudgeError::Llm {
                question: question_id.to_string(),
                source,
            })?
            .content;
        self.cache.put(&key, &reply)?;
        Ok(reply)
    }

    /// 1 if the answer model, reading `evidence`, answers `question` as
    /// `reference` does, else 0.
    pub fn score(
        &self,
        question_id: &str,
        question: &str,
        reference: &str,
        evidence: &str,
    ) -> Result<f64, JudgeError> {
        let answer = self.chat(
            question_id,
            &[
                Message::system(ANSWER_PROMPT),
                Message::user(format!("Memory:\n{evidence}\n\nQuestion: {question}")),
            ],
            &self.answer_options,
        )?;
        let verdict = self.chat(
            question_id,
            &[
                Message::system(JUDGE_PROMPT),
                Message::user(format!(
                    "Question: {question}\nReference answer: {reference}\nAnswer to grade: {answer}"
                )),
            ],
            &self.judge_options,
        )?;
        parse_verdict(&verdict).ok_or_else(|| JudgeError::Verdict {
            question: question_id.to_string(),
            reply: verdict.chars().take(200).collect(),
        })
    }

    /// The client, for bounded-concurrency batches.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// `CORRECT` -> 1, `INCORRECT` -> 0 (case, spaces and punctuation ignored).
pub fn parse_verdict(reply: &str) -> Option<f64> {
    let word: String = reply
        .trim()
        .chars()
        .take_while(|c| c.is_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    match word.as_str() {
        "CORRECT" => Some(1.0),
        "INCORRECT" => Some(0.0),
        _ => None,
    }
}

/// A stable key for a request: its model, options and messages.
fn request_key(messages: &[Message], options: &ChatOptions, default_model: &str) -> String {
    let model = options.model.as_deref().unwrap_or(default_model);
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    h.update(format!("|{:?}|{:?}|", options.temperature, options.max_tokens).as_bytes());
    for m in messages {
        h.update(format!("{:?}\u{0}", m.role).as_bytes());
        h.update(m.content.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(parse_verdict("CORRECT"), Some(1.0));
        assert_eq!(parse_verdict(" correct."), Some(1.0));
        assert_eq!(parse_verdict("INCORRECT\n"), Some(0.0));
        assert_eq!(parse_verdict("The answer is correct"), None);
        assert_eq!(parse_verdict(""), None);
    }
}
