//! Opening a tenant: for writing (holding its writer lock, creating it if
//! new) or for reading beside its writer, with the builders it recorded,
//! the ones named, or exactly the ones given (module `builders` settles
//! which).
//!
//! | opening | a builder the tenant recorded | a new tenant |
//! | --- | --- | --- |
//! | [`LiveMemory::tenant`], [`LiveMemory::reader`], [`LiveMemory::tenant_recorded`] | made again from its name | the built-in ones |
//! | [`LiveMemory::tenant_builders`], [`LiveMemory::tenant_embedding`] | made again from its name | the ones given |
//! | [`LiveMemory::tenant_named`], [`LiveMemory::reader_named`] | a named one must be it; the others made again | the named ones, else the built-in ones |
//! | [`LiveMemory::tenant_with`], [`LiveMemory::reader_with`] | the given one must be it | the ones given |
//! | [`LiveMemory::lister`] (lists and exports; asks nothing) | not made | - |

use super::builders::{self, Choice, NamedBuilders};
use super::{db, db_error, LiveError, LiveMemory, Tenant, DATABASE, MARKER};
use crate::config::Config;
use crate::plugins::PluginOptions;
use crate::structures::state_fingerprint;
use crate::structures::Plugins;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::sync::Mutex;

impl LiveMemory {
    /// Opens tenant `name` for reading and writing, creating it if new,
    /// with the builders it recorded (see [`LiveMemory::tenant_recorded`];
    /// their options from the environment: `MESA_MINILM_DIR`,
    /// `MESA_LLM_*`), the built-in ones for a new tenant. Only one handle
    /// writes a tenant at a time; another gets [`LiveError::Locked`] (after
    /// waiting for it, with [`LiveMemory::waiting_for_writer`]).
    pub fn tenant(&self, name: &str) -> Result<Tenant, LiveError> {
        self.tenant_recorded(name, &PluginOptions::default())
    }

    /// Opens tenant `name` with the builders it recorded (module
    /// `builders`): the embedder that made its vectors, the summarizer and
    /// the extractor that made its S and G, made again from `options`
    /// (the built-in ones, MiniLM from `options.minilm_dir`, or the
    /// endpoint of `options` with the recorded model). So a tenant that
    /// `mesa build --into --embedder minilm --summarizer llm` wrote opens
    /// with those in every front end; one whose builders cannot be made
    /// here is [`LiveError::EmbedderUnavailable`] or
    /// [`LiveError::BuilderUnavailable`]. A new tenant gets the built-in
    /// builders.
    pub fn tenant_recorded(
        &self,
        name: &str,
        options: &PluginOptions,
    ) -> Result<Tenant, LiveError> {
        self.tenant_builders(name, Plugins::default(), options)
    }

    /// Opens tenant `name` as [`LiveMemory::tenant_recorded`] does, except
    /// that a tenant without vectors yet (a new one) gets `embedder`, which
    /// it then records: what `mesa serve --embedder openai` gives the
    /// tenants its tokens create.
    pub fn tenant_embedding(
        &self,
        name: &str,
        embedder: Arc<dyn crate::structures::Embedder>,
        options: &PluginOptions,
    ) -> Result<Tenant, LiveError> {
        let new = Plugins {
            embedder,
            ..Plugins::default()
        };
        self.tenant_builders(name, new, options)
    }

    /// Opens tenant `name` as [`LiveMemory::tenant_recorded`] does, except
    /// that each builder the tenant has not recorded (all three, for a new
    /// one) is `new`'s, which it then records: what `mesa append
    /// --summarizer llm` gives a tenant it creates.
    pub fn tenant_builders(
        &self,
        name: &str,
        new: Plugins,
        options: &PluginOptions,
    ) -> Result<Tenant, LiveError> {
        self.writer(name, Config::default(), new, Choice::recorded(options))
    }

    /// Opens tenant `name` as [`LiveMemory::tenant_recorded`] does, except
    /// that each builder `named` names must be the one the tenant recorded
    /// (a new tenant records it).
    pub fn tenant_named(
        &self,
        name: &str,
        named: &NamedBuilders,
        options: &PluginOptions,
    ) -> Result<Tenant, LiveError> {
        let choice = Choice::named(named, options);
        self.writer(name, Config::default(), named.plugins(), choice)
    }

    /// [`LiveMemory::tenant`] with these parameters and builders, which
    /// must be the ones the tenant recorded (else
    /// [`LiveError::EmbedderMismatch`] or [`LiveError::BuilderMismatch`]);
    /// a new tenant records them.
    pub fn tenant_with(
        &self,
        name: &str,
        config: Config,
        plugins: Plugins,
    ) -> Result<Tenant, LiveError> {
        self.writer(name, config, plugins, Choice::given())
    }

    /// Opens tenant `name` for writing, holding its writer lock.
    fn writer(
        &self,
        name: &str,
        config: Config,
        plugins: Plugins,
        choice: Choice<'_>,
    ) -> Result<Tenant, LiveError> {
        let dir = self.tenant_dir(name)?;
        std::fs::create_dir_all(&dir).map_err(|source| LiveError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let lock_path = dir.join("writer.lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| LiveError::Io {
                path: lock_path.display().to_string(),
                source,
            })?;
        match self.lock_within(&lock) {
            Ok(true) => self.open_tenant(name, dir, config, plugins, choice, Some(lock)),
            Ok(false) => Err(LiveError::Locked {
                tenant: name.into(),
                path: lock_path.display().to_string(),
            }),
            Err(source) => Err(LiveError::Io {
                path: lock_path.display().to_string(),
                source,
            }),
        }
    }

