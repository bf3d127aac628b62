//! Opening a database: the LOCK file, creating or recovering the version set, replaying
//! write-ahead logs into level 0, and removing files left behind by a crash.

use super::event_log::EventLog;
use crate::events::EventListener;
use crate::ids::CfId;
use crate::ids::FileNo;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex, RwLock};

use super::snapshot::SnapshotList;
use super::table_cache::{table_path, TableCache};
use super::write::wal_path;
use super::{BgState, CfState, DbInner, SuperVersion, WalState};
use crate::batch::{BatchOpKind, WriteBatch};
use crate::clock::EngineClock;
use crate::compaction::LevelShape;
use crate::filenames;
use crate::log::{LogReader, TailState};
use crate::memtable::Memtable;
use crate::options::{IndexPolicy, Options, WalRecovery};
use crate::stats::StatsInner;
use crate::storage::{FileKind, StorageEnv};
use crate::types::ValueKind;
use crate::version::{set::current_path, VersionEdit, VersionSet};
use crate::{Error, Result};

/// How long an open waits for a lock that looks held before it says `Locked`.
///
/// The lock is an `flock` on `LOCK`, which belongs to the open file, and a child process
/// forked by any thread of this process shares the open files until its `exec` closes them.
/// So a database closed while another thread spawns a process stays locked for that
/// child's fork-to-exec window (milliseconds on a busy machine), and a reopen right after
/// the close would fail. A lock held for this long is held by someone.
const LOCK_GRACE: Duration = Duration::from_millis(250);

pub(crate) fn lock_dir(path: &Path) -> Result<File> {
    let lock_path = path.join(filenames::LOCK);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(lock_path.display().to_string(), e))?;
    let start = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(f),
            Err(TryLockError::WouldBlock) if start.elapsed() < LOCK_GRACE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(TryLockError::WouldBlock) => return Err(Error::Locked(path.to_path_buf())),
            Err(TryLockError::Error(e)) => {
                return Err(Error::io(lock_path.display().to_string(), e))
            }
        }
    }
}

/// Names cairn itself creates in a database directory.
fn is_cairn_file(name: &str) -> bool {
    use filenames::*;
    [
        LOCK,
        CURRENT,
        CURRENT_TMP,
        TUNER,
        TUNER_TMP,
        STATS,
        STATS_TMP,
        LOST_DIR,
    ]
    .contains(&name)
        || name.starts_with(MANIFEST_PREFIX)
        || is_options_file(name)
        || is_model_tmp(name)
        || [WAL_SUFFIX, TABLE_SUFFIX, VLOG_SUFFIX, MODEL_SUFFIX]
            .iter()
            .any(|s| name.ends_with(s))
        || is_event_log(name)
        || is_query_store(name)
        || is_query_store_tmp(name)
}

/// Files that only exist once a database holds data (or its manifest): without `CURRENT`
/// they mean the database lost its pointer to the manifest, not that it is new.
fn is_data_file(name: &str) -> bool {
    use filenames::*;
    name.starts_with(MANIFEST_PREFIX)
        || [WAL_SUFFIX, TABLE_SUFFIX, VLOG_SUFFIX]
            .iter()
            .any(|s| name.ends_with(s))
}

/// The data files in the database directory and its tier directories (sorted).
pub(crate) fn data_files(path: &Path, opts: &Options) -> Vec<String> {
    let mut dirs = vec![path.to_path_buf()];
    dirs.extend(opts.tiers.iter().map(|t| path.join(&t.dir)));
    let mut found: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| is_data_file(n))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The manifest a new database writes first, before `CURRENT` names it.
use filenames::FIRST_MANIFEST;

