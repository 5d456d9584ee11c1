//! Model-backed builders for the memory structures, and constructors that
//! pick a builder by name.
//!
//! | structure | trait | built-in (offline) | model-backed (this module) |
//! | --- | --- | --- | --- |
//! | V | [`Embedder`] | `builtin`: [`HashEmbedder`] | `minilm`: [`MiniLmEmbedder`] (all-MiniLM-L6-v2, candle, CPU); `openai`: [`OpenAiEmbedder`] (an OpenAI-compatible `/embeddings` endpoint) |
//! | S | [`Summarizer`] | `builtin`: [`ExtractiveSummarizer`] | `llm`: [`LlmSummarizer`] (a chat call per turn-aligned segment) |
//! | G | [`TripleExtractor`] | `builtin`: [`RuleExtractor`] | `llm`: [`LlmExtractor`] (OpenIE, a chat call per step) |
//!
//! A command line picks them by name in one call:
//!
//! ```no_run
//! use mesa_memory::plugins::{PluginOptions, Embedders};
//!
//! # fn main() -> Result<(), mesa_memory::plugins::SetupError> {
//! let options = PluginOptions::default(); // MESA_MINILM_DIR, MESA_LLM_* from the environment
//! use mesa_memory::plugins::{BuilderKind, EmbedderKind};
//! let plugins = options.plugins(EmbedderKind::Minilm, BuilderKind::Builtin, BuilderKind::Builtin)?;
//! assert!(plugins.embedder.name().contains("all-MiniLM-L6-v2"));
//! // A store records the embedder's name; reopen it with the same embedder:
//! let embedder = Embedders::from_recorded(&plugins.embedder.name(), &options)?;
//! # let _ = embedder;
//! # Ok(())
//! # }
//! ```
//!
//! The LLM-backed builders share one [`mesa_llm::Client`] (so its
//! concurrency bound holds across all of them) and call it with
//! deterministic options (temperature 0, a fixed seed). Tests never call an
//! outside service: they run against a canned HTTP server on 127.0.0.1.

//!
//! The model-backed builders are cargo features of this crate, both on by
//! default: `minilm` (candle and tokenizers) and `llm` (the
//! OpenAI-compatible client). Built without one, its names are refused with
//! [`SetupError::NotBuilt`].

#[cfg(feature = "minilm")]
mod minilm;
#[cfg(feature = "llm")]
mod openai;
#[cfg(feature = "llm")]
mod openie;
#[cfg(feature = "llm")]
mod summary;
#[cfg(all(test, feature = "llm"))]
pub(crate) mod testing;

#[cfg(feature = "minilm")]
pub use minilm::{MiniLmEmbedder, MINILM_DIM, MINILM_MAX_TOKENS};
#[cfg(feature = "llm")]
pub use openai::OpenAiEmbedder;
#[cfg(feature = "llm")]
pub use openie::{LlmExtractor, OnMalformed, OPENIE_SYSTEM_PROMPT};
#[cfg(feature = "llm")]
pub use summary::{LlmSummarizer, SUMMARY_SYSTEM_PROMPT};

/// The environment variable naming the MiniLM directory.
pub const MINILM_ENV: &str = "MESA_MINILM_DIR";
/// The script that fetches the MiniLM files.
pub const MINILM_SCRIPT: &str = "scripts/fetch-minilm.sh";
/// The files a MiniLM directory holds.
pub const MINILM_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// The name a MiniLM-built store records.
pub(crate) const MINILM_NAME: &str = "minilm-v1:all-MiniLM-L6-v2:384";

use crate::structures::{
    Embedder, ExtractiveSummarizer, HashEmbedder, PluginError, Plugins, RuleExtractor, Summarizer,
    TripleExtractor,
};
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(feature = "llm")]
use std::sync::Mutex;

