use super::*;
use serde_json::json;

fn ama_line(id: u64, steps: usize) -> String {
    let trajectory: Vec<Value> = (0..steps)
        .map(|i| json!({"turn_idx": i, "action": format!("act {i}"), "observation": format!("obs {i}")}))
        .collect();
    json!({
        "episode_id": id, "task_type": "spider2", "domain": "TEXT2SQL", "source": "x",
        "success": false, "task": "do it", "num_turns": steps, "trajectory": trajectory,
        "qa_pairs": [{"question": "What at step 1?", "answer": "act 1", "type": "A"},
                      {"question": "Why?", "answer": "because", "type": "B"}]
    })
    .to_string()
}

fn generic_line(id: &str) -> String {
    json!({
        "id": id, "task": "fix the bug", "domain": "software", "outcome": "success",
        "steps": [
            {"index": 1, "action": "ls", "observation": "a.py", "timestamp": "2026-01-01T00:00:00Z"},
            {"index": 2, "action": "cat a.py", "observation": "print(1)"},
            {"action": "python a.py", "observation": "1"}
        ],
        "questions": [{"id": "q1", "question": "What ran at step 3?", "answer": "python a.py", "evidence": [3]},
                      {"question": "What did ls show?"}]
    })
    .to_string()
}

fn opts() -> LoadOptions {
    LoadOptions::default()
}

fn skip() -> LoadOptions {
    LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    }
}

/// A generic episode without a domain has the empty one; a domain that is
/// not a string is still refused.
#[test]
fn a_generic_domain_is_optional() {
    let mut v: Value = serde_json::from_str(&generic_line("g1")).unwrap();
    v.as_object_mut().unwrap().remove("domain");
    let loaded = load_str(&v.to_string(), "d.jsonl", &opts()).unwrap();
    assert_eq!(loaded.episodes[0].domain, "");
    v["domain"] = json!(7);
    let err = load_str(&v.to_string(), "d.jsonl", &opts()).unwrap_err();
    assert!(err.to_string().contains("domain"), "{err}");
}

/// `created` is read for an import into a tenant, where it must be an RFC
/// 3339 time; a store build ignores it, as any field it does not know.
#[test]
fn created_is_a_time_for_an_import_and_ignored_by_a_store_build() {
    let into = LoadOptions {
        into_tenant: true,
        ..opts()
    };
    let mut v: Value = serde_json::from_str(&generic_line("g1")).unwrap();
    v["created"] = json!("2026-02-27T08:00:00Z");
    let read = |v: &Value, o: &LoadOptions| load_str(&v.to_string(), "d.jsonl", o);
    let e = &read(&v, &into).unwrap().episodes[0];
    assert_eq!(e.created.as_deref(), Some("2026-02-27T08:00:00Z"));
    for bad in [json!(1772179200), json!("2026-02-27"), json!("yesterday")] {
        v["created"] = bad.clone();
        assert_eq!(read(&v, &opts()).unwrap().episodes[0].created, None);
        let err = read(&v, &into).unwrap_err().to_string();
        assert!(err.contains("d.jsonl:1: field `created`"), "{err}");
        assert!(err.contains("an RFC 3339 time"), "{bad}: {err}");
    }
}

#[test]
fn reads_both_layouts() {
    let text = format!("{}\n{}\n", ama_line(7, 3), generic_line("g1"));
    let loaded = load_str(&text, "d.jsonl", &opts()).unwrap();
    assert_eq!(loaded.episodes.len(), 2);
    let a = &loaded.episodes[0];
    assert_eq!(a.id, "7");
    assert_eq!(a.outcome.as_deref(), Some("failure"));
    assert_eq!(a.meta["task_type"], "spider2");
    assert_eq!(a.questions[1].id, "7:1");
    assert_eq!(a.questions[0].qtype.as_deref(), Some("A"));
    assert_eq!(a.steps[2].observation, "obs 2");
    let g = &loaded.episodes[1];
    assert_eq!(
        g.steps.iter().map(|s| s.index).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        g.steps[0].timestamp.as_deref(),
        Some("2026-01-01T00:00:00Z")
    );
    assert_eq!(g.questions[0].evidence, [3]);
    assert_eq!(g.questions[1].id, "g1:1");
    assert_eq!(g.questions[1].answer, None);
    assert_eq!(g.position(3), Some(2));
    assert_eq!(loaded.report.by_format, [1, 1]);
    assert_eq!(loaded.report.steps, 6);
    assert_eq!(loaded.report.questions, 4);
}