/// A creation killed after writing the first manifest but before `CURRENT` leaves that
/// manifest as the only data file; no write can have been acknowledged (the open never
/// returned, and an open database always has a write-ahead log beside its manifest). If it
/// describes an empty database (the default column family at most, no tables, no value
/// logs), or holds no complete record (cut while its first record was written), it is
/// removed so the creation starts over; anything else is the missing-`CURRENT`
/// corruption, for `Db::repair`. Called under the directory lock, so the files are
/// listed again here.
fn discard_unfinished_creation(
    path: &Path,
    env: &StorageEnv,
    opts: &Options,
    initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync>,
) -> Result<()> {
    let manifest = path.join(FIRST_MANIFEST);
    let data = data_files(path, opts);
    if data.is_empty() {
        return Ok(());
    }
    let empty = data == [FIRST_MANIFEST]
        && match VersionSet::recover_manifest(
            env.clone(),
            opts.num_levels,
            initial_k,
            FileNo::new(1),
        ) {
            Ok(vs) => {
                vs.vlogs.live_files().is_empty()
                    && vs.cfs.iter().all(|(&id, cf)| {
                        id == CfId::DEFAULT && cf.version.levels.iter().all(|l| l.runs.is_empty())
                    })
            }
            // Empty, or torn in its first record: the creation's own write, cut.
            Err(_) => true,
        };
    if !empty {
        return Err(Error::corruption(
            filenames::CURRENT,
            format!(
                "missing, but {} holds database files ({}): nothing was changed; Db::repair \
                 rebuilds the manifest",
                path.display(),
                data.join(", ")
            ),
        ));
    }
    std::fs::remove_file(&manifest).map_err(|e| Error::io(manifest.display().to_string(), e))
}

/// Checks the directory before anything in it is touched and creates it when asked:
/// whether a database exists there (its CURRENT file). Refuses a file, a directory of
/// foreign files, database files without CURRENT (the repair path), a missing database
/// without `create_if_missing`, and an existing one with `error_if_exists`.
fn prepare_dir(path: &Path, opts: &Options) -> Result<bool> {
    if path.exists() && !path.is_dir() {
        return Err(Error::NotADatabase(path.to_path_buf()));
    }
    let exists = current_path(path).exists();
    if !exists {
        if path.is_dir() {
            let foreign = std::fs::read_dir(path)
                .map_err(|e| Error::io(path.display().to_string(), e))?
                .flatten()
                .any(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    !is_cairn_file(&n) && !opts.tiers.iter().any(|t| t.dir.as_os_str() == &*n)
                });
            if foreign {
                return Err(Error::NotADatabase(path.to_path_buf()));
            }
            // Creating a database here would treat the tables and logs as leftovers of a
            // crash and delete them: refuse, and point at the repair path instead. One
            // exception: a creation cut short between the first manifest and CURRENT
            // leaves that manifest alone (checked below to describe an empty database).
            let data = data_files(path, opts);
            if !data.is_empty() && data != [FIRST_MANIFEST] {
                return Err(Error::corruption(
                    filenames::CURRENT,
                    format!(
                        "missing, but {} holds database files ({}{}): nothing was changed; \
                         Db::repair rebuilds the manifest from them",
                        path.display(),
                        data[..data.len().min(3)].join(", "),
                        if data.len() > 3 { ", ..." } else { "" }
                    ),
                ));
            }
        }
        if !opts.create_if_missing {
            return Err(Error::NotFound(path.to_path_buf()));
        }
        std::fs::create_dir_all(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    } else if opts.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "database {} already exists",
            path.display()
        )));
    }
    Ok(exists)
}

/// Opens (or creates) the database at `path`, in named phases: the directory's checks,
/// the lock and storage, the manifest, the files it names, the caches and column
/// families, then the WALs' replay.
pub(crate) fn open(path: &Path, opts: Options) -> Result<DbInner> {
    open_with(path, opts, false)
}

