//! Repair: bringing back a database whose `CURRENT` or manifest is lost or damaged, in
//! the manner of RocksDB's `RepairDB`.
//!
//! Two ways, tried in order:
//! 1. The newest manifest on disk recovers cleanly and every table and value-log file it
//!    names is present: `CURRENT` is pointed at it. Nothing else changes.
//! 2. Otherwise the state is rebuilt from the files themselves:
//!    - Every table is read whole (each block's checksum, each key, each value pointer
//!      checked against its value-log file); a table that fails is moved to `lost/`, never
//!      deleted, nor onto a file an earlier repair left there (a suffix `.1`, `.2`, ...
//!      keeps both). Each table's properties name its column family.
//!    - Every write-ahead log is read (skipping damaged records) and its entries replayed
//!      with their sequence numbers. An entry at or below the largest sequence number of
//!      its family's tables is skipped (it is in a table, or superseded there: an old log
//!      left behind must not bring back a key whose tombstone a compaction dropped),
//!      unless a table is known lost (moved to `lost/`, or named by the newest readable
//!      manifest and missing): then every entry is replayed, since the lost table may
//!      have held the only copy, and duplicates merge away.
//!    - Per column family, one merge of all its tables and log entries (newest version of
//!      each key by sequence number, so the order the tables once had does not matter)
//!      writes a single run at the bottom level. Tombstones are kept, not dropped as at
//!      the bottom: a stale copy of an older table or log (an unlink not yet durable when
//!      the power went) may reach a later repair, and the tombstone is what keeps its
//!      older version from coming back.
//!    - The new tables are synced, their directory entries synced, and only then is a
//!      manifest written and named by `CURRENT`; a crash before that leaves the old files
//!      in place for the next repair. The merged tables and logs are deleted last. New
//!      files are numbered above every file found, those moved to `lost/` included.
//!
//! What cannot come back: a column family whose tables all predate the column-family
//! property (they go to `default`), the name of a column family that only has log
//! entries (it comes back as `lost-cf-<id>`), and a column family dropped while its files
//! were still on disk (it comes back). Nor can repair tell an obsolete file from a live
//! one: a compaction's input, or a log already flushed, left behind by a crash before its
//! unlink is merged too, and where a compaction since dropped a tombstone at the bottom
//! level the key it deleted comes back (as with RocksDB's `RepairDB`); tables do not
//! record which tables they replaced. Likewise where the last level holds a value at
//! sequence number 0 (a bottommost merge renumbers the values every snapshot sees, as
//! RocksDB's does), an older version of that key in such a left-behind file wins the
//! merge. A log left behind is still recognised: a renumbered table keeps the newest
//! number it reflects as its largest sequence number.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::check::read_table_whole;
use super::recovery::{lock_dir, max_file_no_on_disk};
use super::table_cache::{model_path, table_path};
use super::write::wal_path;
use crate::batch::{BatchOpKind, WriteBatch};
use crate::compaction::merge::{merge, MergeOutput, MergeParams};
use crate::filenames;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::log::LogReader;
use crate::memtable::Memtable;
use crate::merging::MergingIterator;
use crate::options::Options;
use crate::storage::{FileKind, StorageEnv};
use crate::table::Table;
use crate::types::ValueKind;
use crate::version::set::{current_path, manifest_path};
use crate::version::{AddedFile, CfAdded};
use crate::version::{VersionEdit, VersionSet};
use crate::vlog::vlog_path;
use crate::{Error, Result};

/// How [`Db::repair`](super::Db::repair) brought the database back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepairMethod {
    /// `CURRENT` now names this manifest, which was intact.
    Manifest(FileNo),
    /// The manifest was rebuilt from the tables and write-ahead logs.
    Rebuilt,
}

/// What a repair did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// Which path was taken.
    pub method: RepairMethod,
    /// Tables read and merged (rebuild only).
    pub tables_merged: usize,
    /// Entries written to the new tables (rebuild only).
    pub entries: u64,
    /// Write-ahead log entries replayed (rebuild only); with a table known lost, those
    /// already in a table too.
    pub wal_entries: u64,
    /// Files that could not be read, where they now are in `lost/`, with the reason.
    pub lost: Vec<(PathBuf, String)>,
    /// Column families of the repaired database, by id.
    pub column_families: Vec<(CfId, String)>,
}

