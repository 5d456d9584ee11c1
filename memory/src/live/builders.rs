//! The builders a tenant opens with. A tenant records, in its `meta`
//! table, the names of the embedder (V), the summarizer (S) and the
//! relation extractor (G) that wrote it, when a writer first opens it; a
//! later opening either insists on the builders it is given or makes the
//! recorded ones again, so steps appended later are embedded, summarized
//! and extracted as the first ones were, whichever front end appends them.
//!
//! ```text
//! LiveMemory::open_tenant ──meta: embedder, summarizer, extractor──► per builder:
//!   none recorded ──► the given one (a writer records its name)
//!   recorded = given's name ──► the given one
//!   recorded ≠ given's name ──► given, or named: refused (embedder-mismatch, builder-mismatch)
//!                          └─► otherwise: made again from the name
//!                              (Embedders / Summarizers / Extractors::from_recorded),
//!                              or refused (embedder-unavailable, builder-unavailable)
//! ```
//!
//! A tenant written before the summarizer and extractor were recorded
//! records, at its next opening for writing, the ones that opening uses.

use super::{db, LiveError};
use crate::plugins::{Embedders, Extractors, PluginOptions, SetupError, Summarizers};
use crate::structures::{Embedder, Plugins, Summarizer, TripleExtractor};
use rusqlite::Connection;
use std::sync::Arc;

/// How a tenant's builders are chosen when it opens.
#[derive(Debug, Clone, Copy)]
pub(super) struct Choice<'a> {
    /// What the recorded builders are made again from; `None`: they are
    /// not, and every given builder must be the recorded one.
    options: Option<&'a PluginOptions>,
    /// Per builder (embedder, summarizer, extractor): whether the given one
    /// must be the recorded one.
    strict: [bool; 3],
    /// The given builders whatever was recorded, for an opening that only
    /// lists and exports (it builds no structure).
    pub(super) listing: bool,
}

impl<'a> Choice<'a> {
    /// The given builders, which must be the ones the tenant recorded.
    pub(super) fn given() -> Choice<'a> {
        Choice {
            options: None,
            strict: [true; 3],
            listing: false,
        }
    }

    /// The builders the tenant recorded, made again from `options`; the
    /// given ones where it recorded none (a new tenant).
    pub(super) fn recorded(options: &'a PluginOptions) -> Choice<'a> {
        Choice {
            options: Some(options),
            strict: [false; 3],
            listing: false,
        }
    }

    /// No builder made or checked, for an opening that builds no structure.
    pub(super) fn listing() -> Choice<'a> {
        Choice {
            options: None,
            strict: [false; 3],
            listing: true,
        }
    }

    /// The named builders, which must be the recorded ones; the others as
    /// [`Choice::recorded`].
    pub(super) fn named(named: &NamedBuilders, options: &'a PluginOptions) -> Choice<'a> {
        Choice {
            options: Some(options),
            strict: [
                named.embedder.is_some(),
                named.summarizer.is_some(),
                named.extractor.is_some(),
            ],
            listing: false,
        }
    }
}

/// Builders named for a tenant, each optional: a named one must be the
/// one the tenant recorded ([`LiveError::EmbedderMismatch`],
/// [`LiveError::BuilderMismatch`]), and a new tenant records it; one not
/// named is the one the tenant recorded, or the built-in one for a new
/// tenant. What Python's `Memory(..., embedder="openai")` passes.
#[derive(Clone, Default)]
pub struct NamedBuilders {
    /// V's embedder.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// S's summarizer.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// G's relation extractor.
    pub extractor: Option<Arc<dyn TripleExtractor>>,
}

impl NamedBuilders {
    /// The named builders, the built-in ones for the others.
    pub(super) fn plugins(&self) -> Plugins {
        let d = Plugins::default();
        Plugins {
            embedder: self.embedder.clone().unwrap_or(d.embedder),
            summarizer: self.summarizer.clone().unwrap_or(d.summarizer),
            extractor: self.extractor.clone().unwrap_or(d.extractor),
        }
    }
}

impl std::fmt::Debug for NamedBuilders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedBuilders")
            .field("embedder", &self.embedder.as_ref().map(|e| e.name()))
            .field("summarizer", &self.summarizer.as_ref().map(|s| s.name()))
            .field("extractor", &self.extractor.as_ref().map(|x| x.name()))
            .finish()
    }
}

