//! Shared test helpers: synthetic sweeps on disk, and the local server of
//! `mesa-testkit` with the client settings these tests count on.

#![allow(dead_code)]

use mesa_optimizer::synthetic::{generate, SyntheticConfig};
use mesa_optimizer::{write_sweep, UtilityKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mesa_testkit::{Reply, Request, Server};

/// Writes a synthetic sweep of `episodes` x `per` questions into `dir`.
pub fn synthetic_sweep(dir: &Path, episodes: usize, per: usize, seed: u64) -> PathBuf {
    let records = generate(&SyntheticConfig {
        episodes,
        questions_per_episode: per,
        seed,
        ..SyntheticConfig::default()
    });
    let path = dir.join(format!("synthetic-{episodes}x{per}-{seed}.jsonl"));
    write_sweep(
        &path,
        UtilityKind::EvidenceRecall,
        "synthetic",
        "none",
        &records,
    )
    .expect("write sweep");
    path
}

/// A server answering request number `n` (from 0) with `handler(&request,
/// n)`, whose config retries once after a short backoff.
pub fn start(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Server {
    Server::start(handler).with_config(|c| {
        c.with_backoff(Duration::from_millis(5), Duration::from_millis(20))
            .with_max_retries(1)
    })
}
