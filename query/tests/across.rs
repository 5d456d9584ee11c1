//! One question over many episodes (`ask_across`): the episodes whose
//! evidence shows the question's words (by their stems) come first, each with the answer a
//! question to it alone gets; a forgotten step is found in none; named
//! episodes bound the search.

use mesa_core::Mask;
use mesa_memory::{Forget, LiveMemory, NewEpisode, NewStep, Tenant};
use mesa_query::{ask_across, AcrossError, AcrossOptions, SharedChooser};

fn episode(t: &Tenant, id: &str, created: &str, steps: &[(&str, &str)]) {
    episode_at(t, id, created, steps, None);
}

/// [`episode`], its steps at `timestamp` (now when `None`).
fn episode_at(
    t: &Tenant,
    id: &str,
    created: &str,
    steps: &[(&str, &str)],
    timestamp: Option<&str>,
) {
    t.create_episode(&NewEpisode {
        id: id.into(),
        task: "keep the build green".into(),
        created: Some(created.into()),
        ..NewEpisode::default()
    })
    .expect("episode");
    let steps = steps
        .iter()
        .map(|(a, o)| NewStep {
            index: None,
            action: a.to_string(),
            observation: o.to_string(),
            timestamp: timestamp.map(str::to_string),
        })
        .collect();
    t.append_batch(id, steps).expect("steps");
}

fn tenant(dir: &std::path::Path) -> Tenant {
    let t = LiveMemory::open(dir)
        .expect("memory")
        .tenant("t")
        .expect("tenant");
    episode(
        &t,
        "deploy",
        "2026-03-01T10:00:00Z",
        &[
            ("run the deploy script", "uploaded 3 artifacts"),
            ("check the dashboard", "latency is normal"),
        ],
    );
    episode(
        &t,
        "flaky",
        "2026-03-02T10:00:00Z",
        &[
            (
                "run the tests",
                "test_login failed: connection refused by postgres",
            ),
            ("restart postgres", "postgres is accepting connections"),
            ("run the tests", "all 212 tests passed"),
        ],
    );
    episode(
        &t,
        "docs",
        "2026-03-03T10:00:00Z",
        &[("edit the readme", "saved README.md")],
    );
    t
}