/// The `meta` keys, in the order [`recorded`] reads them.
const KEYS: [&str; 3] = ["embedder", "summarizer", "extractor"];

/// The builder names the tenant's database recorded: embedder,
/// summarizer, extractor (`None` where none is recorded yet).
pub(super) fn recorded(conn: &Connection) -> rusqlite::Result<[Option<String>; 3]> {
    let [e, s, x] = KEYS.map(|key| db::meta(conn, key));
    Ok([e?, s?, x?])
}

/// The builders tenant `tenant` opens with, given `given` and the names
/// its database recorded; a `writer` records the names of those it had
/// none for, in one transaction.
pub(super) fn settle(
    conn: &Connection,
    tenant: &str,
    given: Plugins,
    choice: Choice<'_>,
    writer: bool,
    db_error: impl Fn(rusqlite::Error) -> LiveError,
) -> Result<Plugins, LiveError> {
    if choice.listing {
        return Ok(given);
    }
    let [embedder, summarizer, extractor] = recorded(conn).map_err(&db_error)?;
    let [v, s, g] = choice.strict;
    let pick = |strict: bool| Pick {
        tenant,
        options: choice.options.filter(|_| !strict),
    };
    let plugins = Plugins {
        embedder: pick(v).one(
            "embedder",
            embedder.as_deref(),
            given.embedder,
            |e| e.name(),
            Embedders::from_recorded,
        )?,
        summarizer: pick(s).one(
            "summarizer",
            summarizer.as_deref(),
            given.summarizer,
            |s| s.name(),
            Summarizers::from_recorded,
        )?,
        extractor: pick(g).one(
            "extractor",
            extractor.as_deref(),
            given.extractor,
            |x| x.name(),
            Extractors::from_recorded,
        )?,
    };
    let unrecorded = [
        embedder.is_none(),
        summarizer.is_none(),
        extractor.is_none(),
    ];
    if writer && unrecorded.contains(&true) {
        let names = [
            plugins.embedder.name(),
            plugins.summarizer.name(),
            plugins.extractor.name(),
        ];
        let tx = conn.unchecked_transaction().map_err(&db_error)?;
        for ((key, name), missing) in KEYS.iter().zip(&names).zip(unrecorded) {
            if missing {
                db::set_meta(&tx, key, name).map_err(&db_error)?;
            }
        }
        tx.commit().map_err(&db_error)?;
    }
    Ok(plugins)
}

/// One builder's choice, for one tenant.
struct Pick<'a> {
    tenant: &'a str,
    /// What a recorded builder is made again from; `None`: the given one
    /// must be the recorded one.
    options: Option<&'a PluginOptions>,
}

impl Pick<'_> {
    /// The `builder` to use, of the given one and the `stored` name.
    fn one<T: ?Sized>(
        &self,
        builder: &'static str,
        stored: Option<&str>,
        given: Arc<T>,
        name: impl Fn(&T) -> String,
        remake: impl Fn(&str, &PluginOptions) -> Result<Arc<T>, SetupError>,
    ) -> Result<Arc<T>, LiveError> {
        let Some(stored) = stored.filter(|s| *s != name(&given)) else {
            return Ok(given);
        };
        let Some(options) = self.options else {
            return Err(mismatch(builder, stored, name(&given)));
        };
        remake(stored, options).map_err(|source| {
            let (tenant, stored, source) = (self.tenant.to_string(), stored.into(), source.into());
            match builder {
                "embedder" => LiveError::EmbedderUnavailable {
                    tenant,
                    stored,
                    source,
                },
                _ => LiveError::BuilderUnavailable {
                    tenant,
                    builder,
                    stored,
                    source,
                },
            }
        })
    }
}

/// A given builder that is not the recorded one.
fn mismatch(builder: &'static str, stored: &str, given: String) -> LiveError {
    let stored = stored.to_string();
    match builder {
        "embedder" => LiveError::EmbedderMismatch { stored, given },
        _ => LiveError::BuilderMismatch {
            builder,
            stored,
            given,
        },
    }
}
