//! Step references in a question: "at step 12", "steps 3-5", "between step
//! X and step Y", "the last 5 steps", "turn 9", "the final step", …
//!
//! [`StepRefs::parse`] reads them without knowing the episode;
//! [`StepRefs::resolve`] turns them into the episode's step indices:
//!
//! - `step N`, `turn N`, `turn index N`, `steps 11, 12 and 16`: those steps.
//! - `steps 3-5`, `step 3 to 7`, `steps 3 through 7`, `between step X and
//!   step Y`, `from step X to step Y`: the range, both ends included.
//! - `before / prior to / until / till / up to / by step X`: X and the
//!   `window` steps before it (default 5); `after / following step X`: X and
//!   the `window` steps after it.
//! - `the first N steps` / `the last N steps` (also `turns`, `actions`; N in
//!   digits or words up to twenty): the first or last N steps.
//! - `the final step`, `the last step`, `the first step` (also `turn`), unless
//!   followed by `where`, `that`, `which`, `when`, `in`, `at`, `of`, `to`,
//!   `before`, `after` (as in "the last step where the agent …", a search,
//!   not a position).
//!
//! Steps that do not exist are dropped, ranges are clipped to the episode,
//! and the result is deduplicated and ordered. At most `max` steps are kept:
//! explicitly named steps (single steps, range ends, the X of before/after,
//! the final step) first, then the rest sampled evenly.

use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// One reference to steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum StepRef {
    /// One step.
    At(usize),
    /// A range, both ends included, `from <= to`.
    Range(usize, usize),
    /// The step and the window before it.
    Before(usize),
    /// The step and the window after it.
    After(usize),
    /// The first N steps.
    First(usize),
    /// The last N steps.
    Last(usize),
    /// The first step.
    Initial,
    /// The final step.
    Final,
}

/// The step references of a question, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepRefs(pub Vec<StepRef>);

const S: &str = r"(?:step|turn)s?(?:\s+(?:index|indices|idx|number)(?:es)?)?\s*(?:#\s*)?";
const N: &str = r"(\d{1,18})";

struct Patterns {
    between: Regex,
    from: Regex,
    range: Regex,
    relative: Regex,
    list: Regex,
    list_number: Regex,
    single: Regex,
    first_last: Regex,
    end: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: String| Regex::new(&s).unwrap_or_else(|e| panic!("step pattern {s}: {e}"));
        let words = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty";
        Patterns {
            between: re(format!(r"\bbetween\s+(?:the\s+)?{S}{N}\s*(?:and|&|-|to)\s*(?:{S})?{N}\b")),
            from: re(format!(r"\bfrom\s+(?:the\s+)?{S}{N}\s*(?:to|through|thru|until|till|-)\s*(?:{S})?{N}\b")),
            range: re(format!(r"\b{S}{N}\s*(?:-|to|through|thru|until|till)\s*(?:{S})?{N}\b")),
            relative: re(format!(r"\b(before|prior\s+to|until|till|up\s+to|by|after|following)\s+(?:the\s+)?{S}{N}\b")),
            list: re(format!(r"\b{S}\d{{1,18}}(?:\s*(?:,|and|or|&)\s*(?:and\s+|or\s+)?(?:{S})?\d{{1,18}})+\b")),
            list_number: re(r"\d{1,18}".to_string()),
            single: re(format!(r"\b{S}{N}\b")),
            first_last: re(format!(r"\b(first|last|final|initial)\s+(\d{{1,18}}|{words})\s+(?:steps|turns|actions|moves)\b")),
            end: re(r"\b(final|last|very\s+last|first|initial)\s+(?:step|turn|action)\b".to_string()),
        }
    })
}

