//! The budget of built episodes (module `resident`): past it, the episodes
//! asked about least recently are dropped, and built again, to the same
//! answers, when asked about.

use super::*;
use crate::Retrieval;
use mesa_core::Mask;

fn step(i: usize) -> NewStep {
    NewStep {
        index: None,
        action: format!("open invoice {i}"),
        observation: format!("invoice {i} is paid"),
        timestamp: None,
    }
}

/// A tenant keeping at most `budget` steps built, with episodes of `len`
/// steps each, named by `ids`.
fn tenant(dir: &Path, budget: usize, ids: &[&str], len: usize) -> Tenant {
    filled(&budgeted(dir, budget), "a", ids, len)
}

/// A memory in `dir` keeping at most `budget` steps built.
fn budgeted(dir: &Path, budget: usize) -> LiveMemory {
    LiveMemory::open(&dir.join("mem"))
        .expect("opens")
        .keeping_steps(budget)
}

fn kept(t: &Tenant) -> Vec<String> {
    let s = t.snapshots.read().unwrap();
    let mut ids: Vec<String> = s.built.iter().map(|(k, _)| k.clone()).collect();
    ids.sort();
    ids
}

#[test]
fn the_least_recently_asked_episode_is_dropped_past_the_budget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = tenant(dir.path(), 25, &["a", "b", "c"], 10);
    t.memory("a").unwrap();
    t.memory("b").unwrap();
    t.memory("a").unwrap();
    assert_eq!(kept(&t), ["a", "b"]);
    // c makes 30 steps: b, asked before a's second question, goes.
    t.memory("c").unwrap();
    assert_eq!(kept(&t), ["a", "c"]);
    let r = t.resident();
    assert_eq!((r.episodes, r.steps, r.budget), (2, 20, 25));
    // b is built again, and a (now the oldest) goes.
    assert_eq!(t.memory("b").unwrap().episode.steps.len(), 10);
    assert_eq!(kept(&t), ["b", "c"]);
}

#[test]
fn an_episode_over_the_budget_is_kept_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = tenant(dir.path(), 0, &["a", "b"], 10);
    t.memory("a").unwrap();
    assert_eq!(kept(&t), ["a"]);
    let held = t.memory("a").unwrap();
    t.memory("b").unwrap();
    assert_eq!(kept(&t), ["b"]);
    // A question that holds a dropped snapshot keeps it whole.
    assert_eq!(held.episode.steps.len(), 10);
    assert_eq!(t.resident().steps, 10);
}

#[test]
fn a_dropped_episode_keeps_the_steps_appended_after_its_build() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = tenant(dir.path(), 10, &["a", "b"], 10);
    t.memory("a").unwrap();
    // Kept beside a's snapshot, pending: a is dropped before it is
    // extended.
    t.append("a", step(10)).unwrap();
    t.memory("b").unwrap();
    assert_eq!(kept(&t), ["b"]);
    assert!(t.snapshots.read().unwrap().appended.is_empty());
    let a = t.memory("a").unwrap();
    assert_eq!(a.episode.steps.len(), 11);
    let q = "Which invoice was opened at step 10?";
    let want = EpisodeMemory::build(
        Arc::new(t.episode("a").unwrap()),
        &Config::default(),
        &Plugins::default(),
    )
    .unwrap();
    let got = Retrieval::new(&a, q).compose(Mask::ALL).unwrap();
    assert_eq!(got, Retrieval::new(&want, q).compose(Mask::ALL).unwrap());
}

