//! Open tables by file number, so each table's index and filter are read once while it
//! stays open. Tables share the database's open-file cache ([`OpenFiles`]) with the
//! value-log files: unbounded by default, else at most `Options::max_open_files` (less a
//! reserve) tables and value-log files stay open, least recently used closed first.
//!
//! Learned models survive a table's closing: when a table is opened again, its model is
//! loaded from the model file the learner saved beside it (`NNNNNN.plr`), and a table
//! that was never learned (or whose model was not saved) is handed to the learner again
//! (see [`Learner::register`]).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use super::learner::Learner;
use crate::cache::open_files::{FileKey, OpenFile, OpenFiles};
use crate::cache::BlockCache;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::options::IndexPolicy;
use crate::stats::StatsInner;
use crate::storage::{FileKind, StorageEnv};
use crate::table::Table;
use crate::version::FileMeta;
use crate::{Error, Result};

/// Path of a table file in a tier.
pub(crate) fn table_path(env: &StorageEnv, tier: usize, file_no: FileNo) -> PathBuf {
    env.tier_dir(tier).join(crate::filenames::table(file_no))
}

/// Path of a table's saved learned model (Bourbon), beside the table.
pub(crate) fn model_path(env: &StorageEnv, tier: usize, file_no: FileNo) -> PathBuf {
    env.tier_dir(tier).join(crate::filenames::model(file_no))
}

pub(crate) struct TableCache {
    env: StorageEnv,
    cache: Option<Arc<dyn BlockCache>>,
    /// Index and filter blocks go to `cache` (`Options::cache_index_and_filter_blocks`).
    cache_meta: bool,
    direct: bool,
    /// Bourbon's background learner, once a family's tables are learned.
    learner: OnceLock<Arc<Learner>>,
    /// The families whose tables the learner takes.
    learned_families: RwLock<HashSet<CfId>>,
    stats: Arc<StatsInner>,
    /// Shared with the value-log store.
    files: Arc<OpenFiles>,
}

impl TableCache {
    pub(crate) fn new(
        env: StorageEnv,
        cache: Option<Arc<dyn BlockCache>>,
        cache_meta: bool,
        direct: bool,
        policy: IndexPolicy,
        stats: Arc<StatsInner>,
        files: Arc<OpenFiles>,
    ) -> Self {
        let t = TableCache {
            env: env.clone(),
            cache,
            cache_meta,
            direct,
            learner: OnceLock::new(),
            learned_families: RwLock::new(HashSet::new()),
            stats,
            files,
        };
        t.enable_learner(policy);
        t
    }

    /// Starts the background learner under `policy` if it is [`IndexPolicy::Learned`] and
    /// none runs yet (the first learned family's parameters serve every family). Returns
    /// whether this call started it.
    pub(crate) fn enable_learner(&self, policy: IndexPolicy) -> bool {
        let IndexPolicy::Learned {
            delta,
            mode,
            wait_ms,
        } = policy
        else {
            return false;
        };
        let mut created = false;
        self.learner.get_or_init(|| {
            created = true;
            Arc::new(Learner::new(
                delta,
                mode,
                wait_ms,
                self.stats.clone(),
                self.env.clone(),
            ))
        });
        created
    }

    /// Whether the learner takes the tables of family `cf` (Bourbon's index for it).
    pub(crate) fn set_family_learned(&self, cf: CfId, on: bool) {
        let mut s = self.learned_families.write();
        if on {
            s.insert(cf);
        } else {
            s.remove(&cf);
        }
    }

    /// The open-file cache (tables and value-log files).
    pub(crate) fn open_files(&self) -> &OpenFiles {
        &self.files
    }

    /// The background learner, under [`IndexPolicy::Learned`].
    pub(crate) fn learner(&self) -> Option<&Arc<Learner>> {
        self.learner.get()
    }

    /// The open table of `f` (opened on first use with fence pointers, and handed to the
    /// learner under [`IndexPolicy::Learned`]), counted against `level`.
    ///
    /// Unbounded, the table is also kept in `f`, so that later reads of the same version's
    /// file take no lock at all. Bounded, it is not: a version's files would otherwise
    /// keep every table they ever opened open, whatever the cache closed.
    pub(crate) fn get(&self, f: &FileMeta, level: usize) -> Result<Arc<Table>> {
        if let Some(t) = f.open_table() {
            return Ok(t.clone());
        }
        let t = self.get_shared(f, level)?;
        if !self.files.is_bounded() {
            f.keep_table(&t);
        }
        Ok(t)
    }

    fn get_shared(&self, f: &FileMeta, level: usize) -> Result<Arc<Table>> {
        let no = f.file_no();
        let key = FileKey::Table(no);
        if let Some(OpenFile::Table(t)) = self.files.get(key) {
            return Ok(t);
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
        // Readers gather deletions only from tables the manifest says hold some.
        let held = t.properties().range_dels.map_or(0, |(n, _)| n);
        if held != f.desc.range_dels {
            return Err(Error::corruption(
                path.display().to_string(),
                format!(
                    "holds {held} range deletions, the manifest says {}",
                    f.desc.range_dels
                ),
            ));
        }
        let learned = self.learned_families.read().contains(&f.cf);
        let cached = self.files.insert(key, OpenFile::Table(t), |added| {
            // Once per opening that goes in (under the cache's lock, as a reader that
            // opened the table meanwhile must not load or register it twice). A table
            // opened again after the cache closed it gets its saved model back here.
            if let (Some(l), OpenFile::Table(t), true) = (self.learner.get(), added, learned) {
                l.load_model(t, tier, level);
                l.register(t, level, tier);
            }
        });
        match cached {
            OpenFile::Table(t) => Ok(t),
            OpenFile::ValueLog(_) => unreachable!("a table key holds a table"),
        }
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
    pub(crate) fn evict(&self, file_no: FileNo, erase_blocks: bool) {
        self.files.remove(FileKey::Table(file_no));
        if let Some(l) = self.learner.get() {
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
