//! The open table and value-log files of a database, bounded by `Options::max_open_files`
//! (RocksDB's table cache, which its blob files share: an LRU of open file readers).
//!
//! Unbounded (the default), every file stays open from its first read until it is
//! deleted, in maps read under a shared lock. Bounded, the files live in sharded LRU lists
//! of `max_open_files - RESERVED_FILES` entries in all; opening one more closes the least
//! recently used file that no reader is using. A closed file is reopened on its next read.
//!
//! Files in use (a reader or an iterator holds the `Arc`) are passed over: they would stay
//! open anyway, and keeping them in the cache spares a second opening of the same file.
//! When every file of a shard is in use, the shard goes over its share until some are
//! released, as RocksDB's table cache (not strict about its capacity) holds the readers in
//! use beyond it. So the open files number about the larger of the bound and the files in
//! use, not their sum. A file a reader takes just as the cache drops it (the test of use
//! is racy) stays open for that reader, and closes when it is done.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use lru::LruCache;
use parking_lot::{Mutex, RwLock};

use crate::ids::FileNo;
use crate::storage::RandomAccessFile;
use crate::table::Table;

/// Files a database keeps open besides those of this cache (WAL, manifest, lock file,
/// directories, model and stats files, the inputs and outputs of running compactions):
/// `max_open_files` less these is the cache's capacity (RocksDB reserves 10 the same way).
pub const RESERVED_FILES: usize = 10;

/// Shards of a bounded cache hold at least this many files each (fewer, larger shards
/// for small bounds, so that the bound is not split into lists of one or two files).
const MIN_PER_SHARD: usize = 8;
const MAX_SHARDS: usize = 16;

/// Which file: tables and value-log files share one budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FileKey {
    Table(FileNo),
    ValueLog(FileNo),
}

impl FileKey {
    fn file_no(self) -> FileNo {
        match self {
            FileKey::Table(n) | FileKey::ValueLog(n) => n,
        }
    }
}

/// An open file.
#[derive(Clone)]
pub(crate) enum OpenFile {
    Table(Arc<Table>),
    ValueLog(Arc<RandomAccessFile>),
}

impl OpenFile {
    /// True if someone besides the cache holds the file (a racy answer, which at worst
    /// closes a file as it is taken: its taker keeps it open).
    fn in_use(&self) -> bool {
        match self {
            OpenFile::Table(t) => Arc::strong_count(t) > 1,
            OpenFile::ValueLog(f) => Arc::strong_count(f) > 1,
        }
    }
}

/// One shard of a bounded cache: an LRU list (most recent first) kept to `cap` entries by
/// hand, as the list itself would evict files in use.
struct Lru {
    list: LruCache<FileKey, OpenFile>,
    cap: usize,
}

enum Shards {
    Unbounded(Vec<RwLock<HashMap<FileKey, OpenFile>>>),
    Bounded(Vec<Mutex<Lru>>),
}

/// See the module comment.
pub(crate) struct OpenFiles {
    shards: Shards,
    capacity: Option<usize>,
    evictions: AtomicU64,
}

impl OpenFiles {
    /// A cache for `max_open_files` (`None`: unbounded; a bound must be at least
    /// [`MIN_OPEN_FILES`](crate::options::MIN_OPEN_FILES), as `Options::validate` checks).
    pub(crate) fn new(max_open_files: Option<usize>) -> Self {
        let capacity = max_open_files.map(|m| m.saturating_sub(RESERVED_FILES).max(1));
        let shards = match capacity {
            None => Shards::Unbounded(
                (0..MAX_SHARDS)
                    .map(|_| RwLock::new(HashMap::new()))
                    .collect(),
            ),
            Some(cap) => {
                let n = prev_power_of_two((cap / MIN_PER_SHARD).clamp(1, MAX_SHARDS));
                // Shard capacities sum to exactly `cap`.
                Shards::Bounded(
                    (0..n)
                        .map(|i| {
                            Mutex::new(Lru {
                                list: LruCache::unbounded(),
                                cap: (cap / n + usize::from(i < cap % n)).max(1),
                            })
                        })
                        .collect(),
                )
            }
        };
        OpenFiles {
            shards,
            capacity,
            evictions: AtomicU64::new(0),
        }
    }