#[test]
fn bom_crlf_and_blank_lines() {
    let text = format!(
        "\u{feff}{}\r\n\n  \n\u{feff}{}",
        ama_line(1, 2),
        ama_line(2, 2)
    );
    let loaded = load_str(&text, "d.jsonl", &opts()).unwrap();
    assert_eq!(loaded.episodes.len(), 2);
    assert_eq!(loaded.report.blank_lines, 2);
    assert_eq!(loaded.report.lines, 4);
}

fn err(text: &str) -> DatasetError {
    load_str(text, "d.jsonl", &opts()).unwrap_err()
}

#[test]
fn truncated_and_non_json_lines() {
    let line = ama_line(1, 3);
    let text = format!("{}\n{}", line, &line[..line.len() / 2]);
    let e = err(&text);
    assert!(matches!(e, DatasetError::Json { line: 2, .. }), "{e}");
    assert!(
        e.to_string().starts_with("d.jsonl:2: not valid JSON"),
        "{e}"
    );
    assert!(matches!(err("hello\n"), DatasetError::Json { line: 1, .. }));
    assert!(matches!(
        err("[1, 2]\n"),
        DatasetError::UnknownFormat { line: 1, .. }
    ));
    assert!(matches!(
        err("{\"foo\": 1}\n"),
        DatasetError::UnknownFormat { .. }
    ));
}

#[test]
fn missing_and_bad_fields() {
    let mut v: Value = serde_json::from_str(&ama_line(1, 3)).unwrap();
    v["trajectory"][1].as_object_mut().unwrap().remove("action");
    let e = err(&v.to_string());
    assert_eq!(
        e.to_string(),
        "d.jsonl:1: missing field `trajectory[1].action`"
    );
    let mut v: Value = serde_json::from_str(&ama_line(1, 3)).unwrap();
    v["trajectory"][2]["turn_idx"] = json!("two");
    let e = err(&v.to_string());
    assert!(
        matches!(&e, DatasetError::BadField { field, .. } if field == "trajectory[2].turn_idx"),
        "{e}"
    );
    let mut v: Value = serde_json::from_str(&ama_line(1, 3)).unwrap();
    v.as_object_mut().unwrap().remove("task");
    assert!(
        matches!(err(&v.to_string()), DatasetError::MissingField { field, .. } if field == "task")
    );
    let mut v: Value = serde_json::from_str(&generic_line("g")).unwrap();
    v["questions"][0]["evidence"] = json!([99]);
    let e = err(&v.to_string());
    assert!(
        matches!(&e, DatasetError::BadField { field, .. } if field == "questions[0].evidence[0]"),
        "{e}"
    );
}

#[test]
fn steps_out_of_order_or_duplicated() {
    let mut v: Value = serde_json::from_str(&ama_line(1, 4)).unwrap();
    v["trajectory"][2]["turn_idx"] = json!(1);
    let e = err(&v.to_string());
    assert!(
        matches!(&e, DatasetError::StepOrder { index: 1, previous: 1, field, .. } if field == "trajectory[2]"),
        "{e}"
    );
    let mut v: Value = serde_json::from_str(&ama_line(1, 4)).unwrap();
    v["trajectory"][3]["turn_idx"] = json!(0);
    assert!(matches!(
        err(&v.to_string()),
        DatasetError::StepOrder {
            index: 0,
            previous: 2,
            ..
        }
    ));
}

#[test]
fn zero_steps() {
    let e = err(&ama_line(5, 0));
    assert!(matches!(&e, DatasetError::NoSteps { episode, .. } if episode == "5"));
    assert_eq!(e.to_string(), "d.jsonl:1: episode `5` has no steps");
}