/// A builder could not be set up (an unknown name, missing model files, a
/// bad endpoint setting). Distinct from [`PluginError`], which a builder
/// returns while it builds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// No builder of this kind has this name.
    #[error("unknown {kind} `{name}`; expected one of: {}", known.join(", "))]
    UnknownName {
        /// `embedder`, `summarizer` or `extractor`.
        kind: &'static str,
        /// The name given.
        name: String,
        /// The names accepted.
        known: &'static [&'static str],
    },
    /// A model file is missing.
    #[error("the MiniLM model file {} is missing; run `{script}` (or set {env} to a directory holding {files})",
        path.display(), env = MINILM_ENV, files = MINILM_FILES.join(", "))]
    MissingFile {
        /// The file that was looked for.
        path: PathBuf,
        /// The script that fetches it.
        script: &'static str,
    },
    /// A model file exists but could not be read or used.
    #[error("the MiniLM model file {}: {what}: {source}", path.display())]
    Model {
        /// The file.
        path: PathBuf,
        /// What was being done with it.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The LLM client could not be configured, or the endpoint failed
    /// during setup (e.g. the embedder's dimension probe).
    #[cfg(feature = "llm")]
    #[error("LLM endpoint: {0}")]
    Llm(#[from] mesa_llm::Error),
    /// The builder is a cargo feature this build was made without.
    #[error("the {kind} `{name}` needs the `{feature}` feature of mesa-memory, which this build was made without")]
    NotBuilt {
        /// `embedder`, `summarizer` or `extractor`.
        kind: &'static str,
        /// The name given.
        name: String,
        /// The cargo feature.
        feature: &'static str,
    },
    /// The endpoint answered setup with something unusable.
    #[error("{0}")]
    Plugin(#[from] PluginError),
}

/// What the model-backed builders need: where the MiniLM files are, and the
/// LLM client. The defaults come from the environment (`MESA_MINILM_DIR`,
/// and `MESA_LLM_*` through [`mesa_llm::Config::from_env`]), read when a
/// builder that needs them is made.
#[derive(Debug, Default)]
pub struct PluginOptions {
    /// The MiniLM directory (else `MESA_MINILM_DIR`, else
    /// `models/all-MiniLM-L6-v2/` under the project root).
    pub minilm_dir: Option<PathBuf>,
    /// The LLM client settings (else `mesa_llm::Config::from_env`).
    #[cfg(feature = "llm")]
    pub llm: Option<mesa_llm::Config>,
    /// The client, made on first use and then shared by every builder made
    /// from these options, so one concurrency bound covers all of them.
    #[cfg(feature = "llm")]
    client: Mutex<Option<mesa_llm::Client>>,
}

impl PluginOptions {
    /// Options with an explicit MiniLM directory.
    // Without the `llm` feature the update names no field.
    #[allow(clippy::needless_update)]
    pub fn with_minilm_dir(minilm_dir: Option<PathBuf>) -> PluginOptions {
        PluginOptions {
            minilm_dir,
            ..PluginOptions::default()
        }
    }

    /// Options with an explicit MiniLM directory and LLM settings.
    #[cfg(feature = "llm")]
    pub fn new(minilm_dir: Option<PathBuf>, llm: Option<mesa_llm::Config>) -> PluginOptions {
        PluginOptions {
            minilm_dir,
            llm,
            client: Mutex::new(None),
        }
    }

    /// Options that use this client for every LLM-backed builder.
    #[cfg(feature = "llm")]
    pub fn with_client(mut self, client: mesa_llm::Client) -> PluginOptions {
        self.client = Mutex::new(Some(client));
        self
    }

    /// The shared client: the one given, else one made from `llm` (or the
    /// environment) on first use.
    #[cfg(feature = "llm")]
    pub fn client(&self) -> Result<mesa_llm::Client, SetupError> {
        // A poisoned lock only means another thread panicked while making a
        // client; the `Option` inside is still valid.
        let mut slot = self.client.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let config = match &self.llm {
            Some(c) => c.clone(),
            None => mesa_llm::Config::from_env()?,
        };
        let client = mesa_llm::Client::new(config)?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// The three builders, e.g. MiniLM with the built-in summarizer and
    /// the LLM extractor.
    pub fn plugins(
        &self,
        embedder: EmbedderKind,
        summarizer: BuilderKind,
        extractor: BuilderKind,
    ) -> Result<Plugins, SetupError> {
        Ok(Plugins {
            embedder: Embedders::of(embedder, self)?,
            summarizer: Summarizers::of(summarizer, self)?,
            extractor: Extractors::of(extractor, self)?,
        })
    }
}

/// Which builder makes each structure, by kind: what a command line or a
/// server's settings name (the built-in ones by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuilderKinds {
    /// V's embedder.
    pub embedder: EmbedderKind,
    /// S's summarizer.
    pub summarizer: BuilderKind,
    /// G's relation extractor.
    pub extractor: BuilderKind,
}

impl BuilderKinds {
    /// The builders, made from `options`.
    pub fn plugins(self, options: &PluginOptions) -> Result<Plugins, SetupError> {
        options.plugins(self.embedder, self.summarizer, self.extractor)
    }
}

impl std::fmt::Display for BuilderKinds {
    /// `embedder E, summarizer S, extractor X`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "embedder {}, summarizer {}, extractor {}",
            self.embedder.name(),
            self.summarizer.name(),
            self.extractor.name()
        )
    }
}

