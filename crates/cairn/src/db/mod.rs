//! The database: open and recovery, the write path (group commit, memtable switching,
//! stalls), the read path, iterators, snapshots, column families and background work.

mod background;
mod check;
mod checkpoint;
mod event_log;
mod get_observer;
mod ingest;
mod inspect;
mod iter;
mod jobs;
mod learner;
mod merge_job;
mod placement;
mod point_cache;
mod range_dels;
mod recovery;
mod repair;
mod snapshot;
mod stats_file;
mod table_cache;
mod tuner;
mod write;

pub(crate) use crate::clock::thread_cpu_nanos;
pub use check::{CheckIssue, CheckProgress, CheckReport};
pub use inspect::{CfInfo, ManifestInfo, TableFileInfo};
pub use iter::{DbIterator, Scan};
pub use placement::ProactiveReport;
pub use repair::{RepairMethod, RepairReport};
pub use snapshot::Snapshot;

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex, RwLock};

use crate::access::RangeCollector;
use crate::batch::WriteBatch;
use crate::cache::{BlockCache, LruBlockCache, ReadCache};
use crate::compaction::LevelShape;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::log::LogWriter;
use crate::lookup_steps::Step;
use crate::memtable::Memtable;
use crate::options::{Options, ReadCachePolicy, ReadOptions, Transition, WriteOptions};
use crate::policy::prefetch::Prefetcher;
use crate::stats::{DbStats, OpKind, ReadCacheStats, StatsInner};
use crate::storage::StorageEnv;
use crate::types::{check_key, lookup_key, SeqNo, ValueKind};
use crate::version::{CfVersion, FileMeta, VersionSet};
use crate::{Error, Result};
use get_observer::GetObserver;

use crate::version::{CfAdded, LevelPolicy, SealedRun};
use snapshot::SnapshotList;
use table_cache::TableCache;

/// What one column family reads from: the active memtable, the immutable ones waiting
/// for flush (newest first), and the current version. Each memtable carries the number of
/// the first WAL file that may hold its entries.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<Memtable>,
    pub(crate) mem_wal: FileNo,
    pub(crate) imms: Vec<(Arc<Memtable>, FileNo)>,
    pub(crate) version: Arc<CfVersion>,
}

/// See [`DbInner::read_view`].
struct ReadView {
    generation: Option<u64>,
    state: Arc<CfState>,
    sv: Arc<SuperVersion>,
    seq: SeqNo,
}

pub(crate) struct CfState {
    pub(crate) id: CfId,
    pub(crate) name: String,
    /// The options the family runs with (the database's with its own laid over them).
    pub(crate) opts: Arc<Options>,
    /// Whether its point reads use the point cache.
    pub(crate) point_cache: bool,
    pub(crate) sv: ArcSwap<SuperVersion>,
    /// Leaper's per-range access counters, when [`Options::access`] is set.
    pub(crate) access: Option<Arc<RangeCollector>>,
    /// SA-LSM's query store, when [`Options::records`] is set.
    pub(crate) records: Option<Arc<crate::access::RecordStore>>,
}

/// A handle to a column family: a named, separate LSM-tree sharing the database's WAL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnFamily {
    id: CfId,
    name: Arc<str>,
}

impl ColumnFamily {
    /// The column family's id ([`CfId::DEFAULT`] is `default`).
    pub fn id(&self) -> CfId {
        self.id
    }
    /// The column family's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One writer waiting in the group-commit queue.
pub(crate) struct Slot {
    pub(crate) batch: WriteBatch,
    pub(crate) sync: bool,
    /// Not logged ([`WriteOptions::disable_wal`]): groups never mix logged and unlogged.
    pub(crate) disable_wal: bool,
    /// A request to switch memtables (from `flush`), carrying no data.
    pub(crate) switch: bool,
    /// Work that runs alone at the head of the queue, no write committing meanwhile
    /// (an ingest); taken by the leader that runs it.
    pub(crate) exclusive: Option<Mutex<Option<ExclusiveWork>>>,
    /// This writer's share of its group's memtable inserts, handed over by the leader
    /// once the group is logged (`Options::concurrent_memtable_writes`).
    pub(crate) insert: Mutex<Option<write::MemberInsert>>,
    pub(crate) result: Mutex<Option<Result<()>>>,
}

/// See [`Slot::exclusive`].
pub(crate) type ExclusiveWork = Box<dyn FnOnce(&DbInner) -> Result<()> + Send>;

pub(crate) struct WalState {
    pub(crate) writer: Option<LogWriter>,
    pub(crate) number: FileNo,
    /// The last write failed: part or all of its record may be in the file.
    pub(crate) poisoned: bool,
    /// Where the failed write's record began.
    pub(crate) failed_at: u64,
}

impl WalState {
    /// Makes the log durable. A log whose last write failed is first cut back to before
    /// that write: its record may have reached the file, whole or torn, and would come
    /// back at reopen beneath later writes (a range delete acknowledged after it expanded
    /// to the keys it could see, not that one).
    pub(crate) fn make_durable(&mut self) -> Result<()> {
        let (poisoned, at) = (self.poisoned, self.failed_at);
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        if poisoned {
            w.cut_to(at)?;
        } else {
            w.flush()?;
        }
        w.sync_written()
    }
}

#[derive(Default)]
pub(crate) struct BgState {
    /// The last I/O error of a background flush, until a flush succeeds (it is retried).
    pub(crate) flush_error: Option<Error>,
    /// The same for compactions.
    pub(crate) compaction_error: Option<Error>,
    pub(crate) compaction_requested: bool,
    pub(crate) flush_requested: bool,
    /// When background threads hand freed memory back (`release_memory_after_jobs`).
    pub(crate) release: crate::heap::ReleasePacer,
}

pub(crate) struct DbInner {
    pub(crate) path: PathBuf,
    pub(crate) opts: Options,
    /// Every family's own options as they stand (`opts.column_families` and those of
    /// families created since the open): what the options file keeps.
    pub(crate) families: Mutex<BTreeMap<String, crate::cf_options::CfOptions>>,
    /// Held while the options file is written.
    pub(crate) options_save: Mutex<()>,
    pub(crate) env: StorageEnv,
    /// The time learned parts read: wall, or the environment's virtual clock.
    pub(crate) clock: crate::clock::EngineClock,
    pub(crate) shape: LevelShape,
    pub(crate) versions: Mutex<VersionSet>,
    pub(crate) cfs: RwLock<BTreeMap<CfId, Arc<CfState>>>,
    pub(crate) queue: Mutex<VecDeque<Arc<Slot>>>,
    pub(crate) queue_cv: Condvar,
    pub(crate) wal: Mutex<WalState>,
    pub(crate) last_seq: AtomicU64,
    pub(crate) snapshots: Arc<SnapshotList>,
    pub(crate) tables: Arc<TableCache>,
    pub(crate) block_cache: Arc<dyn BlockCache>,
    /// AC-Key's KV + KP + block cache (also `block_cache`); `None` under `ReadCachePolicy::Block`.
    pub(crate) read_cache: Option<Arc<ReadCache>>,
    pub(crate) bg: Mutex<BgState>,
    pub(crate) bg_cv: Condvar,
    /// The error that stopped writes until reopen (shared with the version set).
    pub(crate) halt: Arc<crate::error::Halt>,
    /// Held by the flush in progress: the oldest immutable memtable is claimed by whoever
    /// holds it, so two callers never write the same memtable, and runs are installed in
    /// memtable order (an older run above a newer one would serve stale values).
    pub(crate) flush_lock: Mutex<()>,
    /// Held for reading by compaction jobs (which may run side by side, see `jobs`), for
    /// writing by work that must run alone (manual and proactive compactions, value-log
    /// GC, dropping a column family).
    pub(crate) compaction_lock: RwLock<()>,
    /// The levels the running compaction jobs hold.
    pub(crate) jobs: jobs::Jobs,
    pub(crate) stats: Arc<StatsInner>,
    pub(crate) shutdown: AtomicBool,
    /// A write kept out of the log ([`WriteOptions::disable_wal`]) may be in a memtable:
    /// close flushes, or a clean reopen would lose it.
    pub(crate) unlogged: AtomicBool,
    pub(crate) next_mem_id: AtomicU64,
    /// Separated values: reads, file sizes, counters.
    pub(crate) vlog: Arc<crate::vlog::VlogStore>,
    /// Value-log files chosen for GC: compactions move the values they read from them.
    pub(crate) gc_targets: Mutex<std::collections::HashSet<FileNo>>,
    /// The cache around flush and compaction (Leaper and its baselines).
    pub(crate) prefetch: Arc<Prefetcher>,
    /// The compaction-policy tuner (RusKey), when one is configured.
    pub(crate) tuner: Option<tuner::TunerRuntime>,
    /// SA-LSM: loaded cold-key sets, the age rule's clock samples.
    pub(crate) placement: placement::PlacementState,
    /// The directory lock (`None` when open read-only, which takes none).
    /// The event log `LOG` (`Options::info_log`; none when read-only).
    pub(crate) event_log: Option<Arc<event_log::EventLog>>,
    /// The listeners of flush and compaction events: the options' and the event log.
    pub(crate) listeners: Vec<Arc<dyn crate::events::EventListener>>,
    _lock: Option<File>,
}

/// A cairn database. `Send + Sync`: share it between threads with an `Arc` or by reference.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    closed: AtomicBool,
}