#[test]
fn huge_observation_is_cut_and_counted() {
    let mut v: Value = serde_json::from_str(&ama_line(1, 3)).unwrap();
    let big = "é".repeat(2 * 1024 * 1024); // 4 MiB of two-byte characters
    v["trajectory"][1]["observation"] = json!(big);
    let loaded = load_str(&v.to_string(), "d.jsonl", &opts()).unwrap();
    let e = &loaded.episodes[0];
    assert_eq!(e.steps[1].observation.len(), 32 * 1024);
    assert!(e.steps[1].observation.chars().all(|c| c == 'é'));
    assert_eq!(loaded.report.cut_observations, 1);
    assert_eq!(
        e.notes,
        ["step 1: observation cut from 4194304 to 32768 bytes"]
    );
}

#[test]
fn duplicates() {
    let text = format!("{}\n{}\n", ama_line(1, 2), ama_line(1, 2));
    assert!(matches!(
        err(&text),
        DatasetError::DuplicateEpisode {
            line: 2,
            first: 1,
            ..
        }
    ));
    let mut v: Value = serde_json::from_str(&generic_line("g")).unwrap();
    v["questions"][1]["id"] = json!("q1");
    assert!(matches!(
        err(&v.to_string()),
        DatasetError::DuplicateQuestion { .. }
    ));
}

#[test]
fn long_lines_and_bad_utf8() {
    let o = LoadOptions {
        max_line_bytes: 100,
        ..opts()
    };
    let text = format!("{}\n", ama_line(1, 20));
    let e = load_str(&text, "d.jsonl", &o).unwrap_err();
    assert!(matches!(
        e,
        DatasetError::LineTooLong {
            line: 1,
            limit: 100,
            ..
        }
    ));
    let mut bytes = ama_line(1, 2).into_bytes();
    bytes[20] = 0xff;
    let mut r = EpisodeReader::new(&bytes[..], "b.jsonl", opts());
    assert!(matches!(
        r.next(),
        Some(Err(DatasetError::NotUtf8 { offset: 20, .. }))
    ));
}

#[test]
fn skip_bad_counts_every_skip() {
    let mut out_of_order: Value = serde_json::from_str(&ama_line(4, 3)).unwrap();
    out_of_order["trajectory"][2]["turn_idx"] = json!(0);
    let good = ama_line(1, 2);
    let text = [
        good.clone(),
        good[..good.len() - 5].to_string(),
        "not json".to_string(),
        ama_line(3, 0),
        out_of_order.to_string(),
        ama_line(1, 2),
        generic_line("g"),
        "x".repeat(3000),
        ama_line(9, 1),
    ]
    .join("\n");
    let o = LoadOptions {
        max_line_bytes: 2000,
        ..skip()
    };
    let loaded = load_str(&text, "d.jsonl", &o).unwrap();
    let ids: Vec<&str> = loaded.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["1", "g", "9"]);
    let lines: Vec<usize> = loaded.report.skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, [2, 3, 4, 5, 6, 8]);
    let r = &loaded.report.skipped;
    assert!(matches!(r[0].reason, DatasetError::Json { .. }));
    assert!(matches!(r[2].reason, DatasetError::NoSteps { .. }));
    assert!(matches!(r[3].reason, DatasetError::StepOrder { .. }));
    assert!(matches!(r[4].reason, DatasetError::DuplicateEpisode { .. }));
    assert!(matches!(r[5].reason, DatasetError::LineTooLong { .. }));
    assert_eq!(loaded.report.lines, 9);
    assert_eq!(loaded.report.episodes, 3);
}

#[test]
fn missing_file() {
    let e = load(Path::new("/nonexistent/x.jsonl"), &opts()).unwrap_err();
    assert!(matches!(e, DatasetError::Io { .. }));
    assert!(e.to_string().starts_with("/nonexistent/x.jsonl: "));
}