/// Which embedder builds V.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EmbedderKind {
    /// The built-in hashing embedder (offline, 384 dimensions).
    #[default]
    Builtin,
    /// all-MiniLM-L6-v2 in candle (the `minilm` feature).
    Minilm,
    /// An OpenAI-compatible `/embeddings` endpoint (the `llm` feature).
    Openai,
}

/// Which builder makes S or G: the built-in offline one or the LLM one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BuilderKind {
    /// The built-in offline builder.
    #[default]
    Builtin,
    /// A chat endpoint (the `llm` feature).
    Llm,
}

impl EmbedderKind {
    /// `builtin`, `minilm` or `openai`.
    pub fn name(self) -> &'static str {
        match self {
            EmbedderKind::Builtin => "builtin",
            EmbedderKind::Minilm => "minilm",
            EmbedderKind::Openai => "openai",
        }
    }
}

impl BuilderKind {
    /// `builtin` or `llm`.
    pub fn name(self) -> &'static str {
        match self {
            BuilderKind::Builtin => "builtin",
            BuilderKind::Llm => "llm",
        }
    }
}

impl std::str::FromStr for EmbedderKind {
    type Err = SetupError;

    fn from_str(name: &str) -> Result<EmbedderKind, SetupError> {
        [
            EmbedderKind::Builtin,
            EmbedderKind::Minilm,
            EmbedderKind::Openai,
        ]
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| SetupError::UnknownName {
            kind: "embedder",
            name: name.to_string(),
            known: Embedders::NAMES,
        })
    }
}

impl std::str::FromStr for BuilderKind {
    type Err = SetupError;

    fn from_str(name: &str) -> Result<BuilderKind, SetupError> {
        [BuilderKind::Builtin, BuilderKind::Llm]
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| SetupError::UnknownName {
                kind: "builder",
                name: name.to_string(),
                known: Summarizers::NAMES,
            })
    }
}

/// The embedders (V) by name.
#[derive(Debug, Clone, Copy)]
pub struct Embedders;