/// One column family being rebuilt.
#[derive(Default)]
struct CfPlan {
    name: Option<String>,
    /// Largest sequence number in the family's readable tables.
    table_max_seq: u64,
    tables: Vec<Arc<Table>>,
    mem: Option<Arc<Memtable>>,
}

pub(crate) fn repair(path: &Path, mut opts: Options) -> Result<RepairReport> {
    opts.validate()?;
    if !path.is_dir() {
        return Err(Error::NotFound(path.to_path_buf()));
    }
    // The families' own table formats, as an open takes them from the options file.
    if let Ok(Some(saved)) = crate::options_file::latest(path) {
        for (name, c) in saved.column_families {
            opts.column_families.entry(name).or_insert(c);
        }
        opts.validate()?;
    }
    let _lock = lock_dir(path)?;
    let env =
        StorageEnv::new(path, &opts.tiers, opts.latency_scale)?.with_faults(opts.faults.clone());
    if let Some(report) = try_newest_manifest(&env, &opts)? {
        return Ok(report);
    }
    rebuild(&env, &opts)
}

fn initial_k(opts: &Options) -> Arc<dyn Fn(usize) -> usize + Send + Sync> {
    let o = opts.clone();
    Arc::new(move |l| o.initial_runs(l))
}

fn manifest_numbers(root: &Path) -> Result<Vec<FileNo>> {
    let rd = std::fs::read_dir(root).map_err(|e| Error::io(root.display().to_string(), e))?;
    let mut v: Vec<FileNo> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(filenames::manifest_no))
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Points `CURRENT` at the newest manifest if it recovers and names only files present.
/// An older manifest is never used: tables written since would be deleted as orphans.
fn try_newest_manifest(env: &StorageEnv, opts: &Options) -> Result<Option<RepairReport>> {
    let Some(&no) = manifest_numbers(env.root())?.last() else {
        return Ok(None);
    };
    let vs = match VersionSet::recover_manifest(env.clone(), opts.num_levels, initial_k(opts), no) {
        Ok(vs) => vs,
        // A level count that does not match is the caller's options, not damage.
        Err(e @ Error::InvalidArgument(_)) => return Err(e),
        Err(_) => return Ok(None),
    };
    let tables_present = vs.cfs.values().all(|e| {
        e.version.levels.iter().all(|l| {
            l.runs.iter().all(|r| {
                r.files
                    .iter()
                    .all(|f| table_path(env, f.desc.tier as usize, f.file_no()).exists())
            })
        })
    });
    let vlogs_present = vs
        .vlogs
        .live_files()
        .iter()
        .all(|&v| vlog_path(env.root(), v).exists());
    let wal_present =
        super::recovery::missing_wal(env.root(), vs.log_number, vs.next_file_no).is_none();
    if !tables_present || !vlogs_present || !wal_present {
        return Ok(None);
    }
    env.write_atomic(
        &current_path(env.root()),
        FileKind::Manifest,
        filenames::current_contents(no).as_bytes(),
    )?;
    Ok(Some(RepairReport {
        method: RepairMethod::Manifest(no),
        tables_merged: 0,
        entries: 0,
        wal_entries: 0,
        lost: Vec::new(),
        column_families: vs.cfs.iter().map(|(&id, e)| (id, e.name.clone())).collect(),
    }))
}

/// Moves a damaged file into `lost/`, under its own name or, where an earlier repair left
/// a file of that name there, with the first free suffix `.1`, `.2`, ...: a rename onto
/// it would replace it. (The repair holds the database's lock: nothing else writes
/// `lost/` between the check and the rename.)
fn move_to_lost(env: &StorageEnv, path: &Path) -> Result<PathBuf> {
    let lost = env.root().join(filenames::LOST_DIR);
    std::fs::create_dir_all(&lost).map_err(|e| Error::io(lost.display().to_string(), e))?;
    let to = free_name_in(&lost, path.file_name().unwrap_or_default())?;
    env.rename(path, &to)?;
    Ok(to)
}