/// Shape of one run, for inspection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunInfo {
    /// Run id (newer runs have larger ids).
    pub id: u64,
    /// Files in the run.
    pub files: usize,
    /// Bytes in the run.
    pub bytes: u64,
    /// Whether it takes more data.
    pub sealed: bool,
}

/// Shape of one level, for inspection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelInfo {
    /// Level number.
    pub level: usize,
    /// Capacity C_i (level 0: none, 0).
    pub capacity: u64,
    /// Run limit K_i in force.
    pub k: u32,
    /// K requested lazily, applied when the level empties.
    pub pending_k: Option<u32>,
    /// Whether the level is being merged down entirely.
    pub draining: bool,
    /// Runs, newest first.
    pub runs: Vec<RunInfo>,
}

impl Db {
    /// Repairs the database at `path` whose `CURRENT` file or manifest is missing or
    /// damaged (an open then fails with a corruption error), as RocksDB's `RepairDB` does.
    /// If the newest manifest is intact, `CURRENT` is pointed at it; otherwise the manifest
    /// is rebuilt from the tables (their properties name their column families) and the
    /// write-ahead logs (every entry when a table is lost; else those newer than the
    /// tables), and every column family's data is merged into one run
    /// at the bottom level, newest version of each key by sequence number, tombstones
    /// kept. Unreadable tables are moved to `lost/`, never deleted nor written over an
    /// earlier repair's file there. See [`RepairReport`] for what it did; open the
    /// database afterwards as usual.
    pub fn repair(path: impl AsRef<Path>, opts: Options) -> Result<RepairReport> {
        repair::repair(path.as_ref(), opts)
    }

    /// Verifies every file of the database at `path` without changing anything: `CURRENT`
    /// and the manifest, every table whole (block checksums, key order, agreement with
    /// the manifest), every value log record by record, the write-ahead logs an open
    /// would replay, and the order of files within runs. Damage is listed in
    /// [`CheckReport::problems`], files an open would remove in
    /// [`CheckReport::warnings`]. Errors are for what is not damage: no database at
    /// `path`, options that do not fit it, a database open in another process
    /// ([`Error::Locked`]).
    pub fn check(path: impl AsRef<Path>, opts: &Options) -> Result<CheckReport> {
        check::check(path.as_ref(), opts, &mut |_, _, _| {})
    }

    /// [`Db::check`], calling `progress` before each file is read.
    pub fn check_with_progress(
        path: impl AsRef<Path>,
        opts: &Options,
        progress: CheckProgress,
    ) -> Result<CheckReport> {
        check::check(path.as_ref(), opts, progress)
    }

    /// Reads the manifest of the database at `path` without opening the database: no
    /// lock, no log replay, no write. Level capacities follow `opts`.
    pub fn inspect(path: impl AsRef<Path>, opts: &Options) -> Result<ManifestInfo> {
        inspect::inspect(path.as_ref(), opts)
    }