impl Embedders {
    /// The names [`Embedders::from_name`] accepts.
    pub const NAMES: &'static [&'static str] = &["builtin", "minilm", "openai"];

    /// `builtin` ([`HashEmbedder`], 384 dimensions), `minilm`
    /// ([`MiniLmEmbedder`] from [`PluginOptions::minilm_dir`]) or `openai`
    /// ([`OpenAiEmbedder`] over the shared client; this sends one probe
    /// request to learn the dimension).
    pub fn from_name(name: &str, options: &PluginOptions) -> Result<Arc<dyn Embedder>, SetupError> {
        let kind = if name == "hash" {
            EmbedderKind::Builtin
        } else {
            name.parse()?
        };
        Embedders::of(kind, options)
    }

    /// The embedder of this kind.
    pub fn of(
        kind: EmbedderKind,
        options: &PluginOptions,
    ) -> Result<Arc<dyn Embedder>, SetupError> {
        match kind {
            EmbedderKind::Builtin => Ok(Arc::new(HashEmbedder::default())),
            EmbedderKind::Minilm => minilm_embedder(options),
            EmbedderKind::Openai => openai_embedder(options, None),
        }
    }

    /// The embedder that made a store, from the name its manifest records
    /// ([`Embedder::name`]): `hash-v1-D`, a MiniLM name, or `openai:MODEL:D`
    /// (the model overrides the configured one; the dimension is checked
    /// against the endpoint's).
    pub fn from_recorded(
        recorded: &str,
        options: &PluginOptions,
    ) -> Result<Arc<dyn Embedder>, SetupError> {
        if let Some(dim) = recorded
            .strip_prefix("hash-v1-")
            .and_then(|d| d.parse().ok())
        {
            return Ok(Arc::new(HashEmbedder::new(dim)));
        }
        if recorded == MINILM_NAME {
            return minilm_embedder(options);
        }
        if let Some((model, dim)) = recorded
            .strip_prefix("openai:")
            .and_then(|rest| rest.rsplit_once(':'))
            .and_then(|(m, d)| Some((m, d.parse::<usize>().ok()?)))
        {
            return openai_embedder(options, Some((model, dim)));
        }
        Err(SetupError::UnknownName {
            kind: "recorded embedder",
            name: recorded.to_string(),
            known: &["hash-v1-<dim>", MINILM_NAME, "openai:<model>:<dim>"],
        })
    }
}

#[cfg(feature = "minilm")]
fn minilm_embedder(options: &PluginOptions) -> Result<Arc<dyn Embedder>, SetupError> {
    Ok(Arc::new(MiniLmEmbedder::load(
        options.minilm_dir.as_deref(),
    )?))
}

#[cfg(not(feature = "minilm"))]
fn minilm_embedder(_: &PluginOptions) -> Result<Arc<dyn Embedder>, SetupError> {
    Err(not_built("embedder", "minilm", "minilm"))
}

/// The endpoint's embedder; with `recorded`, that model, checked to have
/// the store's dimension.
#[cfg(feature = "llm")]
fn openai_embedder(
    options: &PluginOptions,
    recorded: Option<(&str, usize)>,
) -> Result<Arc<dyn Embedder>, SetupError> {
    let client = options.client()?;
    let Some((model, dim)) = recorded else {
        return Ok(Arc::new(OpenAiEmbedder::connect(client)?));
    };
    let e = OpenAiEmbedder::connect_model(client, model)?;
    if e.dim() != dim {
        return Err(PluginError::BadOutput {
            plugin: e.name(),
            message: format!(
                "the store's vectors have {dim} dimensions, the endpoint's {}",
                e.dim()
            ),
        }
        .into());
    }
    Ok(Arc::new(e))
}

#[cfg(not(feature = "llm"))]
fn openai_embedder(
    _: &PluginOptions,
    _: Option<(&str, usize)>,
) -> Result<Arc<dyn Embedder>, SetupError> {
    Err(not_built("embedder", "openai", "llm"))
}

#[cfg(any(not(feature = "llm"), not(feature = "minilm")))]
fn not_built(kind: &'static str, name: &str, feature: &'static str) -> SetupError {
    SetupError::NotBuilt {
        kind,
        name: name.to_string(),
        feature,
    }
}

/// The summarizers (S) by name.
#[derive(Debug, Clone, Copy)]
pub struct Summarizers;

