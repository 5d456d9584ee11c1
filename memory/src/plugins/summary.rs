//! S with an LLM: turn-aligned segments summarized in order, one chat call
//! each, concatenated with step anchors.
//!
//! Within the token budget the built-in summarizer gets
//! (`Config::summary_budget_tokens`, cl100k tokens, each line counted with
//! its line break):
//!
//! 1. a `Task:` line first and an `Outcome:` line last (when known), as the
//!    built-in writes them;
//! 2. the steps are cut into consecutive segments of the R windows' width
//!    (`clip(ceil(L/12), 3, 16)` steps, no overlap), widened when needed so
//!    that every segment gets at least 48 tokens of the rest of the budget;
//! 3. each segment is sent as one chat call ([`SUMMARY_SYSTEM_PROMPT`], then
//!    the task and the segment's steps, each step cut to its share of 24 KiB,
//!    at most 300 bytes of action and 4,000 of observation, at least 96 bytes
//!    in all), asking for at most a number of
//!    lines and words that fits the segment's share; the calls run
//!    concurrently, bounded by the client, with temperature 0 and a fixed
//!    seed;
//! 4. the replies are taken in step order: each non-blank line becomes a
//!    summary line; a line that starts with `[step N]` for a step of its
//!    segment keeps that anchor, any other gets the segment's anchor
//!    `[steps A-B]` in front; lines are kept while they fit the segment's
//!    share plus what earlier segments left unused, and the first line that
//!    does not fit is cut to fit (if at least 8 tokens are left) and ends the
//!    segment.
//!
//! A failed call is an error naming the segment's steps; so is a reply with
//! no text.

use super::llm_failure;
use crate::dataset::{Episode, Step};
use crate::structures::raw::window_width;
use crate::structures::{PluginError, Summarizer, SummaryLine};
use crate::text::{cut, cut_marked};
use crate::tokens::count_tokens;
use mesa_llm::{ChatOptions, Client, Message};

/// The system prompt of every segment call.
pub const SUMMARY_SYSTEM_PROMPT: &str = "\
You summarize one segment of an AI agent's trajectory: the steps it took (its actions) and \
what it saw (the observations). The summary will be read later to answer questions about the \
trajectory, so keep what a question could ask about: state changes, errors and their causes, \
results and values found, files, tables, objects and identifiers involved, and changes of \
subgoal. Write one fact per line. Start every line with the anchor of the step it is about, \
exactly `[step N]`. No preamble, no headings, no bullets, no closing remarks.";

/// Segments get at least this many tokens of the budget.
const MIN_SEGMENT_TOKENS: usize = 48;
/// Bytes of an action sent, at most.
const ACTION_BYTES: usize = 300;
/// Bytes of an observation sent, at most.
const OBSERVATION_BYTES: usize = 4000;
/// Bytes of a segment's steps sent, shared by its steps (about 6k tokens,
/// so a segment fits a small model's context).
const SEGMENT_BYTES: usize = 24 * 1024;
/// Bytes a step gets at least, however many steps share a segment.
const MIN_STEP_BYTES: usize = 96;
/// A line is cut to fit only if at least this many tokens are left.
const MIN_CUT_TOKENS: usize = 8;

/// The LLM summarizer (see the module docs).
#[derive(Debug, Clone)]
pub struct LlmSummarizer {
    client: Client,
}

/// One segment: positions `start..end` of the episode's steps.
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: usize,
    end: usize,
}

impl LlmSummarizer {
    /// A summarizer using the client's chat model.
    pub fn new(client: Client) -> LlmSummarizer {
        LlmSummarizer { client }
    }

    fn segments(n: usize, remaining: usize) -> Vec<Segment> {
        if n == 0 {
            return Vec::new();
        }
        let mut width = window_width(n);
        let most = (remaining / MIN_SEGMENT_TOKENS).max(1);
        if n.div_ceil(width) > most {
            width = n.div_ceil(most);
        }
        (0..n.div_ceil(width))
            .map(|s| Segment {
                start: s * width,
                end: ((s + 1) * width).min(n),
            })
            .collect()
    }

    fn prompt(episode: &Episode, seg: Segment, share: usize) -> String {
        let steps = &episode.steps[seg.start..seg.end];
        let (first, last) = (steps[0].index, steps[steps.len() - 1].index);
        // cl100k tokens are about 0.75 words; lines cost about 20 tokens.
        let words = (share * 3 / 4).max(10);
        let lines = (share / 20).clamp(1, steps.len().max(1) * 2);
        let per_step = (SEGMENT_BYTES / steps.len()).max(MIN_STEP_BYTES);
        let action_bytes = ACTION_BYTES.min(per_step / 3);
        let obs_bytes = OBSERVATION_BYTES.min(per_step - action_bytes);
        let mut p = format!(
            "Task of the agent: {}\n\nSegment: steps {first} to {last} (of {} steps). \
             Write at most {lines} lines and {words} words in all.\n",
            flat(&episode.task, 500),
            episode.steps.len()
        );
        for s in steps {
            p.push_str(&render(s, action_bytes, obs_bytes));
        }
        p
    }

