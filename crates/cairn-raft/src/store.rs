//! The database a node's Raft state lives in, opened once and shared by the log store
//! and the state machine; blocking engine calls moved off the async workers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::engine::{BatchOp, CairnEngine, EngineView, Family, RaftEngine};
use crate::{LogStore, NodeId, StateMachine};

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The engine refused (I/O, corruption, options).
    #[error("engine: {0}")]
    Engine(String),
    /// The snapshot directory could not be made or read.
    #[error("snapshot directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<cairn::Error> for StoreError {
    fn from(e: cairn::Error) -> Self {
        StoreError::Engine(e.to_string())
    }
}

/// The engine and where the current snapshot lives.
pub(crate) struct Shared {
    pub(crate) engine: Box<dyn RaftEngine>,
    pub(crate) snapshot_dir: PathBuf,
}

/// Opens (or creates) a node's store in `dir` with cairn's default options.
pub fn open(dir: impl AsRef<Path>) -> Result<(LogStore, StateMachine), StoreError> {
    open_with(dir, cairn::Options::default())
}

/// Opens (or creates) a node's store in `dir`: the database in `dir/db` with `opts` (any
/// preset: the learned parts then work on the state machine's family as on any other),
/// the current snapshot in `dir/snapshot`.
pub fn open_with(
    dir: impl AsRef<Path>,
    opts: cairn::Options,
) -> Result<(LogStore, StateMachine), StoreError> {
    let dir = dir.as_ref();
    let engine = CairnEngine::open(&dir.join("db"), opts)?;
    open_engine(dir, Box::new(engine))
}

/// A store over any engine behind the seam (the bench's RocksDB store uses it); the
/// current snapshot in `dir/snapshot`.
pub fn open_engine(
    dir: &Path,
    engine: Box<dyn RaftEngine>,
) -> Result<(LogStore, StateMachine), StoreError> {
    let snapshot_dir = dir.join("snapshot");
    std::fs::create_dir_all(&snapshot_dir).map_err(|source| StoreError::Io {
        path: snapshot_dir.clone(),
        source,
    })?;
    let shared = Arc::new(Shared {
        engine,
        snapshot_dir,
    });
    let sm = StateMachine::new(shared.clone())?;
    Ok((LogStore::new(shared), sm))
}

impl Shared {
    /// A value of the meta family at `view` (now when None), decoded.
    pub(crate) fn meta_get<T: DeserializeOwned>(
        &self,
        view: Option<&dyn EngineView>,
        key: &'static [u8],
    ) -> Result<Option<T>, StorageError<NodeId>> {
        let err = |e: &(dyn std::error::Error + 'static)| {
            StorageError::from(StorageIOError::new(
                ErrorSubject::Store,
                ErrorVerb::Read,
                AnyError::error(e.to_string()),
            ))
        };
        let bytes = match view {
            Some(v) => v.get(Family::Meta, key),
            None => self.engine.view().get(Family::Meta, key),
        }
        .map_err(|e| err(&e))?;
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        decode(&bytes).map(Some).map_err(|e| err(&e))
    }

    /// A meta value as a batch op.
    pub(crate) fn meta_put<T: Serialize>(
        &self,
        ops: &mut Vec<BatchOp>,
        key: &'static [u8],
        value: &T,
    ) -> Result<(), StorageError<NodeId>> {
        let bytes = encode(value).map_err(|e| io_err(ErrorSubject::Store, ErrorVerb::Write, &e))?;
        ops.push(BatchOp::Put(Family::Meta, key.to_vec(), bytes));
        Ok(())
    }

    /// Writes `ops` atomically, synced before it returns when `sync`.
    pub(crate) fn write(
        &self,
        ops: Vec<BatchOp>,
        sync: bool,
        subject: ErrorSubject<NodeId>,
    ) -> Result<(), StorageError<NodeId>> {
        self.engine
            .write(ops, sync)
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