impl Summarizers {
    /// The names [`Summarizers::from_name`] accepts.
    pub const NAMES: &'static [&'static str] = &["builtin", "llm"];

    /// `builtin` ([`ExtractiveSummarizer`]) or `llm` ([`LlmSummarizer`] over
    /// the shared client).
    pub fn from_name(
        name: &str,
        options: &PluginOptions,
    ) -> Result<Arc<dyn Summarizer>, SetupError> {
        match name {
            "extractive" => Summarizers::of(BuilderKind::Builtin, options),
            _ => match name.parse() {
                Ok(kind) => Summarizers::of(kind, options),
                Err(_) => Err(SetupError::UnknownName {
                    kind: "summarizer",
                    name: name.to_string(),
                    known: Summarizers::NAMES,
                }),
            },
        }
    }

    /// The summarizer of this kind.
    pub fn of(
        kind: BuilderKind,
        options: &PluginOptions,
    ) -> Result<Arc<dyn Summarizer>, SetupError> {
        match kind {
            BuilderKind::Builtin => Ok(Arc::new(ExtractiveSummarizer)),
            #[cfg(not(feature = "llm"))]
            BuilderKind::Llm => {
                let _ = options;
                Err(not_built("summarizer", "llm", "llm"))
            }
            #[cfg(feature = "llm")]
            BuilderKind::Llm => Ok(Arc::new(LlmSummarizer::new(options.client()?))),
        }
    }
}

impl Summarizers {
    /// The summarizer that wrote a memory, from the name it recorded
    /// ([`Summarizer::name`]): `extractive-v1` (the built-in one) or
    /// `llm-summary-v1:MODEL` ([`LlmSummarizer`] with that chat model over
    /// the options' endpoint, whatever chat model the options name).
    pub fn from_recorded(
        recorded: &str,
        options: &PluginOptions,
    ) -> Result<Arc<dyn Summarizer>, SetupError> {
        if recorded == ExtractiveSummarizer.name() {
            return Ok(Arc::new(ExtractiveSummarizer));
        }
        match recorded.strip_prefix("llm-summary-v1:") {
            #[cfg(feature = "llm")]
            Some(model) => Ok(Arc::new(LlmSummarizer::new(chat_client(options, model)?))),
            #[cfg(not(feature = "llm"))]
            Some(_) => {
                let _ = options;
                Err(not_built("summarizer", "llm", "llm"))
            }
            None => Err(SetupError::UnknownName {
                kind: "recorded summarizer",
                name: recorded.to_string(),
                known: &["extractive-v1", "llm-summary-v1:<model>"],
            }),
        }
    }
}

/// The relation extractors (G) by name.
#[derive(Debug, Clone, Copy)]
pub struct Extractors;

impl Extractors {
    /// The names [`Extractors::from_name`] accepts.
    pub const NAMES: &'static [&'static str] = &["builtin", "llm"];

    /// `builtin` ([`RuleExtractor`]) or `llm` ([`LlmExtractor`] over the
    /// shared client; a malformed reply is an error).
    pub fn from_name(
        name: &str,
        options: &PluginOptions,
    ) -> Result<Arc<dyn TripleExtractor>, SetupError> {
        match name {
            "rules" => Extractors::of(BuilderKind::Builtin, options),
            _ => match name.parse() {
                Ok(kind) => Extractors::of(kind, options),
                Err(_) => Err(SetupError::UnknownName {
                    kind: "extractor",
                    name: name.to_string(),
                    known: Extractors::NAMES,
                }),
            },
        }
    }

    /// The extractor of this kind.
    pub fn of(
        kind: BuilderKind,
        options: &PluginOptions,
    ) -> Result<Arc<dyn TripleExtractor>, SetupError> {
        match kind {
            BuilderKind::Builtin => Ok(Arc::new(RuleExtractor)),
            #[cfg(not(feature = "llm"))]
            BuilderKind::Llm => {
                let _ = options;
                Err(not_built("extractor", "llm", "llm"))
            }
            #[cfg(feature = "llm")]
            BuilderKind::Llm => Ok(Arc::new(LlmExtractor::new(options.client()?))),
        }
    }
}