/// Opens the database at `path` for reads only: no lock, no file created, renamed or
/// removed; the write-ahead logs are replayed into memtables that stay in memory.
pub(crate) fn open_read_only(path: &Path, mut opts: Options) -> Result<DbInner> {
    opts.create_if_missing = false;
    opts.error_if_exists = false;
    opts.background_work = false;
    // Every file is opened now and kept open (value logs are at the files' check): a
    // writer beside this session may delete them, and an open file stays readable.
    opts.max_open_files = None;
    // A writer beside it may install a flush or compaction while this reads the manifest,
    // the logs and the tables (then delete logs and tables): what it read would mix two
    // states. Every such change appends to the manifest or starts a new one first, so an
    // open during which the manifest stayed as it was read one state.
    let mut changed = None;
    for attempt in 0..READ_ONLY_TRIES {
        let before = manifest_mark(path);
        let opened = open_with(path, opts.clone(), true);
        // Unchanged: one state was read. No mark before but one after: the manifest named
        // was gone by the time it was looked at (a roll), so changed. None both times:
        // no database there, whatever the open said.
        if manifest_mark(path) == before {
            return opened;
        }
        changed = Some(opened.err());
        // Back off: a busy writer changes the manifest every few milliseconds.
        std::thread::sleep(std::time::Duration::from_millis(1 << attempt.min(6)));
    }
    let last = changed
        .flatten()
        .map_or(String::new(), |e| format!("; the last try: {e}"));
    Err(Error::Io {
        context: format!(
            "{}: a writer beside it changed the database during each of {READ_ONLY_TRIES} \
             read-only opens (try again){last}",
            path.display()
        ),
        source: Arc::new(std::io::Error::from(std::io::ErrorKind::Interrupted)),
    })
}

/// Read-only opens tried while a writer beside them keeps changing the tree.
const READ_ONLY_TRIES: usize = 16;

/// What changes whenever a writer installs an edit: `CURRENT`, and the length of the
/// manifest it names (edits are appended).
fn manifest_mark(path: &Path) -> Option<(Vec<u8>, u64)> {
    let current = std::fs::read(current_path(path)).ok()?;
    let name = std::str::from_utf8(&current).ok()?.trim_end();
    let len = std::fs::metadata(path.join(name)).ok()?.len();
    Some((current, len))
}

fn open_with(path: &Path, mut opts: Options, read_only: bool) -> Result<DbInner> {
    opts.validate()?;
    let exists = prepare_dir(path, &opts)?;
    let lock = if read_only {
        None
    } else {
        Some(lock_dir(path)?)
    };
    if exists {
        check_saved_options(path, &mut opts)?;
    }
    let (env, clock) = open_env(path, &opts, read_only)?;
    let event_log = (opts.info_log && !read_only).then(|| {
        Arc::new(EventLog::open(
            path,
            opts.max_log_file_size,
            opts.keep_log_file_num,
        ))
    });
    let mut vs = recover_versions(path, &env, &opts, exists)?;
    // Tables and value-log files share one budget of open files.
    let open_files = Arc::new(crate::cache::open_files::OpenFiles::new(
        opts.max_open_files,
    ));
    let vlog = Arc::new(crate::vlog::VlogStore::with_open_files(
        env.clone(),
        open_files.clone(),
    ));
    check_files_present(&env, &vs, &vlog)?;
    // The manifest records the next file number only when an edit is logged, but a WAL
    // rotation (and a flush or compaction cut short) takes numbers without logging one. A
    // crash can thus leave a WAL numbered at or above the recovered counter; reusing its
    // number for the new WAL would skip it at replay and truncate it, losing acknowledged
    // writes. Never hand out a number already present on disk.
    if let Some(no) = missing_wal(path, vs.log_number, vs.next_file_no) {
        return Err(missing_wal_error(no));
    }
    vs.next_file_no = vs.next_file_no.max(max_file_no_on_disk(&env)?.next());
    let first_wal = vs.new_file_no();
    let log_number = vs.log_number;
    let parts = OpenParts {
        path,
        env,
        clock,
        vlog,
        open_files,
        lock,
        event_log,
    };
    let inner = DbInner::assemble(opts, vs, parts);
    if read_only {
        // The tables first: once open they stay readable, and the logs are read whole.
        inner.open_every_table()?;
        inner.replay_wals_in_memory(log_number)?;
    } else {
        inner.replay_wals(log_number, first_wal)?;
        inner.save_options();
        inner.log_open();
    }
    if let crate::policy::PrefetchPolicy::Leaper(p) = &inner.opts.prefetch {
        if let Some(model) = p.model.clone() {
            // A model that cannot be used leaves Leaper without one: the open goes on.
            let _ = inner.load_leaper_model(CfId::DEFAULT, &model);
        }
    }
    Ok(inner)
}

