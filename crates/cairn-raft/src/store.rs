//! The database a node's Raft state lives in, opened once and shared by the log store
//! and the state machine; blocking engine calls moved off the async workers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn::{ColumnFamily, Db, Options, WriteBatch, WriteOptions};
use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::keys::{DATA_CF, LOG_CF, META_CF};
use crate::{LogStore, NodeId, StateMachine};

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The engine refused (I/O, corruption, options).
    #[error("cairn: {0}")]
    Engine(#[from] cairn::Error),
    /// A stored value did not decode.
    #[error("stored {what} does not decode: {detail}")]
    Decode { what: &'static str, detail: String },
    /// The snapshot directory could not be made or read.
    #[error("snapshot directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The database and its three column families.
pub(crate) struct Shared {
    pub(crate) db: Db,
    pub(crate) log: ColumnFamily,
    pub(crate) meta: ColumnFamily,
    pub(crate) data: ColumnFamily,
    /// Where the current snapshot's file lives.
    pub(crate) snapshot_dir: PathBuf,
}

/// Opens (or creates) a node's store in `dir` with cairn's default options.
pub fn open(dir: impl AsRef<Path>) -> Result<(LogStore, StateMachine), StoreError> {
    open_with(dir, Options::default())
}

/// Opens (or creates) a node's store in `dir`: the database in `dir/db` with `opts` (any
/// preset: the learned parts then work on the state machine's family as on any other),
/// the current snapshot in `dir/snapshot`.
pub fn open_with(
    dir: impl AsRef<Path>,
    opts: Options,
) -> Result<(LogStore, StateMachine), StoreError> {
    let dir = dir.as_ref();
    let snapshot_dir = dir.join("snapshot");
    std::fs::create_dir_all(&snapshot_dir).map_err(|source| StoreError::Io {
        path: snapshot_dir.clone(),
        source,
    })?;
    let db = Db::open(dir.join("db"), opts)?;
    let family = |name: &str| -> Result<ColumnFamily, cairn::Error> {
        match db.cf(name) {
            Some(cf) => Ok(cf),
            None => db.create_cf(name),
        }
    };
    let shared = Arc::new(Shared {
        log: family(LOG_CF)?,
        meta: family(META_CF)?,
        data: family(DATA_CF)?,
        db,
        snapshot_dir,
    });
    let sm = StateMachine::new(shared.clone())?;
    Ok((LogStore::new(shared), sm))
}

impl Shared {
    /// A value of the meta family, decoded.
    pub(crate) fn meta_get<T: DeserializeOwned>(
        &self,
        key: &'static [u8],
    ) -> Result<Option<T>, StorageError<NodeId>> {
        let Some(bytes) = self
            .db
            .get_cf(&self.meta, key)
            .map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Read, &e))?
        else {
            return Ok(None);
        };
        decode(&bytes)
            .map(Some)
            .map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Read, &e))
    }

    /// Adds a meta value to `batch`.
    pub(crate) fn meta_put<T: Serialize>(
        &self,
        batch: &mut WriteBatch,
        key: &'static [u8],
        value: &T,
    ) -> Result<(), StorageError<NodeId>> {
        let bytes = encode(value).map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Write, &e))?;
        batch
            .put_cf(self.meta.id(), key, &bytes)
            .map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Write, &e))
    }

    /// Writes `batch`, synced to the write-ahead log before it returns when `sync`.
    pub(crate) fn write(
        &self,
        batch: WriteBatch,
        sync: bool,
        subject: ErrorSubject<NodeId>,
    ) -> Result<(), StorageError<NodeId>> {
        let wo = WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        self.db
            .write(&wo, batch)
            .map_err(|e| io_err(subject, ErrorVerb::Write, &e))
    }
}

/// Values are MessagePack (self-describing, so openraft's serde types round-trip).
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    rmp_serde::to_vec(value)
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, rmp_serde::decode::Error> {
    rmp_serde::from_slice(bytes)
}

/// A storage error naming what failed and how.
pub(crate) fn io_err(
    subject: ErrorSubject<NodeId>,
    verb: ErrorVerb,
    e: &(impl std::error::Error + 'static),
) -> StorageError<NodeId> {
    StorageIOError::new(subject, verb, AnyError::new(e)).into()
}

/// Runs a blocking engine call on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, StorageError<NodeId>>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StorageError<NodeId>> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(join) => Err(io_err(ErrorSubject::Store, ErrorVerb::Write, &join)),
    }
}
