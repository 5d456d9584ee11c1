//! A writer killed (SIGKILL) while it writes a persisted state or keeps
//! questions: each is one SQLite transaction, so the store keeps the old
//! state or the new one, never part of one, every acknowledged question
//! whole, every acknowledged append's request id, and the episode answers
//! as a batch build.
//!
//! The test binary runs itself as the child (the test's name with
//! [`CHILD`] set), which appends, keeps questions and asks in a loop on
//! fresh handles, so that each question opens the stored state, extends it
//! and writes the next one.

use super::*;
use crate::Retrieval;
use mesa_core::Mask;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child: the memory's directory.
const CHILD: &str = "MESA_STATE_KILL_CHILD";
/// Set in the child: the episode it writes.
const CHILD_EPISODE: &str = "MESA_STATE_KILL_EPISODE";
/// Steps per append in the child: a fresh handle's question then lags
/// the stored state by at least [`state::PERSIST_MIN_STEPS`] and writes it.
const BATCH: usize = state::PERSIST_MIN_STEPS + 4;

fn child_step(k: usize, i: usize) -> NewStep {
    NewStep {
        index: None,
        action: format!("batch {k} step {i}: open file{i}.txt"),
        observation: format!("file{i}.txt holds {} lines", (i * 31) % 97),
        timestamp: None,
    }
}

/// The request id of the child `pid`'s batch `k`.
fn request_id(pid: u32, k: usize) -> String {
    format!("{pid}-{k}")
}

/// The questions the child keeps after batch `k`: `QUESTIONS` of them, in
/// one call.
const QUESTIONS: usize = 40;

fn child_question(k: usize, i: usize) -> crate::dataset::Question {
    crate::dataset::Question {
        id: format!("q{k}-{i}"),
        question: format!("batch {k} question {i}: how many lines does file{i}.txt hold?"),
        answer: Some(format!("{} lines", (i * 31) % 97)),
        qtype: None,
        evidence: vec![i],
    }
}

/// The child: a fresh writer handle per batch appends it, acknowledges it
/// (`appended N`), keeps its questions (`keeping`, then `kept N MICROS`:
/// how many the episode holds, and how long keeping them took), then asks
/// (`asking`, then `asked MICROS`).
fn child(root: &Path, episode: &str) {
    let m = LiveMemory::open(root).expect("opens");
    let mut out = std::io::stdout().lock();
    for k in 0..8 {
        let t = m.tenant("t").expect("tenant");
        if t.steps(episode).is_err() {
            t.create_episode(&NewEpisode {
                id: episode.into(),
                task: "list the files".into(),
                domain: "SOFTWARE".into(),
                ..NewEpisode::default()
            })
            .expect("create");
        }
        let steps = (0..BATCH).map(|i| child_step(k, i)).collect();
        t.append_once(episode, steps, Some(&request_id(std::process::id(), k)))
            .expect("append");
        let n = t.steps(episode).expect("steps").len();
        writeln!(out, "appended {n}").and_then(|_| out.flush()).ok();
        let qs: Vec<_> = (0..QUESTIONS).map(|i| child_question(k, i)).collect();
        writeln!(out, "keeping").and_then(|_| out.flush()).ok();
        let t0 = Instant::now();
        t.add_questions(episode, &qs).expect("questions");
        let took = t0.elapsed().as_micros();
        let n = t.questions(episode).expect("questions").len();
        writeln!(out, "kept {n} {took}")
            .and_then(|_| out.flush())
            .ok();
        writeln!(out, "asking").and_then(|_| out.flush()).ok();
        let t0 = Instant::now();
        t.memory(episode).expect("memory");
        let took = t0.elapsed().as_micros();
        writeln!(out, "asked {took}").and_then(|_| out.flush()).ok();
    }
}

/// This test binary run again as a child that runs the test `name` alone
/// with `envs` set; its standard output is read line by line.
pub(super) fn spawn_self(
    name: &str,
    envs: &[(&str, &std::ffi::OsStr)],
) -> (
    std::process::Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    (child, lines)
}

