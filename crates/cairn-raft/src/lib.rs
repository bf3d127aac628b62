//! cairn as the storage of an [openraft](https://docs.rs/openraft/0.9) cluster.
//!
//! One cairn database holds a node's whole Raft state, in three column families:
//! - `raft_log`: the log, one entry per key, keyed by its index in big-endian bytes (so
//!   key order is index order); `truncate` and `purge` are one range deletion each;
//! - `raft_meta`: the vote, the committed log id, the last purged log id, and the state
//!   machine's last applied log id and membership;
//! - `raft_data`: the state machine's key-value pairs.
//!
//! Each call of [`StateMachine::apply`](openraft::storage::RaftStateMachine::apply) is one
//! atomic write across `raft_data` and `raft_meta`: the entries' effects land together
//! with the last applied log id, so a crash never leaves data ahead of or behind it.
//! Appends and votes are made durable before they are acknowledged (the write-ahead log
//! synced). Snapshots are built from a cairn snapshot (a consistent view while applies go
//! on), kept in a file beside the database, and installed in one atomic write that
//! replaces the state machine's data.
//!
//! Engine calls block (I/O, fsync), so they run on tokio's blocking pool, not on the
//! async runtime's workers.
//!
//! openraft 0.9 is the newest stable release (0.10 is in alpha); its storage test suite
//! (`openraft::testing::Suite`) runs against this crate in `tests/suite.rs`.

// openraft's traits return its StorageError (over 200 bytes); the helpers return it too.
#![allow(clippy::result_large_err)]

pub mod client;
pub mod engine;
mod keys;
mod log_store;
#[cfg(feature = "rocksdb")]
pub mod rocks;
pub mod server;
mod snapshot;
mod state_machine;
mod store;

pub use log_store::LogStore;
pub use state_machine::{KvReader, StateMachine};
pub use store::{open, open_engine, open_with, StoreError};

use std::io::Cursor;

use serde::{Deserialize, Serialize};

/// A node's id in the cluster.
pub type NodeId = u64;

/// A node's address: one `host:port` serves both Raft's messages and clients.
pub type Node = openraft::BasicNode;

/// What a client asks the replicated key-value store to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Sets `key` to `value`.
    Put {
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// Removes `key`.
    Delete {
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Removes every key in `[start, end)`.
    DeleteRange {
        #[serde(with = "serde_bytes")]
        start: Vec<u8>,
        #[serde(with = "serde_bytes")]
        end: Vec<u8>,
    },
}

/// What applying a request answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The log index the request was applied at.
    pub index: u64,
    /// The engine refused the request (an oversized key or value, a range whose start is
    /// after its end); it changed nothing, on every node alike.
    pub refused: bool,
}

openraft::declare_raft_types!(
    /// The types of a cairn-backed Raft node.
    pub TypeConfig:
        D = Request,
        R = Response,
        Node = Node,
);

/// A log entry of this type config.
pub type Entry = openraft::Entry<TypeConfig>;

/// The Raft node type over cairn's store.
pub type Raft = openraft::Raft<TypeConfig>;
