//! The LLM proposer: sends the language reference, the archive's best
//! candidates with their scores, the UCB statistics and the recurring
//! errors to an OpenAI-compatible endpoint, takes the policy out of the
//! reply's code block, and gives an invalid candidate one repair round
//! (after applying the diagnostics' machine-applicable suggestions, which
//! often fix it without a round trip).
//!
//! An endpoint failure (timeout, HTTP 500 after the client's retries,
//! refused connection) is reported in the [`LlmTrace`]; the search archives
//! it without charging the direction and stops after a few in a row.

use super::{apply_suggestions, Mode, Proposal, ProposeContext, Proposer, Validator};
use crate::eval::engine::{CandidateFailure, Stage};
use crate::rng::Rng;
use mesa_llm::{ChatOptions, Client, Config, Message};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::time::Instant;

/// The language reference sent to the model (docs/LANGUAGE.md, embedded at
/// build time).
pub const LANGUAGE_REFERENCE: &str = include_str!("../../../docs/LANGUAGE.md");

/// Settings of the LLM proposer.
#[derive(Debug, Clone)]
pub struct LlmOptions {
    /// The endpoint, model, timeouts and retries.
    pub config: Config,
    /// Sampling temperature. Default [`LlmOptions::DEFAULT_TEMPERATURE`] (0.7).
    pub temperature: f32,
    /// Most tokens in a reply. Default 2,000.
    pub max_tokens: u32,
    /// The language reference (defaults to the embedded docs/LANGUAGE.md).
    pub language_reference: String,
}

impl LlmOptions {
    /// The proposer's default sampling temperature.
    pub const DEFAULT_TEMPERATURE: f32 = 0.7;

    /// Options for `config` with the defaults each field names.
    pub fn new(config: Config) -> LlmOptions {
        LlmOptions {
            config,
            temperature: LlmOptions::DEFAULT_TEMPERATURE,
            max_tokens: 2000,
            language_reference: LANGUAGE_REFERENCE.to_string(),
        }
    }
}

/// What happened in one LLM exchange, archived with the candidate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LlmTrace {
    /// Chat requests made (1, or 2 with a repair round).
    pub requests: u32,
    /// The first reply's policy was valid as is.
    pub first_try_valid: bool,
    /// Applying the diagnostics' suggestions made it valid.
    pub autofixed: bool,
    /// The repair round made it valid.
    pub repaired: bool,
    /// Valid in the end.
    pub valid: bool,
    /// Why the first reply was not valid.
    pub first_failure: Option<String>,
    /// The endpoint failed (the candidate says nothing about the direction).
    pub endpoint_error: Option<String>,
    /// Characters of the replies.
    pub reply_chars: usize,
    /// Tokens the endpoint reported.
    pub tokens: u64,
    /// Milliseconds spent waiting for the endpoint.
    pub wait_ms: f64,
}

/// The LLM proposer.
pub struct LlmProposer {
    client: Client,
    opts: LlmOptions,
}

impl LlmProposer {
    /// A proposer talking to `opts.config`'s endpoint.
    pub fn new(opts: LlmOptions) -> Result<LlmProposer, mesa_llm::Error> {
        Ok(LlmProposer {
            client: Client::new(opts.config.clone())?,
            opts,
        })
    }

    fn chat(
        &self,
        messages: &[Message],
        seed: u64,
        trace: &mut LlmTrace,
    ) -> Result<String, mesa_llm::Error> {
        let options = ChatOptions::default()
            .temperature(self.opts.temperature)
            .max_tokens(self.opts.max_tokens)
            .seed(seed);
        let t = Instant::now();
        trace.requests += 1;
        let reply = self.client.chat(messages, &options);
        trace.wait_ms += t.elapsed().as_secs_f64() * 1e3;
        let reply = reply?;
        trace.reply_chars += reply.content.len();
        trace.tokens += reply.usage.map_or(0, |u| u.total_tokens);
        Ok(reply.content)
    }
}

/// The policy in a reply: the first fenced block tagged `mesa` (or
/// untagged, or any block that holds a `policy` header). An unterminated
/// last block counts (a reply cut at the token limit); `None` when the reply
/// has no code block at all.
pub fn extract_code(reply: &str) -> Option<String> {
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in reply.lines() {
        let t = line.trim_start();
        if let Some(info) = t.strip_prefix("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some((info.trim().to_ascii_lowercase(), String::new())),
            }
            continue;
        }
        if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some(block) = current {
        blocks.push(block);
    }
    let has_header = |b: &str| b.lines().any(|l| l.trim_start().starts_with("policy"));
    blocks
        .iter()
        .find(|(lang, body)| lang == "mesa" && !body.trim().is_empty())
        .or_else(|| {
            blocks
                .iter()
                .find(|(lang, body)| lang.is_empty() && has_header(body))
        })
        .or_else(|| blocks.iter().find(|(_, body)| has_header(body)))
        .map(|(_, body)| body.clone())
}