fn word_number(w: &str) -> Option<usize> {
    const WORDS: [&str; 20] = [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    w.parse()
        .ok()
        .or_else(|| WORDS.iter().position(|x| *x == w).map(|i| i + 1))
}

/// Blanks out a matched span so later patterns do not read it again.
fn blank(work: &mut String, start: usize, end: usize) {
    work.replace_range(start..end, &" ".repeat(end - start));
}

/// What `read` makes of each match of `re` in `work`, in order; each match it
/// reads is then blanked.
fn take<T>(
    work: &mut String,
    re: &Regex,
    read: impl Fn(&regex::Captures<'_>) -> Option<T>,
) -> Vec<T> {
    let found: Vec<_> = re
        .captures_iter(work)
        .filter_map(|c| {
            let m = c.get(0)?;
            Some((m.start(), m.end(), read(&c)?))
        })
        .collect();
    found
        .into_iter()
        .map(|(start, end, t)| {
            blank(work, start, end);
            t
        })
        .collect()
}

fn num(caps: &regex::Captures<'_>, i: usize) -> Option<usize> {
    caps.get(i).and_then(|m| m.as_str().parse().ok())
}

impl StepRefs {
    /// Reads the step references of a question.
    pub fn parse(question: &str) -> StepRefs {
        let p = patterns();
        // Lower case and plain hyphens; both keep the text's words in place.
        let mut work: String = question
            .chars()
            .map(|c| match c {
                '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        let mut refs = Vec::new();
        for re in [&p.between, &p.from, &p.range] {
            let found = take(&mut work, re, |c| Some((num(c, 1)?, num(c, 2)?)));
            refs.extend(
                found
                    .into_iter()
                    .map(|(a, b)| StepRef::Range(a.min(b), a.max(b))),
            );
        }
        let found = take(&mut work, &p.relative, |c| {
            let kind = c.get(1)?.as_str();
            Some((kind.starts_with('a') || kind.starts_with('f'), num(c, 2)?))
        });
        refs.extend(found.into_iter().map(|(after, x)| {
            if after {
                StepRef::After(x)
            } else {
                StepRef::Before(x)
            }
        }));
        let found = take(&mut work, &p.list, |c| {
            let nums: Vec<usize> = p
                .list_number
                .find_iter(c.get(0)?.as_str())
                .filter_map(|n| n.as_str().parse().ok())
                .collect();
            Some(nums)
        });
        refs.extend(found.into_iter().flatten().map(StepRef::At));
        let found = take(&mut work, &p.single, |c| num(c, 1));
        refs.extend(found.into_iter().map(StepRef::At));
        for c in p.first_last.captures_iter(&work) {
            let (Some(kind), Some(n)) = (c.get(1), c.get(2).and_then(|n| word_number(n.as_str())))
            else {
                continue;
            };
            refs.push(match kind.as_str() {
                "first" | "initial" => StepRef::First(n),
                _ => StepRef::Last(n),
            });
        }
        for c in p.end.captures_iter(&work) {
            let (Some(m), Some(kind)) = (c.get(0), c.get(1)) else {
                continue;
            };
            let next = work[m.end()..].split_whitespace().next().unwrap_or("");
            let next = next.trim_matches(|c: char| !c.is_alphanumeric());
            const SEARCH: [&str; 12] = [
                "where", "that", "which", "when", "in", "at", "of", "to", "before", "after",
                "whose", "with",
            ];
            if SEARCH.contains(&next) {
                continue;
            }
            refs.push(match kind.as_str() {
                "first" | "initial" => StepRef::Initial,
                _ => StepRef::Final,
            });
        }
        StepRefs(refs)
    }

    /// Whether the question names no steps.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The step indices the question names explicitly (single steps, range
    /// ends, the X of before/after), for G's proximity bonus; `last` is the
    /// episode's last step index, for "the final step".
    pub fn named(&self, last: usize) -> Vec<usize> {
        let mut out = BTreeSet::new();
        for r in &self.0 {
            match *r {
                StepRef::At(x) | StepRef::Before(x) | StepRef::After(x) => {
                    out.insert(x);
                }
                StepRef::Range(a, b) => {
                    out.insert(a);
                    out.insert(b);
                }
                StepRef::Final => {
                    out.insert(last);
                }
                StepRef::Initial => {
                    out.insert(0);
                }
                StepRef::First(_) | StepRef::Last(_) => {}
            }
        }
        out.into_iter().collect()
    }

    /// The positions (into `indices`, the episode's increasing step indices)
    /// of the steps referred to: clipped, deduplicated, ordered, at most
    /// `max`. `window` bounds before/after.
    pub fn resolve(&self, indices: &[usize], window: usize, max: usize) -> Vec<usize> {
        let n = indices.len();
        if n == 0 || max == 0 {
            return Vec::new();
        }
        let pos = |x: usize| indices.binary_search(&x).ok();
        // Positions of the steps with index in [a, b].
        let span = |a: usize, b: usize| {
            let lo = indices.partition_point(|&i| i < a);
            let hi = indices.partition_point(|&i| i <= b);
            lo..hi.max(lo)
        };
        let mut explicit = BTreeSet::new();
        let mut fill = BTreeSet::new();
        for r in &self.0 {
            match *r {
                StepRef::At(x) => explicit.extend(pos(x)),
                StepRef::Range(a, b) => {
                    let s = span(a, b);
                    if !s.is_empty() {
                        explicit.insert(s.start);
                        explicit.insert(s.end - 1);
                        fill.extend(s);
                    }
                }
                StepRef::Before(x) => {
                    explicit.extend(pos(x));
                    let hi = indices.partition_point(|&i| i < x);
                    fill.extend(hi.saturating_sub(window)..hi);
                }
                StepRef::After(x) => {
                    explicit.extend(pos(x));
                    let lo = indices.partition_point(|&i| i <= x);
                    fill.extend(lo..(lo + window).min(n));
                }
                StepRef::First(k) => fill.extend(0..k.min(n)),
                StepRef::Last(k) => fill.extend(n.saturating_sub(k)..n),
                StepRef::Initial => {
                    explicit.insert(0);
                }
                StepRef::Final => {
                    explicit.insert(n - 1);
                }
            }
        }
        let explicit: Vec<usize> = explicit.into_iter().collect();
        if explicit.len() >= max {
            return sample(&explicit, max);
        }
        let rest: Vec<usize> = fill
            .into_iter()
            .filter(|p| explicit.binary_search(p).is_err())
            .collect();
        let mut out: Vec<usize> = explicit;
        out.extend(sample(&rest, max - out.len()));
        out.sort_unstable();
        out
    }
}

/// `k` elements of `v` spread evenly, the first and last included.
pub(crate) fn sample(v: &[usize], k: usize) -> Vec<usize> {
    if v.len() <= k {
        return v.to_vec();
    }
    if k == 0 {
        return Vec::new();
    }
    if k == 1 {
        return vec![v[0]];
    }
    (0..k)
        .map(|i| v[(i * (v.len() - 1) + (k - 1) / 2) / (k - 1)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::StepRef::*;
    use super::*;

    fn refs(q: &str) -> Vec<StepRef> {
        StepRefs::parse(q).0
    }

    fn resolve(q: &str, n: usize) -> Vec<usize> {
        let indices: Vec<usize> = (0..n).collect();
        StepRefs::parse(q).resolve(&indices, 5, 20)
    }

    /// Phrasings taken verbatim from AMA-Bench questions.
    #[test]
    fn ama_bench_phrasings() {
        let cases: &[(&str, &[StepRef])] = &[
            ("What actions were performed between step 45 and step 47?", &[Range(45, 47)]),
            ("Until step 149, what actions has the agent performed and how frequently?", &[Before(149)]),
            ("Before the agent could implement a fix for the carriage return issue, what precondition had to be satisfied based on steps 31-65?", &[Range(31, 65)]),
            ("The agent hit the error `invalid identifier 'SEASON'` at step 11. Identify the multi-step causal chain that led to this error, including how it relates to what the agent changed (or failed to change) compared to step 10.", &[At(11), At(10)]),
            ("After the agent retrieved the EC numbers at turn 20, what internal verification step was mandated by the prompt's constraints before the final answer could be formatted?", &[At(20)]),
            ("Compare the 'RootWebArea' element IDs at Step 1 [1] and Step 3 [2394].", &[At(1), At(3)]),
            ("Between steps 208 and 212, the agent performs five movement actions (S, W, N, S, N) but makes no observable progress.", &[Range(208, 212)]),
            ("At step 88, what specific test method did the agent execute to verify that both x-axis and y-axis log scale inversion worked correctly?", &[At(88)]),
            ("Which turning-point observations from steps 9-19 caused the approach to shift", &[Range(9, 19)]),
            ("In steps 17, 18, 19, and 20, the agent repeatedly executed the `right` action.", &[At(17), At(18), At(19), At(20)]),
            ("However, the game state described in the observations from step 18 to 21 remained completely unchanged.", &[Range(18, 21)]),
            ("Hidden state inference: Based on the pattern of identifier errors across steps 11, 12, 15, and 16, what implicit Snowflake identifier rule did the agent run into", &[At(11), At(12), At(15), At(16)]),
            ("Question: What action harvested the tree at Step 44, and what prerequisite action at Step 43 made it possible?", &[At(44), At(43)]),
            ("Why did the direct website fetches at turns 4, 5, 6, 7, and 8 fail to provide the necessary numerical data, and how did the agent adapt its strategy?", &[At(4), At(5), At(6), At(7), At(8)]),
            ("Based on the agent's investigation through steps 15-95, what hidden state can be inferred about Django's timezone handling architecture?", &[Range(15, 95)]),
            ("What workspace update had to occur before the agent could issue the mark_step command in Turn 17?", &[At(17)]),
            ("By step 13, how many unique tables and schema files had been directly examined or queried", &[Before(13)]),
            ("Given the observation window from steps 8–10 (COUNT=18 at step 8; full 18-row sample at step 9; a UNION ALL balance query timing out at step 10), what are the two most strategically sound next actions", &[Range(8, 10), At(8), At(9), At(10)]),
            ("Counterfactual: If the agent had clicked Save after Step 7, which required fields were already populated?", &[After(7)]),
            ("Identify the primary technical barrier encountered between Turn 25 and Turn 51 regarding direct site access", &[Range(25, 51)]),
            ("At steps 72 and 73, the agent uses the 'Do' action on the cow with no reward.", &[At(72), At(73)]),
            ("After step 22 produced a compilation error, what is the most reasonable next action sequence (within the next 1–2 steps) to recover", &[After(22)]),
            ("The actions from step 84 to 86 represent a successful navigation sequence, bringing the agent from 3 steps away from the `table` to just 1 step away.", &[Range(84, 86)]),
            ("Looking at the change in the game state from step 4 to step 8, what is the sole, cumulative consequence?", &[Range(4, 8)]),
            ("From step 1 to step 8, what actions made the environment changes and what were the environment changes?", &[Range(1, 8)]),
            ("Which turn caused the transition from Step 0 to Step 1?", &[Range(0, 1)]),
            ("Identify the turn index where the agent attempted to use 'search_wiki' for 'Paula Cole This Fire' and state the resulting observation message.", &[]),
            ("Identify the multi-step causal chain (2–4 hops) that explains why the agent never obtained schema details", &[]),
            ("Tracking across the session, what was the last step where the agent obtained new quantitative information", &[]),
            ("At Step 12, after securing a food source, the agent begins moving east towards a cow. Its subsequent 'Do' actions at steps 13 and 15 yield no reward.", &[At(12), At(13), At(15)]),
            ("What is the location of spraybottle 2, soapbar 2, cloth 1 at step 76?", &[At(76)]),
            ("The `right` action at Step 12 yielded a 0.0 reward, but it was the critical setup for the 8.0 reward achieved with the `down` action at Step 13.", &[At(12), At(13)]),
        ];
        for (q, want) in cases {
            let mut got = refs(q);
            let mut want = want.to_vec();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{q}");
        }
    }

    #[test]
    fn first_last_final() {
        assert_eq!(refs("What happened in the last 3 steps?"), [Last(3)]);
        assert_eq!(refs("Over the first five turns, what moved?"), [First(5)]);
        assert_eq!(refs("What did the final step return?"), [Final]);
        assert_eq!(refs("What was the last step?"), [Final]);
        assert_eq!(refs("What was the first step where it failed?"), []);
        assert_eq!(refs("What was the agent's first action?"), [Initial]);
        assert_eq!(resolve("What happened in the last 3 steps?", 10), [7, 8, 9]);
        assert_eq!(resolve("What did the final step return?", 10), [9]);
    }

    #[test]
    fn resolution() {
        assert_eq!(resolve("at step 12", 20), [12]);
        assert_eq!(resolve("at step 12", 10), Vec::<usize>::new());
        assert_eq!(resolve("steps 3-5 and step 4", 10), [3, 4, 5]);
        assert_eq!(resolve("steps 8-15", 10), [8, 9]);
        assert_eq!(resolve("before step 7", 20), [2, 3, 4, 5, 6, 7]);
        assert_eq!(resolve("after step 7", 10), [7, 8, 9]);
        assert_eq!(resolve("until step 2", 10), [0, 1, 2]);
        assert_eq!(resolve("Step 7 then step 3", 10), [3, 7]);
        // A long range is sampled, keeping its ends and the named step.
        let r = resolve("steps 0-99 and step 50", 200);
        assert_eq!(r.len(), 20);
        assert!(r.contains(&0) && r.contains(&99) && r.contains(&50));
        assert!(r.windows(2).all(|w| w[0] < w[1]));
        // Gaps in the episode's indices.
        let refs = StepRefs::parse("steps 2-6");
        assert_eq!(refs.resolve(&[0, 3, 5, 9], 5, 20), [1, 2]);
        assert_eq!(StepRefs::parse("the final step").named(41), [41]);
        // Indices of any size a dataset may use, up to 18 digits.
        assert_eq!(
            StepRefs::parse("step 12345678 and steps 10000000-10000002").0,
            [
                StepRef::Range(10_000_000, 10_000_002),
                StepRef::At(12_345_678)
            ]
        );
        let big = StepRefs::parse("what happened at step 123456789012345678?");
        assert_eq!(big.resolve(&[0, 123_456_789_012_345_678], 5, 20), [1]);
    }

    #[test]
    fn sampling() {
        assert_eq!(sample(&[1, 2, 3], 5), [1, 2, 3]);
        assert_eq!(sample(&(0..10).collect::<Vec<_>>(), 3), [0, 5, 9]);
        assert_eq!(sample(&(0..10).collect::<Vec<_>>(), 1), [0]);
    }
}