    /// The summary lines of one segment's reply, within `allowance` tokens
    /// (which it reduces by what it uses).
    fn lines(
        episode: &Episode,
        seg: Segment,
        reply: &str,
        allowance: &mut usize,
    ) -> Vec<SummaryLine> {
        let steps = &episode.steps[seg.start..seg.end];
        let (first, last) = (steps[0].index, steps[steps.len() - 1].index);
        let mut out = Vec::new();
        for raw in reply.lines() {
            let line = flat(raw.trim().trim_start_matches(['-', '*', '•']), 2000);
            if line.is_empty() {
                continue;
            }
            let (step, text) = match anchor(&line) {
                Some(n) if (first..=last).contains(&n) => (n, line),
                _ => (first, format!("[steps {first}-{last}] {line}")),
            };
            let cost = count_tokens(&text) + 1;
            if cost <= *allowance {
                *allowance -= cost;
                out.push(SummaryLine {
                    step: Some(step),
                    text,
                });
                continue;
            }
            if *allowance >= MIN_CUT_TOKENS {
                let text = fit(&text, *allowance - 1);
                *allowance = allowance.saturating_sub(count_tokens(&text) + 1);
                out.push(SummaryLine {
                    step: Some(step),
                    text,
                });
            }
            break;
        }
        out
    }
}

/// `[step N] action: …\nobservation: …\n`.
fn render(step: &Step, action_bytes: usize, obs_bytes: usize) -> String {
    format!(
        "\n[step {}] action: {}\nobservation: {}\n",
        step.index,
        cut_marked(step.action.trim(), action_bytes),
        cut_marked(step.observation.trim(), obs_bytes)
    )
}

/// The text on one line, runs of whitespace made single spaces, cut at
/// `max` bytes.
fn flat(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&flat, max).0.to_string()
}