/// The system message: the role and the language reference.
pub fn system_prompt(reference: &str) -> String {
    format!(
        "You write selector policies in the MESA policy language. A policy picks, for one question \
         about a long agent trajectory, which of five memory structures to read. Reply with exactly \
         one complete policy in a ```mesa code block.\n\n# Language reference\n\n{reference}"
    )
}

/// The user message for one candidate.
pub fn user_prompt(ctx: &ProposeContext<'_>) -> String {
    let p = ctx.problem;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Goal\n\nMaximize J - lambda * C on held-out questions, where J is the mean utility of the \
         chosen structures (0 to 1), C the mean evidence tokens, lambda = {} (10,000 tokens cost {:.3}).",
        p.lambda,
        p.lambda * 1e4
    );
    let _ = writeln!(s, "\nInputs a policy sees: {}.", ctx.inputs.describe());
    let _ = writeln!(s, "Domains (`domain is X`): {}.", p.domains.join(", "));
    if ctx.inputs.qtype {
        let _ = writeln!(
            s,
            "Question types (`qtype is X`): {} (A recall, B causal inference, C state updating, D state abstraction).",
            p.qtypes.join(", ")
        );
    } else {
        let _ = writeln!(
            s,
            "The question type is NOT available: do not use `qtype`; infer what the question needs from its wording."
        );
    }
    let d = ctx.direction;
    let _ = writeln!(
        s,
        "\n# Direction: {} ({})\n\n{}",
        d.name(),
        d.axis().name(),
        d.description()
    );
    let mode = match ctx.mode {
        Mode::Exploit | Mode::Seed => {
            "Exploit: improve the best policy below in this direction; keep what works."
        }
        Mode::Explore => {
            "Explore: try a different idea in this direction; it may start from scratch."
        }
        Mode::Repair => "Repair: fix the recurring errors listed below without breaking the rest.",
    };
    let _ = writeln!(s, "\n{mode}");
    if !ctx.top.is_empty() {
        let _ = writeln!(
            s,
            "\n# Best policies so far (scores on the validation split)"
        );
        for e in ctx.top.iter().take(3) {
            if let (Some(src), Some(v)) = (&e.source, &e.val) {
                let _ = writeln!(
                    s,
                    "\n## #{} ({}): objective {:.4}, J {:.4}, C {:.0} tokens, {:.2} structures\n\n```mesa\n{}```",
                    e.id,
                    e.direction.as_deref().unwrap_or("seed"),
                    v.objective,
                    v.j,
                    v.c,
                    v.structures,
                    src
                );
            }
        }
    }
    if !ctx.ucb.is_empty() {
        let _ = writeln!(s, "\n# Directions so far (UCB)\n\n| direction | axis | candidates | mean val objective | UCB |\n| --- | --- | --- | --- | --- |");
        for u in &ctx.ucb {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.4} | {:.4} |",
                u.direction, u.axis, u.n, u.mean, u.ucb
            );
        }
    }
    if !ctx.errors.is_empty() {
        let _ = writeln!(
            s,
            "\n# Recurring errors of the policy to improve (train split)\n"
        );
        for g in &ctx.errors {
            let _ = writeln!(
                s,
                "- domain {}{}: chose {} for {} questions that lost {:.3} objective against the best subset per question; {} would gain {:.3}. Examples: {}",
                g.domain,
                g.qtype.as_ref().map(|t| format!(", qtype {t}")).unwrap_or_default(),
                g.chosen,
                g.count,
                g.regret,
                g.better,
                g.fixable,
                g.examples.iter().map(|q| format!("{q:?}")).collect::<Vec<_>>().join("; ")
            );
        }
    }
    let _ = writeln!(
        s,
        "\nReply with one complete policy (header `policy \"...\"`, rules, `default`) in a ```mesa code block."
    );
    s
}

/// The repair message: what failed, with the JSON diagnostics.
pub fn repair_prompt(failure: &CandidateFailure) -> String {
    if failure.stage == Stage::Propose {
        return "Your reply had no ```mesa code block with a policy. Reply with one complete policy in a \
                ```mesa code block."
            .to_string();
    }
    let diags = serde_json::to_string_pretty(&failure.diagnostics).unwrap_or_else(|_| "[]".into());
    format!(
        "Your policy was rejected at the {} stage: {}.\n\nDiagnostics (JSON, as `mesa check --format json` prints them; \
         `suggestion` is a fix you can apply as is):\n\n```json\n{diags}\n```\n\nReply with the corrected complete policy in one ```mesa code block.",
        failure.stage.name(),
        failure.message
    )
}

