//! Time references in a question: "on 2026-03-01", "before March 2",
//! "between 2026-03-01 and 2026-03-03", "yesterday", "in the last 2 hours",
//! … T resolves them against the steps' timestamps as it resolves step
//! references ([`super::stepref`]).
//!
//! [`TimeRefs::parse`] reads them without knowing the episode;
//! [`TimeRefs::resolve`] turns them into positions of the episode's steps.
//! Days are UTC days.
//!
//! - A date: `2026-03-01`, `March 1, 2026`, `Mar 1st`, `1 March 2026`,
//!   `the 1st of March` (a date without a year takes the year of the
//!   episode's latest step).
//! - `on DATE` or a bare date: the steps of that day.
//! - `before / prior to / until / till / up to / by DATE`: the `window`
//!   steps just before that day; `after / since / following DATE`: the
//!   `window` steps just after it.
//! - `between DATE and DATE`, `from DATE to / until / through DATE`: the
//!   steps of those days, both included.
//! - `today`, `yesterday`, `the day before yesterday`: relative to the day of
//!   the latest step (not the clock: a question about an old episode means
//!   the episode's own days).
//! - `in the last / past N minutes / hours / days` (N in digits or words up
//!   to twenty; `the last hour`, `the past day`): the steps since the latest
//!   step's time minus that span.
//!
//! Steps without a readable timestamp never match. A timestamp is read as
//! RFC 3339, as `YYYY-MM-DD HH:MM[:SS]` or `YYYY-MM-DD` in UTC, or as whole
//! seconds since 1970.

use jiff::civil::Date;
use jiff::{tz::TimeZone, SignedDuration, Timestamp};
use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// A date as written: a year only when the question gives one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Day {
    /// The year, if written.
    pub year: Option<i16>,
    /// 1-12.
    pub month: i8,
    /// 1-31.
    pub day: i8,
}

/// One reference to a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum TimeRef {
    /// That day.
    On(Day),
    /// The steps just before that day.
    Before(Day),
    /// The steps just after that day.
    After(Day),
    /// Those days, both included.
    Between(Day, Day),
    /// `n` days before the latest step's day (0 is today, 1 yesterday).
    DaysAgo(u8),
    /// The last `seconds` up to the latest step's time.
    Last(u32),
}

/// The time references of a question, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeRefs(pub Vec<TimeRef>);

const MONTH: &str = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?";
const WORDS: &str = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty";

struct Patterns {
    iso: Regex,
    month_first: Regex,
    day_first: Regex,
    days_ago: Regex,
    last: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |s: String| Regex::new(&s).unwrap_or_else(|e| panic!("time pattern {s}: {e}"));
        Patterns {
            iso: re(r"\b(\d{4})-(\d{2})-(\d{2})(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?\b".into()),
            month_first: re(format!(r"\b{MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?")),
            day_first: re(format!(r"\b(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}(?:,?\s+(\d{{4}})\b)?")),
            days_ago: re(r"\b(the\s+day\s+before\s+yesterday|yesterday|today)\b".into()),
            last: re(format!(r"\b(?:in|during|over|within|for)?\s*(?:the\s+)?(?:last|past|previous)\s+(?:(\d{{1,4}}|{WORDS}|a|an)\s+)?(minute|hour|day)s?\b")),
        }
    })
}

fn month(name: &str) -> i8 {
    let m = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    m.iter()
        .position(|p| name.starts_with(p))
        .map_or(0, |i| i as i8 + 1)
}

fn number(word: &str) -> Option<u32> {
    if let Ok(n) = word.parse() {
        return Some(n);
    }
    if word == "a" || word == "an" {
        return Some(1);
    }
    WORDS
        .split('|')
        .position(|w| w == word)
        .map(|i| i as u32 + 1)
}

/// A date found in the text, with its byte span.
struct Found {
    start: usize,
    end: usize,
    day: Day,
}

fn dates(text: &str) -> Vec<Found> {
    let p = patterns();
    let mut out: Vec<Found> = Vec::new();
    let mut push = |start: usize, end: usize, year: Option<&str>, month: i8, day: &str| {
        let day: i8 = day.parse().unwrap_or(0);
        let year = year.and_then(|y| y.parse().ok());
        let valid = (1..=12).contains(&month) && (1..=31).contains(&day);
        if valid && !out.iter().any(|f| start < f.end && f.start < end) {
            out.push(Found {
                start,
                end,
                day: Day { year, month, day },
            });
        }
    };
    for c in p.iso.captures_iter(text) {
        let (m, y) = (
            c.get(0).map_or(0..0, |m| m.range()),
            c.get(1).map(|g| g.as_str()),
        );
        let month: i8 = c.get(2).map_or(0, |g| g.as_str().parse().unwrap_or(0));
        push(
            m.start,
            m.end,
            y,
            month,
            c.get(3).map_or("", |g| g.as_str()),
        );
    }
    for c in p.month_first.captures_iter(text) {
        let m = c.get(0).map_or(0..0, |m| m.range());
        let mon = month(c.get(1).map_or("", |g| g.as_str()));
        push(
            m.start,
            m.end,
            c.get(3).map(|g| g.as_str()),
            mon,
            c.get(2).map_or("", |g| g.as_str()),
        );
    }
    for c in p.day_first.captures_iter(text) {
        let m = c.get(0).map_or(0..0, |m| m.range());
        let mon = month(c.get(2).map_or("", |g| g.as_str()));
        push(
            m.start,
            m.end,
            c.get(3).map(|g| g.as_str()),
            mon,
            c.get(1).map_or("", |g| g.as_str()),
        );
    }
    out.sort_by_key(|f| f.start);
    out
}

