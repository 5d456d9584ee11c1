//! A writer killed (SIGKILL) while it creates, corrects or forgets with a
//! request id: each such write and its id's row are one SQLite transaction,
//! so after the kill every acknowledged write is there and its id answers a
//! retry as a replay, and the write in flight is there whole or not at all
//! (sent again, it is applied once).
//!
//! The test binary runs itself as the child (the test's name with
//! [`CHILD`] set). Each of its rounds makes three episodes with three steps
//! (`w`, `x`, `z`: plain writes, not checked), then, each with its own id
//! and announced before (`begin`) and after (`done`): creates a fourth
//! episode (`c`), corrects `w`'s step 1, forgets `x`'s step 2, and forgets
//! `z`. Each write has an episode of its own, since a correction or a
//! forget clears the request ids of its episode.

use super::*;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Set in the child: the memory's directory.
const CHILD: &str = "MESA_ID_KILL_CHILD";
/// The child's rounds (it is killed long before the last).
const ROUNDS: usize = 200;
/// Kills, one child each.
const KILLS: usize = 24;

/// The four writes with an id, in the order a round sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Create,
    Correct,
    ForgetStep,
    ForgetEpisode,
}

impl Op {
    const ALL: [Op; 4] = [Op::Create, Op::Correct, Op::ForgetStep, Op::ForgetEpisode];

    fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Correct => "correct",
            Op::ForgetStep => "forget-step",
            Op::ForgetEpisode => "forget-episode",
        }
    }

    fn parse(s: &str) -> Op {
        *Op::ALL.iter().find(|o| o.name() == s).expect("an op")
    }

    /// The episode it writes in the child `pid`'s round `k`.
    fn episode(self, pid: u32, k: usize) -> String {
        let letter = match self {
            Op::Create => 'c',
            Op::Correct => 'w',
            Op::ForgetStep => 'x',
            Op::ForgetEpisode => 'z',
        };
        format!("{letter}-{pid}-{k}")
    }

    fn id(self, pid: u32, k: usize) -> String {
        format!("{}-{pid}-{k}", self.name())
    }

    /// Sends the write; returns whether it was a replay.
    fn send(self, t: &Tenant, pid: u32, k: usize) -> Result<bool, LiveError> {
        let (e, id) = (self.episode(pid, k), self.id(pid, k));
        match self {
            Op::Create => t.create_episode_once(&new_episode(&e), Some(&id)),
            Op::Correct => t.correct_once(&e, 1, corrected(k), Some(&id)),
            Op::ForgetStep => Ok(t.forget_once(&e, Forget::Step(2), Some(&id))?.replayed),
            Op::ForgetEpisode => Ok(t.forget_once(&e, Forget::Episode, Some(&id))?.replayed),
        }
    }

    /// Whether its effect is in the store (`Some(true)`), absent and the
    /// episode as before it (`Some(false)`), or neither (`None`).
    fn applied(self, t: &Tenant, pid: u32, k: usize) -> Option<bool> {
        let steps = t.steps(&self.episode(pid, k)).ok();
        let actions = steps.map(|s| s.into_iter().map(|s| s.action).collect::<Vec<_>>());
        let original: Vec<String> = (0..3).map(|i| plain(k, i).action).collect();
        match (self, actions) {
            (Op::Create, Some(a)) => a.is_empty().then_some(true),
            (Op::Create, None) | (Op::ForgetEpisode, None) => Some(self == Op::ForgetEpisode),
            (Op::ForgetEpisode, Some(a)) => (a == original).then_some(false),
            (Op::Correct, Some(a)) => {
                let mut fixed = original.clone();
                fixed[1] = corrected(k).action;
                (a == fixed)
                    .then_some(true)
                    .or((a == original).then_some(false))
            }
            (Op::ForgetStep, Some(a)) => {
                let fewer = vec![original[0].clone(), original[1].clone()];
                (a == fewer)
                    .then_some(true)
                    .or((a == original).then_some(false))
            }
            (_, None) => None,
        }
    }
}

fn new_episode(id: &str) -> NewEpisode {
    NewEpisode {
        id: id.into(),
        task: "tidy the files".into(),
        domain: "SOFTWARE".into(),
        ..NewEpisode::default()
    }
}

fn plain(k: usize, i: usize) -> NewStep {
    NewStep {
        index: None,
        action: format!("round {k} step {i}: open notes{i}.txt"),
        observation: format!("notes{i}.txt has {} words", (i * 17) % 53),
        timestamp: None,
    }
}

fn corrected(k: usize) -> NewStep {
    NewStep {
        index: None,
        action: format!("round {k} step 1, corrected: open todo.txt"),
        observation: "todo.txt has 4 items".into(),
        timestamp: None,
    }
}

/// The child: per round, the three plain episodes, then the four writes
/// with ids, each between `begin OP K` and `done OP K MICROS` (how long
/// it took).
fn child(root: &Path) {
    let m = LiveMemory::open(root).expect("opens");
    let t = m.tenant("t").expect("tenant");
    let pid = std::process::id();
    let mut out = std::io::stdout().lock();
    let mut say = |line: String| writeln!(out, "{line}").and_then(|_| out.flush()).ok();
    say(format!("pid {pid}"));
    for k in 0..ROUNDS {
        for op in [Op::Correct, Op::ForgetStep, Op::ForgetEpisode] {
            let e = op.episode(pid, k);
            t.create_episode(&new_episode(&e)).expect("create");
            t.append_batch(&e, (0..3).map(|i| plain(k, i)).collect())
                .expect("append");
        }
        for op in Op::ALL {
            say(format!("begin {} {k}", op.name()));
            let t0 = std::time::Instant::now();
            op.send(&t, pid, k).expect("the write");
            let took = t0.elapsed().as_micros();
            say(format!("done {} {k} {took}", op.name()));
        }
    }
}

