//! The one error type of cairn. Every failure a caller can cause or meet (bad input,
//! corrupt files, I/O errors such as a full disk) is a variant here; panics are reserved
//! for bugs.

use std::path::PathBuf;

/// Result alias used throughout cairn.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors returned by cairn. Cloneable (the I/O source is shared), so one failure can be
/// reported to every waiter; new variants may come in later releases.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error (including `ENOSPC`, a full disk).
    #[error("I/O error{}: {source}", context_suffix(.context))]
    Io {
        /// What cairn was doing (a file path or an operation), if known.
        context: String,
        /// The underlying error (shared, so the error is cloneable).
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// A checksum mismatch or an undecodable structure in a file.
    #[error("corruption in {file}: {detail}")]
    Corruption {
        /// The file (or file kind) that is corrupt.
        file: String,
        /// What was wrong.
        detail: String,
    },
    /// A file written by an unknown (newer) format version.
    #[error("unsupported format version {found} in {file} (this build reads up to {supported})")]
    UnsupportedVersion {
        /// The file.
        file: String,
        /// The version found in the file.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },
    /// Invalid options or arguments.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A key or value larger than the documented limit.
    #[error("{what} of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// "key" or "value".
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The directory exists but does not hold a cairn database.
    #[error("{0} is not a cairn database")]
    NotADatabase(PathBuf),
    /// The database does not exist and `create_if_missing` is off.
    #[error("database {0} does not exist")]
    NotFound(PathBuf),
    /// Another process (or another `Db` in this process) holds the LOCK file.
    #[error("database {0} is locked by another process")]
    Locked(PathBuf),
    /// An unknown column family.
    #[error("unknown column family {0:?}")]
    UnknownColumnFamily(String),
    /// The column family already exists.
    #[error("column family {0:?} already exists")]
    ColumnFamilyExists(String),
    /// The database was opened with [`Db::open_read_only`](crate::Db::open_read_only):
    /// the named operation would write.
    #[error("database is open read-only: {0} refused")]
    ReadOnly(String),
    /// The database has been closed, or a background error put it in read-only mode.
    #[error("database is closed or stopped after a background error: {0}")]
    Closed(String),
}

fn context_suffix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" ({context})")
    }
}

impl Error {
    /// Wraps an I/O error with a context string.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: std::sync::Arc::new(source),
        }
    }

    /// A corruption error.
    pub fn corruption(file: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            detail: detail.into(),
        }
    }

    /// True for errors that mean a file's bytes are wrong.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corruption { .. } | Error::UnsupportedVersion { .. }
        )
    }

    /// True when the underlying cause is a full disk (`ENOSPC`) or quota.
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::Io { source, .. } => matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT)
            ),
            _ => false,
        }
    }

    /// A copy of this error for reporting to several waiters.
    pub fn duplicate(&self) -> Self {
        self.clone()
    }
}

/// The first error after which the database must not take writes until it is reopened:
/// corruption found by background work, a panic inside the engine, a failed fsync of the
/// WAL, or a manifest write whose outcome is unknown. On Linux a failed fsync may drop the
/// dirty pages it covered, so a retry can succeed while earlier acknowledged bytes are
/// gone (as PostgreSQL learned); RocksDB stops writes on it too. (A failed WAL *write*
/// does not stop them: the record is cut off the log before the next write.) Shared, lock-free to read, by everything that
/// can hit such an error.
///
/// After a WAL failure alone the manifest is sound, and flushing the memtables is
/// the one way left to make their acknowledged writes durable: flushes go on (as
/// RocksDB's recovery from a WAL error flushes), and only writes stop. Any other cause
/// stops manifest writes too.
#[derive(Debug, Default)]
pub(crate) struct Halt {
    first: std::sync::OnceLock<Error>,
    wal_sync_failed: std::sync::atomic::AtomicBool,
    manifest_stopped: std::sync::atomic::AtomicBool,
}

impl Halt {
    /// Stops writes and manifest edits after `e`.
    pub(crate) fn stop(&self, e: &Error) {
        self.record(e);
        self.manifest_stopped
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Stops writes after a failed fsync of the WAL.
    pub(crate) fn stop_wal(&self, e: &Error) {
        self.record(e);
        self.wal_sync_failed
            .store(true, std::sync::atomic::Ordering::Release);
    }

    fn record(&self, e: &Error) {
        if self.first.set(e.duplicate()).is_ok() {
            log::error!("cairn: writes stop until the database is reopened: {e}");
        }
    }

    /// The error that stopped the database, if one did.
    pub(crate) fn error(&self) -> Option<&Error> {
        self.first.get()
    }

    /// Whether manifest edits (flushes installing their tables) may still be written.
    pub(crate) fn manifest_writable(&self) -> bool {
        !self
            .manifest_stopped
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether a WAL fsync failed (a retry would prove nothing).
    pub(crate) fn wal_sync_failed(&self) -> bool {
        self.wal_sync_failed
            .load(std::sync::atomic::Ordering::Acquire)
    }
}