    /// Opens (or creates) the database at `path`.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = recovery::open(path.as_ref(), opts)?;
        let db = Db {
            inner: Arc::new(inner),
            threads: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        };
        if db.inner.opts.background_work {
            let mut t = db.threads.lock();
            t.push(db.spawn("cairn-flush".into(), |i| i.flush_loop())?);
            for n in 0..db.inner.opts.max_background_compactions {
                t.push(db.spawn(format!("cairn-compact-{n}"), |i| i.compaction_loop())?);
            }
            if db.inner.tuner.is_some() {
                t.push(db.spawn("cairn-tuner".into(), |i| i.tuner_loop())?);
            }
            if db.inner.tables.learner().is_some() {
                t.push(db.spawn("cairn-learn".into(), |i| i.learn_loop())?);
            }
            if db.inner.opts.stats_dump_period_ms > 0 {
                t.push(db.spawn("cairn-stats".into(), |i| i.stats_loop())?);
            }
        }
        db.inner.request_compaction();
        Ok(db)
    }

    /// Opens the database at `path` for reads only (RocksDB's `OpenForReadOnly`): no
    /// lock is taken, so it can run beside a process that has the database open, and
    /// nothing in its directories is created, renamed or removed. The write-ahead logs
    /// are replayed into memory, so it sees every write synced (or handed to the system)
    /// before the open; it does not follow later writes (open again for those). Every
    /// table and value log is opened at once and kept open (`max_open_files` is ignored):
    /// a writer beside it may delete them, and the session keeps reading them. Writes,
    /// flushes, compactions, checkpoints and column family changes fail with
    /// [`Error::ReadOnly`]; no background work runs, and tables are not learned.
    /// Statistics and learned state are not saved at close. `opts` must describe the
    /// database as for [`Db::open`] (levels, tiers).
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = recovery::open_read_only(path.as_ref(), opts)?;
        Ok(Db {
            inner: Arc::new(inner),
            threads: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// Starts a background thread. A panic there (a bug, or a listener's) stops writes
    /// with an error: the work the thread did would never be done again, and writers
    /// waiting for it would wait forever.
    fn spawn(
        &self,
        name: String,
        work: impl FnOnce(Arc<DbInner>) + Send + 'static,
    ) -> Result<JoinHandle<()>> {
        let inner = self.inner.clone();
        let thread = name.clone();
        std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let _bg = crate::clock::BackgroundWork::enter();
                let i = inner.clone();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i)));
                if let Err(panic) = r {
                    inner.panicked(&thread, panic.as_ref());
                }
            })
            .map_err(|e| Error::io("spawn a background thread", e))
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The options it was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// The storage environment (I/O counters, tiers).
    pub fn env(&self) -> &StorageEnv {
        &self.inner.env
    }

    /// The virtual device clock this database runs on (`Options::clock`), if any.
    pub fn virtual_clock(&self) -> Option<&Arc<crate::clock::VirtualClock>> {
        self.inner.clock.virtual_clock()
    }

    /// The block cache in use.
    pub fn block_cache(&self) -> &Arc<dyn BlockCache> {
        &self.inner.block_cache
    }

    /// The default column family.
    pub fn default_cf(&self) -> ColumnFamily {
        ColumnFamily {
            id: CfId::DEFAULT,
            name: "default".into(),
        }
    }

    /// Looks up a column family by name.
    pub fn cf(&self, name: &str) -> Option<ColumnFamily> {
        self.inner
            .cfs
            .read()
            .values()
            .find(|c| c.name == name)
            .map(|c| ColumnFamily {
                id: c.id,
                name: c.name.as_str().into(),
            })
    }

    /// Names of all column families.
    pub fn cf_names(&self) -> Vec<String> {
        self.inner
            .cfs
            .read()
            .values()
            .map(|c| c.name.clone())
            .collect()
    }

    /// Creates a column family, with the options [`Options::column_families`] names for
    /// it (the database's if none).
    pub fn create_cf(&self, name: &str) -> Result<ColumnFamily> {
        self.create_family(name, None)
    }

    /// Creates a column family with its own options (RocksDB's `CreateColumnFamily` with
    /// `ColumnFamilyOptions`): its tables' format and index, its memtable size, value
    /// separation and whether its point reads use the point cache. The options file keeps
    /// them, and later opens give them back to the family.
    pub fn create_cf_with(&self, name: &str, opts: &crate::CfOptions) -> Result<ColumnFamily> {
        self.create_family(name, Some(opts))
    }

    fn create_family(&self, name: &str, own: Option<&crate::CfOptions>) -> Result<ColumnFamily> {
        self.inner.check_open()?;
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidArgument(
                "column family names are 1..=255 bytes".into(),
            ));
        }
        let mut all = self.inner.opts.clone();
        all.column_families = self.inner.families.lock().clone();
        if let Some(o) = own {
            all.column_families.insert(name.to_string(), o.clone());
        }
        // Every family's with the new one (learned families must agree), then its own.
        all.validate()?;
        let family_opts = all.for_family(name);
        family_opts.validate()?;
        let point_cache = all.family_point_cache(name);
        let mut vs = self.inner.versions.lock();
        let mut cfs = self.inner.cfs.write();
        if cfs.values().any(|c| c.name == name) {
            return Err(Error::ColumnFamilyExists(name.into()));
        }
        // Never reuse the id of a dropped family: WAL records name families by id, and
        // the dropped family's records would be replayed into the new one at reopen.
        let last = cfs.keys().next_back().copied().unwrap_or(CfId::DEFAULT);
        let id = CfId::new(last.max(vs.max_cf_id).get() + 1);
        if let Some(o) = own {
            // Saved before the family exists, so no session ever runs it without its
            // options; an entry for a family never created is harmless.
            self.inner
                .families
                .lock()
                .insert(name.to_string(), o.clone());
            if let Err(e) = self.inner.try_save_options() {
                self.inner.families.lock().remove(name);
                return Err(e);
            }
        }
        let edit = crate::version::VersionEdit {
            cf_added: vec![CfAdded {
                id,
                name: name.to_string(),
            }],
            ..Default::default()
        };
        vs.log_and_apply(edit)?;
        let learned = matches!(family_opts.index, crate::IndexPolicy::Learned { .. });
        self.inner.tables.set_family_learned(id, learned);
        let version = vs.version(id).expect("just added");
        let wal = self.inner.wal.lock().number;
        cfs.insert(
            id,
            Arc::new(CfState {
                id,
                name: name.to_string(),
                opts: Arc::new(family_opts.clone()),
                point_cache,
                access: self.inner.new_collector(id),
                records: placement::open_query_store(
                    &self.inner.path,
                    id,
                    &self.inner.opts.records,
                ),
                sv: ArcSwap::from_pointee(SuperVersion {
                    mem: self.inner.new_memtable(),
                    mem_wal: wal,
                    imms: Vec::new(),
                    version,
                }),
            }),
        );
        drop(cfs);
        drop(vs);
        if self.inner.tables.enable_learner(family_opts.index) && self.inner.opts.background_work {
            // The family exists: without the thread its tables are learned by
            // run_background_work only.
            match self.spawn("cairn-learn".into(), |i| i.learn_loop()) {
                Ok(t) => self.threads.lock().push(t),
                Err(e) => log::warn!("cairn: the learner thread did not start: {e}"),
            }
        }
        Ok(ColumnFamily {
            id,
            name: name.into(),
        })
    }

    /// Drops a column family and its data (the default one cannot be dropped). Unflushed
    /// data of the dropped family in the WAL is ignored on recovery.
    pub fn drop_cf(&self, cf: &ColumnFamily) -> Result<()> {
        crate::events::refuse_in_callback(self.inner.id(), "drop_cf")?;
        self.inner.check_open()?;
        if cf.id == CfId::DEFAULT {
            return Err(Error::InvalidArgument(
                "the default column family cannot be dropped".into(),
            ));
        }
        let _c = self.inner.compaction_lock.write();
        let mut vs = self.inner.versions.lock();
        let mut cfs = self.inner.cfs.write();
        if !cfs.contains_key(&cf.id) {
            return Err(Error::UnknownColumnFamily(cf.name.to_string()));
        }
        vs.log_and_apply(crate::version::VersionEdit {
            cf_dropped: vec![cf.id],
            ..Default::default()
        })?;
        cfs.remove(&cf.id);
        drop(cfs);
        drop(vs);
        self.inner.tables.set_family_learned(cf.id, false);
        if self.inner.families.lock().remove(cf.name()).is_some() {
            self.inner.save_options();
        }
        self.inner.purge_obsolete();
        Ok(())
    }

    /// Writes one key in the default column family.
    pub fn put(&self, wo: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value)?;
        self.write(wo, b)
    }

    /// Writes one key in a column family.
    pub fn put_cf(
        &self,
        cf: &ColumnFamily,
        wo: &WriteOptions,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_cf(cf.id, key, value)?;
        self.write(wo, b)
    }

    /// Deletes one key in the default column family.
    pub fn delete(&self, wo: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key)?;
        self.write(wo, b)
    }

    /// Deletes one key in a column family.
    pub fn delete_cf(&self, cf: &ColumnFamily, wo: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_cf(cf.id, key)?;
        self.write(wo, b)
    }

    /// Deletes every key in `[start, end)` of the default column family, atomically.
    ///
    /// One range tombstone, whatever the range holds (one WAL record and one memtable
    /// entry); reads skip what it covers, and compactions drop it (see `range_del.rs`).
    pub fn delete_range(&self, wo: &WriteOptions, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end)?;
        self.write(wo, b)
    }

    /// Applies a batch atomically: all of it is visible at once, or none of it.
    pub fn write(&self, wo: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let t = self.inner.clock.stopwatch();
        if let Some(tuner) = &self.inner.tuner {
            tuner.tick(batch.len().max(1) as u64);
        }
        let r = self.inner.write(wo, batch);
        self.inner
            .stats
            .record_latency(OpKind::Write, t.elapsed_ns());
        r
    }

    /// Reads the latest value of `key` in the default column family.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), &self.default_cf(), key)
    }

    /// Reads the latest value of `key` in a column family.
    pub fn get_cf(&self, cf: &ColumnFamily, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), cf, key)
    }

    /// Reads `key` with options (e.g. at a snapshot).
    pub fn get_opt(
        &self,
        ro: &ReadOptions,
        cf: &ColumnFamily,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let t = self.inner.clock.stopwatch();
        if let Some(tuner) = &self.inner.tuner {
            tuner.tick(1);
        }
        let r = self.inner.get(ro, cf.id, key);
        self.inner.stats.record_latency(OpKind::Get, t.elapsed_ns());
        r
    }

    /// Reads several keys of the default column family at one moment (RocksDB's
    /// `MultiGet`): no write between the reads shows in some answers and not others.
    /// One result per key, in the order of `keys`.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(&ReadOptions::default(), &self.default_cf(), keys)
    }

    /// [`Db::multi_get`] in a column family.
    pub fn multi_get_cf<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        keys: &[K],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(&ReadOptions::default(), cf, keys)
    }

    /// [`Db::multi_get`] with read options (a snapshot: the reads see it instead).
    pub fn multi_get_opt<K: AsRef<[u8]>>(
        &self,
        ro: &ReadOptions,
        cf: &ColumnFamily,
        keys: &[K],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        if let Some(tuner) = &self.inner.tuner {
            tuner.tick(keys.len() as u64);
        }
        let stats = &self.inner.stats;
        self.inner
            .multi_get(ro, cf.id, keys, |ns| stats.record_latency(OpKind::Get, ns))
    }

    /// Writes the access trace of a column family (the ended slots of Leaper's per-range
    /// counters, and Algorithm 2's transfers) to `path`, for `python -m
    /// cairn.learn.leaper train`. Returns the number of rows. Fails with
    /// `InvalidArgument` when [`Options::access`] is not set.
    pub fn export_access_trace(&self, cf: &ColumnFamily, path: impl AsRef<Path>) -> Result<usize> {
        let state = self.inner.cf_state(cf.id)?;
        let Some(a) = &state.access else {
            return Err(Error::InvalidArgument(
                "access statistics are off (Options::access)".into(),
            ));
        };
        let (header, rows, transfers) = a.trace();
        crate::access::trace::write(&self.inner.env, path.as_ref(), &header, &rows, &transfers)?;
        Ok(rows.len())
    }

    /// Installs a Leaper model bundle (written by `python -m cairn.learn.leaper train`)
    /// for a column family while the database runs; it replaces the one in use. A damaged
    /// or foreign bundle, or one whose key ranges do not fit the column family's
    /// collector, is refused with an error and the one in use (or none) stays. Needs
    /// [`Options::access`] and a Leaper prefetch policy.
    pub fn load_leaper_model(&self, cf: &ColumnFamily, path: impl AsRef<Path>) -> Result<()> {
        self.inner.load_leaper_model(cf.id, path.as_ref())
    }

    /// The access collector of a column family, when [`Options::access`] is set.
    pub fn access_collector(&self, cf: &ColumnFamily) -> Option<Arc<RangeCollector>> {
        self.inner.cf_state(cf.id).ok()?.access.clone()
    }

    /// Takes a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(&self.inner.last_seq)
    }

    /// An iterator over a column family (unpositioned: call a seek first).
    pub fn iter(&self, ro: &ReadOptions, cf: &ColumnFamily) -> Result<DbIterator> {
        self.user_iter(ro, cf.id)
    }

    /// An iterator for a user: its reads count in the learned parts' collectors (Leaper's
    /// ranges, SA-LSM's query store); the engine's own iterators stay uncounted.
    fn user_iter(&self, ro: &ReadOptions, cf: CfId) -> Result<DbIterator> {
        let state = self.inner.cf_state(cf)?;
        Ok(self
            .inner
            .iter(ro, cf)?
            .with_access(state.access.clone())
            .with_records(state.records.clone()))
    }

    /// The key-value pairs of the default column family in `range`, in key order.
    pub fn scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<Scan> {
        self.scan_opt(&ReadOptions::default(), &self.default_cf(), range, false)
    }

    /// The pairs of `range` in reverse key order.
    pub fn scan_rev<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<Scan> {
        self.scan_opt(&ReadOptions::default(), &self.default_cf(), range, true)
    }

    /// A scan with options and a column family; the range narrows the options' bounds.
    pub fn scan_opt<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        ro: &ReadOptions,
        cf: &ColumnFamily,
        range: R,
        reverse: bool,
    ) -> Result<Scan> {
        let (lo, hi) = iter::range_to_bounds(&range);
        let mut ro = ro.clone();
        if let Some(lo) = lo {
            ro.lower_bound = Some(match ro.lower_bound {
                Some(l) if l > lo => l,
                _ => lo,
            });
        }
        if let Some(hi) = hi {
            ro.upper_bound = Some(match ro.upper_bound {
                Some(u) if u < hi => u,
                _ => hi,
            });
        }
        Ok(Scan::new(self.user_iter(&ro, cf.id)?, reverse))
    }

    /// Makes every write acknowledged so far durable: fsyncs the write-ahead log, as a
    /// write with [`WriteOptions::sync`] would, after the writes queued before it. Writes
    /// with [`WriteOptions::disable_wal`] are not in the log: only a flush keeps them.
    pub fn sync_wal(&self) -> Result<()> {
        self.flush_wal(true)
    }

    /// Hands the write-ahead log's buffered bytes to the operating system, and fsyncs
    /// them if `sync` (RocksDB's `FlushWAL`). cairn hands each group's record to the
    /// system before it acknowledges the group's writes, so without `sync` nothing is
    /// left to do.
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        self.inner.write(
            &WriteOptions {
                sync,
                ..WriteOptions::default()
            },
            WriteBatch::new(),
        )
    }

    /// Makes an openable copy of the database in `dir` (which must not exist) at one
    /// moment, as RocksDB's checkpoints: the memtables are flushed, then tables, saved
    /// models and value logs are hard-linked (copied where `dir` is on another file
    /// system), and the write-ahead logs still needed are copied with a manifest of the
    /// current state. Writes acknowledged before the call are in the copy. Open it with
    /// the same options; tier directories must lie inside the database directory (they
    /// keep their relative place in the copy). Built in a fresh `<dir>.tmp-*` beside it
    /// and renamed, so a failed checkpoint leaves no `dir`.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        crate::events::refuse_in_callback(self.inner.id(), "checkpoint")?;
        self.inner.checkpoint(dir.as_ref())
    }

    /// Flushes every memtable holding data to level 0 and waits for it.
    pub fn flush(&self) -> Result<()> {
        crate::events::refuse_in_callback(self.inner.id(), "flush")?;
        self.inner.flush_and_wait()
    }

    /// Compacts the key range `[start, end]` (`None`: unbounded) of the default column
    /// family down through every level, after a flush.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.compact_range_cf(&self.default_cf(), start, end)
    }

    /// [`Db::compact_range`] for a column family.
    pub fn compact_range_cf(
        &self,
        cf: &ColumnFamily,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        crate::events::refuse_in_callback(self.inner.id(), "compact_range")?;
        self.inner.flush_and_wait()?;
        self.inner.compact_range(cf.id, start, end)
    }

    /// Runs pending background work (flushes, then compactions) in the calling thread
    /// until the tree is in shape, then one pass of the learner (tables due to be learned
    /// under [`IndexPolicy::Learned`](crate::IndexPolicy)). For tests and tools that open
    /// with `background_work = false`.
    pub fn run_background_work(&self) -> Result<()> {
        crate::events::refuse_in_callback(self.inner.id(), "run_background_work")?;
        self.inner.check_open()?;
        while self.inner.flush_one()? {}
        self.inner.compact_until_done()?;
        if let Some(l) = self.inner.tables.learner() {
            l.pass();
        }
        self.inner.run_due_missions()?;
        Ok(())
    }

    /// Sets the run limit K of `level` in a column family (RusKey 4). K must be in
    /// 1..=T for levels >= 1; for level 0 it is the number of runs that triggers a
    /// compaction.
    pub fn set_policy(
        &self,
        cf: &ColumnFamily,
        level: usize,
        k: usize,
        transition: Transition,
    ) -> Result<()> {
        self.inner.opts.check_runs(level, k)?;
        self.inner.set_policy(cf.id, level, k, transition)
    }

    /// The levels of a column family: K, capacity and runs.
    pub fn level_info(&self, cf: &ColumnFamily) -> Result<Vec<LevelInfo>> {
        let sv = self.inner.super_version(cf.id)?;
        Ok(level_infos(&sv.version, &self.inner.shape))
    }

    /// Whether the compaction picker has work for some column family now, running jobs
    /// aside (RocksDB's `rocksdb.compaction-pending`): with it false and no compaction
    /// running, the tree is in shape.
    pub fn compaction_pending(&self) -> bool {
        let same_tier = |a: usize, b: usize| {
            self.inner.env.tier_for_level(a) == self.inner.env.tier_for_level(b)
        };
        let cfs: Vec<Arc<CfState>> = self.inner.cfs.read().values().cloned().collect();
        cfs.iter().any(|cf| {
            let v = cf.sv.load().version.clone();
            crate::compaction::pick(&v, &self.inner.shape_for(cf), &same_tier).is_some()
        })
    }

    /// The counts CPU work is priced from on the virtual clock (a few atomic loads).
    pub fn cpu_counts(&self) -> crate::stats::CpuCounts {
        self.inner.stats.cpu_counts(self.inner.opts.num_levels)
    }

    /// Counters, latencies and the shape of the default column family.
    pub fn stats(&self) -> DbStats {
        self.inner.stats_snapshot()
    }

    /// The latest sequence number acknowledged.
    pub fn latest_seq(&self) -> SeqNo {
        self.inner.last_seq.load(Ordering::Acquire)
    }

    /// Stops background work, syncs the WAL and releases the database lock. Unflushed
    /// memtables are recovered from the WAL at the next open.
    pub fn close(self) -> Result<()> {
        self.close_impl()
    }

    fn close_impl(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        // Writes kept out of the log live only in the memtables: flush them (the log
        // brings the rest back at reopen). Before the threads stop, which flush too.
        let flushed = if self.inner.unlogged.load(Ordering::Acquire) {
            self.inner.flush_and_wait()
        } else {
            Ok(())
        };
        self.inner.shutdown.store(true, Ordering::SeqCst);
        self.inner.bg_cv.notify_all();
        self.inner.queue_cv.notify_all();
        if let Some(t) = &self.inner.tuner {
            t.wake();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        if self.inner.env.is_read_only() {
            return Ok(()); // nothing to save, nothing written
        }
        self.inner.save_tuner_checkpoint();
        self.inner.save_query_stores();
        let mut wal = self.inner.wal.lock();
        // After a failed fsync a retry proves nothing (see `Halt`): leave the log.
        if !self.inner.halt.wal_sync_failed() {
            wal.make_durable()?;
        }
        drop(wal);
        // Last, after the threads stopped: the counters are final, and a failure here
        // cannot cost data (the WAL is synced above).
        if let Err(e) = stats_file::save(&self.inner.env, &self.inner.path, &self.stats()) {
            self.inner
                .warn(format_args!("{} not written: {e}", stats_file::STATS_FILE));
        }
        self.inner
            .event("close", format_args!("ok={}", flushed.is_ok()));
        flushed
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close_impl();
    }
}