/// The N of a line starting with `[step N]` (or `[steps N-M]`, `[Step N:`).
fn anchor(line: &str) -> Option<usize> {
    let rest = line.strip_prefix('[')?;
    let lower = rest.get(..5)?.to_ascii_lowercase();
    if lower != "step " && lower != "steps" {
        return None;
    }
    let digits: String = rest[5..]
        .trim_start_matches(['s', ' '])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The longest prefix of `text` (at a character boundary, with `…`) of at
/// most `tokens` tokens.
fn fit(text: &str, tokens: usize) -> String {
    if count_tokens(text) <= tokens {
        return text.to_string();
    }
    // Binary search on the byte length: token counts grow with the prefix.
    let (mut lo, mut hi) = (0usize, text.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate = format!("{}…", cut(text, mid).0);
        if count_tokens(&candidate) <= tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    format!("{}…", cut(text, lo).0)
}

impl Summarizer for LlmSummarizer {
    /// `llm-summary-v1:MODEL`.
    fn name(&self) -> String {
        format!("llm-summary-v1:{}", self.client.config().chat_model)
    }

    fn summarize(
        &self,
        episode: &Episode,
        budget_tokens: usize,
    ) -> Result<Vec<SummaryLine>, PluginError> {
        let head = SummaryLine {
            step: None,
            text: format!("Task: {}", flat(&episode.task, 300)),
        };
        let tail = episode.outcome.as_ref().map(|o| SummaryLine {
            step: None,
            text: format!("Outcome: {}", flat(o, 300)),
        });
        let fixed: usize = std::iter::once(&head)
            .chain(&tail)
            .map(|l| count_tokens(&l.text) + 1)
            .sum();
        let remaining = budget_tokens.saturating_sub(fixed);
        // With (almost) no budget left there is nothing to ask for.
        let segments = if remaining >= MIN_CUT_TOKENS {
            LlmSummarizer::segments(episode.steps.len(), remaining)
        } else {
            Vec::new()
        };
        let share = remaining / segments.len().max(1);
        let replies = self.client.map_concurrent(&segments, |&seg| {
            let messages = [
                Message::system(SUMMARY_SYSTEM_PROMPT),
                Message::user(LlmSummarizer::prompt(episode, seg, share)),
            ];
            // Room for the model to overshoot a little (its tokens are not
            // cl100k's); the lines are trimmed to the share afterwards.
            let max_tokens = u32::try_from(share * 2 + 32).unwrap_or(u32::MAX);
            let options = ChatOptions::default()
                .temperature(0.0)
                .seed(0)
                .max_tokens(max_tokens);
            self.client.chat(&messages, &options)
        });
        let mut out = vec![head];
        let mut carry = 0;
        for (seg, reply) in segments.iter().zip(replies) {
            let (first, last) = (
                episode.steps[seg.start].index,
                episode.steps[seg.end - 1].index,
            );
            let what = format!("episode `{}`, segment of steps {first}-{last}", episode.id);
            let reply = reply.map_err(|e| llm_failure(self.name(), &what, &e))?;
            if reply.content.trim().is_empty() {
                return Err(PluginError::BadOutput {
                    plugin: self.name(),
                    message: format!("{what}: the reply has no text"),
                });
            }
            let mut allowance = share + carry;
            out.extend(LlmSummarizer::lines(
                episode,
                *seg,
                &reply.content,
                &mut allowance,
            ));
            carry = allowance;
        }
        out.extend(tail);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chat_reply, echo, start, Reply};
    use super::*;
    use crate::config::Config;
    use crate::structures::fixtures::{game_episode, sql_episode};
    use crate::structures::Summary;

    #[test]
    fn segments_in_order_with_anchors() {
        let server = start(echo);
        let s = LlmSummarizer::new(server.client());
        let e = sql_episode();
        let summary = Summary::build(&e, &s, &Config::default()).unwrap();
        let lines = summary.lines();
        assert_eq!(
            lines[0].text,
            "Task: Find the average interest rate in 2020"
        );
        assert_eq!(lines.last().unwrap().text, "Outcome: success");
        // 7 steps: window width 3, so segments 0-2, 3-5, 6.
        assert_eq!(server.requests(), 3);
        let text = summary.text();
        assert!(
            text.contains("\n[step 0] the agent did thing 0\n"),
            "{text}"
        );
        assert!(
            text.contains("\n[steps 3-5] Overall the segment went fine.\n"),
            "{text}"
        );
        let anchored: Vec<usize> = lines.iter().filter_map(|l| l.step).collect();
        assert_eq!(anchored, [0, 1, 2, 0, 3, 4, 5, 3, 6, 6]);
        // Deterministic options, the const prompt, the segment's steps.
        let body = server.log()[0].json();
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["seed"], 0);
        assert_eq!(body["messages"][0]["content"], SUMMARY_SYSTEM_PROMPT);
        assert!(s.name().ends_with(":chat-test"));
        let users: Vec<String> = server.log().iter().map(|r| r.last_message()).collect();
        assert!(users
            .iter()
            .any(|u| u.contains("steps 3 to 5 (of 7 steps)")));
        assert!(users
            .iter()
            .any(|u| u.contains("observation: Error: invalid identifier 'TOTAL_ASSETS'")));
    }

    #[test]
    fn verbose_replies_stay_within_budget() {
        let long = "[step 1] ".to_string() + &"the agent walked around the room again ".repeat(200);
        let server = start(move |_, _| chat_reply(&format!("{long}\n{long}")));
        let s = LlmSummarizer::new(server.client());
        let e = game_episode(500);
        for budget in [100, 300, 1500] {
            let c = Config {
                summary_budget_tokens: budget,
                ..Config::default()
            };
            let summary = Summary::build(&e, &s, &c).unwrap();
            assert!(
                summary.tokens() <= budget,
                "{} > {budget}",
                summary.tokens()
            );
            assert!(summary.lines().len() > 2);
        }
        // Even one segment of all 500 steps (the 100-token budget) is a
        // bounded prompt.
        assert!(server.log().iter().all(|r| r.body.len() < 64 * 1024));
        // 1500 tokens over 500 steps: at most 1500/48 segments.
        assert!(server.requests() <= 1 + 6 + 31, "{}", server.requests());
    }

    #[test]
    fn a_failed_segment_is_an_error_naming_it() {
        let server = start(|req, _| {
            if req.last_message().contains("steps 3 to 5") {
                Reply::text(500, "overloaded")
            } else {
                echo(req, 0)
            }
        });
        let s = LlmSummarizer::new(server.client());
        let err = s.summarize(&sql_episode(), 1500).unwrap_err();
        let m = err.to_string();
        assert!(
            m.contains("segment of steps 3-5") && m.contains("HTTP 500"),
            "{m}"
        );

        let blank = start(|_, _| chat_reply("  \n"));
        let err = LlmSummarizer::new(blank.client())
            .summarize(&sql_episode(), 1500)
            .unwrap_err();
        assert!(matches!(err, PluginError::BadOutput { .. }), "{err}");
    }

    #[test]
    fn anchors_and_fitting() {
        assert_eq!(anchor("[step 12] x"), Some(12));
        assert_eq!(anchor("[Steps 3-5] x"), Some(3));
        assert_eq!(anchor("[step x]"), None);
        assert_eq!(anchor("step 3"), None);
        let t = "word ".repeat(100);
        let f = fit(&t, 10);
        assert!(count_tokens(&f) <= 10 && f.ends_with('…'), "{f}");
        assert_eq!(fit("short", 10), "short");
    }
}