/// The first of `name`, `name.1`, `name.2`, ... that names nothing in `dir`.
fn free_name_in(dir: &Path, name: &std::ffi::OsStr) -> Result<PathBuf> {
    for n in 0..=u16::MAX {
        let mut candidate = name.to_os_string();
        if n > 0 {
            candidate.push(format!(".{n}"));
        }
        let to = dir.join(candidate);
        match std::fs::symlink_metadata(&to) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(to),
            Err(e) => return Err(Error::io(to.display().to_string(), e)),
            Ok(_) => {}
        }
    }
    Err(Error::io(
        dir.join(name).display().to_string(),
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "every name for it in lost/ is taken",
        ),
    ))
}

/// What the rebuild found on disk.
#[derive(Default)]
struct Found {
    plans: BTreeMap<CfId, CfPlan>,
    /// Tables read whole, by (tier, number): removed once the new manifest is durable.
    inputs: Vec<(usize, FileNo)>,
    lost: Vec<(PathBuf, String)>,
    max_seq: u64,
}

fn rebuild(env: &StorageEnv, opts: &Options) -> Result<RepairReport> {
    let root = env.root().to_path_buf();
    // Counted before the scan moves damaged tables to lost/: no new file takes the
    // number of one there.
    let newest_manifest = manifest_numbers(&root)?.last().copied().unwrap_or_default();
    let next_file_no = max_file_no_on_disk(env)?.max(newest_manifest).next();
    let named_missing = newest_manifest_names_missing_tables(env, opts);
    let mut found = scan_tables(env)?;
    let replay_all = named_missing || !found.lost.is_empty();
    let (wal_entries, wals, wal_max_seq) = read_wals(env, &mut found.plans, replay_all)?;
    found.max_seq = found.max_seq.max(wal_max_seq);
    found.plans.entry(CfId::DEFAULT).or_default();

    let mut vs = VersionSet::blank(env.clone(), opts.num_levels, initial_k(opts));
    vs.next_file_no = next_file_no;
    let mut edit = VersionEdit {
        last_seq: Some(found.max_seq),
        ..Default::default()
    };
    let (entries, column_families) = write_families(env, opts, &mut vs, &found.plans, &mut edit)?;
    install(env, &mut vs, edit)?;
    remove_merged(env, &found.inputs, &wals, vs.manifest_no())?;
    Ok(RepairReport {
        method: RepairMethod::Rebuilt,
        tables_merged: found.inputs.len(),
        entries,
        wal_entries,
        lost: found.lost,
        column_families,
    })
}

/// Reads every table whole, grouping those that pass by column family; a table that
/// fails goes to `lost/`.
fn scan_tables(env: &StorageEnv) -> Result<Found> {
    let mut found = Found::default();
    let mut vlog_sizes = HashMap::new();
    for tier in 0..env.num_tiers() {
        let dir = env.tier_dir(tier).to_path_buf();
        let rd = std::fs::read_dir(&dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
        let mut numbers: Vec<FileNo> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(filenames::table_no))
            .collect();
        numbers.sort_unstable();
        for no in numbers {
            match read_table_whole(env, tier, no, &mut vlog_sizes) {
                Ok(scan) => {
                    let ((cf, name), seq) = (scan.cf, scan.max_seq);
                    let plan = found.plans.entry(cf).or_default();
                    plan.name.get_or_insert(name);
                    plan.table_max_seq = plan.table_max_seq.max(seq);
                    plan.tables.push(scan.table);
                    found.max_seq = found.max_seq.max(seq);
                    found.inputs.push((tier, no));
                }
                Err(e) => {
                    let to = move_to_lost(env, &table_path(env, tier, no))?;
                    found.lost.push((to, e.to_string()));
                }
            }
        }
    }
    Ok(found)
}

