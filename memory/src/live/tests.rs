//! The live store's guarantees: streamed = batch, forget means gone,
//! tenants are partitions, writes are atomic and readers see whole
//! versions, bad input is refused with nothing lost.

use super::*;
use crate::Retrieval;
use mesa_core::{Mask, Structure};

fn memory() -> (tempfile::TempDir, LiveMemory) {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    (dir, m)
}

fn new_episode(id: &str) -> NewEpisode {
    NewEpisode {
        id: id.into(),
        task: "Fix the failing date test".into(),
        domain: "SOFTWARE".into(),
        ..NewEpisode::default()
    }
}

pub(super) fn step(action: &str, observation: &str) -> NewStep {
    NewStep {
        index: None,
        action: action.into(),
        observation: observation.into(),
        timestamp: None,
    }
}

/// Everything a question gets from all five structures.
fn answers(m: &EpisodeMemory, questions: &[String]) -> Vec<crate::Composition> {
    questions
        .iter()
        .map(|q| Retrieval::new(m, q).compose(Mask::ALL).expect("retrieves"))
        .collect()
}

/// A store built by appending an episode's steps one at a time (and asked
/// questions along the way, so its snapshots are extended step by step)
/// answers every question exactly as one built in one batch from the same
/// steps:
/// same evidence, order, scores and tokens (offline builders, built-in
/// embedder; no AMA-Bench episode passes the HNSW threshold, so V is exact).
#[test]
fn streamed_equals_batch_on_ama_bench_episodes() {
    let Some(loaded) = crate::testing::ama() else {
        return;
    };
    let (_dir, m) = memory();
    let t = m.tenant("bench").expect("tenant");
    // Episodes of several domains and lengths.
    let picked: Vec<&Episode> = loaded.episodes.iter().step_by(23).take(9).collect();
    assert!(picked.len() >= 5);
    for e in picked {
        t.create_episode(&NewEpisode::of(e)).expect("create");
        for (k, s) in e.steps.iter().enumerate() {
            // Ask now and then, so that later snapshots are extensions of
            // earlier ones (EpisodeMemory::extended) rather than rebuilds.
            if k % 7 == 3 {
                let m = t.memory(&e.id).expect("memory");
                assert_eq!(m.episode.steps.len(), k);
            }
            t.append(
                &e.id,
                NewStep {
                    index: Some(s.index),
                    action: s.action.clone(),
                    observation: s.observation.clone(),
                    timestamp: Some("2026-03-01T10:00:00Z".into()),
                },
            )
            .expect("append");
        }
        let streamed = t.memory(&e.id).expect("memory");
        // The batch build over exactly the stored steps.
        let stored = t.episode(&e.id).expect("episode");
        assert_eq!(stored.steps.len(), e.steps.len());
        let batch = EpisodeMemory::build(Arc::new(stored), &Config::default(), &Plugins::default())
            .expect("batch");
        let mut questions: Vec<String> = e.questions.iter().map(|q| q.question.clone()).collect();
        questions.push("What happened at step 3?".into());
        questions.push("Why did the last action fail?".into());
        let (a, b) = (answers(&streamed, &questions), answers(&batch, &questions));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "episode {} question {i}: {}", e.id, questions[i]);
        }
    }
}