/// The storage environment of an open (fault injection, the virtual clock, mmap reads,
/// read-only) and the engine's clock.
fn open_env(path: &Path, opts: &Options, read_only: bool) -> Result<(StorageEnv, EngineClock)> {
    let env = if read_only {
        StorageEnv::existing(path, &opts.tiers, opts.latency_scale)?
    } else {
        StorageEnv::new(path, &opts.tiers, opts.latency_scale)?
    };
    let (env, vclock) = env
        .with_faults(opts.faults.clone())
        .with_clock(&opts.clock)?;
    let env = env
        .with_mmap_reads(opts.mmap_reads)
        .with_read_only(read_only);
    let clock = match vclock {
        Some(c) => EngineClock::Virtual(c),
        None => EngineClock::Wall,
    };
    Ok((env, clock))
}

/// The version set from the manifest, or a new one; refuses a level count other than the
/// database's.
fn recover_versions(
    path: &Path,
    env: &StorageEnv,
    opts: &Options,
    exists: bool,
) -> Result<VersionSet> {
    let o2 = opts.clone();
    let initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync> =
        Arc::new(move |l| o2.initial_runs(l));
    let vs = if exists {
        VersionSet::recover(env.clone(), opts.num_levels, initial_k)?
    } else {
        discard_unfinished_creation(path, env, opts, initial_k.clone())?;
        VersionSet::create(env.clone(), opts.num_levels, initial_k)?
    };
    check_level_count(&vs, opts)?;
    Ok(vs)
}

/// Refuses options whose level count differs from the database's.
pub(super) fn check_level_count(vs: &VersionSet, opts: &Options) -> Result<()> {
    for entry in vs.cfs.values() {
        if entry.version.levels.len() != opts.num_levels {
            return Err(Error::InvalidArgument(format!(
                "the database has {} levels but num_levels is {}",
                entry.version.levels.len(),
                opts.num_levels
            )));
        }
    }
    Ok(())
}

/// What an open has made before the engine's state is assembled.
struct OpenParts<'a> {
    path: &'a Path,
    env: StorageEnv,
    clock: EngineClock,
    vlog: Arc<crate::vlog::VlogStore>,
    open_files: Arc<crate::cache::open_files::OpenFiles>,
    /// The directory's lock (None when read-only).
    lock: Option<File>,
    event_log: Option<Arc<EventLog>>,
}