impl DbInner {
    /// The background learner's thread: learns due tables until shutdown.
    fn learn_loop(&self) {
        let Some(l) = self.tables.learner().cloned() else {
            return;
        };
        while !self.shutdown.load(Ordering::Acquire) {
            std::thread::sleep(l.tick());
            l.pass();
        }
    }

    /// Stops writes after a panic in `thread` and wakes everyone waiting, so that they
    /// see the error.
    pub(crate) fn panicked(&self, thread: &str, panic: &(dyn std::any::Any + Send)) {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        self.halt
            .stop(&Error::Closed(format!("{thread} panicked: {msg}")));
        self.queue_cv.notify_all();
        self.bg_cv.notify_all();
    }

    /// An address unique to this database while it is open (listener re-entrance).
    pub(crate) fn id(&self) -> usize {
        self as *const Self as usize
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.env.is_read_only() {
            return Err(Error::ReadOnly(
                "writes, flushes, compactions and column family changes".into(),
            ));
        }
        if self.shutdown.load(Ordering::Acquire) {
            return Err(Error::Closed("database is closed".into()));
        }
        if let Some(e) = self.halt.error() {
            return Err(Error::Closed(format!(
                "writes stopped until the database is reopened: {e}"
            )));
        }
        Ok(())
    }

    pub(crate) fn new_memtable(&self) -> Arc<Memtable> {
        Arc::new(Memtable::new(
            self.next_mem_id.fetch_add(1, Ordering::Relaxed),
        ))
    }

