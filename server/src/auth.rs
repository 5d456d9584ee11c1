//! Bearer tokens: each maps to exactly one tenant.
//!
//! The token file (`ROOT/tokens` unless `--tokens` names another) holds one
//! line per token, `sha256:HEX TENANT`, where HEX is the SHA-256 of the
//! token's text; `#` starts a comment. The server keeps only the hashes, so
//! the file reveals no token. `mesa token ROOT --tenant T` makes a token,
//! appends its line and prints the token once. A running server rereads the
//! file when it changes ([`TokenFile`]): a line removed revokes its token at
//! the next request.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Why the token file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not `sha256:HEX TENANT`.
    #[error("{path}:{line}: expected `sha256:HEX TENANT` (64 hex digits, a tenant name of letters, digits, `-` or `_`)")]
    BadLine {
        /// The file.
        path: String,
        /// The 1-based line.
        line: usize,
    },
    /// No random bytes for a new token.
    #[error("no randomness for a new token: {0}")]
    Random(getrandom::Error),
}

/// The tenants, by token hash.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    by_hash: HashMap<[u8; 32], String>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Tokens {
    /// Reads a token file; a missing file has no tokens.
    pub fn load(path: &Path) -> Result<Tokens, TokenError> {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Tokens::default()),
            Err(source) => {
                return Err(TokenError::Io {
                    path: shown,
                    source,
                })
            }
        };
        let mut by_hash = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || TokenError::BadLine {
                path: shown.clone(),
                line: i + 1,
            };
            let (hash, tenant) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
            let hex_part = hash.strip_prefix("sha256:").ok_or_else(bad)?;
            let mut h = [0u8; 32];
            hex::decode_to_slice(hex_part, &mut h).map_err(|_| bad())?;
            let tenant = tenant.trim();
            if !mesa_memory::live::valid_tenant(tenant) {
                return Err(bad());
            }
            by_hash.insert(h, tenant.to_string());
        }
        Ok(Tokens { by_hash })
    }

    /// The tenant a token names.
    pub fn tenant(&self, token: &str) -> Option<&str> {
        self.by_hash.get(&digest(token)).map(String::as_str)
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// The token file as a running server reads it: reread whenever its size or
/// modification time changes. A file that no longer reads (a bad line, an
/// error) keeps the tokens it last had, with a warning on standard error.
#[derive(Debug)]
pub struct TokenFile {
    path: std::path::PathBuf,
    current: std::sync::RwLock<(Option<Stamp>, Tokens)>,
}

/// What tells a changed file: its length and modification time.
type Stamp = (u64, std::time::SystemTime);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

impl TokenFile {
    /// Reads the file at `path` (a missing file has no tokens).
    pub fn open(path: &Path) -> Result<TokenFile, TokenError> {
        let seen = stamp(path);
        let tokens = Tokens::load(path)?;
        Ok(TokenFile {
            path: path.to_path_buf(),
            current: std::sync::RwLock::new((seen, tokens)),
        })
    }

    /// The tenant a token names, as the file says now.
    pub fn tenant(&self, token: &str) -> Option<String> {
        let now = stamp(&self.path);
        {
            let current = self.current.read().unwrap_or_else(|p| p.into_inner());
            if current.0 == now {
                return current.1.tenant(token).map(str::to_string);
            }
        }
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if current.0 != now {
            match Tokens::load(&self.path) {
                Ok(tokens) => current.1 = tokens,
                Err(e) => eprintln!("mesa serve: keeping the previous tokens: {e}"),
            }
            current.0 = now;
        }
        current.1.tenant(token).map(str::to_string)
    }

    /// How many tokens it holds now.
    pub fn len(&self) -> usize {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Makes a token for `tenant`, appends its hash to the file at `path`
/// (created if new) and returns the token.
pub fn add_token(path: &Path, tenant: &str) -> Result<String, TokenError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(TokenError::Random)?;
    let token = format!("mesa_{}", hex::encode(bytes));
    let line = format!("sha256:{} {tenant}\n", hex::encode(digest(&token)));
    let io = |source| TokenError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    f.write_all(line.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(token)
}