/// What one kill left: the child's pid, the writes it acknowledged, and
/// the one it had begun and not acknowledged, if any.
struct Round {
    pid: u32,
    done: Vec<(Op, usize)>,
    in_flight: Option<(Op, usize)>,
}

/// Runs one child and kills it in its write after the `after`th
/// acknowledged one, `share` percent into the time the same kind of write
/// took last.
/// (The writes are short beside the plain ones between them, so a kill at
/// a random time would seldom land in one.)
fn round(root: &Path, after: usize, share: u32) -> Round {
    let (mut child, mut lines) = super::kill_tests::spawn_self(
        "live::kill_id_tests::a_killed_write_with_an_id_is_whole_and_replays",
        &[(CHILD, root.as_os_str())],
    );
    let pid = child.id();
    let mut done = Vec::new();
    let mut begun = None;
    // How long each kind of write took last.
    let mut took = [Duration::from_micros(200); 4];
    let mut killed = false;
    while let Some(Ok(line)) = lines.next() {
        match parse(&line) {
            Some(("begin", op, _)) => {
                begun = Some(op);
                if done.len() == after {
                    std::thread::sleep(took[op.0 as usize] * share / 100);
                    child.kill().expect("kill");
                    killed = true;
                    break;
                }
            }
            Some(("done", op, us)) => {
                done.push(op);
                begun = None;
                took[op.0 as usize] = Duration::from_micros(us.parse().expect("micros"));
            }
            _ => {}
        }
    }
    assert!(killed, "the child {pid} ended before its kill");
    let _ = child.wait();
    // What it printed before the kill landed.
    for line in lines.map_while(Result::ok) {
        if let Some(("done", op, _)) = parse(&line) {
            done.push(op);
            begun = None;
        }
    }
    Round {
        pid,
        done,
        in_flight: begun,
    }
}

/// A `begin OP K` or `done OP K MICROS` line: its word, the write, and
/// the rest.
fn parse(line: &str) -> Option<(&str, (Op, usize), &str)> {
    let mut words = line.splitn(4, ' ');
    let (what, op, k) = (words.next()?, words.next()?, words.next()?);
    if what != "begin" && what != "done" {
        return None;
    }
    let k = k.parse().expect("a round");
    Some((what, (Op::parse(op), k), words.next().unwrap_or("")))
}

/// 24 kills, each in one of the child's 5th to 16th writes with an id. After them: every
/// acknowledged write is in the store and its retry is a replay that
/// changes nothing; the write in flight is in the store whole or not at
/// all, and sent again it is applied once.
#[test]
fn a_killed_write_with_an_id_is_whole_and_replays() {
    if let Ok(root) = std::env::var(CHILD) {
        child(Path::new(&root));
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("mem");
    let mut next = super::kill_tests::draws(0x9e37_79b9_7f4a_7c15);
    let rounds: Vec<Round> = (0..KILLS)
        .map(|_| {
            // After the first round: each kind of write has been timed.
            let after = 4 + next(12) as usize;
            round(&root, after, next(100) as u32)
        })
        .collect();
    let m = LiveMemory::open(&root).expect("reopens");
    let t = m.tenant("t").expect("tenant");
    let (mut acked, mut mid, mut mid_applied) = (0, 0, 0);
    for r in &rounds {
        for &(op, k) in &r.done {
            acked += 1;
            let what = format!("{} of round {k} of {}", op.name(), r.pid);
            assert_eq!(
                op.applied(&t, r.pid, k),
                Some(true),
                "{what}: not in the store"
            );
            assert_eq!(op.send(&t, r.pid, k).ok(), Some(true), "{what}: no replay");
            assert_eq!(
                op.applied(&t, r.pid, k),
                Some(true),
                "{what}: the replay wrote"
            );
        }
        let Some((op, k)) = r.in_flight else { continue };
        mid += 1;
        let what = format!("{} of round {k} of {} (in flight)", op.name(), r.pid);
        let before = op.applied(&t, r.pid, k);
        assert!(before.is_some(), "{what}: neither before nor after it");
        mid_applied += usize::from(before == Some(true));
        let replayed = op.send(&t, r.pid, k).expect("sent again");
        assert_eq!(
            replayed,
            before == Some(true),
            "{what}: replayed {replayed}"
        );
        assert_eq!(op.applied(&t, r.pid, k), Some(true), "{what}: sent again");
        assert_eq!(op.send(&t, r.pid, k).ok(), Some(true), "{what}: twice");
    }
    eprintln!("{acked} acknowledged writes; {mid} of {KILLS} kills in a write, {mid_applied} of them after its commit");
    assert!(acked >= KILLS, "only {acked} writes acknowledged");
    assert!(
        mid >= KILLS / 3,
        "only {mid} of {KILLS} kills landed in a write"
    );
}
