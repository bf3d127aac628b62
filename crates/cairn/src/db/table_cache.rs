//! Open tables by file number, so each table's index and filter are read once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;

use super::learner::Learner;
use crate::cache::BlockCache;
use crate::options::IndexPolicy;
use crate::stats::StatsInner;
use crate::storage::{FileKind, StorageEnv};
use crate::table::Table;
use crate::version::FileMeta;
use crate::Result;

const SHARDS: usize = 16;

/// Path of a table file in a tier.
pub(crate) fn table_path(env: &StorageEnv, tier: usize, file_no: u64) -> PathBuf {
    env.tier_dir(tier).join(format!("{file_no:06}.sst"))
}

/// Path of a table's saved learned model (Bourbon), beside the table.
pub(crate) fn model_path(env: &StorageEnv, tier: usize, file_no: u64) -> PathBuf {
    env.tier_dir(tier).join(format!("{file_no:06}.plr"))
}

pub(crate) struct TableCache {
    env: StorageEnv,
    cache: Option<Arc<dyn BlockCache>>,
    /// Index and filter blocks go to `cache` (`Options::cache_index_and_filter_blocks`).
    cache_meta: bool,
    direct: bool,
    learner: Option<Arc<Learner>>,
    shards: Vec<RwLock<HashMap<u64, Arc<Table>>>>,
}

impl TableCache {
    pub(crate) fn new(
        env: StorageEnv,
        cache: Option<Arc<dyn BlockCache>>,
        cache_meta: bool,
        direct: bool,
        policy: IndexPolicy,
        stats: Arc<StatsInner>,
    ) -> Self {
        TableCache {
            env: env.clone(),
            cache,
            cache_meta,
            direct,
            learner: match policy {
                IndexPolicy::Fence => None,
                IndexPolicy::Learned {
                    delta,
                    mode,
                    wait_ms,
                } => Some(Arc::new(Learner::new(
                    delta,
                    mode,
                    wait_ms,
                    stats,
                    env.clone(),
                ))),
            },
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
        }
    }

    fn shard(&self, file_no: u64) -> &RwLock<HashMap<u64, Arc<Table>>> {
        &self.shards[(file_no as usize) % SHARDS]
    }

    /// The background learner, under [`IndexPolicy::Learned`].
    pub(crate) fn learner(&self) -> Option<&Arc<Learner>> {
        self.learner.as_ref()
    }

    /// The open table of `f` (opened on first use with fence pointers, and handed to the
    /// learner under [`IndexPolicy::Learned`]), counted against `level`.
    pub(crate) fn get(&self, f: &FileMeta, level: usize) -> Result<Arc<Table>> {
        if let Some(t) = f.open_table() {
            return Ok(t.clone());
        }
        let t = self.get_shared(f, level)?;
        f.keep_table(&t);
        Ok(t)
    }

    fn get_shared(&self, f: &FileMeta, level: usize) -> Result<Arc<Table>> {
        let no = f.file_no();
        if let Some(t) = self.shard(no).read().get(&no) {
            return Ok(t.clone());
        }
        let tier = f.desc.tier as usize;
        let path = table_path(&self.env, tier, no);
        let file = self
            .env
            .open_read(&path, FileKind::Table, tier, Some(level), self.direct)?;
        let t = Arc::new(match &self.cache {
            Some(c) if self.cache_meta => Table::open_caching_meta(file, no, c.clone())?,
            _ => Table::open(file, no, self.cache.clone())?,
        });
        let mut shard = self.shard(no).write();
        if let Some(t) = shard.get(&no) {
            return Ok(t.clone()); // opened meanwhile by another reader
        }
        if let Some(l) = &self.learner {
            l.load_model(&t, tier, level);
            l.register(&t, level, tier);
        }
        shard.insert(no, t.clone());
        Ok(t)
    }

    /// Opens a table outside the cache (compaction inputs: no block-cache pollution), with
    /// fence pointers only (compactions iterate, they do not look keys up).
    pub(crate) fn open_uncached(&self, f: &FileMeta, level: usize) -> Result<Arc<Table>> {
        let tier = f.desc.tier as usize;
        let path = table_path(&self.env, tier, f.file_no());
        let file = self
            .env
            .open_read(&path, FileKind::Table, tier, Some(level), self.direct)?;
        Ok(Arc::new(Table::open(file, f.file_no(), None)?))
    }

    /// Forgets a deleted table and, if `erase_blocks`, its cached blocks (the `Lru`
    /// prefetch policy leaves them to age out, as RocksDB does).
    pub(crate) fn evict(&self, file_no: u64, erase_blocks: bool) {
        self.shard(file_no).write().remove(&file_no);
        if let Some(l) = &self.learner {
            l.retire(file_no);
            // The model file's tier is not known here: try each (few) tier.
            for tier in 0..self.env.num_tiers() {
                let p = model_path(&self.env, tier, file_no);
                if p.exists() {
                    let _ = self.env.remove(&p);
                }
            }
        }
        if let (Some(c), true) = (&self.cache, erase_blocks) {
            c.erase_file(file_no);
        }
    }
}