/// The real AMA-Bench file, when it is there (it is in the project's shared
/// data folder).
#[test]
fn ama_bench_counts() {
    let path = crate::testing::ama_path();
    let Some(path) = path else {
        eprintln!("AMA-Bench data not found; skipping");
        return;
    };
    let mut reader = EpisodeReader::open(&path, opts()).unwrap();
    let mut steps = 0;
    let mut episodes = 0;
    for e in reader.by_ref() {
        let e = e.unwrap();
        episodes += 1;
        steps += e.steps.len();
        assert_eq!(e.steps[0].index, 0);
        assert!(e.steps.windows(2).all(|w| w[1].index == w[0].index + 1));
    }
    let r = reader.into_report();
    assert_eq!((episodes, steps, r.questions), (208, 15_244, 2_496));
    assert!(r.skipped.is_empty());
    assert_eq!(r.by_format, [208, 0]);
    eprintln!(
        "cut observations: {}, cut actions: {}",
        r.cut_observations, r.cut_actions
    );
}

#[test]
fn blank_questions_are_refused_naming_the_field() {
    let mut a: Value = serde_json::from_str(&ama_line(3, 2)).unwrap();
    a["qa_pairs"][1]["question"] = json!("  \t");
    let mut g: Value = serde_json::from_str(&generic_line("g")).unwrap();
    g["questions"][0]["question"] = json!("");
    for (v, field) in [(a, "qa_pairs[1].question"), (g, "questions[0].question")] {
        let msg = err(&v.to_string()).to_string();
        assert!(msg.contains(field), "{msg}");
        assert!(msg.contains("not blank"), "{msg}");
    }
}

#[test]
fn a_key_twice_is_refused_not_overwritten() {
    let line = generic_line("g").replacen(
        "\"task\":\"fix the bug\"",
        "\"task\":\"fix the bug\",\"task\":\"other\"",
        1,
    );
    assert!(line.contains("\"other\""), "{line}");
    let e = err(&line);
    assert!(matches!(e, DatasetError::Json { line: 1, .. }), "{e}");
    assert!(e.to_string().contains("`task` appears twice"), "{e}");
}

/// An episode written as a generic line reads back as itself, from either
/// layout, with gaps in its indices, questions of every shape, metadata
/// and texts that need escaping.
#[test]
fn a_generic_line_reads_back_as_the_same_episode() {
    let mut odd: Value = serde_json::from_str(&generic_line("g\"1")).unwrap();
    odd["meta"] = json!({"agent": "v3", "note": "line\nbreak"});
    odd["steps"][1]["observation"] = json!("tab\there, quote \" and é ✓");
    odd["steps"][2]["index"] = json!(40);
    odd["questions"][0]["evidence"] = json!([40, 1]);
    odd["questions"][1]["type"] = json!("causal");
    let text = format!("{}\n{}\n", ama_line(7, 3), odd);
    for e in load_str(&text, "d.jsonl", &opts()).unwrap().episodes {
        let again = load_str(&generic_line_of(&e), "e.jsonl", &opts()).unwrap();
        assert_eq!(again.episodes, vec![e]);
    }
}

fn generic_line_of(e: &Episode) -> String {
    super::generic_line(e)
}