/// A writer persists a long episode's built state; a handle opened later
/// reopens it and extends it by the steps appended since, and answers
/// exactly as a batch build of the same steps. A damaged state is not
/// trusted: the episode is rebuilt, with the same answers.
#[test]
fn a_persisted_state_reopens_to_the_same_answers() {
    let Some(loaded) = crate::testing::ama() else {
        return;
    };
    let (_dir, m) = memory();
    let long: Vec<&Episode> = loaded
        .episodes
        .iter()
        .filter(|e| e.steps.len() >= state::PERSIST_MIN_STEPS + 40)
        .take(2)
        .collect();
    assert!(!long.is_empty(), "AMA-Bench has long episodes");
    for e in long {
        let cut = e.steps.len() - 30;
        let t = m.tenant("bench").expect("tenant");
        t.create_episode(&NewEpisode::of(e)).expect("create");
        t.append_batch(&e.id, e.steps[..cut].iter().map(NewStep::of).collect())
            .expect("append");
        t.memory(&e.id).expect("memory");
        let (row, _) = db::state(&t.conn(), &e.id, None)
            .unwrap()
            .expect("persisted");
        assert_eq!((row.steps, row.last_idx), (cut, e.steps[cut - 1].index));
        drop(t);
        // Appended by a handle that never asks: its closing has no built
        // episode to persist, so the state still covers `cut` steps.
        let t = m.tenant("bench").expect("tenant");
        t.append_batch(&e.id, e.steps[cut..].iter().map(NewStep::of).collect())
            .expect("append");
        drop(t);
        let stored = t_episode(&m, &e.id);
        let stored_steps = stored.steps.clone();
        let batch = EpisodeMemory::build(Arc::new(stored), &Config::default(), &Plugins::default())
            .expect("batch");
        let mut questions: Vec<String> = e.questions.iter().map(|q| q.question.clone()).collect();
        questions.push("What happened at step 3?".into());
        let want = answers(&batch, &questions);
        // A state that covers another number of steps than the episode
        // has up to its last one (here: a row changed behind the store's
        // back) is not trusted either.
        for (damaged, change) in [
            (false, None),
            (true, Some("UPDATE states SET steps = steps - 1")),
            (true, Some("UPDATE states SET state = x'0102'")),
        ] {
            let t = m.tenant("bench").expect("tenant");
            if let Some(sql) = change {
                t.conn().execute(sql, []).unwrap();
            }
            let reopened = t.memory(&e.id).expect("memory");
            let covered = t.snapshots.read().unwrap().persisted.get(&e.id).copied();
            // A damaged state is rebuilt over, and replaced by, the whole
            // episode.
            let n = e.steps.len();
            assert_eq!(covered, Some(if damaged { n } else { cut }), "{}", e.id);
            assert_eq!(reopened.episode.steps.len(), e.steps.len());
            // The steps the state covers were not read: the memory holds
            // their index and timestamp, and the steps after them whole;
            // the tenant still reads every step whole.
            for (k, (x, y)) in reopened.episode.steps.iter().zip(&stored_steps).enumerate() {
                assert_eq!((x.index, &x.timestamp), (y.index, &y.timestamp));
                let unread = !damaged && k < cut;
                assert_eq!(x.observation.is_empty(), unread || y.observation.is_empty());
                assert_eq!(x.action.is_empty(), unread, "step {k}");
            }
            assert_eq!(reopened.elided_steps(), if damaged { 0 } else { cut });
            assert_eq!(t.steps(&e.id).expect("steps"), stored_steps);
            let got = answers(&reopened, &questions);
            for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                assert_eq!(x, y, "episode {} question {i}: {}", e.id, questions[i]);
            }
            if change.is_some_and(|c| c.contains("x'0102'")) {
                // Steps appended after a question are persisted when the
                // writer closes.
                t.append_batch(&e.id, vec![step("ls", "a.py"), step("cat a.py", "x")])
                    .expect("append");
                drop(t);
                let r = m.reader("bench").expect("reader");
                let (row, _) = db::state(&r.conn(), &e.id, None)
                    .unwrap()
                    .expect("persisted");
                assert_eq!(row.steps, e.steps.len() + 2);
            }
        }
    }
}

fn t_episode(m: &LiveMemory, id: &str) -> Episode {
    m.reader("bench")
        .expect("reader")
        .episode(id)
        .expect("episode")
}

#[test]
fn indices_are_assigned_and_timestamps_kept_or_given() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    assert_eq!(t.append("e", step("ls", "a.py")).unwrap(), 0);
    let got = t
        .append_batch(
            "e",
            vec![
                step("cat a.py", "def f(): ..."),
                NewStep {
                    timestamp: Some("2026-03-01T10:00:00Z".into()),
                    ..step("pytest", "1 failed")
                },
            ],
        )
        .unwrap();
    assert_eq!(got, vec![1, 2]);
    let steps = t.steps("e").unwrap();
    assert_eq!(steps.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(steps[2].timestamp.as_deref(), Some("2026-03-01T10:00:00Z"));
    let given = steps[0].timestamp.as_deref().expect("the append's time");
    assert!(given.parse::<jiff::Timestamp>().is_ok(), "{given}");
    let list = t.episodes().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].id.as_str(), list[0].steps), ("e", 3));
}