/// AMA-Bench episodes, one of them long enough to have a persisted state,
/// asked in turns under a budget that holds about two of them: every
/// answer is the one a batch build of the stored episode gives.
#[test]
fn dropping_and_building_again_changes_no_answer_on_ama_bench() {
    let Some(loaded) = crate::testing::ama() else {
        return;
    };
    let mut chosen: Vec<&Episode> = loaded
        .episodes
        .iter()
        .filter(|e| e.steps.len() < 80)
        .take(4)
        .collect();
    let long = loaded
        .episodes
        .iter()
        .find(|e| e.steps.len() >= state::PERSIST_MIN_STEPS);
    chosen.extend(long);
    assert_eq!(chosen.len(), 5, "AMA-Bench has short and long episodes");
    let dir = tempfile::tempdir().expect("temp dir");
    let budget = 120;
    let m = LiveMemory::open(&dir.path().join("mem"))
        .expect("opens")
        .keeping_steps(budget);
    let t = m.tenant("bench").expect("tenant");
    let mut batch = Vec::new();
    for e in &chosen {
        t.create_episode(&NewEpisode::of(e)).expect("create");
        t.append_batch(&e.id, e.steps.iter().map(NewStep::of).collect())
            .expect("append");
        let stored = Arc::new(t.episode(&e.id).unwrap());
        batch.push(EpisodeMemory::build(stored, &Config::default(), &Plugins::default()).unwrap());
    }
    let mut most = 0;
    for round in 0..2 {
        for (e, want) in chosen.iter().zip(&batch) {
            let got = t.memory(&e.id).unwrap();
            // The long one is read back from its persisted state in round 1.
            assert_eq!(got.elided_steps() > 0, round == 1 && e.steps.len() >= 256);
            for q in e.questions.iter().take(3) {
                let a = Retrieval::new(want, &q.question)
                    .compose(Mask::ALL)
                    .unwrap();
                let b = Retrieval::new(&got, &q.question)
                    .compose(Mask::ALL)
                    .unwrap();
                assert_eq!(a, b, "round {round}, {}: {}", e.id, q.question);
            }
            let r = t.resident();
            assert!(r.steps <= budget.max(e.steps.len()), "{r:?}");
            most = most.max(r.episodes);
        }
    }
    assert!(most < 5, "the budget dropped episodes");
}

/// Episodes `ids` of `len` steps each, in tenant `name` of `m`.
fn filled(m: &LiveMemory, name: &str, ids: &[&str], len: usize) -> Tenant {
    let t = m.tenant(name).expect("tenant");
    for id in ids {
        t.create_episode(&NewEpisode {
            id: id.to_string(),
            task: "sort the invoices".into(),
            ..NewEpisode::default()
        })
        .expect("create");
        t.append_batch(id, (0..len).map(step).collect())
            .expect("append");
    }
    t
}

#[test]
fn the_tenants_of_one_memory_share_its_budget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = budgeted(dir.path(), 25);
    let a = filled(&m, "a", &["x", "y"], 10);
    let b = filled(&m, "b", &["x", "y"], 10);
    a.memory("x").unwrap();
    b.memory("x").unwrap();
    a.memory("y").unwrap();
    // 30 steps: a's x, asked first, goes.
    assert_eq!(kept(&a), ["y"]);
    assert_eq!(kept(&b), ["x"]);
    a.memory("y").unwrap();
    b.memory("y").unwrap();
    // b's x is now the oldest of the three.
    assert_eq!(kept(&a), ["y"]);
    assert_eq!(kept(&b), ["y"]);
    let (ra, rb) = (a.resident(), b.resident());
    assert_eq!((ra.steps, rb.steps), (10, 10));
    assert_eq!((ra.shared_steps, rb.shared_steps, ra.budget), (20, 20, 25));
    assert_eq!(m.budget_drops(), 2, "a's x, then b's x");
    // A tenant closed gives its steps back.
    drop(a);
    assert_eq!(b.resident().shared_steps, 10);
    // Another memory has its own budget.
    let other = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let c = filled(&other, "c", &["x"], 10);
    c.memory("x").unwrap();
    assert_eq!(c.resident().shared_steps, 10);
    assert_eq!(b.resident().shared_steps, 10);
}

/// Threads asking about the episodes of four tenants at once: no
/// deadlock, the shared count is the sum of what each keeps, and once they
/// are done it is within the budget.
#[test]
fn tenants_asked_at_once_stay_within_the_shared_budget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = budgeted(dir.path(), 35);
    let ids = ["p", "q", "r"];
    let tenants: Vec<Arc<Tenant>> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| Arc::new(filled(&m, n, &ids, 10)))
        .collect();
    std::thread::scope(|scope| {
        for k in 0..4 {
            let tenants = &tenants;
            scope.spawn(move || {
                for i in 0..60 {
                    let t = &tenants[(i * (k + 1) + k) % tenants.len()];
                    let got = t.memory(ids[(i + k) % ids.len()]).unwrap();
                    assert_eq!(got.episode.steps.len(), 10);
                }
            });
        }
    });
    let mine: usize = tenants.iter().map(|t| t.resident().steps).sum();
    let shared = tenants[0].resident().shared_steps;
    assert_eq!(mine, shared);
    assert!(shared <= 35, "{shared} steps kept");
    assert!(shared >= 10, "the last one asked is kept");
}