/// Merges each column family into one run at the bottom level, recording the new tables
/// and families in `edit`. On failure the tables already written are removed. Returns the
/// entries written and the families, by id.
fn write_families(
    env: &StorageEnv,
    opts: &Options,
    vs: &mut VersionSet,
    plans: &BTreeMap<CfId, CfPlan>,
    edit: &mut VersionEdit,
) -> Result<(u64, Vec<(CfId, String)>)> {
    let level = opts.num_levels - 1;
    let tier = env.tier_for_level(level);
    let mut entries = 0;
    let mut written: Vec<PathBuf> = Vec::new();
    let mut column_families = Vec::new();
    for (&id, plan) in plans {
        let name = match (&plan.name, id) {
            (Some(n), _) => n.clone(),
            (None, CfId::DEFAULT) => "default".to_string(),
            (None, _) => format!("lost-cf-{id}"),
        };
        edit.cf_added.push(CfAdded {
            id,
            name: name.clone(),
        });
        column_families.push((id, name.clone()));
        let (outputs, n) = match write_family(env, opts, vs, (id, &name), plan) {
            Ok(x) => x,
            Err(e) => {
                remove_all(env, &written);
                return Err(e);
            }
        };
        entries += n;
        let run = vs.new_run_id();
        for o in outputs {
            written.push(table_path(env, tier, o.desc.file_no));
            edit.added.push(AddedFile {
                cf: id,
                level: level as u32,
                run,
                file: o.desc,
            });
        }
    }
    Ok((entries, column_families))
}

/// One column family's merge: its tables and log entries, newest version of each key by
/// sequence number, tombstones included. Returns the tables written and the entries in
/// them.
fn write_family(
    env: &StorageEnv,
    opts: &Options,
    vs: &mut VersionSet,
    column_family: (CfId, &str),
    plan: &CfPlan,
) -> Result<(Vec<MergeOutput>, u64)> {
    let mut children: Vec<Box<dyn InternalIterator>> = plan
        .tables
        .iter()
        .map(|t| Box::new(t.iter()) as Box<dyn InternalIterator>)
        .collect();
    if let Some(m) = &plan.mem {
        children.push(Box::new(m.iter()));
    }
    if children.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let table_dels = plan.tables.iter().filter_map(|t| t.range_dels().cloned());
    let mem_dels = plan.mem.as_ref().and_then(|m| m.range_dels());
    let sets: Vec<_> = table_dels.chain(mem_dels).collect();
    let dels =
        (!sets.is_empty()).then(|| crate::range_del::RangeDels::union(sets.iter().map(|d| &**d)));
    // The family's own table format, when the options name one for it.
    let family = opts.for_family(column_family.1);
    let level = opts.num_levels - 1;
    let tier = env.tier_for_level(level);
    let mut new_file = || {
        let no = vs.new_file_no();
        (no, table_path(env, tier, no))
    };
    let mut params = MergeParams {
        env,
        tier,
        level,
        column_family,
        build: family.table_build_options(level, level),
        target_file_size: family.target_file_size,
        snapshots: &[],
        // Tombstones are kept: an older version of their key may survive outside this
        // merge (a stale table or log whose unlink was not durable, found by a later
        // repair), and without the tombstone it would come back.
        bottommost: false,
        zero_seqs: false,
        version_dels: None,
        // The tables' entries at 0 keep the newest number they had (see
        // `TableBuilder::note_renumbered`).
        renumbered_max: plan
            .tables
            .iter()
            .map(|t| t.properties())
            .filter(|p| p.min_seq == 0 && p.num_entries > 0)
            .map(|p| p.max_seq)
            .max()
            .unwrap_or(0),
        new_file: &mut new_file,
        should_stop: &|| false,
        block_sink: None,
        values: None,
        range_dels: dels.as_ref(),
        bounds: (None, None),
    };
    let (outputs, counts) = merge(&mut MergingIterator::new(children), &mut params)?;
    Ok((outputs, counts.entries_out))
}

/// Makes the rebuilt state durable: a new empty log (an open requires the log the log
/// number names), then the manifest and `CURRENT`.
fn install(env: &StorageEnv, vs: &mut VersionSet, mut edit: VersionEdit) -> Result<()> {
    let root = env.root();
    // The log, file and directory entry, is durable before the manifest names it. A
    // crash before then leaves an empty log for the next repair.
    let wal_no = vs.new_file_no();
    let mut wal =
        crate::log::LogWriter::new(env.create(&wal_path(root, wal_no), FileKind::Wal, 0, None)?);
    wal.sync()?;
    env.sync_dir(root)?;
    // The logs' entries are in the new tables: none is replayed again.
    edit.log_number = Some(wal_no);
    // (log_and_apply syncs the new tables' directory entries before naming them.)
    // On failure nothing is removed: CURRENT may already name the new manifest. The
    // old files are untouched either way, and a second repair merges both again.
    vs.log_and_apply(edit)
}