#[test]
fn forgotten_text_is_in_no_file_after_compaction() {
    let (dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    const MARKER: &str = "zq-SECRET-7f3a9c-marker";
    // Long enough that the episode's built state is persisted too.
    let filler: Vec<NewStep> = (0..300)
        .map(|i| step(&format!("step {i}"), "ordinary output"))
        .collect();
    t.append_batch("e", filler).unwrap();
    t.append("e", step("read the key", &format!("the key is {MARKER}")))
        .unwrap();
    t.append("e", step("more", "after")).unwrap();
    let q = format!("What was {MARKER}?");
    let before = Retrieval::new(&t.memory("e").unwrap(), &q)
        .compose(Mask::ALL)
        .unwrap();
    assert!(before.render().contains(MARKER));
    let (_, [_, _, text]) = db::read_state(&t.conn(), "e")
        .unwrap()
        .expect("a persisted state");
    assert!(text.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()));
    assert_eq!(t.forget("e", Forget::Step(300)).unwrap(), 1);
    assert!(db::state(&t.conn(), "e", None).unwrap().is_none());
    // Gone from every structure at once.
    let m2 = t.memory("e").unwrap();
    for s in Structure::ALL {
        let ev = Retrieval::new(&m2, &q).compose(Mask::single(s)).unwrap();
        assert!(!ev.render().contains(MARKER), "{s:?}");
        assert!(ev.items().all(|i| !i.steps.contains(&300)), "{s:?}");
    }
    // While the tenant is open its write-ahead log still holds the page
    // the step was first written to.
    let mut found = Vec::new();
    scan(dir.path(), MARKER.as_bytes(), &mut found);
    assert!(
        !found.is_empty(),
        "expected the log to hold the marker before compaction"
    );
    t.compact().unwrap();
    let mut found = Vec::new();
    scan(dir.path(), MARKER.as_bytes(), &mut found);
    assert!(found.is_empty(), "the marker is still in {found:?}");
    drop(t);
    scan(dir.path(), MARKER.as_bytes(), &mut found);
    assert!(found.is_empty(), "the marker is in {found:?} after closing");
}

/// The layout version in the tenant's file.
pub(super) fn version(t: &Tenant) -> String {
    t.conn()
        .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
            r.get(0)
        })
        .unwrap()
}

/// Every file under `dir` that holds `needle`.
pub(super) fn scan(dir: &Path, needle: &[u8], found: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            scan(&p, needle, found);
        } else {
            let bytes = std::fs::read(&p).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(p);
            }
        }
    }
}

/// A step `act`/`obs` at `index` (one past the last when `None`).
fn at(index: Option<usize>) -> NewStep {
    NewStep {
        index,
        ..step("act", "obs")
    }
}

