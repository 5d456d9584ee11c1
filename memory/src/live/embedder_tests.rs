//! A tenant opens with the embedder that made its vectors: the one it
//! recorded, made again from the options (the built-in one at another
//! dimension, an endpoint's model); one that cannot be made is a clear
//! error, and a given embedder that differs is refused.

use super::*;
#[cfg(feature = "llm")]
use crate::plugins::testing::{embeddings_reply, start};
use crate::plugins::PluginOptions;
use crate::structures::HashEmbedder;
use crate::Retrieval;
use mesa_core::Mask;

/// A memory whose tenant `t` was written with `embedder`: episode `e`,
/// three steps.
pub(super) fn written_with(
    embedder: Arc<dyn crate::structures::Embedder>,
) -> (tempfile::TempDir, LiveMemory) {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let plugins = Plugins {
        embedder,
        ..Plugins::default()
    };
    let t = m
        .tenant_with("t", Config::default(), plugins)
        .expect("tenant");
    t.create_episode(&NewEpisode {
        id: "e".into(),
        task: "find the invoice".into(),
        ..NewEpisode::default()
    })
    .expect("create");
    let steps = [
        "open the mailbox",
        "search for invoice 42",
        "download the pdf",
    ];
    let steps = steps.map(|a| NewStep {
        index: None,
        action: a.into(),
        observation: format!("{a}: done"),
        timestamp: None,
    });
    t.append_batch("e", steps.to_vec()).expect("append");
    (dir, m)
}

fn answer(t: &Tenant) -> crate::Composition {
    let m = t.memory("e").expect("memory");
    Retrieval::new(&m, "where is the invoice?")
        .compose(Mask::single(mesa_core::Structure::Vector))
        .expect("compose")
}

#[test]
fn a_tenant_opens_with_the_built_in_embedder_it_recorded_at_another_dimension() {
    let (_dir, m) = written_with(Arc::new(HashEmbedder::new(64)));
    let t = m.tenant("t").expect("opens with hash-v1-64");
    assert_eq!(t.plugins.embedder.name(), "hash-v1-64");
    let want = answer(&t);
    drop(t);
    let r = m.reader("t").expect("a reader opens too");
    assert_eq!(r.plugins.embedder.name(), "hash-v1-64");
    assert_eq!(answer(&r), want);
    // A given embedder that differs is still refused.
    let given = m.tenant_with("t", Config::default(), Plugins::default());
    assert_eq!(given.err().map(|e| e.code()), Some("embedder-mismatch"));
}

#[cfg(feature = "llm")]
#[test]
fn a_tenant_written_through_an_endpoint_opens_with_its_model() {
    let server = start(|req, _| {
        let n = req.json()["input"].as_array().map_or(0, Vec::len);
        embeddings_reply(&vec![vec![0.6, 0.8, 0.0]; n])
    });
    let options = PluginOptions::new(None, Some(server.config().with_embedding_model("emb-a")));
    let embedder = crate::plugins::Embedders::from_name("openai", &options).expect("connects");
    let (_dir, m) = written_with(embedder);
    let sent = server.requests();
    // Options naming another model: the recorded one is used.
    let other = PluginOptions::new(None, Some(server.config().with_embedding_model("emb-b")));
    let t = m.tenant_recorded("t", &other).expect("opens");
    assert_eq!(t.plugins.embedder.name(), "openai:emb-a:3");
    assert!(answer(&t).sections.iter().any(|s| !s.items.is_empty()));
    assert!(
        server.requests() > sent,
        "the question was embedded by the endpoint"
    );
    assert_eq!(server.models(), ["emb-a"]);
    drop(t);
    // No endpoint where the options point: a clear error, nothing opened.
    drop(server);
    let down = start(|_, _| crate::plugins::testing::Reply::text(500, "down"));
    let gone = PluginOptions::new(None, Some(down.config()));
    let err = m
        .tenant_recorded("t", &gone)
        .map(|_| ())
        .expect_err("refused");
    assert_eq!(err.code(), "embedder-unavailable");
    assert_eq!(err.kind(), LiveErrorKind::Builder);
    let text = err.to_string();
    assert!(
        text.contains("tenant `t`") && text.contains("openai:emb-a:3"),
        "{text}"
    );
}

#[test]
fn an_embedder_that_cannot_be_made_again_is_a_clear_error() {
    let (_dir, m) = written_with(Arc::new(crate::structures::fixtures::Dense));
    let err = m.tenant("t").map(|_| ()).expect_err("refused");
    assert_eq!(err.code(), "embedder-unavailable");
    assert!(err.to_string().contains("dense-test-16"), "{err}");
    assert_eq!(
        m.reader("t").err().map(|e| e.code()),
        Some("embedder-unavailable")
    );
}

#[test]
fn a_new_tenant_gets_the_embedder_asked_for_and_an_old_one_keeps_its_own() {
    let (_dir, m) = written_with(Arc::new(HashEmbedder::new(64)));
    let options = PluginOptions::default();
    let wide: Arc<dyn crate::structures::Embedder> = Arc::new(HashEmbedder::new(128));
    let old = m
        .tenant_embedding("t", wide.clone(), &options)
        .expect("opens");
    assert_eq!(old.plugins.embedder.name(), "hash-v1-64");
    drop(old);
    let new = m.tenant_embedding("u", wide, &options).expect("creates");
    assert_eq!(new.plugins.embedder.name(), "hash-v1-128");
    drop(new);
    // Recorded: the plain opening uses it.
    let plain = m.tenant("u").expect("opens");
    assert_eq!(plain.plugins.embedder.name(), "hash-v1-128");
}