    pub(crate) fn cf_state(&self, cf: CfId) -> Result<Arc<CfState>> {
        self.cfs
            .read()
            .get(&cf)
            .cloned()
            .ok_or_else(|| Error::UnknownColumnFamily(format!("id {cf}")))
    }

    pub(crate) fn load_leaper_model(&self, cf: CfId, path: &Path) -> Result<()> {
        if !matches!(
            self.prefetch.policy(),
            crate::policy::PrefetchPolicy::Leaper(_)
        ) {
            return Err(Error::InvalidArgument(
                "the prefetch policy is not Leaper".into(),
            ));
        }
        let collector = self.cf_state(cf)?.access.clone().ok_or_else(|| {
            Error::InvalidArgument(
                "a Leaper model needs access statistics (Options::access)".into(),
            )
        })?;
        let r = crate::learned::leaper_model::LeaperModel::load(path)
            .and_then(|m| crate::policy::HotRangePredictor::new(Arc::new(m), collector));
        match r {
            Ok(p) => {
                self.prefetch.set_source(cf, Arc::new(p));
                Ok(())
            }
            Err(e) => {
                // Advisory: the engine runs on without the model (principle 2).
                self.warn(format_args!(
                    "Leaper model {} refused, prefetching without it: {e}",
                    path.display()
                ));
                self.prefetch.model_error();
                Err(e)
            }
        }
    }