#[test]
fn explicit_indices_keep_a_logs_numbering() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    assert_eq!(
        t.append_batch("e", vec![at(Some(3)), at(None), at(Some(10))])
            .unwrap(),
        [3, 4, 10]
    );
    assert_eq!(t.append("e", at(None)).unwrap(), 11);
    let err = t
        .append_batch("e", vec![at(None), at(Some(5))])
        .unwrap_err();
    assert!(
        matches!(
            err,
            LiveError::IndexTaken {
                index: 5,
                next: 13,
                at: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        t.steps("e").unwrap().len(),
        4,
        "the refused batch wrote nothing"
    );
}

/// A forgotten episode leaves nothing of itself behind after compaction,
/// its kept next index included: its id is in no file.
#[test]
fn a_forgotten_episode_id_is_in_no_file_after_compaction() {
    let (dir, m) = memory();
    let t = m.tenant("a").unwrap();
    const ID: &str = "ep-zq-7f3a9c-gone";
    t.create_episode(&new_episode(ID)).unwrap();
    for i in 0..3 {
        t.append(ID, step(&format!("a{i}"), "o")).unwrap();
    }
    // Forgetting the last step keeps the episode's next index, by id.
    t.forget(ID, Forget::Step(2)).unwrap();
    assert_eq!(t.append(ID, step("next", "o")).unwrap(), 3);
    t.forget(ID, Forget::Episode).unwrap();
    t.compact().unwrap();
    drop(t);
    let mut found = Vec::new();
    scan(dir.path(), ID.as_bytes(), &mut found);
    assert!(found.is_empty(), "the id is still in {found:?}");
}

/// Indices past what the database keeps (a signed 64-bit integer) are
/// refused, given or implied, and the refused batch writes nothing: the
/// steps keep their order.
#[test]
fn indices_above_the_largest_are_refused() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    assert_eq!(t.append("e", at(Some(0))).unwrap(), 0);
    let err = t
        .append_batch("e", vec![at(Some(1)), at(Some(super::MAX_STEP_INDEX + 1))])
        .unwrap_err();
    assert!(
        matches!(err, LiveError::IndexTooLarge { at: 1, .. }),
        "{err}"
    );
    assert_eq!(err.code(), "index-too-large");
    assert!(err.to_string().contains("number steps from 0"), "{err}");
    let max = super::MAX_STEP_INDEX;
    assert_eq!(t.append("e", at(Some(max))).unwrap(), max);
    let err = t.append("e", at(None)).unwrap_err();
    assert!(
        matches!(err, LiveError::IndexTooLarge { index, .. } if index == max + 1),
        "{err}"
    );
    let indices: Vec<usize> = t.steps("e").unwrap().iter().map(|s| s.index).collect();
    assert_eq!(indices, [0, max]);
    let r = t.memory("e").unwrap();
    assert_eq!(r.episode.steps.len(), 2);
}

#[test]
fn forget_ranges_and_episodes() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    for i in 0..10 {
        t.append("e", step(&format!("a{i}"), "o")).unwrap();
    }
    assert_eq!(t.forget("e", Forget::Range(3, 5)).unwrap(), 3);
    let idx: Vec<usize> = t.steps("e").unwrap().iter().map(|s| s.index).collect();
    assert_eq!(idx, [0, 1, 2, 6, 7, 8, 9]);
    // The next index never reuses a forgotten one below the last.
    assert_eq!(t.append("e", step("next", "o")).unwrap(), 10);
    let err = t.forget("e", Forget::Step(4)).unwrap_err();
    assert!(
        matches!(
            err,
            LiveError::UnknownStep {
                index: 4,
                last: Some(10),
                ..
            }
        ),
        "{err}"
    );
    // Nor one at the end: forgetting the last steps keeps the next index,
    // so a retried forget of index 10 cannot remove a new step.
    assert_eq!(t.forget("e", Forget::Range(9, 10)).unwrap(), 2);
    assert_eq!(t.append("e", step("after", "o")).unwrap(), 11);
    assert!(t.forget("e", Forget::Step(10)).is_err());
    // An index past what the database holds forgets nothing.
    assert!(t.forget("e", Forget::Step(usize::MAX)).is_err());
    assert!(t.forget("e", Forget::Range(0, usize::MAX)).is_ok());
    assert!(t.steps("e").unwrap().is_empty());
    assert_eq!(t.append("e", step("later", "o")).unwrap(), 12);
    assert_eq!(t.forget("e", Forget::Episode).unwrap(), 1);
    assert!(matches!(
        t.steps("e"),
        Err(LiveError::UnknownEpisode { .. })
    ));
    assert!(t.episodes().unwrap().is_empty());
    // A new episode of the same id starts again at 0: nothing of the old
    // one is left, its next index included.
    t.create_episode(&new_episode("e")).unwrap();
    assert_eq!(t.append("e", step("again", "o")).unwrap(), 0);
}

#[test]
fn a_correction_replaces_the_text_in_every_structure() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    t.append("e", step("open config.yaml", "port: 8080"))
        .unwrap();
    t.append("e", step("restart server", "listening")).unwrap();
    t.correct("e", 0, step("open config.yaml", "port: 9091"))
        .unwrap();
    let mem = t.memory("e").unwrap();
    let text = Retrieval::new(&mem, "Which port is configured?")
        .compose(Mask::ALL)
        .unwrap()
        .render();
    assert!(text.contains("9091") && !text.contains("8080"), "{text}");
    assert!(matches!(
        t.correct("e", 7, step("x", "y")),
        Err(LiveError::UnknownStep {
            index: 7,
            last: Some(1),
            ..
        })
    ));
}

