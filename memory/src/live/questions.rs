//! Questions kept with an episode: a dataset's, when `mesa build --into`
//! imports it, or an agent's own, so that a tenant can be asked them all
//! again (`mesa query ROOT --tenant T --all`). They are not memory: no
//! structure reads them, and forgetting the episode forgets them.

use super::{db, LiveError, Tenant, MAX_TEXT_BYTES};
use crate::dataset::Question;

impl Tenant {
    /// Keeps `questions` with the episode, in one transaction (all or
    /// none); a question with the id of one already kept replaces it.
    /// Returns how many were kept.
    pub fn add_questions(&self, episode: &str, questions: &[Question]) -> Result<usize, LiveError> {
        let mut bodies = Vec::with_capacity(questions.len());
        for (i, q) in questions.iter().enumerate() {
            for (what, text) in [("id", &q.id), ("text", &q.question)] {
                if text.trim().is_empty() {
                    return Err(LiveError::Empty {
                        what: format!("question {i}'s {what}"),
                    });
                }
            }
            let body = serde_json::to_string(q).unwrap_or_default();
            if body.len() > MAX_TEXT_BYTES {
                return Err(LiveError::TooLarge {
                    what: format!("question `{}`", q.id),
                    bytes: body.len(),
                    limit: MAX_TEXT_BYTES,
                });
            }
            bodies.push((q.id.clone(), body));
        }
        let _write = self.write_lock()?;
        let conn = self.conn();
        self.episode_row(&conn, episode)?;
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        db::put_questions(&tx, episode, &bodies).map_err(self.db_error())?;
        tx.commit().map_err(self.db_error())?;
        Ok(bodies.len())
    }

    /// The questions kept with the episode, in the order they were kept.
    pub fn questions(&self, episode: &str) -> Result<Vec<Question>, LiveError> {
        let conn = self.conn();
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        self.episode_row(&tx, episode)?;
        let bodies = db::questions(&tx, episode).map_err(self.db_error())?;
        bodies
            .iter()
            .map(|b| {
                serde_json::from_str(b).map_err(|e| {
                    self.corrupt(format!(
                        "a question of episode `{episode}` does not read: {e}"
                    ))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::dataset::Question;
    use crate::live::{Forget, LiveError, LiveMemory, NewEpisode, NewStep};

    fn question(id: &str, text: &str) -> Question {
        Question {
            id: id.into(),
            question: text.into(),
            answer: Some("the answer".into()),
            qtype: Some("A".into()),
            evidence: vec![1],
        }
    }

    fn episode(id: &str) -> NewEpisode {
        NewEpisode {
            id: id.into(),
            task: "t".into(),
            domain: "D".into(),
            ..NewEpisode::default()
        }
    }

    /// Questions come back whole and in order, a kept id is replaced, a
    /// reader sees them, other tenants do not, bad ones are refused with
    /// nothing kept, and forgetting the episode forgets them: no file
    /// holds their text after compaction.
    #[test]
    fn questions_are_kept_per_episode_and_forgotten_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let m = LiveMemory::open(&dir.path().join("mem")).unwrap();
        let (t, other) = (m.tenant("a").unwrap(), m.tenant("b").unwrap());
        t.create_episode(&episode("e")).unwrap();
        other.create_episode(&episode("e")).unwrap();
        let step = NewStep {
            index: None,
            action: "look".into(),
            observation: "a door".into(),
            timestamp: None,
        };
        t.append("e", step).unwrap();
        const MARKER: &str = "zq-QUESTION-51c0-marker";
        let (q1, q2) = (
            question("e:0", "What is behind the door?"),
            question("e:10", MARKER),
        );
        assert_eq!(t.add_questions("e", &[q1.clone(), q2.clone()]).unwrap(), 2);
        assert_eq!(t.questions("e").unwrap(), [q1.clone(), q2.clone()]);
        assert!(other.questions("e").unwrap().is_empty());
        let q1b = question("e:0", "What opened the door?");
        t.add_questions("e", std::slice::from_ref(&q1b)).unwrap();
        assert_eq!(t.questions("e").unwrap(), [q2.clone(), q1b.clone()]);
        // Refused, and nothing of the batch kept.
        let blank = question("e:2", "  ");
        let err = t.add_questions("e", &[question("e:3", "ok"), blank]);
        assert!(matches!(err, Err(LiveError::Empty { .. })), "{err:?}");
        assert_eq!(t.questions("e").unwrap().len(), 2);
        let err = t.add_questions("nope", &[question("x", "y")]);
        assert!(
            matches!(err, Err(LiveError::UnknownEpisode { .. })),
            "{err:?}"
        );
        let reader = m.reader("a").unwrap();
        assert_eq!(reader.questions("e").unwrap().len(), 2);
        let err = reader.add_questions("e", &[question("e:4", "z")]);
        assert!(matches!(err, Err(LiveError::ReadOnly { .. })), "{err:?}");
        drop(reader);
        t.forget("e", Forget::Episode).unwrap();
        assert!(matches!(
            t.questions("e"),
            Err(LiveError::UnknownEpisode { .. })
        ));
        t.compact().unwrap();
        let mut stack = vec![dir.path().to_path_buf()];
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                let bytes = std::fs::read(&p).unwrap();
                let held = bytes.windows(MARKER.len()).any(|w| w == MARKER.as_bytes());
                assert!(!held, "{} still holds the question", p.display());
            }
        }
    }
}