    /// The options family `cf` runs with (the database's for one dropped meanwhile).
    pub(crate) fn cf_opts(&self, cf: CfId) -> Arc<Options> {
        match self.cfs.read().get(&cf) {
            Some(c) => c.opts.clone(),
            None => Arc::new(self.opts.clone()),
        }
    }

    /// The options as they stand, every family's own included.
    pub(crate) fn current_options(&self) -> Options {
        let mut o = self.opts.clone();
        o.column_families = self.families.lock().clone();
        o
    }

    /// Writes the options file (one save at a time: each takes the next number and the
    /// same temporary name).
    pub(crate) fn try_save_options(&self) -> Result<()> {
        let _one = self.options_save.lock();
        crate::options_file::save(&self.env, &self.path, &self.current_options())
    }

    /// [`try_save_options`](Self::try_save_options) where the file is advisory (a database
    /// runs without it; tools are then told the options): a failure only warns.
    pub(crate) fn save_options(&self) {
        if let Err(e) = self.try_save_options() {
            self.warn(format_args!("the options file was not written: {e}"));
        }
    }

    /// A collector for a column family, if access statistics are on.
    pub(crate) fn new_collector(&self, cf: CfId) -> Option<Arc<RangeCollector>> {
        self.opts
            .access
            .clone()
            .map(|a| Arc::new(RangeCollector::new(cf, a)))
    }

    pub(crate) fn super_version(&self, cf: CfId) -> Result<Arc<SuperVersion>> {
        Ok(self.cf_state(cf)?.sv.load_full())
    }

    fn read_seq(&self, ro: &ReadOptions) -> SeqNo {
        match &ro.snapshot {
            Some(s) => s.seq(),
            None => self.last_seq.load(Ordering::Acquire),
        }
    }

    /// What point reads of a column family read from: one super version and one
    /// sequence number, so that every read through the view sees the same state.
    fn read_view(&self, ro: &ReadOptions, cf: CfId) -> Result<ReadView> {
        // Before the super version: a flush after this point stops the read from caching
        // what it finds (it may be older than what the flush wrote).
        let generation = self.read_cache.as_ref().map(|rc| rc.generation());
        // The super version first, then the sequence number. The other order loses
        // versions: a flush between the two keeps only the newest version of a key, which
        // may be above the read's sequence number while the one the read should see is
        // gone, so the read fell back to an older table. This way every table entry of the
        // super version is at or below the sequence number.
        let state = self.cf_state(cf)?;
        let sv = state.sv.load_full();
        let seq = self.read_seq(ro);
        Ok(ReadView {
            generation,
            state,
            sv,
            seq,
        })
    }

    fn get(&self, ro: &ReadOptions, cf: CfId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        let view = self.read_view(ro, cf)?;
        self.get_in(ro, &view, key)
    }

