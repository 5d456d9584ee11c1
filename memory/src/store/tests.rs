use super::*;
use crate::structures::fixtures::{game_episode, sql_episode};
use crate::structures::Query;
use mesa_core::Structure;

fn episodes() -> Vec<Episode> {
    let mut v = vec![sql_episode(), game_episode(60), game_episode(130)];
    for i in 0..5 {
        let mut e = game_episode(20 + i);
        e.id = format!("extra-{i}");
        v.push(e);
    }
    v
}

const QUESTIONS: [&str; 4] = [
    "What error did the agent get at step 2?",
    "Why was the door locked?",
    "What happened between step 9 and step 11?",
    "Which columns of FINANCE.BANKS were queried?",
];

fn all_evidence(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for m in store.episodes() {
        for q in QUESTIONS {
            let query = Query::new(q);
            for s in Structure::ALL {
                let e = m.retrieve(s, &query).unwrap();
                out.push(serde_json::to_string(&e).unwrap());
            }
        }
    }
    out
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let config = Config::default();
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |p: &Progress| seen.lock().unwrap().push(p.done);
    let built = Store::build(
        episodes(),
        &config,
        &out,
        BuildOptions {
            progress: Some(&progress),
            ..BuildOptions::default()
        },
    )
    .unwrap();
    let mut done = seen.into_inner().unwrap();
    done.sort_unstable();
    assert_eq!(done, (1..=8).collect::<Vec<_>>());
    assert_eq!(built.manifest().counts.episodes, 8);
    assert_eq!(
        built.manifest().counts.steps,
        7 + 60 + 130 + 20 + 21 + 22 + 23 + 24
    );
    assert!(built.manifest().counts.relations > 0);
    // In-memory structures give the same evidence as the stored ones.
    let plugins = Plugins::default();
    let fresh: Vec<EpisodeMemory> = episodes()
        .into_iter()
        .map(|e| EpisodeMemory::build(Arc::new(e), &config, &plugins).unwrap())
        .collect();
    let opened = Store::open(&out).unwrap();
    assert_eq!(all_evidence(&built), all_evidence(&opened));
    for (m, f) in opened.episodes().iter().zip(&fresh) {
        for q in QUESTIONS {
            let query = Query::new(q);
            for s in Structure::ALL {
                assert_eq!(
                    m.retrieve(s, &query).unwrap(),
                    f.retrieve(s, &query).unwrap()
                );
            }
        }
    }
    assert!(opened.episode("sql-1").is_some());
    let r = opened.retrieval("sql-1", QUESTIONS[0]).unwrap();
    assert!(r.compose(mesa_core::Mask::ALL).unwrap().tokens > 0);
    // No temporary directories are left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names, ["store"]);
}

#[test]
fn builds_from_a_dataset_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.jsonl");
    let lines: Vec<String> = episodes()
        .iter()
        .take(2)
        .map(|e| {
            serde_json::json!({"id": e.id, "task": e.task, "domain": e.domain, "steps": e.steps})
                .to_string()
        })
        .chain(["not json".to_string()])
        .collect();
    std::fs::write(&data, lines.join("\n")).unwrap();
    let out = dir.path().join("s");
    let err = Store::build(
        data.as_path(),
        &Config::default(),
        &out,
        BuildOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        StoreError::Dataset(DatasetError::Json { line: 3, .. })
    ));
    assert!(!out.exists());
    let opts = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let s = Store::build(
        Source::Path(data, opts),
        &Config::default(),
        &out,
        BuildOptions::default(),
    )
    .unwrap();
    let load = s.manifest().load.as_ref().unwrap();
    assert_eq!(load.skipped.len(), 1);
    assert_eq!(load.skipped[0].0, 3);
    assert_eq!(s.episodes().len(), 2);
}