/// Validates `code`, applying the diagnostics' suggestions once if that
/// makes it valid. Returns the (possibly fixed) source, whether it was
/// fixed, and the failure if still invalid.
fn validate_with_fixes(
    code: String,
    validate: &Validator<'_>,
) -> (String, bool, Option<CandidateFailure>) {
    match validate(&code) {
        Ok(()) => (code, false, None),
        Err(f) => {
            if let Some(fixed) = apply_suggestions(&code, &f.diagnostics) {
                if validate(&fixed).is_ok() {
                    return (fixed, true, None);
                }
            }
            (code, false, Some(f))
        }
    }
}

fn no_code() -> CandidateFailure {
    CandidateFailure::new(Stage::Propose, "the reply has no ```mesa code block")
}

impl Proposer for LlmProposer {
    fn name(&self) -> &'static str {
        "llm"
    }

    fn propose(&mut self, ctx: &ProposeContext<'_>, validate: &Validator<'_>) -> Proposal {
        let mut trace = LlmTrace::default();
        let seed = Rng::derive(&[ctx.seed, ctx.iteration as u64, ctx.mode as u64]).next_u64() >> 1;
        let mut messages = vec![
            Message::system(system_prompt(&self.opts.language_reference)),
            Message::user(user_prompt(ctx)),
        ];
        let endpoint_failure =
            |trace: &mut LlmTrace, e: mesa_llm::Error, source: Option<String>| {
                trace.endpoint_error = Some(e.to_string());
                Proposal {
                    source,
                    failure: Some(CandidateFailure::new(
                        Stage::Propose,
                        format!("LLM request failed: {e}"),
                    )),
                    spec: None,
                    note: "endpoint failure".into(),
                    llm: Some(trace.clone()),
                }
            };
        let reply = match self.chat(&messages, seed, &mut trace) {
            Ok(r) => r,
            Err(e) => return endpoint_failure(&mut trace, e, None),
        };
        let (mut source, mut failure) = match extract_code(&reply) {
            None => (None, Some(no_code())),
            Some(code) => {
                let (code, fixed, f) = validate_with_fixes(code, validate);
                trace.first_try_valid = f.is_none() && !fixed;
                trace.autofixed = fixed;
                (Some(code), f)
            }
        };
        if let Some(f) = failure.clone() {
            trace.first_failure = Some(f.to_string());
            messages.push(Message::assistant(reply));
            messages.push(Message::user(repair_prompt(&f)));
            let reply = match self.chat(&messages, seed ^ 1, &mut trace) {
                Ok(r) => r,
                Err(e) => return endpoint_failure(&mut trace, e, source),
            };
            match extract_code(&reply) {
                None => failure = Some(no_code()),
                Some(code) => {
                    let (code, _, f) = validate_with_fixes(code, validate);
                    trace.repaired = f.is_none();
                    source = Some(code);
                    failure = f;
                }
            }
        }
        trace.valid = failure.is_none();
        let note = if trace.first_try_valid {
            "valid at the first try".to_string()
        } else if trace.autofixed {
            "made valid by the diagnostics' suggestions".to_string()
        } else if trace.repaired {
            "made valid by the repair round".to_string()
        } else {
            "invalid after the repair round".to_string()
        };
        Proposal {
            source,
            failure,
            spec: None,
            note,
            llm: Some(trace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_blocks() {
        assert_eq!(
            extract_code("Here:\n```mesa\npolicy \"p\"\ndefault {S}\n```\nDone."),
            Some("policy \"p\"\ndefault {S}\n".to_string())
        );
        assert_eq!(
            extract_code("```\npolicy \"p\"\ndefault {S}\n```"),
            Some("policy \"p\"\ndefault {S}\n".to_string())
        );
        // A json block first, the policy second.
        assert_eq!(
            extract_code("```json\n{}\n```\n```text\npolicy \"q\"\ndefault {T}\n```"),
            Some("policy \"q\"\ndefault {T}\n".to_string())
        );
        // Cut off at the token limit.
        assert_eq!(
            extract_code("```mesa\npolicy \"p\"\nrule r when"),
            Some("policy \"p\"\nrule r when\n".to_string())
        );
        assert_eq!(extract_code("I cannot do that."), None);
        assert_eq!(extract_code("```mesa\n```"), None);
    }
}
