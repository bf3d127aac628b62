//! One node of the replicated key-value server (see `cairn_raft::server`).
//!
//!     cairn-raft-kv --id 1 --addr 127.0.0.1:21001 --dir /tmp/raft/1 [--preset NAME]

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

#[derive(Parser)]
#[command(about = "A node of cairn's replicated key-value server (openraft over cairn)")]
struct Args {
    /// This node's id in the cluster.
    #[arg(long)]
    id: u64,
    /// The address to listen on (and that peers and clients reach it at).
    #[arg(long)]
    addr: SocketAddr,
    /// The node's store: its database and current snapshot.
    #[arg(long)]
    dir: PathBuf,
    /// cairn's options by preset name (`cairn presets` lists them); default options
    /// otherwise.
    #[arg(long)]
    preset: Option<String>,
    /// The engine under the store: cairn, or rocksdb (built with feature `rocksdb`; the
    /// bench's comparison).
    #[arg(long, default_value = "cairn")]
    engine: String,
    /// Build a snapshot every this many applied entries and keep a tenth of them in the
    /// log (default 10,000).
    #[arg(long, default_value_t = 10_000)]
    snapshot_logs: u64,
    /// How long the leader waits for each snapshot segment's answer, the last one's
    /// including the follower's install of the whole state machine (milliseconds).
    #[arg(long, default_value_t = cairn_raft::server::default_raft_config().install_snapshot_timeout)]
    install_snapshot_timeout_ms: u64,
}

fn main() -> Result<(), cairn_raft::server::ServeError> {
    let a = Args::parse();
    let options = match &a.preset {
        Some(p) => cairn::presets::by_name(p).ok_or_else(|| format!("no preset named `{p}`"))?,
        None => cairn::Options::default(),
    };
    let engine = match a.engine.as_str() {
        "cairn" => cairn_raft::server::EngineChoice::Cairn(Box::new(options)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => cairn_raft::server::EngineChoice::Rocksdb,
        other => {
            return Err(
                format!("unknown engine `{other}` (cairn, or rocksdb with the feature)").into(),
            )
        }
    };
    let cfg = cairn_raft::server::NodeConfig {
        id: a.id,
        addr: a.addr,
        dir: a.dir,
        engine,
        raft: openraft::Config {
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(a.snapshot_logs),
            max_in_snapshot_log_to_keep: a.snapshot_logs / 10,
            install_snapshot_timeout: a.install_snapshot_timeout_ms,
            ..cairn_raft::server::default_raft_config()
        },
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(cairn_raft::server::serve(cfg))
}
