use super::*;

fn day(year: Option<i16>, month: i8, day: i8) -> Day {
    Day { year, month, day }
}

/// Steps at 09:00, 15:00 and 23:30 UTC of 2026-02-27 .. 2026-03-03, in
/// order (positions 0..15).
fn times() -> Vec<Option<Timestamp>> {
    let mut v = Vec::new();
    for d in 27..=31 {
        let date = if d <= 28 {
            format!("2026-02-{d:02}")
        } else {
            format!("2026-03-{:02}", d - 28)
        };
        for hm in ["09:00", "15:00", "23:30"] {
            v.push(Some(format!("{date}T{hm}:00Z").parse().unwrap()));
        }
    }
    v
}

#[test]
fn at_least_twenty_phrasings_parse_as_meant() {
    let y = Some(2026);
    let cases: Vec<(&str, Vec<TimeRef>)> = vec![
        (
            "What happened on 2026-03-01?",
            vec![TimeRef::On(day(y, 3, 1))],
        ),
        (
            "What did the agent do 2026-03-01?",
            vec![TimeRef::On(day(y, 3, 1))],
        ),
        (
            "What ran at 2026-03-01T15:00:00Z?",
            vec![TimeRef::On(day(y, 3, 1))],
        ),
        (
            "What happened on March 1, 2026?",
            vec![TimeRef::On(day(y, 3, 1))],
        ),
        (
            "What happened on Mar 1st?",
            vec![TimeRef::On(day(None, 3, 1))],
        ),
        (
            "What happened on 1 March 2026?",
            vec![TimeRef::On(day(y, 3, 1))],
        ),
        (
            "What happened on the 1st of March?",
            vec![TimeRef::On(day(None, 3, 1))],
        ),
        (
            "What failed before 2026-03-02?",
            vec![TimeRef::Before(day(y, 3, 2))],
        ),
        (
            "What was tried prior to March 2?",
            vec![TimeRef::Before(day(None, 3, 2))],
        ),
        (
            "What was done until Feb 28?",
            vec![TimeRef::Before(day(None, 2, 28))],
        ),
        (
            "What changed after 2026-02-28?",
            vec![TimeRef::After(day(y, 2, 28))],
        ),
        (
            "What changed since March 1?",
            vec![TimeRef::After(day(None, 3, 1))],
        ),
        (
            "What did it do following feb. 28th?",
            vec![TimeRef::After(day(None, 2, 28))],
        ),
        (
            "What happened between 2026-02-28 and 2026-03-01?",
            vec![TimeRef::Between(day(y, 2, 28), day(y, 3, 1))],
        ),
        (
            "From March 1 to March 2, which files changed?",
            vec![TimeRef::Between(day(None, 3, 1), day(None, 3, 2))],
        ),
        (
            "What did the agent try yesterday?",
            vec![TimeRef::DaysAgo(1)],
        ),
        ("What happened today?", vec![TimeRef::DaysAgo(0)]),
        (
            "What happened the day before yesterday?",
            vec![TimeRef::DaysAgo(2)],
        ),
        (
            "What failed in the last 2 hours?",
            vec![TimeRef::Last(7200)],
        ),
        (
            "Which tests ran over the past three days?",
            vec![TimeRef::Last(3 * 86_400)],
        ),
        ("What changed in the last hour?", vec![TimeRef::Last(3600)]),
        (
            "What ran during the past 30 minutes?",
            vec![TimeRef::Last(1800)],
        ),
        (
            "What happened within the last day?",
            vec![TimeRef::Last(86_400)],
        ),
    ];
    assert!(cases.len() >= 20);
    for (q, want) in cases {
        assert_eq!(TimeRefs::parse(q).0, want, "{q}");
    }
}

#[test]
fn questions_without_times_have_none() {
    for q in [
        "What did the agent do at step 12?",
        "Which action came last?",
        "What is the last step where the agent clicked?",
        "The agent may 3 times retry; why?",
        "What happened in the last 5 steps?",
        "What was the state of the 13th item?",
        "Version 2026-13-45 is not a date",
    ] {
        let refs = TimeRefs::parse(q);
        assert!(
            refs.0.iter().all(|r| !matches!(r, TimeRef::Last(_))) || q.contains("hour"),
            "{q}: {refs:?}"
        );
        if !q.contains("may 3") {
            assert!(refs.is_empty(), "{q}: {refs:?}");
        }
    }
}

#[test]
fn references_resolve_to_the_steps_of_those_times() {
    let t = times();
    let r = |q: &str| TimeRefs::parse(q).resolve(&t, 5);
    // Days: 02-27 = 0..3, 02-28 = 3..6, 03-01 = 6..9, 03-02 = 9..12, 03-03 = 12..15.
    assert_eq!(r("What happened on 2026-03-01?"), [6, 7, 8]);
    assert_eq!(r("What happened on March 1?"), [6, 7, 8]);
    assert_eq!(
        r("What happened between Feb 28 and March 1?"),
        [3, 4, 5, 6, 7, 8]
    );
    assert_eq!(r("What failed before 2026-02-28?"), [0, 1, 2]);
    assert_eq!(r("What failed before March 3?"), [7, 8, 9, 10, 11]);
    assert_eq!(r("What changed after March 1?"), [9, 10, 11, 12, 13]);
    assert_eq!(r("What happened today?"), [12, 13, 14]);
    assert_eq!(r("What happened yesterday?"), [9, 10, 11]);
    // The latest step is 2026-03-03T23:30Z; 9 hours back reaches 15:00.
    assert_eq!(r("What ran in the last 9 hours?"), [13, 14]);
    // 24 hours back from 03-03 23:30 reaches 03-02 23:30, included.
    assert_eq!(r("What ran in the last day?"), [11, 12, 13, 14]);
    assert!(r("What happened on 2025-01-01?").is_empty());
    assert!(r("What happened at step 3?").is_empty());
    // Steps without a readable time never match.
    let mut partial = t.clone();
    partial[7] = None;
    assert_eq!(TimeRefs::parse("on March 1").resolve(&partial, 5), [6, 8]);
    assert!(TimeRefs::parse("today")
        .resolve(&[None, None], 5)
        .is_empty());
}

#[test]
fn timestamps_read_in_several_forms() {
    let want: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
    for text in [
        "2026-03-01T10:00:00Z",
        "2026-03-01T11:00:00+01:00",
        "2026-03-01 10:00:00",
        "2026-03-01T10:00",
        "1772359200",
    ] {
        assert_eq!(parse_timestamp(text), Some(want), "{text}");
    }
    assert_eq!(
        parse_timestamp("2026-03-01"),
        Some("2026-03-01T00:00:00Z".parse().unwrap())
    );
    for bad in ["", "yesterday", "10:00", "2026-13-01", "12345678901234"] {
        assert_eq!(parse_timestamp(bad), None, "{bad}");
    }
}
