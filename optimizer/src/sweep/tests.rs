use super::synthetic::{generate, SyntheticConfig};
use super::*;
use std::io::Cursor;

fn small() -> Vec<SweepRecord> {
    generate(&SyntheticConfig {
        episodes: 6,
        questions_per_episode: 3,
        seed: 5,
        ..SyntheticConfig::default()
    })
}

fn write_text(records: &[SweepRecord]) -> String {
    let labelled = records.iter().filter(|r| r.labelled).count();
    let header = SweepHeader::new(
        UtilityKind::EvidenceRecall,
        "synthetic",
        "none",
        records.len(),
        labelled,
    );
    let mut w = SweepWriter::new(Vec::new(), &header).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    String::from_utf8(w.finish().unwrap()).unwrap()
}

fn read_text(text: &str) -> Result<Vec<SweepRecord>, SweepError> {
    let r = SweepReader::new(Path::new("s.jsonl"), Cursor::new(text.as_bytes().to_vec()))?;
    r.collect()
}

fn err(text: &str) -> String {
    match read_text(text) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn round_trip_and_mask_indices() {
    let records = small();
    let text = write_text(&records);
    assert_eq!(read_text(&text).unwrap(), records);
    assert_eq!(Mask::subset(0), Mask::from_bits(1));
    assert_eq!(Mask::subset(30), Mask::ALL);
    for k in 0..Mask::SUBSETS {
        assert_eq!(Mask::subset_index(Mask::subset(k)), Some(k));
    }
    assert_eq!(Mask::subset_index(Mask::EMPTY), None);
    // Deterministic generator.
    assert_eq!(small(), small());
}

#[test]
fn rejects_other_formats_and_versions() {
    let text = write_text(&small());
    // A version 1 sweep (three previews per structure) is refused with
    // the way out.
    let v1 = text.replacen("\"version\":2", "\"version\":1", 1);
    let e = err(&v1);
    assert!(
        e.contains("version 1") && e.contains("reads version 2") && e.contains("regenerate"),
        "{e}"
    );
    let other = text.replacen("mesa-sweep", "other", 1);
    assert!(err(&other).contains("format is `other`"));
    assert!(err("").contains("empty"));
    assert!(err("[1,2]\n").contains("not a MESA sweep"));
}

#[test]
fn names_line_and_field() {
    let text = write_text(&small());
    let lines: Vec<&str> = text.lines().collect();
    // Wrong array length on line 3.
    let mut v: Value = serde_json::from_str(lines[2]).unwrap();
    v["utility"].as_array_mut().unwrap().pop();
    let mut bad: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    bad[2] = v.to_string();
    let e = err(&(bad.join("\n") + "\n"));
    assert!(
        e.contains("s.jsonl:3")
            && e.contains("`utility`")
            && e.contains("expected 31 numbers, found 30"),
        "{e}"
    );
    // Missing field.
    let mut v: Value = serde_json::from_str(lines[1]).unwrap();
    v.as_object_mut().unwrap().remove("tokens");
    bad[2] = lines[2].to_string();
    bad[1] = v.to_string();
    let e = err(&(bad.join("\n") + "\n"));
    assert!(
        e.contains("s.jsonl:2") && e.contains("`tokens`: missing"),
        "{e}"
    );
    // A string where a number belongs.
    let mut v: Value = serde_json::from_str(lines[1]).unwrap();
    v["previews"]["R"][1] = Value::String("high".into());
    bad[1] = v.to_string();
    let e = err(&(bad.join("\n") + "\n"));
    assert!(e.contains("`previews.R`") && e.contains("item 1"), "{e}");
    // Not a finite number: JSON cannot say NaN; an overflowing literal is refused.
    bad[1] = lines[1].replacen("\"utility\":[", "\"utility\":[1e999,", 1);
    let e = err(&(bad.join("\n") + "\n"));
    assert!(e.contains("s.jsonl:2"), "{e}");
    // Negative tokens.
    let mut v: Value = serde_json::from_str(lines[1]).unwrap();
    v["tokens"][4] = serde_json::json!(-1.0);
    bad[1] = v.to_string();
    let e = err(&(bad.join("\n") + "\n"));
    assert!(e.contains("`tokens`: item 4 is -1, outside 0 to"), "{e}");
    // Tokens past what any sum can hold, and a utility that is no share.
    v["tokens"][4] = serde_json::json!(1e300);
    bad[1] = v.to_string();
    let e = err(&(bad.join("\n") + "\n"));
    assert!(e.contains("`tokens`: item 4 is 1e300"), "{e}");
    for u in [1.5, -0.25] {
        let mut v: Value = serde_json::from_str(lines[1]).unwrap();
        v["utility"][7] = serde_json::json!(u);
        bad[1] = v.to_string();
        let e = err(&(bad.join("\n") + "\n"));
        assert!(
            e.contains(&format!("`utility`: item 7 is {u}, outside 0 to 1")),
            "{e}"
        );
    }
    // Malformed JSON in the middle (with a newline): not "truncated".
    bad[1] = lines[1][..40].to_string();
    let e = err(&(bad.join("\n") + "\n"));
    assert!(e.contains("s.jsonl:2") && e.contains("invalid JSON"), "{e}");
}

#[test]
fn truncated_and_counts_and_duplicates() {
    let text = write_text(&small());
    // Cut in the middle of the last line.
    let cut = &text[..text.len() - 30];
    let e = err(cut);
    assert!(e.contains("truncated"), "{e}");
    // Cut at a line boundary: the header's count catches it.
    let lines: Vec<&str> = text.lines().collect();
    let fewer = lines[..lines.len() - 2].join("\n") + "\n";
    let e = err(&fewer);
    assert!(e.contains("questions = 18") && e.contains("has 16"), "{e}");
    // A question given twice.
    let mut dup: Vec<&str> = lines.clone();
    dup[3] = lines[2];
    let e = err(&(dup.join("\n") + "\n"));
    assert!(e.contains("already given on line 3"), "{e}");
}

#[test]
fn writer_rejects_non_finite() {
    let mut r = small().remove(0);
    r.utility[3] = f64::NAN;
    let header = SweepHeader::new(UtilityKind::Judge, "d", "s", 1, 1);
    let mut w = SweepWriter::new(Vec::new(), &header).unwrap();
    let e = w.write(&r).unwrap_err().to_string();
    assert!(e.contains("utility[3]") && e.contains("finite"), "{e}");
}

#[test]
fn previews_may_be_partial() {
    let mut records = small();
    for r in &mut records {
        r.previews.remove(mesa_core::Structure::Raw);
    }
    let text = write_text(&records);
    let back = read_text(&text).unwrap();
    assert!(back
        .iter()
        .all(|r| r.previews.of(mesa_core::Structure::Raw).is_none()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, text).unwrap();
    let sweep = Sweep::read(&path).unwrap();
    assert_eq!(sweep.available_previews(), [true, true, true, true, false]);
}

#[test]
fn coverage_round_trips_and_bad_counts_are_named() {
    let mut records = small();
    let mut words = [0u32; Mask::SUBSETS];
    let mut steps = [0u32; Mask::SUBSETS];
    for k in 0..Mask::SUBSETS {
        words[k] = 3 * k as u32;
        steps[k] = (k % 7) as u32;
    }
    records[1].coverage = Some(Coverage { words, steps });
    let text = write_text(&records);
    let back = read_text(&text).unwrap();
    assert_eq!(back, records);
    assert_eq!(back[0].coverage, None);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_str(&lines[2]).unwrap();
        f(&mut v);
        let mut bad = lines.clone();
        bad[2] = v.to_string();
        err(&(bad.join("\n") + "\n"))
    };
    let e = with(&|v| {
        v.as_object_mut().unwrap().remove("steps");
    });
    assert!(
        e.contains("s.jsonl:3") && e.contains("`steps`: missing") && e.contains("both or neither"),
        "{e}"
    );
    let e = with(&|v| v["words"][2] = serde_json::json!(1.5));
    assert!(
        e.contains("`words`") && e.contains("item 2 is 1.5") && e.contains("whole number"),
        "{e}"
    );
    let e = with(&|v| v["steps"][0] = serde_json::json!(-1));
    assert!(e.contains("`steps`") && e.contains("item 0 is -1"), "{e}");
}
