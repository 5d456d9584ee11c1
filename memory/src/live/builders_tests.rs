//! A tenant records its three builders and opens with them: steps appended
//! after an import made with the LLM summarizer and extractor are
//! summarized and extracted by them, so the tenant answers as one written
//! in one batch with those builders; a given builder that differs is
//! refused, and one that cannot be made is a clear error.

use super::*;
use crate::plugins::PluginOptions;
use crate::Retrieval;
use mesa_core::Mask;

fn step(action: &str) -> NewStep {
    NewStep {
        index: None,
        action: action.into(),
        observation: format!("{action}: done"),
        timestamp: Some("2026-03-01T10:00:00Z".into()),
    }
}

const ACTIONS: [&str; 5] = [
    "open the mailbox",
    "search for invoice 42",
    "download the pdf",
    "rename the file to invoice-42.pdf",
    "send it to accounting",
];

fn create(t: &Tenant) {
    t.create_episode(&NewEpisode {
        id: "e".into(),
        task: "file the invoice".into(),
        ..NewEpisode::default()
    })
    .expect("create");
}

fn recorded(t: &Tenant) -> Vec<Option<String>> {
    t.recorded_builders().expect("meta").to_vec()
}

#[test]
fn a_writer_records_the_three_builders_and_a_reader_records_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let t = m.tenant("t").expect("tenant");
    let names = ["hash-v1-384", "extractive-v1", "rules-v1"].map(|n| Some(n.to_string()));
    assert_eq!(recorded(&t), names);
    create(&t);
    // A tenant written before S and G were recorded: its next writer
    // records the ones it opens with; a reader does not.
    {
        let conn = t.conn();
        conn.execute(
            "DELETE FROM meta WHERE key IN ('summarizer', 'extractor')",
            [],
        )
        .expect("delete");
    }
    drop(t);
    let r = m.reader("t").expect("reader");
    assert_eq!(recorded(&r)[1..], [None, None]);
    drop(r);
    let t = m.tenant("t").expect("tenant");
    assert_eq!(recorded(&t), names);
}

#[cfg(feature = "llm")]
mod llm {
    use super::*;
    use crate::plugins::testing::{builders, start};
    use crate::plugins::{LlmExtractor, LlmSummarizer, OnMalformed};

    fn llm_plugins(client: &mesa_llm::Client) -> Plugins {
        Plugins {
            summarizer: Arc::new(LlmSummarizer::new(client.clone())),
            extractor: Arc::new(
                LlmExtractor::new(client.clone()).on_malformed(OnMalformed::Fallback),
            ),
            ..Plugins::default()
        }
    }

    fn answers(t: &Tenant) -> Vec<crate::Composition> {
        let m = t.memory("e").expect("memory");
        let r = Retrieval::new(
            &m,
            "what did command 3 return after the pdf was sent to accounting?",
        );
        [Structure::Summary, Structure::Graph]
            .map(|s| r.compose(Mask::single(s)).expect("compose"))
            .into_iter()
            .chain([r.compose(Mask::ALL).expect("compose")])
            .collect()
    }

    use mesa_core::Structure;

    /// A chat server for both LLM builders, and a memory whose tenant `t`
    /// was created with them and holds the episode `e`, no step yet.
    fn llm_tenant() -> (mesa_testkit::Server, tempfile::TempDir, LiveMemory) {
        let server = start(builders);
        let dir = tempfile::tempdir().expect("temp dir");
        let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
        let t = m
            .tenant_with("t", Config::default(), llm_plugins(&server.client()))
            .expect("tenant");
        create(&t);
        (server, dir, m)
    }

    /// A restated task: the LLM extractor is asked again about every step,
    /// once each, under the new task.
    #[test]
    fn a_restated_task_asks_the_llm_extractor_again_for_every_step() {
        let (server, _dir, m) = llm_tenant();
        let t = m
            .tenant_with("t", Config::default(), llm_plugins(&server.client()))
            .expect("tenant");
        t.append_batch("e", ACTIONS.map(step).to_vec())
            .expect("append");
        let restated = EpisodeUpdate {
            task: Some("file the quarterly invoices".into()),
            ..EpisodeUpdate::default()
        };
        let before = server.log().len();
        assert!(t.update_episode("e", &restated).expect("update"));
        let asked: Vec<usize> = server.log()[before..]
            .iter()
            .filter(|r| r.message(0) == crate::plugins::OPENIE_SYSTEM_PROMPT)
            .inspect(|r| assert!(r.last_message().contains("file the quarterly invoices")))
            .map(crate::plugins::testing::step_of)
            .collect();
        let mut steps = asked.clone();
        steps.sort_unstable();
        assert_eq!(steps, (0..ACTIONS.len()).collect::<Vec<_>>(), "{asked:?}");
        assert!(!answers(&t)[1].sections[0].items.is_empty(), "G answers");
    }