impl Extractors {
    /// The extractor that wrote a memory, from the name it recorded
    /// ([`TripleExtractor::name`]): `rules-v1` (the built-in one) or
    /// `llm-openie-v1:MODEL`, with `+rules-fallback` when malformed replies
    /// fell back to the rules ([`LlmExtractor`] with that chat model).
    pub fn from_recorded(
        recorded: &str,
        options: &PluginOptions,
    ) -> Result<Arc<dyn TripleExtractor>, SetupError> {
        if recorded == RuleExtractor.name() {
            return Ok(Arc::new(RuleExtractor));
        }
        match recorded.strip_prefix("llm-openie-v1:") {
            #[cfg(feature = "llm")]
            Some(rest) => {
                let (model, on_malformed) = match rest.strip_suffix("+rules-fallback") {
                    Some(model) => (model, OnMalformed::Fallback),
                    None => (rest, OnMalformed::Error),
                };
                let client = chat_client(options, model)?;
                Ok(Arc::new(
                    LlmExtractor::new(client).on_malformed(on_malformed),
                ))
            }
            #[cfg(not(feature = "llm"))]
            Some(_) => {
                let _ = options;
                Err(not_built("extractor", "llm", "llm"))
            }
            None => Err(SetupError::UnknownName {
                kind: "recorded extractor",
                name: recorded.to_string(),
                known: &["rules-v1", "llm-openie-v1:<model>[+rules-fallback]"],
            }),
        }
    }
}

/// The options' client, or one like it for another chat model (a client
/// setting: it gets its own connection pool and concurrency bound).
#[cfg(feature = "llm")]
fn chat_client(options: &PluginOptions, model: &str) -> Result<mesa_llm::Client, SetupError> {
    Ok(options.client()?.for_chat_model(model)?)
}

/// A plugin's failure from an LLM call, naming what it was doing.
#[cfg(feature = "llm")]
fn llm_failure(plugin: String, what: &str, e: &mesa_llm::Error) -> PluginError {
    PluginError::Llm {
        plugin,
        what: what.to_string(),
        source: Box::new(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_names() {
        let o = PluginOptions::default();
        let p = o
            .plugins(
                EmbedderKind::Builtin,
                BuilderKind::Builtin,
                BuilderKind::Builtin,
            )
            .unwrap();
        assert_eq!(p.embedder.name(), "hash-v1-384");
        assert_eq!(p.summarizer.name(), "extractive-v1");
        assert_eq!(p.extractor.name(), "rules-v1");
        let e = Embedders::from_recorded("hash-v1-64", &o).unwrap();
        assert_eq!(e.dim(), 64);
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let o = PluginOptions::default();
        let m = Embedders::from_name("bert", &o).err().unwrap().to_string();
        assert!(
            m.contains("unknown embedder `bert`") && m.contains("minilm"),
            "{m}"
        );
        let m = Summarizers::from_name("gpt", &o).err().unwrap().to_string();
        assert!(m.contains("builtin, llm"), "{m}");
        let m = Extractors::from_name("", &o).err().unwrap().to_string();
        assert!(m.contains("unknown extractor"), "{m}");
        assert!(Embedders::from_recorded("nope", &o).is_err());
    }

    #[test]
    #[cfg(feature = "minilm")]
    fn missing_minilm_files_name_the_file_and_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let o = PluginOptions::with_minilm_dir(Some(dir.path().to_path_buf()));
        let m = Embedders::from_name("minilm", &o)
            .err()
            .unwrap()
            .to_string();
        assert!(m.contains("config.json"), "{m}");
        assert!(m.contains("scripts/fetch-minilm.sh"), "{m}");
    }

    #[test]
    #[cfg(feature = "llm")]
    fn one_client_is_shared() {
        let server = testing::start(|_, _| testing::Reply::text(500, "x"));
        let o = PluginOptions::new(None, Some(server.config()));
        let a = o.client().unwrap();
        let b = o.client().unwrap();
        assert_eq!(a.config(), b.config());
        let p = o
            .plugins(EmbedderKind::Builtin, BuilderKind::Llm, BuilderKind::Llm)
            .unwrap();
        assert!(p.summarizer.name().starts_with("llm-summary-v1:"));
        assert!(p.extractor.name().starts_with("llm-openie-v1:"));
    }
}