impl DbInner {
    /// The engine's state over a recovered version set: caches, the table cache, the
    /// column families, the learned parts' runtimes. Nothing is replayed yet.
    fn assemble(opts: Options, vs: VersionSet, p: OpenParts<'_>) -> DbInner {
        let (block_cache, read_cache) = DbInner::new_caches(&opts);
        let stats = Arc::new(StatsInner::default());
        let tables = Arc::new(TableCache::new(
            p.env.clone(),
            Some(block_cache.clone()),
            opts.cache_index_and_filter_blocks,
            opts.use_direct_reads,
            opts.index,
            stats.clone(),
            p.open_files,
        ));
        let cfs = column_families(p.path, &opts, &vs);
        for cf in cfs.values() {
            let learned = matches!(cf.opts.index, IndexPolicy::Learned { .. });
            tables.enable_learner(cf.opts.index);
            tables.set_family_learned(cf.id, learned);
        }
        let prefetch = Arc::new(crate::policy::prefetch::Prefetcher::new(
            opts.prefetch.clone(),
            block_cache.clone(),
            opts.block_size,
            opts.invalidation_window_ms,
            opts.invalidation_metric,
            p.clock.clone(),
        ));
        DbInner {
            path: p.path.to_path_buf(),
            families: Mutex::new(opts.column_families.clone()),
            options_save: Mutex::new(()),
            env: p.env,
            clock: p.clock.clone(),
            shape: LevelShape {
                level1_bytes: opts.level1_bytes,
                size_ratio: opts.size_ratio,
                num_levels: opts.num_levels,
                held: None,
            },
            last_seq: AtomicU64::new(vs.last_seq),
            halt: vs.halt.clone(),
            versions: Mutex::new(vs),
            cfs: RwLock::new(cfs),
            queue: Mutex::new(Default::default()),
            queue_cv: Condvar::new(),
            wal: Mutex::new(WalState {
                writer: None,
                number: FileNo::new(0),
                poisoned: false,
                failed_at: 0,
            }),
            snapshots: Arc::new(SnapshotList::default()),
            tables,
            block_cache,
            read_cache,
            bg: Mutex::new(BgState::default()),
            bg_cv: Condvar::new(),
            flush_lock: Mutex::new(()),
            compaction_lock: RwLock::new(()),
            jobs: Default::default(),
            stats,
            shutdown: AtomicBool::new(false),
            unlogged: AtomicBool::new(false),
            next_mem_id: AtomicU64::new(1),
            vlog: p.vlog,
            gc_targets: Mutex::new(Default::default()),
            prefetch,
            tuner: super::tuner::TunerRuntime::new(&opts, p.path, &p.clock),
            placement: super::placement::PlacementState::new(&opts),
            listeners: opts
                .listeners
                .iter()
                .cloned()
                .chain(
                    p.event_log
                        .iter()
                        .map(|l| l.clone() as Arc<dyn EventListener>),
                )
                .collect(),
            event_log: p.event_log,
            opts,
            _lock: p.lock,
        }
    }

    /// The open succeeded: the event log starts, with the open and the options it runs
    /// with first.
    fn log_open(&self) {
        let Some(log) = &self.event_log else {
            return;
        };
        let open = {
            let (vs, cfs) = (self.versions.lock(), self.cfs.read());
            let families: Vec<&str> = cfs.values().map(|c| c.name.as_str()).collect();
            format!(
                "path={} families={} next_file={} last_seq={}",
                self.path.display(),
                families.join(","),
                vs.next_file_no,
                self.last_seq.load(std::sync::atomic::Ordering::Relaxed)
            )
        };
        let options =
            serde_json::to_string(&self.opts).unwrap_or_else(|e| format!("unprintable={e}"));
        log.start(&[("open", open), ("options", options)]);
    }
}

/// Refuses options that contradict the database's saved ones (its levels, its tiers), and
/// gives each family the options file names but `opts` does not its saved options. A
/// damaged options file only warns: it is advisory, and this open writes a new one.
fn check_saved_options(path: &Path, opts: &mut Options) -> Result<()> {
    match crate::options_file::latest(path) {
        Ok(Some(saved)) => {
            crate::options_file::check_compatible(&saved, opts)?;
            for (name, c) in saved.column_families {
                opts.column_families.entry(name).or_insert(c);
            }
            opts.validate()
        }
        Ok(None) => Ok(()),
        Err(e) => {
            log::warn!("cairn: the options file is unreadable, not checked: {e}");
            Ok(())
        }
    }
}

/// Every value-log file and every table the manifest names must be there, tables at
/// their recorded size: a missing one would turn reads into errors later, so it is
/// corruption now.
fn check_files_present(
    env: &StorageEnv,
    vs: &VersionSet,
    vlog: &crate::vlog::VlogStore,
) -> Result<()> {
    for no in vs.vlogs.live_files() {
        vlog.check_present(no)?;
    }
    // So must every table the manifest names: reads of a missing one would fail later.
    for entry in vs.cfs.values() {
        for f in entry
            .version
            .levels
            .iter()
            .flat_map(|l| &l.runs)
            .flat_map(|r| &r.files)
        {
            let p = table_path(env, f.desc.tier as usize, f.file_no());
            match std::fs::metadata(&p) {
                Err(_) => {
                    return Err(Error::corruption(
                        p.display().to_string(),
                        "table named by the manifest is missing",
                    ))
                }
                Ok(m) if m.len() != f.desc.size => {
                    return Err(Error::corruption(
                        p.display().to_string(),
                        format!(
                            "the manifest says {} bytes, the file has {}",
                            f.desc.size,
                            m.len()
                        ),
                    ))
                }
                Ok(_) => {}
            }
        }
    }
    Ok(())
}