#[test]
fn a_crash_midway_leaves_the_old_store() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let config = Config::default();
    let old = Store::build(
        episodes()[..2].to_vec(),
        &config,
        &out,
        BuildOptions::default(),
    )
    .unwrap();
    let before = all_evidence(&old);
    drop(old);
    // A build that dies after half the episodes, leaving its temp dir.
    let err = Store::build(
        episodes(),
        &config,
        &out,
        BuildOptions {
            crash_after: Some(4),
            ..BuildOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)));
    let reopened = Store::open(&out).unwrap();
    assert_eq!(reopened.episodes().len(), 2);
    assert_eq!(all_evidence(&reopened), before);
    // The half-written directory is hidden and is not a store.
    let leftovers: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".store.tmp-")
        })
        .collect();
    assert_eq!(leftovers.len(), 1);
    assert!(matches!(
        Store::open(&leftovers[0]),
        Err(StoreError::NotAStore { .. })
    ));
    // A cancelled build cleans up after itself and keeps the old store.
    let cancel = AtomicBool::new(false);
    let progress = |p: &Progress| {
        if p.done >= 4 {
            cancel.store(true, Ordering::SeqCst);
        }
    };
    let err = Store::build(
        episodes(),
        &config,
        &out,
        BuildOptions {
            progress: Some(&progress),
            cancel: Some(&cancel),
            ..BuildOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, StoreError::Cancelled));
    assert_eq!(Store::open(&out).unwrap().episodes().len(), 2);
    // A full rebuild replaces it, and leaves no .old directory.
    let new = Store::build(episodes(), &config, &out, BuildOptions::default()).unwrap();
    assert_eq!(new.episodes().len(), 8);
    assert!(!std::fs::read_dir(dir.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains(".old-")));
}

#[test]
fn bad_store_directories() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    assert!(matches!(
        Store::open(&p.join("missing")),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(Store::open(p), Err(StoreError::NotAStore { .. })));
    std::fs::write(p.join("manifest.json"), "{\"hello\": 1}").unwrap();
    let e = Store::open(p).unwrap_err();
    assert!(e.to_string().contains("not a MESA memory store"), "{e}");
    std::fs::write(p.join("manifest.json"), "garbage").unwrap();
    assert!(matches!(Store::open(p), Err(StoreError::NotAStore { .. })));
    // A store of another version.
    let out = p.join("s");
    Store::build(
        episodes()[..1].to_vec(),
        &Config::default(),
        &out,
        BuildOptions::default(),
    )
    .unwrap();
    let m = out.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, text.replace("\"version\":1", "\"version\":99")).unwrap();
    let e = Store::open(&out).unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::Version {
                found: 99,
                expected: 1,
                ..
            }
        ),
        "{e}"
    );
    std::fs::write(&m, &text).unwrap();
    Store::open(&out).unwrap();
    // A damaged episode file names the file.
    let v = out.join("episodes/e000000/vectors.bin");
    std::fs::write(&v, b"MESAVEC1short").unwrap();
    let e = Store::open(&out).unwrap_err();
    assert!(
        matches!(&e, StoreError::Corrupt { path, .. } if path.ends_with("vectors.bin")),
        "{e}"
    );
    std::fs::remove_file(out.join("episodes/e000000/graph.json")).unwrap();
    assert!(matches!(
        Store::open(&out),
        Err(StoreError::Io { .. }) | Err(StoreError::Corrupt { .. })
    ));
    // Another embedder.
    struct Other;
    impl crate::Embedder for Other {
        fn name(&self) -> String {
            "other".into()
        }
        fn dim(&self) -> usize {
            8
        }
        fn embed(&self, t: &[&str]) -> Result<Vec<Vec<f32>>, crate::PluginError> {
            Ok(t.iter().map(|_| vec![0.0; 8]).collect())
        }
    }
    let plugins = Plugins {
        embedder: Arc::new(Other),
        ..Plugins::default()
    };
    std::fs::write(&m, &text).unwrap();
    assert!(matches!(
        Store::open_with(&out, plugins),
        Err(StoreError::EmbedderMismatch { .. })
    ));
    // Building over a directory that is not a store is refused.
    let busy = p.join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("precious.txt"), "x").unwrap();
    assert!(matches!(
        Store::build(
            episodes()[..1].to_vec(),
            &Config::default(),
            &busy,
            BuildOptions::default()
        ),
        Err(StoreError::NotReplaceable { .. })
    ));
    assert!(busy.join("precious.txt").exists());
    // Nor over a store that holds other files: a rebuild would delete them.
    let build = |dir: &Path| {
        Store::build(
            episodes()[..1].to_vec(),
            &Config::default(),
            dir,
            BuildOptions::default(),
        )
    };
    let kept = p.join("kept");
    build(&kept).unwrap();
    build(&kept).expect("a store alone is rebuilt over");
    std::fs::write(kept.join("notes.txt"), "mine").unwrap();
    let err = build(&kept).unwrap_err();
    assert!(matches!(err, StoreError::HoldsOtherFiles { .. }), "{err}");
    assert!(err.to_string().contains("`notes.txt`"), "{err}");
    assert_eq!(
        std::fs::read_to_string(kept.join("notes.txt")).unwrap(),
        "mine"
    );
}

