//! openraft's own storage test suite (`openraft::testing::Suite`), unmodified, against
//! cairn-raft's log store and state machine.

use cairn_raft::{LogStore, NodeId, StateMachine, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use tempfile::TempDir;

struct CairnBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, TempDir> for CairnBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = TempDir::new().expect("a temporary directory");
        let (log, sm) = cairn_raft::open(dir.path()).expect("open a store");
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() {
    if let Err(e) = Suite::test_all(CairnBuilder) {
        panic!("openraft's storage suite failed: {e}");
    }
}

/// The bench's comparison store (RocksDB behind the same seam) passes the suite too.
#[cfg(feature = "rocksdb")]
mod rocksdb_store {
    use super::*;

    struct RocksBuilder;

    impl StoreBuilder<TypeConfig, LogStore, StateMachine, TempDir> for RocksBuilder {
        async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError<NodeId>> {
            let dir = TempDir::new().expect("a temporary directory");
            let engine =
                cairn_raft::rocks::RocksEngine::open(&dir.path().join("db")).expect("open RocksDB");
            let (log, sm) =
                cairn_raft::open_engine(dir.path(), Box::new(engine)).expect("open a store");
            Ok((dir, log, sm))
        }
    }

    #[test]
    fn openraft_storage_suite_on_rocksdb() {
        if let Err(e) = Suite::test_all(RocksBuilder) {
            panic!("openraft's storage suite failed on RocksDB: {e}");
        }
    }
}