    /// True under a bound: callers must not keep files beside the cache.
    pub(crate) fn is_bounded(&self) -> bool {
        self.capacity.is_some()
    }

    /// The open file of `key`, if the cache holds it (bounded: now most recently used).
    pub(crate) fn get(&self, key: FileKey) -> Option<OpenFile> {
        match &self.shards {
            Shards::Unbounded(s) => s[shard_of(key, s.len())].read().get(&key).cloned(),
            Shards::Bounded(s) => s[shard_of(key, s.len())].lock().list.get(&key).cloned(),
        }
    }

    /// Adds a file just opened, unless another reader added `key` meanwhile: returns the
    /// file the cache holds then. `on_insert` runs, under the shard's lock, only when
    /// `file` went in. Bounded, the least recently used files not in use make room; those
    /// closed are dropped after the lock is released.
    pub(crate) fn insert(
        &self,
        key: FileKey,
        file: OpenFile,
        on_insert: impl FnOnce(&OpenFile),
    ) -> OpenFile {
        match &self.shards {
            Shards::Unbounded(s) => {
                let mut shard = s[shard_of(key, s.len())].write();
                if let Some(f) = shard.get(&key) {
                    return f.clone();
                }
                on_insert(&file);
                shard.insert(key, file.clone());
                file
            }
            Shards::Bounded(s) => {
                let mut evicted = Vec::new();
                {
                    let mut shard = s[shard_of(key, s.len())].lock();
                    if let Some(f) = shard.list.get(&key) {
                        return f.clone();
                    }
                    on_insert(&file);
                    // Also brings a shard that went over its share (files in use) back.
                    while shard.list.len() >= shard.cap {
                        let victim = shard
                            .list
                            .iter()
                            .rev()
                            .find(|(_, f)| !f.in_use())
                            .map(|(k, _)| *k);
                        match victim.and_then(|k| shard.list.pop(&k)) {
                            Some(f) => evicted.push(f),
                            None => break, // all in use: over the share for now
                        }
                    }
                    shard.list.put(key, file.clone());
                }
                self.evictions.fetch_add(evicted.len() as u64, Relaxed);
                drop(evicted); // closed here, after the lock
                file
            }
        }
    }

    /// Forgets a file (deleted); it closes when its last holder drops it.
    pub(crate) fn remove(&self, key: FileKey) {
        let gone = match &self.shards {
            Shards::Unbounded(s) => s[shard_of(key, s.len())].write().remove(&key),
            Shards::Bounded(s) => s[shard_of(key, s.len())].lock().list.pop(&key),
        };
        drop(gone);
    }

    /// Files held now.
    pub(crate) fn len(&self) -> usize {
        match &self.shards {
            Shards::Unbounded(s) => s.iter().map(|m| m.read().len()).sum(),
            Shards::Bounded(s) => s.iter().map(|m| m.lock().list.len()).sum(),
        }
    }

    /// Files closed to keep the bound so far.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions.load(Relaxed)
    }
}

/// File numbers are consecutive, so their remainder spreads them evenly.
fn shard_of(key: FileKey, shards: usize) -> usize {
    (key.file_no().get() % shards as u64) as usize
}