/// The last words before byte `at`, lower case.
fn before(text: &str, at: usize, words: usize) -> String {
    let head = &text[..at];
    let parts: Vec<&str> = head.split_whitespace().rev().take(words).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join(" ")
}

impl TimeRefs {
    /// Finds the time references in a question.
    pub fn parse(question: &str) -> TimeRefs {
        let text = question.to_lowercase();
        let p = patterns();
        let mut refs = Vec::new();
        let found = dates(&text);
        let mut i = 0;
        while i < found.len() {
            let f = &found[i];
            let lead = before(&text, f.start, 3);
            let joiner = found
                .get(i + 1)
                .map(|g| text[f.end..g.start].trim().to_string());
            let ranged = (lead.ends_with("between") && joiner.as_deref() == Some("and"))
                || (lead.ends_with("from")
                    && matches!(
                        joiner.as_deref(),
                        Some("to" | "until" | "till" | "through" | "thru" | "-")
                    ));
            if ranged {
                refs.push(TimeRef::Between(f.day, found[i + 1].day));
                i += 2;
                continue;
            }
            let word = |w: &[&str]| w.iter().any(|x| lead.ends_with(x));
            refs.push(
                if word(&["before", "prior to", "until", "till", "up to", "by"]) {
                    TimeRef::Before(f.day)
                } else if word(&["after", "since", "following"]) {
                    TimeRef::After(f.day)
                } else {
                    TimeRef::On(f.day)
                },
            );
            i += 1;
        }
        for c in p.days_ago.captures_iter(&text) {
            refs.push(TimeRef::DaysAgo(
                match c.get(1).map_or("", |g| g.as_str()) {
                    "today" => 0,
                    "yesterday" => 1,
                    _ => 2,
                },
            ));
        }
        for c in p.last.captures_iter(&text) {
            let n = c.get(1).map_or(Some(1), |g| number(g.as_str()));
            let unit = match c.get(2).map_or("", |g| g.as_str()) {
                "minute" => 60,
                "hour" => 3600,
                _ => 86_400,
            };
            if let Some(n) = n.filter(|n| (1..=10_000).contains(n)) {
                refs.push(TimeRef::Last(n.saturating_mul(unit)));
            }
        }
        TimeRefs(refs)
    }

    /// Whether the question makes no time reference.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The positions of the steps (with these times, in step order) that
    /// the references name; `window` bounds before/after.
    pub fn resolve(&self, times: &[Option<Timestamp>], window: usize) -> Vec<usize> {
        let Some(latest) = times.iter().flatten().max().copied() else {
            return Vec::new();
        };
        let utc = |t: Timestamp| t.to_zoned_datetime(TimeZone::UTC).date();
        let latest_day = utc(latest);
        let date = |d: Day| Date::new(d.year.unwrap_or(latest_day.year()), d.month, d.day).ok();
        let dated: Vec<(usize, Timestamp, Date)> = times
            .iter()
            .enumerate()
            .filter_map(|(p, t)| t.map(|t| (p, t, utc(t))))
            .collect();
        let mut out = BTreeSet::new();
        for r in &self.0 {
            match *r {
                TimeRef::On(d) => {
                    if let Some(d) = date(d) {
                        out.extend(dated.iter().filter(|x| x.2 == d).map(|x| x.0));
                    }
                }
                TimeRef::Between(a, b) => {
                    if let (Some(a), Some(b)) = (date(a), date(b)) {
                        let (a, b) = (a.min(b), a.max(b));
                        out.extend(dated.iter().filter(|x| a <= x.2 && x.2 <= b).map(|x| x.0));
                    }
                }
                TimeRef::Before(d) => {
                    if let Some(d) = date(d) {
                        let v: Vec<usize> = dated.iter().filter(|x| x.2 < d).map(|x| x.0).collect();
                        out.extend(v.iter().rev().take(window));
                    }
                }
                TimeRef::After(d) => {
                    if let Some(d) = date(d) {
                        out.extend(dated.iter().filter(|x| x.2 > d).map(|x| x.0).take(window));
                    }
                }
                TimeRef::DaysAgo(n) => {
                    if let Ok(d) = latest_day.checked_sub(jiff::Span::new().days(i64::from(n))) {
                        out.extend(dated.iter().filter(|x| x.2 == d).map(|x| x.0));
                    }
                }
                TimeRef::Last(seconds) => {
                    let from = latest.checked_sub(SignedDuration::from_secs(i64::from(seconds)));
                    if let Ok(from) = from {
                        out.extend(dated.iter().filter(|x| x.1 >= from).map(|x| x.0));
                    }
                }
            }
        }
        out.into_iter().collect()
    }
}

/// Reads a step's timestamp: RFC 3339; `YYYY-MM-DD HH:MM[:SS]` or
/// `YYYY-MM-DD` as UTC; or whole seconds since 1970.
pub fn parse_timestamp(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    if let Ok(t) = text.parse::<Timestamp>() {
        return Some(t);
    }
    if let Ok(dt) = text.parse::<jiff::civil::DateTime>() {
        return dt
            .to_zoned_datetime(TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp());
    }
    if let Ok(d) = text.parse::<Date>() {
        return d
            .to_zoned_datetime(TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp());
    }
    if !text.is_empty() && text.len() <= 12 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .ok()
            .and_then(|s| Timestamp::from_second(s).ok());
    }
    None
}

#[cfg(test)]
#[path = "timeref_tests.rs"]
mod tests;