/// A slice of the real AMA-Bench file, when it is there: build, open, same
/// evidence for every question, and T returns the steps questions name.
#[test]
fn ama_bench_slice_round_trip() {
    let Some(path) = crate::testing::ama_path() else {
        eprintln!("AMA-Bench data not found; skipping");
        return;
    };
    let episodes: Vec<Episode> = dataset::EpisodeReader::open(&path, LoadOptions::default())
        .unwrap()
        .step_by(35)
        .take(6)
        .map(Result::unwrap)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ama");
    let built = Store::build(
        episodes.clone(),
        &Config::default(),
        &out,
        BuildOptions::default(),
    )
    .unwrap();
    let opened = Store::open(&out).unwrap();
    let mut named = 0;
    for (a, b) in built.episodes().iter().zip(opened.episodes()) {
        for q in &a.episode.questions {
            let query = Query::new(&q.question);
            for s in Structure::ALL {
                assert_eq!(
                    a.retrieve(s, &query).unwrap(),
                    b.retrieve(s, &query).unwrap()
                );
            }
            let want = query.refs().resolve(&a.temporal.steps().indices, 5, 20);
            if !want.is_empty() {
                named += 1;
                let t = b.retrieve(Structure::Temporal, &query).unwrap();
                let got: Vec<usize> = t.items.iter().map(|i| i.steps[0]).collect();
                let want: Vec<usize> = want
                    .iter()
                    .map(|&p| a.temporal.steps().indices[p])
                    .collect();
                assert_eq!(got, want, "{}", q.question);
            }
        }
    }
    assert!(named > 10, "{named}");
}

#[test]
fn store_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<EpisodeMemory>();
    assert_send_sync::<Query>();
}

/// Past the HNSW threshold with a dense embedder, `build` saves V's graph in
/// the episode's directory and an opening loads it on the first question
/// that needs it; a damaged dump is built over.
#[test]
fn hnsw_graphs_are_saved_and_loaded() {
    use crate::structures::fixtures::Dense;
    use crate::structures::AnnSource;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let config = Config {
        vector_hnsw_threshold: 30,
        ..Config::default()
    };
    let plugins = || Plugins {
        embedder: Arc::new(Dense),
        ..Plugins::default()
    };
    let options = BuildOptions {
        plugins: plugins(),
        ..BuildOptions::default()
    };
    Store::build(episodes(), &config, &out, options).unwrap();
    let q = Query::new("Why was the door locked?");
    let ask = |store: &Store| -> Vec<(usize, Option<AnnSource>, String)> {
        let mut v = Vec::new();
        for m in store.episodes() {
            let e = m.retrieve(Structure::Vector, &q).unwrap();
            let text = serde_json::to_string(&e).unwrap();
            v.push((m.episode.steps.len(), m.vector.ann_source(), text));
        }
        v
    };
    let first = ask(&Store::open_with(&out, plugins()).unwrap());
    assert_eq!(first.len(), 8);
    for (n, source, _) in &first {
        let want = (*n > 30).then_some(AnnSource::Loaded);
        assert_eq!(*source, want, "{n} steps");
    }
    // A second opening loads the same graph: the same answers.
    assert_eq!(ask(&Store::open_with(&out, plugins()).unwrap()), first);
    // Damage every saved dump's data file: each graph is built instead.
    let mut damaged = 0;
    for e in std::fs::read_dir(out.join("episodes")).unwrap() {
        let ann = e.unwrap().path().join("ann");
        for f in std::fs::read_dir(&ann).into_iter().flatten() {
            let f = f.unwrap().path();
            if f.to_string_lossy().ends_with(".hnsw.data") {
                let len = std::fs::metadata(&f).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&f)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
                damaged += 1;
            }
        }
    }
    assert_eq!(damaged, 2);
    for (n, source, _) in ask(&Store::open_with(&out, plugins()).unwrap()) {
        assert_eq!(source, (n > 30).then_some(AnnSource::Built), "{n} steps");
    }
}