#[test]
fn the_episode_that_holds_the_answer_comes_first_with_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    let all = SharedChooser::Fixed(Mask::ALL);
    let q = "Why did test_login fail with postgres?";
    let across = ask_across(&t, &all, q, &AcrossOptions::default().limit(5)).expect("asked");
    assert_eq!(across.searched, 3);
    let first = &across.found[0];
    assert_eq!(first.episode, "flaky");
    assert!(
        across
            .found
            .iter()
            .skip(1)
            .all(|f| f.relevance < first.relevance),
        "{:?}",
        across
            .found
            .iter()
            .map(|f| (&f.episode, f.relevance))
            .collect::<Vec<_>>()
    );
    // Its entry is the answer a question to that episode alone gets.
    let alone = all
        .ask(&t.memory("flaky").expect("memory"), q, None, false)
        .expect("alone")
        .0;
    let items = |a: &mesa_query::Answer| {
        a.composition
            .items()
            .map(|i| (i.structure, i.steps.clone(), i.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(items(&first.answer), items(&alone));

    // Named episodes bound the search; the limit keeps the best.
    let named = ["deploy".to_string(), "docs".to_string()];
    let some = ask_across(
        &t,
        &all,
        q,
        &AcrossOptions::default().episodes(Some(&named)).limit(5),
    )
    .expect("asked");
    assert_eq!(some.searched, 2);
    assert!(some.found.iter().all(|f| f.episode != "flaky"));
    let one = ask_across(&t, &all, q, &AcrossOptions::default().limit(1)).expect("asked");
    assert_eq!(one.found.len(), 1);
    assert_eq!(one.found[0].episode, "flaky");
    let json = one.to_json(q, None, true);
    assert_eq!(json["episodes"][0]["episode"], "flaky");
    assert!(json["episodes"][0]["relevance"].as_f64().unwrap_or(0.0) > 0.0);
}

#[test]
fn a_forgotten_step_is_found_in_no_episode() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    let all = SharedChooser::Fixed(Mask::ALL);
    let q = "artifacts uploaded";
    let before = ask_across(&t, &all, q, &AcrossOptions::default().limit(5)).expect("asked");
    assert_eq!(before.found[0].episode, "deploy");
    t.forget("deploy", Forget::Step(0)).expect("forget");
    let after = ask_across(&t, &all, q, &AcrossOptions::default().limit(5)).expect("asked");
    assert!(
        after
            .found
            .iter()
            .flat_map(|f| f.answer.composition.items())
            .all(|i| !i.text.contains("artifacts")),
        "forgotten means gone"
    );
}

#[test]
fn bad_asks_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    let all = SharedChooser::Fixed(Mask::ALL);
    let named = ["nope".to_string()];
    let err = ask_across(
        &t,
        &all,
        "postgres",
        &AcrossOptions::default().episodes(Some(&named)).limit(5),
    )
    .expect_err("unknown");
    assert!(matches!(err, AcrossError::UnknownEpisode { ref id } if id == "nope"));
    assert!(err.to_string().contains("GET /v1/episodes"), "{err}");
    let err = ask_across(&t, &all, "  ", &AcrossOptions::default().limit(5)).expect_err("empty");
    assert!(matches!(err, AcrossError::EmptyQuestion), "{err}");
    // Only stopwords or punctuation: nothing to match, and every episode
    // still ranked.
    for q in ["what was it", "?!"] {
        let none = ask_across(&t, &all, q, &AcrossOptions::default().limit(5)).expect("asked");
        assert_eq!((none.searched, none.found.len()), (3, 3), "{q}");
        assert!(none.found.iter().all(|f| f.relevance == 0.0), "{q}");
    }
    // A deadline already past: nothing is asked.
    let past = AcrossOptions::default().deadline(Some(std::time::Instant::now()));
    let err = ask_across(&t, &all, "postgres", &past).expect_err("out of time");
    assert!(
        matches!(err, AcrossError::OutOfTime { searched: 0 }),
        "{err}"
    );
    assert_eq!(err.code(), "timeout");
    for limit in [0, mesa_query::MAX_LIMIT + 1] {
        let err = ask_across(&t, &all, "postgres", &AcrossOptions::default().limit(limit))
            .expect_err("bad limit");
        assert_eq!(err.code(), "bad-limit", "{err}");
    }
}

/// A word the question shares with its answer only by its stem still
/// ranks that episode first.
#[test]
fn words_are_compared_by_their_stems() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    let all = SharedChooser::Fixed(Mask::ALL);
    // "restarting" is in no step; "restart" is, in "flaky" only.
    let across =
        ask_across(&t, &all, "restarting", &AcrossOptions::default().limit(5)).expect("asked");
    assert_eq!(across.found[0].episode, "flaky");
    assert!(across.found[0].relevance > 0.0);
    assert!(across.found[1..].iter().all(|f| f.relevance == 0.0));
}

/// An empty tenant has nothing to search; an episode named twice is asked
/// once.
#[test]
fn empty_tenants_and_repeated_names() {
    let dir = tempfile::tempdir().unwrap();
    let all = SharedChooser::Fixed(Mask::ALL);
    let empty = LiveMemory::open(dir.path())
        .expect("memory")
        .tenant("e")
        .expect("tenant");
    let none =
        ask_across(&empty, &all, "postgres", &AcrossOptions::default().limit(5)).expect("asked");
    assert_eq!((none.searched, none.found.len()), (0, 0));
    let t = tenant(&dir.path().join("t"));
    let twice = ["flaky".to_string(), "flaky".to_string()];
    let one = ask_across(
        &t,
        &all,
        "postgres",
        &AcrossOptions::default().episodes(Some(&twice)).limit(5),
    )
    .expect("asked");
    assert_eq!(one.searched, 1);
    assert_eq!(one.found.len(), 1);
    assert!(one.skipped.is_empty());
}