/// Once the new state is durable: removes the merged tables (and their learned models),
/// the logs read, and every other manifest.
fn remove_merged(
    env: &StorageEnv,
    inputs: &[(usize, FileNo)],
    wals: &[FileNo],
    manifest_no: FileNo,
) -> Result<()> {
    let root = env.root();
    for &(tier, no) in inputs {
        let _ = env.remove(&table_path(env, tier, no));
        let model = model_path(env, tier, no);
        if model.exists() {
            let _ = env.remove(&model);
        }
    }
    for no in wals {
        let _ = env.remove(&wal_path(root, *no));
    }
    for no in manifest_numbers(root)? {
        if no != manifest_no {
            let _ = env.remove(&manifest_path(root, no));
        }
    }
    Ok(())
}

fn remove_all(env: &StorageEnv, paths: &[PathBuf]) {
    for p in paths {
        let _ = env.remove(p);
    }
}

/// Reads every write-ahead log, oldest first, into per-family memtables. Every entry is
/// kept, with its sequence number: one a table holds too is merged away as a duplicate,
/// and one the tables do not hold (its table lost or gone) is not. Skipping entries at or
/// below the tables' sequence numbers would drop those. Damaged records are skipped
/// (repair salvages what it can). Returns the entries kept, the log numbers read and the
/// largest sequence number.
/// Whether the newest readable manifest names a table that is not on disk: its writes may
/// then be only in the logs.
fn newest_manifest_names_missing_tables(env: &StorageEnv, opts: &Options) -> bool {
    let Some(&no) = manifest_numbers(env.root())
        .ok()
        .and_then(|n| n.last().copied())
        .as_ref()
    else {
        return false;
    };
    let Ok(vs) = VersionSet::recover_manifest(env.clone(), opts.num_levels, initial_k(opts), no)
    else {
        return false;
    };
    vs.cfs.values().any(|e| {
        e.version.levels.iter().flat_map(|l| &l.runs).any(|r| {
            r.files
                .iter()
                .any(|f| !table_path(env, f.desc.tier as usize, f.file_no()).exists())
        })
    })
}

/// Replays the logs into per-family memtables. A log entry at or below the largest
/// sequence number of its family's tables is normally in a table already, or was
/// superseded there: an old log left behind (its unlink not durable) must not bring back
/// a key whose tombstone a compaction has since dropped. When a table is known lost
/// (moved to `lost/`, or named by the manifest and missing), such entries may be the only
/// copy left, so every entry is replayed (the merge keeps the newest version of a key).
fn read_wals(
    env: &StorageEnv,
    plans: &mut BTreeMap<CfId, CfPlan>,
    replay_all: bool,
) -> Result<(u64, Vec<FileNo>, u64)> {
    let root = env.root();
    let rd = std::fs::read_dir(root).map_err(|e| Error::io(root.display().to_string(), e))?;
    let mut wals: Vec<FileNo> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(filenames::wal_no))
        .collect();
    wals.sort_unstable();
    let (mut kept, mut max_seq) = (0u64, 0u64);
    for &no in &wals {
        let data = env.read_whole(&wal_path(root, no), FileKind::Wal)?;
        let mut reader = LogReader::new(data, filenames::wal(no), true);
        // A damaged record ends the log's usable part only for that record: skip it.
        while let Ok(Some(rec)) = reader.next_record() {
            let Ok((first, batch)) = WriteBatch::decode(&rec) else {
                continue;
            };
            for (seq, op) in (first..).zip(batch.iter()) {
                max_seq = max_seq.max(seq);
                let plan = plans.entry(op.cf).or_default();
                if !replay_all && seq <= plan.table_max_seq {
                    continue;
                }
                let m = plan.mem.get_or_insert_with(|| Arc::new(Memtable::new(0)));
                match op.kind {
                    BatchOpKind::Put => m.add(seq, ValueKind::Value, op.key, op.value),
                    BatchOpKind::Delete => m.add(seq, ValueKind::Deletion, op.key, &[]),
                    BatchOpKind::DeleteRange => m.add_range_del(seq, op.key, op.value),
                }
                kept += 1;
            }
        }
    }
    Ok((kept, wals, max_seq))
}