/// The column families as recovered: each with an empty memtable over its version,
/// and its access collector and query store when the options ask for them.
fn column_families(path: &Path, opts: &Options, vs: &VersionSet) -> BTreeMap<CfId, Arc<CfState>> {
    vs.cfs
        .iter()
        .map(|(&id, e)| {
            (
                id,
                Arc::new(CfState {
                    id,
                    name: e.name.clone(),
                    opts: Arc::new(opts.for_family(&e.name)),
                    point_cache: opts.family_point_cache(&e.name),
                    access: opts
                        .access
                        .clone()
                        .map(|a| Arc::new(crate::access::RangeCollector::new(id, a))),
                    records: super::placement::open_query_store(path, id, &opts.records),
                    sv: ArcSwap::from_pointee(SuperVersion {
                        mem: Arc::new(Memtable::new(0)),
                        mem_wal: FileNo::new(0),
                        imms: Vec::new(),
                        version: e.version.clone(),
                    }),
                }),
            )
        })
        .collect()
}

/// Numbers of the WAL files in the database directory.
/// The write-ahead log the manifest says must exist, when it does not: its log number names
/// the oldest log still holding writes that no table has. Flushes, recovery and repair
/// move the log number only onto a log already created (and its directory entry synced),
/// so a missing one is damage: its writes would be skipped without a word.
pub(crate) fn missing_wal(root: &Path, log_number: FileNo, next_file_no: FileNo) -> Option<FileNo> {
    (log_number > FileNo::new(0)
        && log_number < next_file_no
        && !wal_path(root, log_number).exists())
    .then_some(log_number)
}

/// The corruption error of a missing write-ahead log.
pub(crate) fn missing_wal_error(no: FileNo) -> Error {
    Error::corruption(
        filenames::wal(no),
        "the manifest needs this write-ahead log (it holds writes not yet in tables), but \
         it is missing; Db::repair rebuilds the database from the files that remain",
    )
}

fn wal_numbers(path: &Path) -> Result<Vec<FileNo>> {
    Ok(std::fs::read_dir(path)
        .map_err(|e| Error::io(path.display().to_string(), e))?
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(filenames::wal_no))
        .collect())
}

impl DbInner {
    /// Replays WAL files numbered >= `log_number` into fresh memtables, writes them to
    /// level 0, and starts a new WAL (number `new_wal`).
    fn replay_wals(&self, log_number: FileNo, new_wal: FileNo) -> Result<()> {
        let (mems, max_seq) = self.read_wals(log_number, Some(new_wal))?;
        self.persist_replayed(&mems, max_seq, new_wal)
    }

    /// Opens every table of the current versions (kept by the table cache).
    fn open_every_table(&self) -> Result<()> {
        let vs = self.versions.lock();
        for entry in vs.cfs.values() {
            for (level, l) in entry.version.levels.iter().enumerate() {
                for f in l.runs.iter().flat_map(|r| r.files.iter()) {
                    self.tables.get(f, level)?;
                }
            }
        }
        Ok(())
    }

    /// A read-only open's replay: the logs' writes go to memtables that stay in memory
    /// (each column family's active one; no write ever reaches it).
    fn replay_wals_in_memory(&self, log_number: FileNo) -> Result<()> {
        let (mut mems, max_seq) = self.read_wals(log_number, None)?;
        self.last_seq.store(max_seq, Ordering::Release);
        let vs = self.versions.lock();
        for cf in self.cfs.read().values() {
            let version = vs.version(cf.id).expect("recovered family");
            cf.sv.store(Arc::new(SuperVersion {
                mem: mems.remove(&cf.id).unwrap_or_else(|| self.new_memtable()),
                mem_wal: log_number,
                imms: Vec::new(),
                version,
            }));
        }
        Ok(())
    }