    #[test]
    fn appends_after_an_llm_import_use_the_recorded_builders() {
        let (server, _dir, m) = llm_tenant();
        // All five steps in one batch, with the LLM builders given.
        let batch = m
            .tenant_with("batch", Config::default(), llm_plugins(&server.client()))
            .expect("tenant");
        create(&batch);
        batch
            .append_batch("e", ACTIONS.map(step).to_vec())
            .expect("append");
        let want = answers(&batch);
        drop(batch);
        // Three imported with them; the last two appended one by one by a
        // plain opening, whose options name another chat model.
        let t = m
            .tenant_with("t", Config::default(), llm_plugins(&server.client()))
            .expect("tenant");
        t.append_batch("e", ACTIONS[..3].iter().map(|a| step(a)).collect())
            .expect("append");
        drop(t);
        let other = PluginOptions::new(None, Some(server.config().with_chat_model("chat-other")));
        let t = m.tenant_recorded("t", &other).expect("opens");
        assert_eq!(t.plugins.summarizer.name(), "llm-summary-v1:chat-test");
        assert_eq!(
            t.plugins.extractor.name(),
            "llm-openie-v1:chat-test+rules-fallback"
        );
        for a in &ACTIONS[3..] {
            t.append_batch("e", vec![step(a)]).expect("append");
        }
        let got = answers(&t);
        assert!(!got[1].sections[0].items.is_empty(), "G answers: {got:?}");
        assert_eq!(got, want, "streamed appends answer as the batch");
        drop(t);
        assert_eq!(server.models(), ["chat-test"]);
        // A reader opens with them too.
        let r = m.reader("t").expect("reader");
        assert_eq!(r.plugins.summarizer.name(), "llm-summary-v1:chat-test");
    }

    #[test]
    fn a_given_builder_that_differs_is_refused_and_one_that_cannot_be_made_is_named() {
        let (server, _dir, m) = llm_tenant();
        let err = m
            .tenant_with("t", Config::default(), Plugins::default())
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(err.code(), "builder-mismatch");
        assert_eq!(err.kind(), LiveErrorKind::Conflict);
        let text = err.to_string();
        assert!(
            text.contains("summarizer") && text.contains("llm-summary-v1:chat-test"),
            "{text}"
        );
        // Settings no client can be made from: the tenant and the
        // builder are named, and nothing is opened.
        let bad = PluginOptions::new(None, Some(server.config().with_base_url("not a url")));
        let err = m
            .tenant_recorded("t", &bad)
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(err.code(), "builder-unavailable");
        assert_eq!(err.kind(), LiveErrorKind::Builder);
        let text = err.to_string();
        assert!(
            text.contains("tenant `t`") && text.contains("llm-summary-v1:chat-test"),
            "{text}"
        );
        // A recorded name no build knows.
        {
            let t = m
                .tenant_with("t", Config::default(), llm_plugins(&server.client()))
                .expect("tenant");
            db::set_meta(&t.conn(), "extractor", "oracle-v9").expect("meta");
        }
        let err = m
            .tenant_recorded("t", &PluginOptions::new(None, Some(server.config())))
            .map(|_| ())
            .expect_err("refused");
        assert_eq!(err.code(), "builder-unavailable");
        assert!(err.to_string().contains("oracle-v9"), "{err}");
    }

    #[test]
    fn a_named_builder_must_be_the_recorded_one_and_the_others_follow_the_record() {
        let (server, _dir, m) = llm_tenant();
        let options = PluginOptions::new(None, Some(server.config()));
        let d = Plugins::default();
        let named = NamedBuilders {
            embedder: Some(d.embedder.clone()),
            ..NamedBuilders::default()
        };
        let t = m.tenant_named("t", &named, &options).expect("opens");
        assert_eq!(t.plugins.summarizer.name(), "llm-summary-v1:chat-test");
        drop(t);
        let r = m.reader_named("t", &named, &options).expect("reader");
        assert_eq!(
            r.plugins.extractor.name(),
            "llm-openie-v1:chat-test+rules-fallback"
        );
        drop(r);
        let named = NamedBuilders {
            summarizer: Some(d.summarizer.clone()),
            ..NamedBuilders::default()
        };
        let err = m.tenant_named("t", &named, &options).map(|_| ());
        assert_eq!(err.map_err(|e| e.code()), Err("builder-mismatch"));
        let err = m.reader_named("t", &named, &options).map(|_| ());
        assert_eq!(err.map_err(|e| e.code()), Err("builder-mismatch"));
        // A new tenant records what is named, and the built-in others.
        let named = NamedBuilders {
            extractor: Some(llm_plugins(&server.client()).extractor),
            ..NamedBuilders::default()
        };
        let u = m.tenant_named("u", &named, &options).expect("creates");
        let names = recorded(&u);
        assert_eq!(names[1].as_deref(), Some("extractive-v1"));
        assert_eq!(
            names[2].as_deref(),
            Some("llm-openie-v1:chat-test+rules-fallback")
        );
    }
}