fn prev_power_of_two(n: usize) -> usize {
    1 << n.max(1).ilog2()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard_caps(max: usize) -> Vec<usize> {
        match OpenFiles::new(Some(max)).shards {
            Shards::Bounded(s) => s.iter().map(|m| m.lock().cap).collect(),
            Shards::Unbounded(_) => unreachable!(),
        }
    }

    /// Opens `n` small files as value-log entries of `files`, keeping the first.
    fn fill(files: &OpenFiles, n: u64) -> (tempfile::TempDir, Arc<RandomAccessFile>) {
        let dir = tempfile::tempdir().unwrap();
        let env = crate::storage::StorageEnv::new(dir.path(), &[], 0.0).unwrap();
        let mut first = None;
        for no in 0..n {
            let p = dir.path().join(format!("{no}.vlog"));
            std::fs::write(&p, no.to_le_bytes()).unwrap();
            let f = env
                .open_read(&p, crate::storage::FileKind::ValueLog, 0, None, false)
                .unwrap();
            let got = files.insert(
                FileKey::ValueLog(FileNo::new(no)),
                OpenFile::ValueLog(Arc::new(f)),
                |_| {},
            );
            if let (0, OpenFile::ValueLog(f)) = (no, got) {
                first = Some(f);
            }
        }
        (dir, first.unwrap())
    }

    #[test]
    fn bound_closes_least_recent_files_not_in_use() {
        let files = OpenFiles::new(Some(20));
        let (_dir, first) = fill(&files, 30);
        // File 0 is held: passed over, the least recent others closed.
        assert_eq!(files.len(), 10);
        assert_eq!(files.evictions(), 20);
        assert!(
            files.get(FileKey::ValueLog(FileNo::new(0))).is_some(),
            "in use: kept"
        );
        assert!(
            files.get(FileKey::ValueLog(FileNo::new(1))).is_none(),
            "least recent closed"
        );
        assert!(files.get(FileKey::ValueLog(FileNo::new(29))).is_some());
        assert_eq!(first.read_at(0, 8).unwrap(), 0u64.to_le_bytes());
        // A hit makes a file most recent: it outlives the next openings.
        assert!(files.get(FileKey::ValueLog(FileNo::new(21))).is_some());
        files.remove(FileKey::ValueLog(FileNo::new(29)));
        assert_eq!(files.len(), 9);
        drop(first);
        let (_dir2, _) = fill(&files, 3); // numbers 0 (cached), 1 and 2 again
        assert_eq!(files.len(), 10);
        assert!(files.get(FileKey::ValueLog(FileNo::new(21))).is_some());
        assert!(files.get(FileKey::ValueLog(FileNo::new(22))).is_none());
        // A table and a value-log file of one number are two entries.
        assert!(files.get(FileKey::Table(FileNo::new(21))).is_none());

        // Every file in use: the shard goes over its share, and comes back once they are
        // released.
        let held: Vec<OpenFile> = (0..40)
            .filter_map(|n| files.get(FileKey::ValueLog(FileNo::new(n))))
            .collect();
        let extra = tempfile::tempdir().unwrap();
        let env = crate::storage::StorageEnv::new(extra.path(), &[], 0.0).unwrap();
        let open = |no: u64| {
            let p = extra.path().join(format!("{no}"));
            std::fs::write(&p, b"x").unwrap();
            let f = env
                .open_read(&p, crate::storage::FileKind::ValueLog, 0, None, false)
                .unwrap();
            files.insert(
                FileKey::ValueLog(FileNo::new(no)),
                OpenFile::ValueLog(Arc::new(f)),
                |_| {},
            )
        };
        let more: Vec<OpenFile> = (100..105).map(open).collect();
        assert_eq!(files.len(), 15, "files in use stay");
        drop((held, more));
        open(200);
        assert_eq!(files.len(), 10, "back within the bound");

        let unbounded = OpenFiles::new(None);
        let (_dir3, _) = fill(&unbounded, 30);
        assert_eq!(unbounded.len(), 30);
        assert_eq!(unbounded.evictions(), 0);
    }

    #[test]
    fn bounded_shards_sum_to_capacity() {
        assert_eq!(shard_caps(20), vec![10]);
        let c = shard_caps(64);
        assert_eq!(c.len(), 4);
        assert_eq!(c.iter().sum::<usize>(), 54);
        let c = shard_caps(10_000);
        assert_eq!(c.len(), MAX_SHARDS);
        assert_eq!(c.iter().sum::<usize>(), 9_990);
        assert!(OpenFiles::new(None).capacity.is_none());
        assert_eq!(OpenFiles::new(Some(20)).capacity, Some(10));
    }
}