    /// The writes of the WAL files numbered >= `log_number` (but `skip`), in memtables by
    /// column family, and the largest sequence number seen (the tables' when larger).
    fn read_wals(
        &self,
        log_number: FileNo,
        skip_no: Option<FileNo>,
    ) -> Result<(BTreeMap<CfId, Arc<Memtable>>, u64)> {
        let mut wals: Vec<FileNo> = wal_numbers(&self.path)?
            .into_iter()
            .filter(|&n| n >= log_number && Some(n) != skip_no)
            .collect();
        wals.sort_unstable();
        let mut mems: BTreeMap<CfId, Arc<Memtable>> = BTreeMap::new();
        let mut max_seq = self.last_seq.load(Ordering::Relaxed);
        let skip = self.opts.wal_recovery == WalRecovery::SkipCorrupt;
        for &no in &wals {
            let path = wal_path(&self.path, no);
            let name = filenames::wal(no);
            let data = self.env.read_whole(&path, FileKind::Wal)?;
            let mut reader = LogReader::new(data, name.clone(), skip);
            loop {
                let rec = match reader.next_record() {
                    Ok(Some(r)) => r,
                    Ok(None) => break,
                    Err(e) => return Err(rename(e, &name)),
                };
                let (first, batch) = match WriteBatch::decode(&rec) {
                    Ok(x) => x,
                    Err(e) if skip => {
                        let _ = e;
                        self.stats
                            .wal_skipped_records
                            .fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Err(e) => return Err(rename(e, &name)),
                };
                let mut seq = first;
                let cfs = self.cfs.read();
                for op in batch.iter() {
                    if cfs.contains_key(&op.cf) {
                        let m = mems.entry(op.cf).or_insert_with(|| self.new_memtable());
                        match op.kind {
                            BatchOpKind::Put => m.add(seq, ValueKind::Value, op.key, op.value),
                            BatchOpKind::Delete => m.add(seq, ValueKind::Deletion, op.key, &[]),
                            BatchOpKind::DeleteRange => m.add_range_del(seq, op.key, op.value),
                        }
                    }
                    seq += 1;
                }
                if !batch.is_empty() {
                    max_seq = max_seq.max(seq - 1);
                }
            }
            // A write cut short can only be at the end of the newest WAL, or of an older
            // one abandoned after a failed write (then the write was not acknowledged).
            // A record written whole and damaged at the end of an older WAL is mid-log
            // corruption: newer WALs follow, and dropping it silently would leave a hole
            // (later writes present, an acknowledged earlier one gone).
            if no != *wals.last().expect("in the list") && !reader.tail_is_torn_write() {
                if !skip {
                    return Err(Error::corruption(
                        name,
                        "damaged last record, and a newer write-ahead log follows",
                    ));
                }
                self.stats
                    .wal_skipped_records
                    .fetch_add(1, Ordering::Relaxed);
            }
            if let TailState::Truncated { dropped_bytes, .. } = reader.tail() {
                self.stats
                    .wal_truncated_bytes
                    .fetch_add(dropped_bytes, Ordering::Relaxed);
            }
            self.stats
                .wal_skipped_records
                .fetch_add(reader.skipped().regions, Ordering::Relaxed);
        }
        Ok((mems, max_seq))
    }

    /// Writes replayed memtables to level 0 and starts the new WAL (number `new_wal`),
    /// then removes what the replay made obsolete.
    fn persist_replayed(
        &self,
        mems: &BTreeMap<CfId, Arc<Memtable>>,
        max_seq: u64,
        new_wal: FileNo,
    ) -> Result<()> {
        self.last_seq.store(max_seq, Ordering::Release);
        // Start the new log before recording that the old ones are obsolete.
        let f = self
            .env
            .create(&wal_path(&self.path, new_wal), FileKind::Wal, 0, None)?;
        let mut w = crate::log::LogWriter::new(f);
        w.sync()?;
        self.env.sync_dir(&self.path)?;
        {
            let mut wal = self.wal.lock();
            wal.writer = Some(w);
            wal.number = new_wal;
        }
        let mut edit = VersionEdit {
            log_number: Some(new_wal),
            last_seq: Some(max_seq),
            ..Default::default()
        };
        for (cf, mem) in mems {
            let deepest = self
                .cfs
                .read()
                .get(cf)
                .map_or(0, |c| c.sv.load().version.deepest_nonempty());
            let (e, _) = self.write_level0(*cf, mem, deepest, None)?;
            edit.added.extend(e.added);
            edit.sealed.extend(e.sealed);
        }
        let mut vs = self.versions.lock();
        vs.log_and_apply(edit)?;
        for cf in self.cfs.read().values() {
            let version = vs.version(cf.id).expect("recovered family");
            cf.sv.store(Arc::new(SuperVersion {
                mem: self.new_memtable(),
                mem_wal: new_wal,
                imms: Vec::new(),
                version,
            }));
        }
        let live = vs.live_files();
        let manifest_no = vs.manifest_no();
        let vlogs = vs.vlogs.clone();
        drop(vs);
        self.remove_old_wals(new_wal);
        self.remove_orphans(&live, manifest_no);
        self.remove_orphan_vlogs(&vlogs);
        Ok(())
    }

    /// Removes value-log files no table references: outputs of a flush or GC cut short
    /// by a crash before its edit, or files whose last table went away before a crash.
    fn remove_orphan_vlogs(&self, registry: &crate::vlog::VlogRegistry) {
        let _ = registry.take_obsolete();
        let Ok(rd) = std::fs::read_dir(&self.path) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(no) = name.to_str().and_then(crate::vlog::parse_vlog_name) else {
                continue;
            };
            if !registry.is_live(no) {
                self.vlog.delete(no);
            }
        }
    }

