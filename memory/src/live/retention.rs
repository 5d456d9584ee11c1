//! Forgetting by age: [`Tenant::forget_before`] forgets, in every episode,
//! the steps whose timestamp is before a time, which is what a retention
//! limit ("keep 30 days") runs.
//!
//! ```text
//! time ──parse (RFC 3339)──► episodes() ──► per episode: its steps' timestamps
//!      ──► runs of consecutive older steps ──► forget_once(Range) each (one transaction)
//! ```

use super::{db, Forget, LiveError, Tenant};

/// What [`Tenant::forget_before`] forgot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForgottenBefore {
    /// Episodes that lost steps.
    pub episodes: usize,
    /// Steps forgotten.
    pub steps: usize,
    /// The episodes that lost steps, in the order they were visited (a
    /// server catches their snapshots up after answering, see
    /// [`Tenant::catch_up`]).
    pub touched: Vec<String>,
}

impl Tenant {
    /// Forgets, in every episode, each step whose timestamp is before
    /// `time` (RFC 3339, such as `2026-03-01T00:00:00Z`; else
    /// [`LiveError::BadTimestamp`]). Each run of consecutive older steps
    /// goes as [`Tenant::forget`] with a range does, in one transaction, so
    /// an interruption leaves whole runs; run again, it forgets what is
    /// left. Each episode is read and forgotten under one hold of the
    /// write lock. A reader gets [`LiveError::ReadOnly`]. An episode all of whose steps go stays, without steps. After
    /// it no query returns them; after [`Tenant::compact`] no file holds
    /// them.
    pub fn forget_before(&self, time: &str) -> Result<ForgottenBefore, LiveError> {
        let cutoff: jiff::Timestamp = time.parse().map_err(|source| LiveError::BadTimestamp {
            given: time.to_string(),
            source,
        })?;
        // A reader is refused even when nothing is old enough.
        drop(self.write_lock()?);
        let mut done = ForgottenBefore::default();
        for info in self.episodes()? {
            // Each episode's times are read and its runs forgotten under one
            // hold of the write lock, so no write between them moves a run.
            let write = self.write_lock()?;
            let steps = {
                let conn = self.conn();
                db::step_times(&conn, &info.id).map_err(self.db_error())?
            };
            let older = |time: &str| time.parse::<jiff::Timestamp>().is_ok_and(|t| t < cutoff);
            let mut gone = 0;
            let mut run: Option<(usize, usize)> = None;
            for s in steps
                .iter()
                .map(|(i, t)| (*i, older(t)))
                .chain([(0, false)])
            {
                match (s, run) {
                    ((i, true), None) => run = Some((i, i)),
                    ((i, true), Some((first, _))) => run = Some((first, i)),
                    ((_, false), Some((first, last))) => {
                        let range = Forget::Range(first, last);
                        gone += self.forget_held(&write, &info.id, range, None)?.steps;
                        run = None;
                    }
                    ((_, false), None) => {}
                }
            }
            if gone > 0 {
                done.episodes += 1;
                done.steps += gone;
                done.touched.push(info.id);
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::Retrieval;
    use mesa_core::Mask;

    fn at(action: &str, day: u32) -> NewStep {
        NewStep {
            index: None,
            action: action.into(),
            observation: format!("{action}: done"),
            timestamp: Some(format!("2026-03-{day:02}T10:00:00Z")),
        }
    }

    #[test]
    fn steps_before_a_time_go_from_every_episode_and_from_the_answers() {
        let dir = tempfile::tempdir().expect("temp dir");
        let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
        let t = m.tenant("t").expect("tenant");
        for id in ["a", "b", "old"] {
            t.create_episode(&NewEpisode {
                id: id.into(),
                task: "keep a month".into(),
                ..NewEpisode::default()
            })
            .expect("create");
        }
        // Out of order in time within `a`: days 1, 9, 2, 20.
        let a = [
            ("open the vault", 1),
            ("read the ledger", 9),
            ("copy the key zq-OLD-4d1e", 2),
            ("close up", 20),
        ];
        t.append_batch("a", a.iter().map(|&(x, d)| at(x, d)).collect())
            .expect("append");
        t.append_batch(
            "b",
            vec![at("water the plants", 15), at("feed the cat", 16)],
        )
        .expect("append");
        t.append_batch("old", vec![at("an old memory", 3)])
            .expect("append");
        let err = t.forget_before("last tuesday").expect_err("not a time");
        assert_eq!(err.code(), "bad-timestamp");
        // `a` and `b` have been asked about: their snapshots are built.
        t.memory("a").expect("memory");
        t.memory("b").expect("memory");
        let done = t.forget_before("2026-03-10T00:00:00Z").expect("forget");
        assert_eq!((done.episodes, done.steps), (2, 4));
        assert_eq!(done.touched, ["a", "old"]);
        // `a`'s snapshot was dropped and catches up; `b` kept its own;
        // `old` never had one and is left to its first question.
        assert!(t.ready("a").is_none(), "the forget dropped it");
        assert!(t.ready("b").is_some(), "untouched");
        let caught: Vec<bool> = done
            .touched
            .iter()
            .map(|e| t.catch_up(e).expect("catch up"))
            .collect();
        assert_eq!(caught, [true, false]);
        assert!(t.ready("a").is_some(), "built again");
        let left = |id| {
            t.steps(id)
                .expect("steps")
                .iter()
                .map(|s| s.index)
                .collect::<Vec<_>>()
        };
        assert_eq!(left("a"), [3]);
        assert_eq!(left("b"), [0, 1]);
        assert!(left("old").is_empty(), "the episode stays, without steps");
        let mem = t.memory("a").expect("memory");
        let answer = Retrieval::new(&mem, "what was copied from the vault ledger?")
            .compose(Mask::ALL)
            .expect("compose");
        let shown: Vec<usize> = answer
            .sections
            .iter()
            .flat_map(|s| s.items.iter().flat_map(|i| i.steps.clone()))
            .collect();
        assert!(shown.iter().all(|&i| i == 3), "{shown:?}");
        // Compacted, no file of the tenant holds a byte of the old steps.
        t.compact().expect("compact");
        let mut found = Vec::new();
        super::super::tests::scan(dir.path(), b"zq-OLD-4d1e", &mut found);
        assert!(found.is_empty(), "the old step is still in {found:?}");
        // Run again: nothing is left to forget.
        assert_eq!(
            t.forget_before("2026-03-10T00:00:00Z")
                .expect("again")
                .steps,
            0
        );
    }
}