/// Pseudo-random draws below `n` (xorshift64 from `seed`), the same in
/// every run.
pub(super) fn draws(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// What a kill round saw.
struct Round {
    /// The child's process id (its batches' request ids begin with it).
    pid: u32,
    /// How many of its batches it acknowledged.
    appends: usize,
    acked: usize,
    kept: usize,
    mid_question: bool,
    /// Killed while the second batch's questions were being kept (after
    /// the call began, before it was acknowledged).
    mid_questions: bool,
}

/// Runs one child on `episode` and kills it after a random share of its
/// second question (the first one times it), or, after its second
/// append's acknowledgement, within the time the first batch's questions
/// took to keep, while it keeps that batch's questions. (A fixed window
/// made how many kills landed there depend on how long the child's
/// previous state write held the database.)
fn round(root: &Path, episode: &str, next: &mut impl FnMut(u64) -> u64) -> Round {
    let (mut child, mut lines) = spawn_self(
        "live::kill_tests::a_killed_state_write_leaves_the_old_state_or_the_new",
        &[(CHILD, root.as_os_str()), (CHILD_EPISODE, episode.as_ref())],
    );
    let pid = child.id();
    let (mut acked, mut kept, mut asks) = (0, 0, 0);
    let (mut took, mut keeping) = (Duration::from_millis(5), Duration::from_millis(2));
    let mut mid_question = false;
    // A third of the rounds are killed while the second batch's questions
    // are being kept, the rest while the second question runs.
    let at_questions = next(3) == 0;
    let mut appends = 0;
    while let Some(Ok(line)) = lines.next() {
        // The first line follows the test harness's own words.
        if let Some((_, n)) = line.split_once("appended ") {
            acked = n.parse().expect("a count");
            appends += 1;
            if at_questions && appends == 2 {
                let share = next(90) as u32;
                std::thread::sleep(keeping * share / 100);
                break;
            }
        } else if let Some(n) = line.strip_prefix("kept ") {
            let (n, us) = n.split_once(' ').expect("a count and micros");
            kept = n.parse().expect("a count");
            keeping = Duration::from_micros(us.parse().expect("micros"));
        } else if let Some(us) = line.strip_prefix("asked ") {
            took = Duration::from_micros(us.parse().expect("micros"));
        } else if line == "asking" {
            asks += 1;
            if asks == 2 {
                let share = next(90) as u32;
                std::thread::sleep(took * share / 100);
                mid_question = true;
                break;
            }
        }
    }
    child.kill().expect("kill");
    let _ = child.wait();
    // What the child printed before the kill landed: whether the question
    // had returned, or the questions been kept.
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let printed = |p: &str| rest.iter().any(|l| l.starts_with(p));
    Round {
        pid,
        appends,
        acked,
        kept,
        mid_question: mid_question && !printed("asked"),
        // Inside the call: it had begun, and not returned.
        mid_questions: at_questions && printed("keeping") && !printed("kept"),
    }
}

/// 30 kills, about half in the middle of a question that writes a state,
/// a third before a batch's questions were acknowledged. After
/// them each episode holds every acknowledged step and question (each
/// question whole), its word index holds exactly its steps, its stored
/// state (if any) opens, and its answers are a batch build's.
#[test]
fn a_killed_state_write_leaves_the_old_state_or_the_new() {
    if let Ok(root) = std::env::var(CHILD) {
        let episode = std::env::var(CHILD_EPISODE).expect("an episode");
        child(Path::new(&root), &episode);
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("mem");
    let mut next = draws(0x2545_f491_4f6c_dd1d);
    let episodes = ["e0", "e1", "e2", "e3", "e4", "e5"];
    let (mut acked, mut kept) = ([0usize; 6], [0usize; 6]);
    let (mut mid, mut mid_questions) = (0, 0);
    let mut sent = Vec::new();
    for r in 0..30 {
        let got = round(&root, episodes[r % 6], &mut next);
        sent.push((episodes[r % 6], got.pid, got.appends));
        acked[r % 6] = acked[r % 6].max(got.acked);
        kept[r % 6] = kept[r % 6].max(got.kept);
        mid += usize::from(got.mid_question);
        mid_questions += usize::from(got.mid_questions);
    }
    eprintln!("{mid} of 30 kills landed before a question that writes a state returned");
    eprintln!("{mid_questions} of 30 kills landed while a batch's questions were being kept");
    assert!(mid >= 10, "only {mid} of 30 kills landed mid-question");
    assert!(
        mid_questions >= 3,
        "only {mid_questions} kills landed while questions were kept"
    );
    let m = LiveMemory::open(&root).expect("reopens");
    let t = m.tenant("t").expect("tenant");
    // Every acknowledged batch's request id outlived the kills: sent
    // again, it appends nothing.
    let batches: usize = sent.iter().map(|s| s.2).sum();
    assert!(batches >= 30, "only {batches} batches acknowledged");
    for &(e, pid, appends) in &sent {
        for k in 0..appends {
            let before = t.steps(e).expect("steps").len();
            let steps = (0..BATCH).map(|i| child_step(k, i)).collect();
            let again = t.append_once(e, steps, Some(&request_id(pid, k)));
            assert!(again.expect("replays").replayed, "{e}: batch {k} of {pid}");
            assert_eq!(t.steps(e).expect("steps").len(), before);
        }
    }
    let (config, plugins) = (Config::default(), Plugins::default());
    for ((e, &acked), &kept) in episodes.iter().zip(&acked).zip(&kept) {
        let steps = t.steps(e).expect("steps");
        assert!(
            steps.len() >= acked,
            "{e}: {} of {acked} steps",
            steps.len()
        );
        let qs = t.questions(e).expect("questions");
        assert!(qs.len() >= kept, "{e}: {} of {kept} questions", qs.len());
        // Whole calls only: a batch's questions are all there or none.
        assert_eq!(qs.len() % QUESTIONS, 0, "{e}: part of a call kept");
        for q in &qs {
            let (k, i) = q.id[1..].split_once('-').expect("an id the child wrote");
            let want = child_question(k.parse().expect("k"), i.parse().expect("i"));
            assert_eq!(q, &want, "{e}: question {} is not whole", q.id);
        }
        // The word index holds exactly the steps that survived (every
        // step's observation says `lines`), as it is written in the
        // step's own transaction.
        let indexed: Vec<i64> = t
            .conn()
            .prepare(
                "SELECT r.idx FROM step_words w JOIN step_rows r ON r.row = w.rowid
                 WHERE step_words MATCH 'lines' AND r.episode = ?1 ORDER BY r.idx",
            )
            .expect("prepares")
            .query_map([e], |r| r.get(0))
            .expect("reads")
            .collect::<Result<_, _>>()
            .expect("rows");
        let stored: Vec<i64> = steps.iter().map(|s| s.index as i64).collect();
        let first_difference = indexed.iter().zip(&stored).position(|(a, b)| a != b);
        assert!(
            indexed == stored,
            "{e}: the word index holds {} steps, the episode {}; first difference at {:?}",
            indexed.len(),
            stored.len(),
            first_difference
        );
        let episode = t.load(e, false).expect("loads").episode;
        let (state, [graph, rest, text]) = db::read_state(&t.conn(), e)
            .expect("reads")
            .expect("a state was written");
        // The state opens as it is (not rebuilt over).
        let mut prefix = episode.clone();
        prefix.steps.truncate(state.steps);
        let bytes = crate::structures::StateBytes {
            graph: &graph,
            rest: &rest,
            text: &text,
        };
        let reopened = EpisodeMemory::reopen(Arc::new(prefix), bytes, &config, &plugins);
        assert!(reopened.is_ok(), "{e}: the stored state does not open");
        let live = t.memory(e).expect("memory");
        let batch = EpisodeMemory::build(Arc::new(episode), &config, &plugins).expect("batch");
        for q in [
            "What did the agent open at step 300?",
            "How many lines does file7.txt hold?",
        ] {
            let (a, b) = (Retrieval::new(&live, q), Retrieval::new(&batch, q));
            assert_eq!(
                a.compose(Mask::ALL).expect("live"),
                b.compose(Mask::ALL).expect("batch"),
                "{e}: {q}"
            );
        }
    }
}
