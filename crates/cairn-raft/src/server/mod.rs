//! A replicated key-value server: one Raft node over cairn, serving Raft's messages, a
//! key-value API and cluster management on one HTTP address.
//!
//! Endpoints (JSON unless said):
//! - `POST /kv/put {"key","value"}`, `POST /kv/delete {"key"}`: answered once the write
//!   is committed and applied on the leader (`{"index","refused"}`); another node answers
//!   421 with the leader's id and address.
//! - `GET /kv/get?key=K`: a linearizable read on the leader; `&local=true` reads this
//!   node's applied state instead (may be stale).
//! - `POST /cluster/init {"1":"host:port",...}`, `POST /cluster/add-learner
//!   {"id","addr","blocking"}` (blocking: answer once it has caught up), `POST /cluster/change-membership [ids]`, `GET /cluster/metrics`.
//! - `POST /raft/{append,vote,snapshot}`: Raft's messages, MessagePack.

mod http;
mod network;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use http::{NotLeader, Value, Written};
pub use network::Network;

use crate::NodeId;

/// The engine under a node's store.
pub enum EngineChoice {
    /// cairn with these options (any preset).
    Cairn(Box<cairn::Options>),
    /// RocksDB with its defaults (feature `rocksdb`): the bench's comparison.
    #[cfg(feature = "rocksdb")]
    Rocksdb,
}

/// How to run one node.
pub struct NodeConfig {
    pub id: NodeId,
    /// The address it listens on and its peers reach it at.
    pub addr: SocketAddr,
    /// Its store (database and snapshot).
    pub dir: PathBuf,
    pub engine: EngineChoice,
    pub raft: openraft::Config,
}

/// openraft's configuration for a cluster on one machine or a LAN: heartbeats every
/// 100 ms, elections after 300-600 ms of silence, a snapshot every 10,000 entries with
/// the last 1,000 kept in the log.
pub fn default_raft_config() -> openraft::Config {
    openraft::Config {
        cluster_name: "cairn-raft-kv".into(),
        heartbeat_interval: 100,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(10_000),
        max_in_snapshot_log_to_keep: 1_000,
        ..Default::default()
    }
}

/// Why a node stopped.
pub type ServeError = Box<dyn std::error::Error + Send + Sync>;

/// Opens the store, starts the Raft node and serves until the process ends.
pub async fn serve(cfg: NodeConfig) -> Result<(), ServeError> {
    let (log, sm) = match cfg.engine {
        EngineChoice::Cairn(options) => crate::open_with(&cfg.dir, *options)?,
        #[cfg(feature = "rocksdb")]
        EngineChoice::Rocksdb => {
            let engine = crate::rocks::RocksEngine::open(&cfg.dir.join("db"))?;
            crate::open_engine(&cfg.dir, Box::new(engine))?
        }
    };
    let reader = sm.reader();
    let config = Arc::new(cfg.raft.validate()?);
    let raft = crate::Raft::new(cfg.id, config, Network::new(), log, sm).await?;
    let app = Arc::new(http::App {
        id: cfg.id,
        raft,
        reader,
    });
    let listener = tokio::net::TcpListener::bind(cfg.addr).await?;
    axum::serve(listener, http::router(app)).await?;
    Ok(())
}
