//! The word index follows every write in its transaction: appends,
//! corrections, forgets of steps and of whole episodes (an import appends); a file
//! written before it is filled when opened; a forgotten step's words are
//! in no page of any file after compaction.

use super::tests::step;
use super::*;

fn episode(t: &Tenant, id: &str, steps: &[(&str, &str)]) {
    t.create_episode(&NewEpisode {
        id: id.into(),
        task: "keep the build green".into(),
        ..NewEpisode::default()
    })
    .unwrap();
    let steps = steps.iter().map(|(a, o)| step(a, o)).collect();
    t.append_batch(id, steps).unwrap();
}

fn found(t: &Tenant, text: &str) -> Vec<String> {
    t.word_matches(text)
        .unwrap()
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

/// The terms the index holds (FTS5's own listing of them).
fn terms(t: &Tenant) -> Vec<String> {
    let conn = t.conn();
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.terms USING fts5vocab(main, step_words, 'row');",
    )
    .unwrap();
    let mut q = conn.prepare("SELECT term FROM temp.terms").unwrap();
    let rows = q.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn the_episodes_whose_steps_share_the_words_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let t = LiveMemory::open(dir.path()).unwrap().tenant("t").unwrap();
    episode(
        &t,
        "db",
        &[("SELECT * FROM orders", "Error: no such table: orders")],
    );
    episode(&t, "garden", &[("water the roses", "the soil is wet")]);
    episode(&t, "both", &[("water the tables", "done")]);
    // Stems match ("tables" and "table"); "the" is a stopword.
    assert_eq!(
        found(&t, "Which table of orders was missing?"),
        ["db", "both"]
    );
    assert_eq!(found(&t, "the roses"), ["garden"]);
    assert!(found(&t, "the of and").is_empty());
    // Quotes and FTS5 syntax in a question are words, not syntax.
    assert_eq!(found(&t, "\"roses\" OR NEAR(* -"), ["garden"]);
    // A correction replaces the step's words.
    t.correct("garden", 0, step("prune the hedge", "short"))
        .unwrap();
    assert!(found(&t, "roses").is_empty());
    assert_eq!(found(&t, "hedge"), ["garden"]);
    // Forgets, of steps and of episodes.
    t.forget("db", Forget::Step(0)).unwrap();
    assert_eq!(found(&t, "table"), ["both"]);
    t.forget("both", Forget::Episode).unwrap();
    assert!(found(&t, "table").is_empty());
    assert!(!terms(&t).iter().any(|w| w == "tabl" || w == "order"));
    // Another tenant's words are not this one's.
    let u = LiveMemory::open(dir.path()).unwrap().tenant("u").unwrap();
    assert!(found(&u, "hedge").is_empty());
}

#[test]
fn a_forgotten_steps_words_are_in_no_file_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let t = LiveMemory::open(dir.path()).unwrap().tenant("t").unwrap();
    // A word no other term shares a prefix with, so that its bytes are
    // whole in the index's pages (FTS5 stores a term after the prefix it
    // shares with the one before).
    const WORD: &str = "qjxvkzw";
    let filler: Vec<(String, String)> = (0..200)
        .map(|i| (format!("step {i}"), "ordinary output".to_string()))
        .collect();
    let filler: Vec<(&str, &str)> = filler
        .iter()
        .map(|(a, o)| (a.as_str(), o.as_str()))
        .collect();
    episode(&t, "e", &filler);
    t.append("e", step("read the key", &format!("the key is {WORD}")))
        .unwrap();
    assert_eq!(found(&t, WORD), ["e"]);
    assert!(terms(&t).iter().any(|w| w == WORD));
    t.forget("e", Forget::Step(200)).unwrap();
    assert!(found(&t, WORD).is_empty());
    assert!(!terms(&t).iter().any(|w| w == WORD));
    t.compact().unwrap();
    let mut files = Vec::new();
    super::tests::scan(dir.path(), WORD.as_bytes(), &mut files);
    assert!(files.is_empty(), "{WORD} is still in {files:?}");
}

#[test]
fn a_file_written_before_the_index_is_filled_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let m = LiveMemory::open(dir.path()).unwrap();
    let t = m.tenant("t").unwrap();
    episode(
        &t,
        "db",
        &[("SELECT * FROM orders", "Error: no such table")],
    );
    // As a version 2 file: no index.
    t.conn()
        .execute_batch(
            "DROP TABLE step_words; DROP TABLE step_rows;
             UPDATE meta SET value = '2' WHERE key = 'version';",
        )
        .unwrap();
    drop(t);
    let t = m.tenant("t").unwrap();
    assert_eq!(found(&t, "orders"), ["db"]);
    // And it keeps up from then on.
    t.append("db", step("CREATE TABLE invoices", "ok")).unwrap();
    assert_eq!(found(&t, "invoices"), ["db"]);
    assert_eq!(super::tests::version(&t), db::VERSION.to_string());
}