    /// Takes `lock`, trying again while another handle holds it (every 5 ms
    /// at first, then every 100 ms at most) until this memory's writer wait
    /// has passed (a wait past any instant is no limit); whether it did. A
    /// lock the file system refuses (not one held) is its error.
    fn lock_within(&self, lock: &File) -> std::io::Result<bool> {
        use std::time::{Duration, Instant};
        let deadline = Instant::now().checked_add(self.writer_wait);
        let mut pause = Duration::from_millis(5);
        loop {
            match lock.try_lock() {
                Ok(()) => return Ok(true),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return Ok(false);
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Opens the live memory at `root` if there is one, creating nothing
    /// (for calls that only read, forget or correct).
    pub fn open_existing(root: &Path) -> Result<LiveMemory, LiveError> {
        if !root.join(MARKER).is_file() && !root.join("manifest.json").is_file() {
            return Err(LiveError::NoMemory {
                dir: root.display().to_string(),
            });
        }
        LiveMemory::open(root)
    }

    /// Opens an existing tenant for reading and writing, as
    /// [`LiveMemory::tenant`] does, but never creates one.
    pub fn existing_tenant(&self, name: &str) -> Result<Tenant, LiveError> {
        self.existing_dir(name)?;
        self.tenant(name)
    }

    /// Opens the database in `dir` with the builders `choice` settles on;
    /// a writer holds `lock`. The tenant shares this memory's budget of
    /// built steps ([`LiveMemory::keeping_steps`]; a lister builds nothing,
    /// so it never counts toward it).
    fn open_tenant(
        &self,
        name: &str,
        dir: PathBuf,
        config: Config,
        plugins: Plugins,
        choice: Choice<'_>,
        lock: Option<File>,
    ) -> Result<Tenant, LiveError> {
        let path = dir.join(DATABASE);
        let conn = db::open(&path)?;
        let writer = lock.is_some();
        let listing = choice.listing;
        let plugins = builders::settle(&conn, name, plugins, choice, writer, db_error(&path))?;
        Ok(Tenant {
            name: name.to_string(),
            dir,
            path,
            conn: Mutex::new(conn),
            writer: Mutex::new(()),
            fingerprint: state_fingerprint(&config, &plugins),
            config,
            plugins,
            snapshots: self.budget.register(),
            budget: self.budget.clone(),
            closing: AtomicBool::new(false),
            gates: Mutex::new(HashMap::new()),
            lock,
            listing,
        })
    }

    /// Tenant `name`'s directory, if the tenant has been written.
    fn existing_dir(&self, name: &str) -> Result<PathBuf, LiveError> {
        let dir = self.tenant_dir(name)?;
        if !dir.join(DATABASE).is_file() {
            return Err(LiveError::UnknownTenant { name: name.into() });
        }
        Ok(dir)
    }

    /// Opens an existing tenant for reading only, beside its writer (another
    /// handle or process may be appending): questions see every change the
    /// writer has committed; writes return [`LiveError::ReadOnly`].
    /// Its builders are the ones the tenant recorded, as for
    /// [`LiveMemory::tenant`].
    pub fn reader(&self, name: &str) -> Result<Tenant, LiveError> {
        let dir = self.existing_dir(name)?;
        let options = PluginOptions::default();
        let choice = Choice::recorded(&options);
        self.open_tenant(
            name,
            dir,
            Config::default(),
            Plugins::default(),
            choice,
            None,
        )
    }

    /// Opens an existing tenant to list and export it, beside its writer,
    /// without making its builders: [`Tenant::episodes`], [`Tenant::steps`],
    /// [`Tenant::questions`] and [`Tenant::export`] answer, so a tenant
    /// whose embedder cannot be made here can still be moved; a question
    /// is [`LiveError::Unbuilt`], a write [`LiveError::ReadOnly`].
    pub fn lister(&self, name: &str) -> Result<Tenant, LiveError> {
        let dir = self.existing_dir(name)?;
        let (config, plugins) = (Config::default(), Plugins::default());
        self.open_tenant(name, dir, config, plugins, Choice::listing(), None)
    }

    /// [`LiveMemory::reader`], except that each builder `named` names must
    /// be the one the tenant recorded.
    pub fn reader_named(
        &self,
        name: &str,
        named: &NamedBuilders,
        options: &PluginOptions,
    ) -> Result<Tenant, LiveError> {
        let dir = self.existing_dir(name)?;
        let choice = Choice::named(named, options);
        self.open_tenant(name, dir, Config::default(), named.plugins(), choice, None)
    }

    /// [`LiveMemory::reader`] with these parameters and builders, which
    /// must be the ones the tenant recorded.
    pub fn reader_with(
        &self,
        name: &str,
        config: Config,
        plugins: Plugins,
    ) -> Result<Tenant, LiveError> {
        let dir = self.existing_dir(name)?;
        self.open_tenant(name, dir, config, plugins, Choice::given(), None)
    }
}