    /// Removes tables no version references (outputs of work cut short by a crash) and
    /// manifests other than the current one.
    fn remove_orphans(&self, live: &std::collections::HashSet<FileNo>, manifest_no: FileNo) {
        for tier in 0..self.env.num_tiers() {
            let dir = self.env.tier_dir(tier).to_path_buf();
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.flatten() {
                let name = e.file_name();
                let Some(name) = name.to_str() else { continue };
                if let Some(no) = filenames::table_no(name) {
                    if !live.contains(&no) {
                        let _ = self.env.remove(&table_path(&self.env, tier, no));
                    }
                }
                // Learned models (Bourbon) of dead tables, and unfinished model saves.
                let dead_model = filenames::model_no(name).is_some_and(|no| !live.contains(&no));
                if dead_model || filenames::is_model_tmp(name) {
                    let _ = self.env.remove(&dir.join(name));
                }
            }
        }
        if let Ok(rd) = std::fs::read_dir(&self.path) {
            for e in rd.flatten() {
                let name = e.file_name();
                let Some(name) = name.to_str() else { continue };
                if let Some(no) = filenames::manifest_no(name) {
                    if no != manifest_no {
                        let _ = self.env.remove(&self.path.join(name));
                    }
                }
            }
        }
    }
}

/// The largest number of a WAL or table file in the database's directories (0 if none).
pub(crate) fn max_file_no_on_disk(env: &StorageEnv) -> Result<FileNo> {
    let mut max = FileNo::new(0);
    let mut dirs = vec![env.root().to_path_buf()];
    dirs.extend((0..env.num_tiers()).map(|t| env.tier_dir(t).to_path_buf()));
    for dir in dirs {
        let rd = std::fs::read_dir(&dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(no) = filenames::wal_no(name)
                .or_else(|| filenames::table_no(name))
                .or_else(|| filenames::vlog_no(name))
            {
                max = max.max(no);
            }
        }
    }
    Ok(max)
}

fn rename(e: Error, file: &str) -> Error {
    match e {
        Error::Corruption { detail, .. } => Error::corruption(file, detail),
        e => e,
    }
}