mod round_trip {
    use super::super::{generic_line, load_str, Episode, LoadOptions, Question, Step};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Any text a dataset may hold, escapes and non-ASCII included.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["\\PC{0,24}", "[ a-z\"\\\\\t\r\n\u{0}é✓]{0,12}"]
    }

    fn episode() -> impl Strategy<Value = Episode> {
        let steps =
            prop::collection::vec((0usize..3, text(), text(), prop::option::of(text())), 0..8);
        let questions = prop::collection::vec(
            (
                "[a-z]{1,8}( [a-z]{1,8}){0,3}\\??",
                prop::option::of(text()),
                prop::option::of("[A-D]"),
                prop::collection::vec(any::<prop::sample::Index>(), 0..3),
            ),
            0..4,
        );
        (
            "[A-Za-z0-9 :\"é_-]{1,12}",
            text(),
            text(),
            prop::option::of(text()),
            prop::collection::btree_map("[a-z]{1,6}", text(), 0..3),
            prop::option::of(
                (0i64..4_000_000_000, 0i32..1_000_000_000).prop_map(|(s, n)| {
                    let t = jiff::Timestamp::new(s, n).expect("in range");
                    t.to_string()
                }),
            ),
            steps,
            questions,
        )
            .prop_map(|(id, task, domain, outcome, meta, created, raw, asked)| {
                let mut next = 0;
                let steps: Vec<Step> = raw
                    .into_iter()
                    .map(|(gap, action, observation, timestamp)| {
                        let index = next + gap;
                        next = index + 1;
                        Step {
                            index,
                            action,
                            observation,
                            timestamp,
                        }
                    })
                    .collect();
                let questions = asked
                    .into_iter()
                    .enumerate()
                    .map(|(j, (question, answer, qtype, picks))| {
                        let mut evidence: Vec<usize> = picks
                            .iter()
                            .filter(|_| !steps.is_empty())
                            .map(|p| steps[p.index(steps.len())].index)
                            .collect();
                        evidence.sort_unstable();
                        evidence.dedup();
                        Question {
                            id: format!("q{j}"),
                            question,
                            answer,
                            qtype,
                            evidence,
                        }
                    })
                    .collect();
                Episode {
                    id,
                    task,
                    domain,
                    outcome,
                    meta: meta.into_iter().collect::<BTreeMap<_, _>>(),
                    created,
                    steps,
                    questions,
                    notes: Vec::new(),
                }
            })
    }

    proptest! {
        /// Any episode the reader can hold (one without steps when asked
        /// to), written as a generic line, reads back as itself.
        #[test]
        fn a_generic_line_reads_back_as_its_episode(e in episode()) {
            let line = generic_line(&e);
            prop_assert!(!line.contains('\n'), "one line");
            let options = LoadOptions { into_tenant: true, ..LoadOptions::default() };
            let loaded = load_str(&line, "e.jsonl", &options);
            let loaded = loaded.map_err(|err| TestCaseError::fail(format!("{err}: {line}")))?;
            prop_assert_eq!(loaded.episodes, vec![e]);
        }
    }
}

/// Lines that are almost datasets: any edit of a valid line, in either
/// layout, reads or fails with an error, never a panic; what reads and is
/// generic writes back as itself.
mod edited_lines {
    use super::super::{generic_line, load_str, LoadOptions};
    use super::{ama_line, generic_line as a_generic_line};
    use proptest::prelude::*;

    /// An edit: at a place (a fraction of the line), delete some bytes
    /// and insert a piece made of JSON's own characters and odd values.
    fn edit() -> impl Strategy<Value = (f64, usize, String)> {
        let piece = prop_oneof![
            "[\\[\\]{}:,\"\\\\0-9a-z .eE+-]{0,6}",
            Just("null".to_string()),
            Just("-1".to_string()),
            Just("1e999".to_string()),
            Just("18446744073709551616".to_string()),
            Just("\"\\ud800\"".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
        ];
        (0.0..1.0f64, 0usize..8, piece)
    }

    fn apply(line: &str, edits: &[(f64, usize, String)]) -> String {
        let mut bytes = line.as_bytes().to_vec();
        for (at, cut, piece) in edits {
            let i = ((bytes.len() as f64) * at) as usize;
            let end = (i + cut).min(bytes.len());
            bytes.splice(i..end, piece.bytes());
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn an_edited_line_reads_or_fails_cleanly(
            generic in any::<bool>(),
            empty in any::<bool>(),
            edits in prop::collection::vec(edit(), 1..4),
        ) {
            let line = if generic { a_generic_line("g1") } else { ama_line(7, 3) };
            let text = apply(&line, &edits);
            let options = LoadOptions { into_tenant: empty, ..LoadOptions::default() };
            match load_str(&text, "d.jsonl", &options) {
                Err(e) => prop_assert!(e.to_string().starts_with("d.jsonl:1:"), "{e}"),
                Ok(loaded) => {
                    for mut e in loaded.episodes {
                        prop_assert!(empty || !e.steps.is_empty());
                        let again = load_str(&generic_line(&e), "e.jsonl", &options);
                        let again = again.map_err(|err| TestCaseError::fail(format!("{err}: {text}")))?;
                        // What loading changed is noted in the first read only.
                        e.notes.clear();
                        prop_assert_eq!(again.episodes, vec![e]);
                    }
                }
            }
        }
    }
}