    /// Point reads of `keys` through one view (RocksDB's `MultiGet`): the answers are
    /// those of a single moment, whatever writes and flushes run beside them. Keys are
    /// looked up in key order, so neighbouring keys find their blocks cached; the answers
    /// come back in the order of `keys`.
    pub(crate) fn multi_get<K: AsRef<[u8]>>(
        &self,
        ro: &ReadOptions,
        cf: CfId,
        keys: &[K],
        mut timed: impl FnMut(u64),
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let view = match self.read_view(ro, cf) {
            Ok(v) => v,
            Err(e) => return keys.iter().map(|_| Err(e.duplicate())).collect(),
        };
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| keys[a].as_ref().cmp(keys[b].as_ref()));
        let mut out: Vec<Option<Result<Option<Vec<u8>>>>> = keys.iter().map(|_| None).collect();
        for i in order {
            let t = self.clock.stopwatch();
            let key = keys[i].as_ref();
            out[i] = Some(check_key(key).and_then(|()| self.get_in(ro, &view, key)));
            timed(t.elapsed_ns());
        }
        out.into_iter().flatten().collect()
    }

    /// One point read through `view`: the memtables, then the point cache (KV, KP), then
    /// the levels. The point cache answers only with a version newer than the deletions
    /// covering the key.
    fn get_in(&self, ro: &ReadOptions, view: &ReadView, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let ReadView {
            generation,
            state,
            sv,
            seq,
        } = view;
        let (generation, seq, cf) = (*generation, *seq, state.id);
        let mut obs = GetObserver::open(self, state, key);
        let memtables = || std::iter::once(&sv.mem).chain(sv.imms.iter().map(|(m, _)| m));
        let found_in_memtable = memtables().find_map(|m| m.get(key, seq));
        // The newest range deletion of the key the read sees (0: none). An entry older
        // than it is deleted, wherever either lies.
        let mem_cover = memtables()
            .filter_map(|m| m.range_dels())
            .map(|d| d.max_cover(key, seq))
            .max()
            .unwrap_or(0);
        obs.lap(Step::Memtables);
        if mem_cover > 0 && found_in_memtable.is_none() {
            return Ok(None); // every table entry is older than the memtables' deletion
        }
        let table_cover = self
            .version_range_dels(&sv.version)?
            .map_or(0, |d| d.max_cover(key, seq));
        let cover = mem_cover.max(table_cover);
        if let Some((kind, v, found_seq)) = found_in_memtable {
            self.stats.memtable_hits.fetch_add(1, Ordering::Relaxed);
            if found_seq < cover {
                return Ok(None);
            }
            return self.resolve_entry(key, kind, v);
        }
        let mut admit = None;
        if let (Some(rc), Some(g), true) = (&self.read_cache, generation, state.point_cache) {
            let cached = self.get_cached(rc, g, sv, cf, key, seq, table_cover, ro.fill_cache)?;
            obs.lap(Step::PointCache);
            match cached {
                point_cache::Cached::Answer(v) => return Ok(v),
                point_cache::Cached::Miss { ghost_hit } => {
                    // Only a read at the latest state finds the newest version.
                    admit =
                        (ro.snapshot.is_none() && ro.fill_cache).then_some((&**rc, g, ghost_hit));
                }
            }
        }
        let probe = Probe {
            ro,
            cf,
            key,
            seq,
            table_cover,
            admit,
        };
        self.get_from_levels(&sv.version, &probe, &mut obs)
    }

    /// The levels' part of a point read: in each run, the table whose range holds the
    /// key, newest run first.
    fn get_from_levels(
        &self,
        version: &CfVersion,
        p: &Probe<'_>,
        obs: &mut GetObserver<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let lookup = lookup_key(p.key, p.seq);
        let mut probed = 0u32;
        for (level, l) in version.levels.iter().enumerate() {
            if l.runs.is_empty() {
                continue;
            }
            let _level_time = obs.enter_level(level);
            for run in &l.runs {
                let Some(f) = run.file_for(p.key) else {
                    continue;
                };
                if f.desc.min_seq > p.seq {
                    continue; // every entry is newer than the read
                }
                probed += 1;
                if let Some(answer) = self.get_from_table(p, f, level, &lookup, probed, obs)? {
                    return Ok(answer);
                }
            }
        }
        Ok(None)
    }

    /// Looks the key up in table `f` of `level`, the `probed`-th table of the read.
    /// Returns the read's answer when this table decides it (the key's newest entry, or
    /// one older than a range deletion covering it), None to go on to the next run.
    fn get_from_table(
        &self,
        p: &Probe<'_>,
        f: &Arc<FileMeta>,
        level: usize,
        lookup: &[u8],
        probed: u32,
        obs: &mut GetObserver<'_>,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let table = self.tables.get(f, level)?;
        let mut trace = obs.table_trace(p.ro.fill_cache);
        let r = table.get_position(lookup, &mut trace);
        obs.table_read(level, f.file_no(), &trace);
        let Some(at) = r? else {
            return Ok(None);
        };
        let (ikey, value) = at.block.entry(at.pos);
        let (kind, found_seq) = ikey.value_kind().map(|k| (k, ikey.seq())).ok_or_else(|| {
            Error::corruption(format!("table {}", f.file_no()), "malformed internal key")
        })?;
        let value = value.to_vec();
        if found_seq < p.table_cover {
            return Ok(Some(None));
        }
        self.stats
            .level(level)
            .gets_served
            .fetch_add(1, Ordering::Relaxed);
        // AC-Key on WiscKey: a KP entry also keeps the value's pointer.
        let value_ptr = (p.admit.is_some() && kind == ValueKind::ValuePointer)
            .then(|| crate::vlog::ValuePointer::decode(&value).ok())
            .flatten();
        let found = self.resolve_entry(p.key, kind, value)?;
        obs.lap(Step::Value);
        if let (Some((rc, g, ghost_hit)), Some(v), Some((_, block))) =
            (p.admit, &found, trace.found_block)
        {
            let file_no = f.file_no();
            rc.admit(
                g, p.cf, p.key, v, found_seq, probed, file_no, block, value_ptr, ghost_hit,
            );
        }
        Ok(Some(found))
    }

    /// The one place a table or memtable entry of `user_key` becomes the user's answer:
    /// a tombstone is `None`, a `ValuePointer` is resolved through the value log (one read
    /// of exactly the record, checksum verified). The point cache keeps what this returns.
    /// The caller must hold a version that contains the entry, so that the value-log file
    /// is not deleted under it.
    pub(crate) fn resolve_entry(
        &self,
        user_key: &[u8],
        kind: ValueKind,
        v: Vec<u8>,
    ) -> Result<Option<Vec<u8>>> {
        match kind {
            ValueKind::Deletion => Ok(None),
            ValueKind::Value => Ok(Some(v)),
            ValueKind::ValuePointer => self.vlog.get(user_key, &v).map(Some),
        }
    }

    fn iter(&self, ro: &ReadOptions, cf: CfId) -> Result<DbIterator> {
        // Super version first, as in `get`.
        let sv = self.super_version(cf)?;
        let seq = self.read_seq(ro);
        let range_dels = self.read_range_dels(&sv)?;
        self.stats.iterators.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = &self.cf_state(cf)?.records {
            r.record_scan();
        }
        if let Some(t) = &self.tuner {
            t.tick(1);
        }
        Ok(DbIterator::new(
            sv,
            &self.tables,
            seq,
            ro,
            self.stats.clone(),
            self.prefetch.clone(),
        )
        .with_read_charges(self.opts.read_triggered_compaction)
        .with_vlog(self.vlog.clone())
        .with_range_dels(range_dels))
    }

    pub(crate) fn request_compaction(&self) {
        self.bg.lock().compaction_requested = true;
        self.bg_cv.notify_all();
    }

    pub(crate) fn request_flush(&self) {
        self.bg.lock().flush_requested = true;
        self.bg_cv.notify_all();
    }

    /// Logs `edit` and publishes the column family's new version to readers (the caller
    /// holds the versions lock, `vs`).
    pub(crate) fn log_and_install(
        &self,
        vs: &mut VersionSet,
        cf: &CfState,
        edit: crate::version::VersionEdit,
    ) -> Result<()> {
        vs.log_and_apply(edit)?;
        if let Some(version) = vs.version(cf.id) {
            self.install_sv(cf, |sv| SuperVersion {
                mem: sv.mem.clone(),
                mem_wal: sv.mem_wal,
                imms: sv.imms.clone(),
                version,
            });
        }
        Ok(())
    }

    /// Replaces a column family's super version (callers hold the versions lock, which
    /// serializes every change of super versions).
    pub(crate) fn install_sv(&self, cf: &CfState, f: impl FnOnce(&SuperVersion) -> SuperVersion) {
        let cur = cf.sv.load_full();
        cf.sv.store(Arc::new(f(&cur)));
    }

    fn set_policy(&self, cf: CfId, level: usize, k: usize, transition: Transition) -> Result<()> {
        self.check_open()?;
        let state = self.cf_state(cf)?;
        let mut vs = self.versions.lock();
        let v = vs
            .version(cf)
            .ok_or_else(|| Error::UnknownColumnFamily(format!("id {cf}")))?;
        let l = &v.levels[level];
        // The last level, or the deepest one holding data (every level below is empty).
        let bottom = level == self.shape.last()
            || v.levels
                .get(level + 1..)
                .is_none_or(|d| d.iter().all(|l| l.is_empty()));
        let mut p = l.policy;
        let mut edit = crate::version::VersionEdit::default();
        let k = k as u32;
        match transition {
            Transition::Flexible => {
                p.k = k;
                p.pending_k = None;
                if let (Some(active), Some(cap)) = (l.active(), self.shape.run_capacity(level, k)) {
                    if active.size() >= cap {
                        edit.sealed.push(SealedRun {
                            cf,
                            level: level as u32,
                            run: active.id,
                        });
                    }
                }
            }
            Transition::Lazy => {
                // The bottom level holding data never empties, so a lazy change there
                // would never take effect: it applies at once, as the picker merges runs
                // beyond K anyway.
                if l.is_empty() || bottom {
                    p.k = k;
                    p.pending_k = None;
                } else {
                    p.pending_k = Some(k);
                }
            }
            Transition::Greedy => {
                p.k = k;
                p.pending_k = None;
                // The bottom level holding data has nothing below to merge with: draining
                // it would only move every entry one level down. The new K applies at
                // once there, like a flexible change.
                p.draining = level > 0 && !bottom && !l.is_empty();
            }
        }
        edit.policies.push(LevelPolicy {
            cf,
            level: level as u32,
            state: p,
        });
        self.log_and_install(&mut vs, &state, edit)?;
        drop(vs);
        self.request_compaction();
        Ok(())
    }

    /// The block cache, and AC-Key's read cache (which is then the block cache too).
    pub(crate) fn new_caches(opts: &Options) -> (Arc<dyn BlockCache>, Option<Arc<ReadCache>>) {
        if opts.read_cache != ReadCachePolicy::Block {
            let rc = Arc::new(ReadCache::new(
                opts.read_cache,
                opts.block_cache_bytes,
                opts.block_size,
            ));
            return (rc.clone(), Some(rc));
        }
        let bc: Arc<dyn BlockCache> = match &opts.block_cache {
            // Possibly shared with other databases, whose file numbers repeat these.
            Some(c) => Arc::new(crate::cache::SharedCacheView::new(c.clone())),
            None => Arc::new(LruBlockCache::with_hot_share(
                opts.block_cache_bytes,
                match opts.block_cache_shards {
                    0 => crate::options::auto_cache_shards(opts.block_cache_bytes),
                    n => n,
                },
                opts.block_cache_hot_share,
            )),
        };
        (bc, None)
    }
}

