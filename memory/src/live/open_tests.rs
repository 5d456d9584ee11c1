//! Opening a new root from several processes at once (agents started
//! together on one memory): each opening succeeds, and the root ends with
//! one whole marker.

use super::*;
use std::sync::Barrier;

#[test]
fn first_openings_at_once_all_succeed() {
    let dir = tempfile::tempdir().expect("temp dir");
    for round in 0..25 {
        let root = dir.path().join(format!("mem-{round}"));
        let n = 8;
        let start = Arc::new(Barrier::new(n));
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (root, start) = (root.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let m = LiveMemory::open(&root)?;
                    m.tenant(&format!("t{i}"))?.create_episode(&NewEpisode {
                        id: "e".into(),
                        task: "t".into(),
                        ..NewEpisode::default()
                    })
                })
            })
            .collect();
        for h in handles {
            h.join().expect("no panic").expect("every opening succeeds");
        }
        let m = LiveMemory::open(&root).expect("reopens");
        assert_eq!(m.tenants().expect("tenants").len(), n);
        let left: Vec<_> = std::fs::read_dir(&root)
            .expect("root")
            .map(|e| e.expect("entry").file_name())
            .filter(|name| crate::durable::is_part_of(name, MARKER))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A marker's unfinished sibling (a crash during the first opening) does
/// not make the root look like something else; any other file does.
#[test]
fn a_first_opening_cut_short_is_finished_by_the_next() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("mem");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join(format!(".{MARKER}.part-1-0")), "{\"for").unwrap();
    let m = LiveMemory::open(&root).expect("opens");
    m.tenant("a").expect("tenant");
    std::fs::remove_file(root.join(MARKER)).unwrap();
    let err = LiveMemory::open(&root).expect_err("a tenant but no marker");
    assert!(matches!(err, LiveError::NotAMemory { .. }), "{err}");
}

/// With a writer wait, an opening for writing takes the tenant once its
/// other writer closes; without one, or past it, it is refused.
#[test]
fn a_writer_waits_its_turn_when_asked() {
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    // A wait past any instant is no limit (and no overflow).
    let endless = m.clone().waiting_for_writer(Duration::MAX);
    drop(endless.tenant("a").expect("free: taken at once"));
    let first = m.tenant("a").expect("first writer");
    let err = m.tenant("a").map(|_| ()).expect_err("held");
    assert_eq!(err.code(), "locked");
    let short = m.clone().waiting_for_writer(Duration::from_millis(30));
    let err = short
        .tenant("a")
        .map(|_| ())
        .expect_err("held past the wait");
    assert_eq!(err.code(), "locked");
    let patient = m.clone().waiting_for_writer(Duration::from_secs(30));
    let second = std::thread::spawn(move || patient.tenant("a").map(|_| ()));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!second.is_finished(), "it waits while the first writes");
    first
        .create_episode(&NewEpisode {
            id: "e".into(),
            task: "t".into(),
            ..NewEpisode::default()
        })
        .expect("the first writes");
    drop(first);
    second
        .join()
        .expect("no panic")
        .expect("the second writer's turn");
}