#[test]
fn tenants_are_partitions() {
    let (_dir, m) = memory();
    let a = m.tenant("alice").unwrap();
    let b = m.tenant("bob").unwrap();
    for t in [&a, &b] {
        t.create_episode(&new_episode("shared-id")).unwrap();
    }
    a.append(
        "shared-id",
        step(
            "alice reads her inbox",
            "from: carol, subject: tax-refund-ALICE",
        ),
    )
    .unwrap();
    b.append(
        "shared-id",
        step("bob opens the wiki", "page: onboarding-BOB"),
    )
    .unwrap();
    let ask = |t: &Tenant| {
        Retrieval::new(
            &t.memory("shared-id").unwrap(),
            "What did the agent read? tax refund onboarding",
        )
        .compose(Mask::ALL)
        .unwrap()
        .render()
    };
    let (ta, tb) = (ask(&a), ask(&b));
    assert!(ta.contains("ALICE") && !ta.contains("BOB"), "{ta}");
    assert!(tb.contains("BOB") && !tb.contains("ALICE"), "{tb}");
    assert_eq!(a.episodes().unwrap()[0].steps, 1);
    a.forget("shared-id", Forget::Episode).unwrap();
    assert_eq!(b.episodes().unwrap().len(), 1);
    assert_eq!(m.tenants().unwrap(), ["alice", "bob"]);
}

#[test]
fn bad_input_is_refused_and_nothing_is_lost() {
    let (dir, m) = memory();
    for bad in ["..", "a/b", "", "a.b", "x".repeat(65).as_str(), "tenant\0"] {
        assert!(
            matches!(m.tenant(bad), Err(LiveError::BadTenant { .. })),
            "{bad:?}"
        );
    }
    let t = m.tenant("a").unwrap();
    assert!(matches!(
        t.append("nope", step("a", "b")),
        Err(LiveError::UnknownEpisode { .. })
    ));
    t.create_episode(&new_episode("e")).unwrap();
    assert!(matches!(
        t.create_episode(&new_episode("e")),
        Err(LiveError::EpisodeExists { .. })
    ));
    t.append("e", step("first", "kept")).unwrap();
    assert!(matches!(
        t.append("e", step("  ", "x")),
        Err(LiveError::Empty { .. })
    ));
    let huge = "x".repeat(4 << 20);
    let err = t.append("e", step("dump", &huge)).unwrap_err();
    assert!(
        matches!(err, LiveError::TooLarge { bytes, .. } if bytes == 4 << 20),
        "{err}"
    );
    // A batch with one bad step writes none of it.
    let err = t
        .append_batch("e", vec![step("ok", "ok"), step("", "bad")])
        .unwrap_err();
    assert!(matches!(err, LiveError::Empty { .. }), "{err}");
    for (when, reason) in [
        ("yesterday-ish", "yesterday-ish"),
        ("10000-01-01T00:00:00Z", "9999"),
        ("9999-12-31T23:59:59Z", "9999"),
    ] {
        let err = t
            .append(
                "e",
                NewStep {
                    timestamp: Some(when.into()),
                    ..step("a", "b")
                },
            )
            .unwrap_err();
        assert!(matches!(err, LiveError::BadTimestamp { .. }), "{err}");
        assert!(err.to_string().contains("years 0000 to 9999"), "{err}");
        assert!(err.to_string().contains(reason), "{err}");
    }
    assert!(matches!(
        t.forget("e", Forget::Step(9)),
        Err(LiveError::UnknownStep { .. })
    ));
    assert_eq!(t.steps("e").unwrap().len(), 1);
    // A second writer of the same tenant is refused while the first lives.
    assert!(matches!(m.tenant("a"), Err(LiveError::Locked { .. })));
    drop(t);
    let t = m.tenant("a").expect("the lock went with the handle");
    assert_eq!(t.steps("e").unwrap()[0].observation, "kept");
    // A directory that is not a live memory.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "x").unwrap();
    assert!(matches!(
        LiveMemory::open(&other),
        Err(LiveError::NotAMemory { .. })
    ));
    let built = dir.path().join("built");
    std::fs::create_dir_all(&built).unwrap();
    std::fs::write(built.join("manifest.json"), "{}").unwrap();
    let err = LiveMemory::open(&built).unwrap_err();
    assert!(matches!(err, LiveError::BuiltStore { .. }), "{err}");
    assert!(err.to_string().contains("mesa build"), "{err}");
    // Another version.
    std::fs::write(
        m.root().join(MARKER),
        r#"{"format": "mesa-live-memory", "version": 99}"#,
    )
    .unwrap();
    assert!(matches!(
        LiveMemory::open(m.root()),
        Err(LiveError::Version { found: 99, .. })
    ));
}