/// The inspection view of a column family's levels (shared by `Db::level_info` and
/// `Db::inspect`).
pub(crate) fn level_infos(v: &CfVersion, shape: &LevelShape) -> Vec<LevelInfo> {
    v.levels
        .iter()
        .enumerate()
        .map(|(i, l)| LevelInfo {
            level: i,
            capacity: if i == 0 { 0 } else { shape.capacity(i) },
            k: l.policy.k,
            pending_k: l.policy.pending_k,
            draining: l.policy.draining,
            runs: l
                .runs
                .iter()
                .map(|r| RunInfo {
                    id: r.id,
                    files: r.files.len(),
                    bytes: r.size(),
                    sealed: r.sealed,
                })
                .collect(),
        })
        .collect()
}

impl DbInner {
    /// The statistics now ([`Db::stats`]).
    pub(crate) fn stats_snapshot(&self) -> DbStats {
        let mut s = DbStats::collect(&self.stats);
        s.io = self.env.stats().snapshot();
        s.block_cache_usage = self.block_cache.usage();
        s.open_files = self.tables.open_files().len() as u64;
        s.open_file_evictions = self.tables.open_files().evictions();
        s.read_cache = match &self.read_cache {
            Some(rc) => rc.read_cache_stats(),
            None => ReadCacheStats {
                policy: "block".into(),
                capacity: self.block_cache.capacity() as u64,
                block_bytes: s.block_cache_usage as u64,
                block_hits: s.block_cache_hits,
                block_misses: s.block_cache_misses,
                ..Default::default()
            },
        };
        if let Ok(sv) = self.super_version(CfId::DEFAULT) {
            for (i, l) in sv.version.levels.iter().enumerate() {
                if let Some(ls) = s.levels.get_mut(i) {
                    ls.runs = l.runs.len();
                    ls.files = l.num_files();
                    ls.bytes = l.size();
                    ls.k = l.policy.k;
                }
            }
            s.levels.truncate(sv.version.levels.len());
        }
        s.vlog = self.vlog.stats(&self.vlog_usage());
        s.prefetch = self.prefetch.stats();
        s.tuner = match &self.tuner {
            Some(t) => t.stats(),
            None => crate::policy::TunerStats {
                policy: "static".into(),
                ..Default::default()
            },
        };
        s
    }
}

impl DbInner {
    /// Writes an event to the event log, if there is one.
    pub(crate) fn event(&self, event: &str, detail: std::fmt::Arguments<'_>) {
        if let Some(l) = &self.event_log {
            l.event(event, detail);
        }
    }

    /// A warning: to the `log` crate's logger and to the event log.
    pub(crate) fn warn(&self, msg: std::fmt::Arguments<'_>) {
        log::warn!("cairn: {msg}");
        self.event("warning", format_args!("{msg}"));
    }
}

/// What the levels' part of a point read carries from its start.
struct Probe<'a> {
    ro: &'a ReadOptions,
    cf: CfId,
    key: &'a [u8],
    seq: SeqNo,
    /// The newest range deletion in the tables covering the key (0: none).
    table_cover: SeqNo,
    /// AC-Key: the read cache to admit the found entry to, its generation, and whether
    /// the key's ghost entry was hit.
    admit: Option<(&'a ReadCache, u64, bool)>,
}
