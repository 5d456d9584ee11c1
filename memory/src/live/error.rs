//! Why a live-memory call failed. Every variant names what it was about
//! (tenant, episode, step, file) and says what to do; none loses a write
//! that was acknowledged before it.

use crate::structures::{BuildError, PluginError};

/// Why a live-memory call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The database refused an operation (a full disk, a damaged file).
    #[error("{path}: the database failed: {source}")]
    Db {
        /// The database file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The disk (or the database's size limit) is full; the write was
    /// rolled back.
    #[error("{path}: the disk is full; the write was not made and nothing written before it was lost; free some space and write again")]
    DiskFull {
        /// The database file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// No live memory at the directory, where one was to be opened without
    /// creating it.
    #[error("{dir}: there is no MESA live memory there; check the path (a new memory is made by writing its first step)")]
    NoMemory {
        /// The directory.
        dir: String,
    },
    /// The directory exists and is not a live memory.
    #[error("{dir}: not a MESA live memory ({reason}); give an empty or new directory")]
    NotAMemory {
        /// The directory.
        dir: String,
        /// Why not.
        reason: String,
    },
    /// The directory is a finished store written by `mesa build`.
    #[error("{dir}: this is a store written by `mesa build`, not a live memory; import its dataset into a tenant with `mesa build DATA --into {dir}-live --tenant NAME`")]
    BuiltStore {
        /// The directory.
        dir: String,
    },
    /// Another version of MESA wrote the directory.
    #[error("{path}: live memory format version {found}; this build reads version {expected}")]
    Version {
        /// The file.
        path: String,
        /// Its version.
        found: i64,
        /// The version this build reads.
        expected: i64,
    },
    /// A tenant name that could name another directory.
    #[error("tenant name `{name}` is not allowed: use 1 to 64 letters, digits, `-` or `_`")]
    BadTenant {
        /// The name given.
        name: String,
    },
    /// The tenant does not exist (only from calls that do not create it).
    #[error("there is no tenant `{name}`")]
    UnknownTenant {
        /// The name.
        name: String,
    },
    /// Another process (or handle) writes this tenant.
    #[error("tenant `{tenant}` is open for writing elsewhere ({path} is locked): another process or handle writes it")]
    Locked {
        /// The tenant.
        tenant: String,
        /// The lock file.
        path: String,
    },
    /// A write through a read-only handle.
    #[error("tenant `{tenant}` is open for reading only here; write through its writer (`LiveMemory::tenant`, `mesa append`)")]
    ReadOnly {
        /// The tenant.
        tenant: String,
    },
    /// No episode with this id in the tenant.
    #[error("tenant `{tenant}` has no episode `{id}`; create it first (or list the episodes)")]
    UnknownEpisode {
        /// The tenant.
        tenant: String,
        /// The id.
        id: String,
    },
    /// The episode exists already.
    #[error("tenant `{tenant}` has an episode `{id}` already; append to it, or forget it first")]
    EpisodeExists {
        /// The tenant.
        tenant: String,
        /// The id.
        id: String,
    },
    /// No step with this index in the episode.
    #[error("episode `{episode}` has no step {index}{}", last_step(*.last))]
    UnknownStep {
        /// The episode.
        episode: String,
        /// The index asked for.
        index: usize,
        /// The episode's last step, if it has any.
        last: Option<usize>,
    },
    /// A step index above [`MAX_STEP_INDEX`](super::MAX_STEP_INDEX), given or
    /// following one that is.
    #[error("step {at} of the batch (from 0) would have index {index} in episode `{episode}`, above the largest a step may have ({max}); number steps from 0 or from a smaller index")]
    IndexTooLarge {
        /// The episode.
        episode: String,
        /// The index it would have.
        index: usize,
        /// The largest index a step may have.
        max: usize,
        /// Its position in the batch.
        at: usize,
    },
    /// An explicit step index at or below one the episode has.
    #[error("step {at} of the batch (from 0) asks for index {index} in episode `{episode}`, but indices must increase and the next free one is {next}")]
    IndexTaken {
        /// The episode.
        episode: String,
        /// The index asked for.
        index: usize,
        /// The lowest index it may have.
        next: usize,
        /// Its position in the batch.
        at: usize,
    },
    /// An episode id that cannot be kept or addressed.
    #[error("episode id `{shown}`: {reason}; use a short id of letters, digits and punctuation")]
    BadEpisodeId {
        /// The id's start, escaped.
        shown: String,
        /// Why it is refused.
        reason: String,
    },
    /// A field is empty or missing.
    #[error("{what} is empty; give it some text")]
    Empty {
        /// `the episode id`, `step 3's action`, ...
        what: String,
    },
    /// A text is longer than a step may be.
    #[error("{what} has {bytes} bytes; the limit is {limit} bytes (cut it, or keep large outputs elsewhere and store a reference)")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A request id is empty, too long or holds a control character.
    #[error("request id `{id}`: give 1 to {limit} bytes without control characters (a UUID, say)")]
    BadRequestId {
        /// The id given (its first 64 bytes).
        id: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// A request id was given before to another write (other content, or
    /// another kind of write).
    #[error("request id `{id}` was given to another write in episode `{episode}` (other steps or fields, or another kind of write); a retry must send the same request, a new write a new id")]
    RequestIdReused {
        /// The episode.
        episode: String,
        /// The id.
        id: String,
    },
    /// A timestamp is not RFC 3339.
    #[error(
        "step timestamp `{given}` is not an RFC 3339 time in the years 0000 to 9999, such as 2026-03-01T10:00:00Z: {source}"
    )]
    BadTimestamp {
        /// The text given.
        given: String,
        /// The parser's reason.
        #[source]
        source: jiff::Error,
    },
    /// The memory's embedder is not the one given.
    #[error("the memory's vectors were made by `{stored}`, but the embedder given is `{given}`; open it with the embedder that wrote it")]
    EmbedderMismatch {
        /// The recorded embedder.
        stored: String,
        /// The one given.
        given: String,
    },
    /// The tenant's vectors were made by an embedder this process cannot
    /// make (no model files, no endpoint settings, or a build without it).
    #[error("tenant `{tenant}`'s vectors were made by `{stored}`, and it opens only with that embedder, which cannot be made here: {source}")]
    EmbedderUnavailable {
        /// The tenant.
        tenant: String,
        /// The recorded embedder.
        stored: String,
        /// Why it could not be made.
        #[source]
        source: Box<crate::plugins::SetupError>,
    },
    /// The tenant's summaries (S) or relations (G) were made by another
    /// builder than the one given.
    #[error("the memory's {builder} is `{stored}`, but the one given is `{given}`; open it with the {builder} that wrote it")]
    BuilderMismatch {
        /// `summarizer` or `extractor`.
        builder: &'static str,
        /// The recorded builder.
        stored: String,
        /// The one given.
        given: String,
    },
    /// The tenant's summarizer or extractor is one this process cannot
    /// make (no endpoint settings, or a build without it).
    #[error("tenant `{tenant}`'s {builder} is `{stored}`, and it opens only with that {builder}, which cannot be made here: {source}")]
    BuilderUnavailable {
        /// The tenant.
        tenant: String,
        /// `summarizer` or `extractor`.
        builder: &'static str,
        /// The recorded builder.
        stored: String,
        /// Why it could not be made.
        #[source]
        source: Box<crate::plugins::SetupError>,
    },
    /// A question to a tenant opened only to list and export it.
    #[error("tenant `{tenant}` was opened to list and export it, without its builders; open it with LiveMemory::reader or LiveMemory::tenant to ask it")]
    Unbuilt {
        /// The tenant.
        tenant: String,
    },
    /// A model-backed builder failed on a new step; nothing was written.
    #[error("episode `{episode}`: {source}; nothing was written")]
    Plugin {
        /// The episode.
        episode: String,
        /// The builder's error.
        #[source]
        source: PluginError,
    },
    /// The structures could not be assembled.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A stored row is damaged.
    #[error("{path}: damaged row: {message}")]
    Corrupt {
        /// The database file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

fn last_step(last: Option<usize>) -> String {
    match last {
        Some(l) => format!(" (its steps end at {l})"),
        None => " (it has no steps)".into(),
    }
}

/// What kind of failure a [`LiveError`] is, for front ends that map errors
/// to their own (Python exceptions, HTTP statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LiveErrorKind {
    /// The tenant, episode or step does not exist.
    NotFound,
    /// The input is wrong (an empty action, a text too large, a bad
    /// timestamp or tenant name); nothing was written.
    Invalid,
    /// The call conflicts with the memory's state (the episode exists, the
    /// index is taken, another writer holds the tenant, a read-only handle).
    Conflict,
    /// The disk, the database or a file failed, or the directory is not a
    /// live memory this build reads.
    Storage,
    /// A model-backed builder failed on the new steps (nothing was
    /// written), or the tenant's embedder cannot be made.
    Builder,
}

impl LiveError {
    /// A stable code naming the variant (`unknown-episode`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            LiveError::Io { .. } => "io",
            LiveError::Db { .. } => "database",
            LiveError::DiskFull { .. } => "disk-full",
            LiveError::NotAMemory { .. } => "not-a-memory",
            LiveError::NoMemory { .. } => "no-memory",
            LiveError::BuiltStore { .. } => "built-store",
            LiveError::Version { .. } => "version",
            LiveError::BadTenant { .. } => "bad-tenant",
            LiveError::UnknownTenant { .. } => "unknown-tenant",
            LiveError::Locked { .. } => "locked",
            LiveError::ReadOnly { .. } => "read-only",
            LiveError::UnknownEpisode { .. } => "unknown-episode",
            LiveError::EpisodeExists { .. } => "episode-exists",
            LiveError::UnknownStep { .. } => "unknown-step",
            LiveError::IndexTaken { .. } => "index-taken",
            LiveError::IndexTooLarge { .. } => "index-too-large",
            LiveError::Empty { .. } => "empty",
            LiveError::BadEpisodeId { .. } => "bad-episode-id",
            LiveError::TooLarge { .. } => "too-large",
            LiveError::BadTimestamp { .. } => "bad-timestamp",
            LiveError::BadRequestId { .. } => "bad-request-id",
            LiveError::RequestIdReused { .. } => "request-id-reused",
            LiveError::EmbedderMismatch { .. } => "embedder-mismatch",
            LiveError::EmbedderUnavailable { .. } => "embedder-unavailable",
            LiveError::BuilderMismatch { .. } => "builder-mismatch",
            LiveError::BuilderUnavailable { .. } => "builder-unavailable",
            LiveError::Unbuilt { .. } => "unbuilt",
            LiveError::Plugin { .. } => "builder",
            LiveError::Build(_) => "build",
            LiveError::Corrupt { .. } => "corrupt",
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> LiveErrorKind {
        match self {
            LiveError::UnknownTenant { .. }
            | LiveError::NoMemory { .. }
            | LiveError::UnknownEpisode { .. }
            | LiveError::UnknownStep { .. } => LiveErrorKind::NotFound,
            LiveError::BadTenant { .. }
            | LiveError::Empty { .. }
            | LiveError::BadEpisodeId { .. }
            | LiveError::IndexTooLarge { .. }
            | LiveError::TooLarge { .. }
            | LiveError::BadTimestamp { .. }
            | LiveError::BadRequestId { .. } => LiveErrorKind::Invalid,
            LiveError::Locked { .. }
            | LiveError::ReadOnly { .. }
            | LiveError::Unbuilt { .. }
            | LiveError::EpisodeExists { .. }
            | LiveError::IndexTaken { .. }
            | LiveError::RequestIdReused { .. }
            | LiveError::EmbedderMismatch { .. }
            | LiveError::BuilderMismatch { .. } => LiveErrorKind::Conflict,
            LiveError::Plugin { .. }
            | LiveError::Build(_)
            | LiveError::EmbedderUnavailable { .. }
            | LiveError::BuilderUnavailable { .. } => LiveErrorKind::Builder,
            LiveError::Io { .. }
            | LiveError::Db { .. }
            | LiveError::DiskFull { .. }
            | LiveError::NotAMemory { .. }
            | LiveError::BuiltStore { .. }
            | LiveError::Version { .. }
            | LiveError::Corrupt { .. } => LiveErrorKind::Storage,
        }
    }
}