/// Episodes already built are asked first (so that a search over more
/// steps than the tenant keeps built builds again only what it must), yet
/// ties still fall back to the newest episode, and the answers are those of
/// a tenant that keeps everything.
#[test]
fn ties_keep_the_newest_first_whichever_episode_was_built() {
    let dir = tempfile::tempdir().unwrap();
    let memory = LiveMemory::open(dir.path()).expect("memory");
    let (some, all) = (memory.clone().keeping_steps(2), memory);
    let t = some.tenant("t").expect("tenant");
    for (id, created) in [
        ("old", "2026-03-01T10:00:00Z"),
        ("mid", "2026-03-02T10:00:00Z"),
        ("new", "2026-03-03T10:00:00Z"),
    ] {
        let steps = [("run the tests", "212 passed"), ("push", "ok")];
        episode_at(&t, id, created, &steps, Some("2026-03-01T10:00:00Z"));
    }
    let all_five = SharedChooser::Fixed(Mask::ALL);
    let ask = |t: &Tenant| {
        let found = ask_across(
            t,
            &all_five,
            "did the tests pass?",
            &AcrossOptions::default(),
        )
        .expect("asks");
        let ids: Vec<String> = found.found.iter().map(|f| f.episode.clone()).collect();
        let texts: Vec<String> = found
            .found
            .iter()
            .map(|f| format!("{:?}", f.answer.composition))
            .collect();
        (ids, texts)
    };
    // Only `old` is built: it is asked first.
    t.memory("old").expect("builds");
    assert!(t.is_resident("old") && !t.is_resident("new"));
    let (ids, texts) = ask(&t);
    assert_eq!(ids, ["new", "mid", "old"]);
    // The budget kept the last one built, and nothing else.
    assert_eq!(t.resident().episodes, 1);
    drop(t);
    let t = all.tenant("t").expect("tenant");
    assert_eq!(ask(&t), (ids, texts));
    assert_eq!(t.resident().episodes, 3);
}

/// In a tenant with more episodes than `candidates`, only that many are
/// asked (the rest are never built): those whose steps share the
/// question's words, and when fewer do, the newest others; the best is the
/// one a search of every episode finds.
#[test]
fn candidates_from_the_word_index_bound_what_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let t = tenant(dir.path());
    for i in 0..6 {
        episode(
            &t,
            &format!("chore-{i}"),
            &format!("2026-04-0{}T10:00:00Z", i + 1),
            &[("sweep the floor", "the floor is clean")],
        );
    }
    let all = SharedChooser::Fixed(Mask::ALL);
    let q = "Why did test_login fail with postgres?";
    let narrow = AcrossOptions::default().limit(1).candidates(Some(2));
    let some = ask_across(&t, &all, q, &narrow).expect("asked");
    assert_eq!(
        (some.considered, some.searched),
        (9, 2),
        "only `flaky` shares a word; the newest other makes up the two"
    );
    assert_eq!(some.found[0].episode, "flaky");
    let every = ask_across(&t, &all, q, &narrow.candidates(None)).expect("asked");
    assert_eq!((every.considered, every.searched), (9, 9));
    assert_eq!(every.found[0].episode, "flaky");
    assert_eq!(
        format!("{:?}", some.found[0].answer.composition),
        format!("{:?}", every.found[0].answer.composition)
    );
    // No episode shares a word: the newest ones, up to the limit.
    let none = ask_across(&t, &all, "xylophone?", &narrow.limit(3)).expect("asked");
    assert_eq!(none.searched, 3);
    let mut ids: Vec<&str> = none.found.iter().map(|f| f.episode.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["chore-3", "chore-4", "chore-5"]);
    // 0 from a front end asks every one; a number below the limit is the limit.
    let zero = AcrossOptions::default().asking_at_most(0);
    assert_eq!(zero.candidates, None);
    let few = ask_across(
        &t,
        &all,
        "floor",
        &AcrossOptions::default().limit(4).candidates(Some(1)),
    );
    assert_eq!(few.expect("asked").searched, 4);
}