/// Readers querying while a writer appends see whole versions: every
/// snapshot's steps are 0..n with nothing missing, and n only grows.
#[test]
fn readers_never_see_half_an_append() {
    let (_dir, m) = memory();
    let t = Arc::new(m.tenant("a").unwrap());
    t.create_episode(&new_episode("e")).unwrap();
    t.append("e", step("start", "ok")).unwrap();
    let writer = {
        let t = t.clone();
        std::thread::spawn(move || {
            for i in 0..60 {
                let batch = (0..3).map(|j| step(&format!("a{i}-{j}"), "o")).collect();
                t.append_batch("e", batch).unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut last = 0;
                for _ in 0..40 {
                    let mem = t.memory("e").unwrap();
                    let idx: Vec<usize> = mem.episode.steps.iter().map(|s| s.index).collect();
                    let n = idx.len();
                    assert_eq!(idx, (0..n).collect::<Vec<_>>());
                    assert_eq!((n - 1) % 3, 0, "a batch of 3 is all or nothing: {n}");
                    assert!(n >= last);
                    last = n;
                    let c = Retrieval::new(&mem, "What happened at step 2?")
                        .compose(Mask::ALL)
                        .unwrap();
                    assert!(c.items().all(|i| i.steps.iter().all(|s| *s < n)));
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(t.steps("e").unwrap().len(), 181);
    // A snapshot built while a write raced it is not kept: the next
    // question sees every acknowledged step.
    assert_eq!(t.memory("e").unwrap().episode.steps.len(), 181);
}

/// T answers "when" questions from the steps' timestamps, and evidence
/// shows them.
#[test]
fn time_references_reach_the_steps_of_those_times() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    let days = [
        ("2026-02-27T09:00:00Z", "install dependencies", "ok"),
        (
            "2026-02-28T10:00:00Z",
            "run migrations",
            "table users created",
        ),
        ("2026-02-28T16:00:00Z", "deploy staging", "healthy"),
        ("2026-03-01T08:00:00Z", "rotate keys", "new key issued"),
        ("2026-03-01T12:00:00Z", "deploy production", "healthy"),
    ];
    for (at, a, o) in days {
        t.append(
            "e",
            NewStep {
                timestamp: Some(at.into()),
                ..step(a, o)
            },
        )
        .unwrap();
    }
    let mem = t.memory("e").unwrap();
    let steps_of = |q: &str| -> Vec<usize> {
        let ev = Retrieval::new(&mem, q)
            .compose(Mask::single(Structure::Temporal))
            .unwrap();
        ev.steps()
    };
    assert_eq!(steps_of("What did the agent do yesterday?"), [1, 2]);
    assert_eq!(steps_of("What happened on 2026-02-27?"), [0]);
    assert_eq!(steps_of("What ran in the last 5 hours?"), [3, 4]);
    assert_eq!(
        steps_of("What happened between Feb 27 and Feb 28?"),
        [0, 1, 2]
    );
    let text = Retrieval::new(&mem, "What happened today?")
        .compose(Mask::single(Structure::Temporal))
        .unwrap()
        .render();
    assert!(
        text.contains("[step 3 · 2026-03-01T08:00:00Z] action: rotate keys"),
        "{text}"
    );
}

/// A reader beside the writer sees each committed change and cannot write.
#[test]
fn a_reader_follows_the_writer_and_cannot_write() {
    let (_dir, m) = memory();
    assert!(matches!(
        m.reader("a"),
        Err(LiveError::UnknownTenant { .. })
    ));
    let w = m.tenant("a").unwrap();
    w.create_episode(&new_episode("e")).unwrap();
    w.append("e", step("first", "one")).unwrap();
    // Another handle on the same directory, as another process would open it.
    let r = LiveMemory::open(m.root()).unwrap().reader("a").unwrap();
    assert!(!r.is_writer() && w.is_writer());
    assert_eq!(r.memory("e").unwrap().episode.steps.len(), 1);
    w.append("e", step("second", "two")).unwrap();
    assert_eq!(r.memory("e").unwrap().episode.steps.len(), 2);
    w.forget("e", Forget::Step(0)).unwrap();
    let idx: Vec<usize> = r
        .memory("e")
        .unwrap()
        .episode
        .steps
        .iter()
        .map(|s| s.index)
        .collect();
    assert_eq!(idx, [1]);
    for err in [
        r.append("e", step("x", "y")).unwrap_err(),
        r.forget("e", Forget::Episode).unwrap_err(),
        r.create_episode(&new_episode("f")).unwrap_err(),
        r.compact().unwrap_err(),
    ] {
        assert!(matches!(err, LiveError::ReadOnly { .. }), "{err}");
    }
    assert_eq!(w.steps("e").unwrap().len(), 1);
}

/// A disk that fills during an append: a clear error, the batch is not
/// written, everything acknowledged before it is still there, and writing
/// works again once there is room.
#[test]
fn a_full_disk_refuses_the_write_and_loses_nothing() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    for i in 0..5 {
        t.append("e", step(&format!("kept {i}"), "ok")).unwrap();
    }
    t.fill_disk(0);
    let big = "y".repeat(200_000);
    let err = t
        .append_batch("e", vec![step("fits", "small"), step("huge", &big)])
        .unwrap_err();
    assert!(matches!(err, LiveError::DiskFull { .. }), "{err}");
    assert!(err.to_string().contains("disk is full"), "{err}");
    let steps = t.steps("e").unwrap();
    assert_eq!(steps.len(), 5);
    assert!(steps.iter().all(|s| s.action.starts_with("kept")));
    assert_eq!(t.memory("e").unwrap().episode.steps.len(), 5);
    t.fill_disk(10_000);
    assert_eq!(t.append("e", step("after", "room again")).unwrap(), 5);
}

/// An episode with no steps yet answers with empty evidence, no panic.
#[test]
fn an_empty_episode_answers_with_nothing() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    let mem = t.memory("e").unwrap();
    for q in [
        "What happened at step 0?",
        "What happened yesterday?",
        "why",
    ] {
        let c = Retrieval::new(&mem, q).compose(Mask::ALL).unwrap();
        assert!(
            c.items()
                .all(|i| i.steps.is_empty() || i.structure == Structure::Summary),
            "{q}"
        );
    }
    t.append("e", step("first", "ok")).unwrap();
    assert_eq!(t.memory("e").unwrap().episode.steps.len(), 1);
}

/// A memory written by the version before persisted states opens, keeps
/// its steps, and is marked with the new version, so that the older build
/// (which would not drop a state on a correction) refuses it afterwards.
#[test]
fn a_version_1_memory_is_upgraded() {
    let (_dir, m) = memory();
    let t = m.tenant("a").unwrap();
    t.create_episode(&new_episode("e")).unwrap();
    t.append("e", step("ls", "a.py")).unwrap();
    t.conn()
        .execute("UPDATE meta SET value = '1' WHERE key = 'version'", [])
        .unwrap();
    drop(t);
    let v1 = format!(r#"{{"format": "{}", "version": 1}}"#, db::FORMAT);
    std::fs::write(m.root().join(MARKER), v1).unwrap();
    let m = LiveMemory::open(m.root()).expect("upgraded");
    let marker = std::fs::read_to_string(m.root().join(MARKER)).unwrap();
    assert!(
        marker.contains(&format!("\"version\":{}", db::VERSION)),
        "{marker}"
    );
    let t = m.tenant("a").unwrap();
    assert_eq!(t.steps("e").unwrap().len(), 1);
    assert_eq!(version(&t), db::VERSION.to_string());
}
