//! `Db::check`: verifies a database's files without changing anything, in the manner of
//! RocksDB's `ldb checkconsistency` and `sst_dump --command=verify` together.
//!
//! What it reads: `CURRENT` and the manifest it names (replayed as an open would), every
//! table whole (each block's checksum, keys in order, value pointers inside their value
//! logs, contents matching the manifest's description), every value log record by record,
//! the write-ahead logs an open would replay, and the advisory files (learned models, the
//! tuner checkpoint, `STATS.json`). Runs must hold disjoint, sorted files. Files no
//! manifest names are reported as warnings: an open removes them, they are not damage.
//!
//! When the manifest cannot be read, every table, value log and log on disk is still read
//! (orphans cannot be told apart then); `Db::repair` is the way back.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use super::recovery::lock_dir;
use super::table_cache::{model_path, table_path};
use super::write::wal_path;
use crate::batch::WriteBatch;
use crate::filenames;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::log::{LogReader, TailState};
use crate::options::Options;
use crate::storage::{FileKind, StorageEnv};
use crate::table::Table;
use crate::types::{cmp_internal, parse_internal_key, range_bound_key, ValueKind};
use crate::version::set::{current_path, manifest_path};
use crate::version::{FileDesc, VersionSet};
use crate::vlog::{parse_vlog_name, vlog_path, ValuePointer};
use crate::{Error, Result};

/// One finding of [`Db::check`](super::Db::check): the file and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckIssue {
    /// The file (a path, or a name such as `CURRENT`).
    pub file: String,
    /// What is wrong.
    pub detail: String,
}

/// What [`Db::check`](super::Db::check) found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The manifest `CURRENT` names, when it could be read.
    pub manifest: Option<String>,
    /// Column families of the manifest, by id.
    pub column_families: Vec<(CfId, String)>,
    /// Table files read whole.
    pub tables: usize,
    /// Entries in them.
    pub entries: u64,
    /// Value-log files read whole.
    pub value_logs: usize,
    /// Records in them.
    pub value_log_records: u64,
    /// Write-ahead logs read.
    pub wals: usize,
    /// Records in them.
    pub wal_records: u64,
    /// Damage: checksums that fail, files missing or disagreeing with the manifest.
    pub problems: Vec<CheckIssue>,
    /// Not damage: orphaned files an open would remove, torn log tails, advisory files
    /// (learned models, checkpoints) that would be ignored.
    pub warnings: Vec<CheckIssue>,
}

impl CheckReport {
    /// True when no problem was found (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, file: impl Into<String>, detail: impl Into<String>) {
        self.problems.push(CheckIssue {
            file: file.into(),
            detail: detail.into(),
        });
    }

    fn warning(&mut self, file: impl Into<String>, detail: impl Into<String>) {
        self.warnings.push(CheckIssue {
            file: file.into(),
            detail: detail.into(),
        });
    }

    fn error(&mut self, fallback_file: &str, e: Error) {
        match e {
            Error::Corruption { file, detail } => self.problem(file, detail),
            e => self.problem(fallback_file, e.to_string()),
        }
    }
}

/// What reading a table whole found (see [`read_table_whole`]).
pub(crate) struct TableScan {
    pub(crate) table: Arc<Table>,
    /// The column family its properties name (`default` for tables predating the field).
    pub(crate) cf: (CfId, String),
    pub(crate) entries: u64,
    pub(crate) min_seq: u64,
    pub(crate) max_seq: u64,
    /// First and last internal keys, range deletions' bounds included (empty for an
    /// empty table).
    pub(crate) first: Vec<u8>,
    pub(crate) last: Vec<u8>,
}

/// Reads a whole table: every block (checksums), every key (well-formed, strictly
/// increasing), every value pointer (inside its value-log file, whose size is looked up
/// once in `vlog_sizes`), and the entry count against the properties. Shared by repair
/// (which merges only tables that pass) and check.
pub(crate) fn read_table_whole(
    env: &StorageEnv,
    tier: usize,
    no: FileNo,
    vlog_sizes: &mut HashMap<FileNo, Option<u64>>,
) -> Result<TableScan> {
    let path = table_path(env, tier, no);
    let name = path.display().to_string();
    let file = env.open_read(&path, FileKind::Table, tier, None, false)?;
    let table = Arc::new(Table::open(file, no, None)?);
    let mut it = table.iter();
    let (mut entries, mut min_seq, mut max_seq) = (0u64, u64::MAX, 0u64);
    let mut first = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    it.seek_to_first();
    while it.valid() {
        let k = parse_internal_key(it.key())
            .filter(|k| k.value_kind().is_some())
            .ok_or_else(|| Error::corruption(&name, "malformed internal key"))?;
        if entries > 0 && cmp_internal(&last, it.key()) != Ordering::Less {
            return Err(Error::corruption(
                &name,
                format!("keys out of order at entry {entries}"),
            ));
        }
        min_seq = min_seq.min(k.seq);
        max_seq = max_seq.max(k.seq);
        if k.kind == ValueKind::ValuePointer as u8 {
            let p = ValuePointer::decode(it.value())?;
            let size = *vlog_sizes.entry(p.file_no).or_insert_with(|| {
                std::fs::metadata(vlog_path(env.root(), p.file_no))
                    .ok()
                    .map(|m| m.len())
            });
            if size.is_none_or(|s| p.offset.saturating_add(u64::from(p.len)) > s) {
                return Err(Error::corruption(
                    &name,
                    format!(
                        "points past the end of value log {} (or it is missing)",
                        p.file_no
                    ),
                ));
            }
        }
        if entries == 0 {
            first = it.key().to_vec();
        }
        last.clear();
        last.extend_from_slice(it.key());
        entries += 1;
        it.next();
    }
    it.status()?;
    if entries != table.properties().num_entries {
        return Err(Error::corruption(
            &name,
            format!(
                "holds {entries} entries, its properties say {}",
                table.properties().num_entries
            ),
        ));
    }
    let cf = table
        .properties()
        .column_family
        .clone()
        .unwrap_or_else(|| (CfId::DEFAULT, "default".into()));
    // Range deletions widen the table's range and sequence numbers, as the builder does.
    let mut any = entries > 0;
    if let Some(d) = table.range_dels() {
        if let (Some((a, b)), Some((lo, hi))) = (d.span(), d.seq_range()) {
            let (a, b) = (range_bound_key(a), range_bound_key(b));
            if !any || cmp_internal(&a, &first) == Ordering::Less {
                first = a;
            }
            if !any || cmp_internal(&b, &last) == Ordering::Greater {
                last = b;
            }
            min_seq = min_seq.min(lo);
            max_seq = max_seq.max(hi);
            any = true;
        }
    }
    // A last-level merge wrote entries at 0 and kept the newest number they had in the
    // properties (`TableBuilder::note_renumbered`).
    if any && min_seq == 0 {
        max_seq = max_seq.max(table.properties().max_seq);
    }
    Ok(TableScan {
        table,
        cf,
        entries,
        min_seq: if any { min_seq } else { 0 },
        max_seq,
        first,
        last,
    })
}

/// Calls back before each file is read: the file, how many were read before it, and
/// how many will be read in all.
pub type CheckProgress<'a> = &'a mut dyn FnMut(&Path, usize, usize);

/// A table the check reads, with the manifest's description when it names the table.
struct TableTask {
    tier: usize,
    no: FileNo,
    desc: Option<FileDesc>,
}

pub(crate) fn check(path: &Path, opts: &Options, progress: CheckProgress) -> Result<CheckReport> {
    opts.validate()?;
    if !path.is_dir() {
        return Err(Error::NotFound(path.to_path_buf()));
    }
    // Hold the lock, so that no open database writes while its files are read; but never
    // create the LOCK file (a check changes nothing).
    let _lock = if path.join(filenames::LOCK).exists() {
        Some(lock_dir(path)?)
    } else {
        None
    };
    let mut r = CheckReport::default();
    for t in &opts.tiers {
        let dir = path.join(&t.dir);
        if !dir.is_dir() {
            // StorageEnv would create it: report instead, and stop (the options may not
            // be this database's).
            r.problem(
                dir.display().to_string(),
                "storage tier directory is missing",
            );
            return Ok(r);
        }
    }
    let env = StorageEnv::new(path, &opts.tiers, 0.0)?;
    let vs = read_manifest(&env, opts, &mut r)?;
    let disk = Inventory::scan(&env)?;

    // What to read: from the manifest when there is one, else everything on disk.
    let mut tables: Vec<TableTask> = Vec::new();
    let mut vlogs: Vec<FileNo>;
    let mut wals: Vec<FileNo> = Vec::new();
    match &vs {
        Some(vs) => {
            let mut named = HashSet::new();
            for (&cf, entry) in &vs.cfs {
                r.column_families.push((cf, entry.name.clone()));
                check_runs(&entry.name, &entry.version, &mut r);
                for f in entry
                    .version
                    .levels
                    .iter()
                    .flat_map(|l| &l.runs)
                    .flat_map(|run| &run.files)
                {
                    named.insert((f.desc.tier as usize, f.file_no()));
                    tables.push(TableTask {
                        tier: f.desc.tier as usize,
                        no: f.file_no(),
                        desc: Some(f.desc.clone()),
                    });
                }
            }
            for &(tier, no) in &disk.tables {
                if !named.contains(&(tier, no)) {
                    r.warning(
                        table_path(&env, tier, no).display().to_string(),
                        "orphan table: no manifest entry names it (an open removes it)",
                    );
                }
            }
            vlogs = vs.vlogs.live_files();
            vlogs.sort_unstable();
            for &no in &disk.vlogs {
                if !vs.vlogs.is_live(no) {
                    r.warning(
                        vlog_path(env.root(), no).display().to_string(),
                        "orphan value log: no table references it (an open removes it)",
                    );
                }
            }
            if let Some(no) =
                super::recovery::missing_wal(env.root(), vs.log_number, vs.next_file_no)
            {
                let e = super::recovery::missing_wal_error(no);
                r.problem(
                    wal_path(env.root(), no).display().to_string(),
                    e.to_string(),
                );
            }
            for &no in &disk.wals {
                if no >= vs.log_number {
                    wals.push(no);
                } else {
                    r.warning(
                        wal_path(env.root(), no).display().to_string(),
                        "obsolete write-ahead log: already flushed (an open removes it)",
                    );
                }
            }
            for &no in &disk.manifests {
                if no != vs.manifest_no() {
                    r.warning(
                        manifest_path(env.root(), no).display().to_string(),
                        "manifest not named by CURRENT (an open removes it)",
                    );
                }
            }
        }
        None => {
            tables = disk
                .tables
                .iter()
                .map(|&(tier, no)| TableTask {
                    tier,
                    no,
                    desc: None,
                })
                .collect();
            vlogs = disk.vlogs.clone();
            wals = disk.wals.clone();
        }
    }

    let total = tables.len() + vlogs.len() + wals.len();
    let mut done = 0;
    let mut vlog_sizes = HashMap::new();
    let mut live_tables = HashSet::new();
    for t in &tables {
        let path = table_path(&env, t.tier, t.no);
        progress(&path, done, total);
        done += 1;
        live_tables.insert((t.tier, t.no));
        check_table(&env, t, &mut vlog_sizes, &mut r);
    }
    for &no in &vlogs {
        let path = vlog_path(env.root(), no);
        progress(&path, done, total);
        done += 1;
        check_vlog(&env, &path, &mut r);
    }
    let newest_wal = wals.iter().copied().max();
    for &no in &wals {
        let path = wal_path(env.root(), no);
        progress(&path, done, total);
        done += 1;
        check_wal(&env, &path, Some(no) == newest_wal, &mut r);
    }
    check_models(&env, &disk, &live_tables, vs.is_some(), &mut r);
    check_advisory(env.root(), &mut r);
    Ok(r)
}

/// `CURRENT` and the manifest it names; `None` (with the problem recorded) when they
/// cannot be read. Options that do not fit the database are an error, not damage.
fn read_manifest(
    env: &StorageEnv,
    opts: &Options,
    r: &mut CheckReport,
) -> Result<Option<VersionSet>> {
    let root = env.root();
    if !current_path(root).exists() {
        r.problem(
            current_path(root).display().to_string(),
            "missing (Db::repair, or `cairn repair`, rebuilds it)",
        );
        return Ok(None);
    }
    let o = opts.clone();
    let initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync> = Arc::new(move |l| o.initial_runs(l));
    match VersionSet::recover(env.clone(), opts.num_levels, initial_k) {
        Ok(vs) => {
            r.manifest = Some(filenames::manifest(vs.manifest_no()));
            super::recovery::check_level_count(&vs, opts)?;
            Ok(Some(vs))
        }
        Err(e @ Error::InvalidArgument(_)) => Err(e),
        Err(Error::Io { context, source }) if source.kind() == std::io::ErrorKind::NotFound => {
            r.problem(context, "the manifest CURRENT names is missing");
            Ok(None)
        }
        Err(e) => {
            r.error(filenames::CURRENT, e);
            Ok(None)
        }
    }
}

/// Files sorted and disjoint within each run, and each description possible.
fn check_runs(cf: &str, v: &crate::version::CfVersion, r: &mut CheckReport) {
    for (level, l) in v.levels.iter().enumerate() {
        for run in &l.runs {
            for f in &run.files {
                if let Some(p) = f.desc.problem() {
                    r.problem(format!("manifest (column family {cf}, level {level})"), p);
                }
            }
            for pair in run.files.windows(2) {
                if !pair[0].ends_before(pair[1].smallest_user()) {
                    r.problem(
                        format!(
                            "manifest (column family {cf}, level {level}, run {})",
                            run.id
                        ),
                        format!(
                            "files {} and {} overlap or are out of order",
                            pair[0].file_no(),
                            pair[1].file_no()
                        ),
                    );
                }
            }
        }
    }
}

fn check_table(
    env: &StorageEnv,
    t: &TableTask,
    vlog_sizes: &mut HashMap<FileNo, Option<u64>>,
    r: &mut CheckReport,
) {
    let path = table_path(env, t.tier, t.no);
    let name = path.display().to_string();
    let size = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(_) => {
            r.problem(name, "table named by the manifest is missing");
            return;
        }
    };
    if let Some(d) = &t.desc {
        if d.size != size {
            r.problem(
                &name,
                format!("the manifest says {} bytes, the file has {size}", d.size),
            );
            return;
        }
    }
    let scan = match read_table_whole(env, t.tier, t.no, vlog_sizes) {
        Ok(s) => s,
        Err(e) => return r.error(&name, e),
    };
    r.tables += 1;
    r.entries += scan.entries;
    let Some(d) = &t.desc else { return };
    let mut differs = Vec::new();
    if d.num_entries != scan.entries {
        differs.push(format!("{} entries, not {}", scan.entries, d.num_entries));
    }
    let any = !scan.first.is_empty();
    if any && (d.smallest != scan.first || d.largest != scan.last) {
        differs.push("another key range".to_string());
    }
    if d.range_dels != scan.table.range_dels().map_or(0, |x| x.len() as u64) {
        differs.push("another count of range deletions".to_string());
    }
    if any && (d.min_seq != scan.min_seq || d.max_seq != scan.max_seq) {
        differs.push(format!(
            "sequence numbers {}..={}, not {}..={}",
            scan.min_seq, scan.max_seq, d.min_seq, d.max_seq
        ));
    }
    if !differs.is_empty() {
        r.problem(
            name,
            format!("disagrees with the manifest: {}", differs.join(", ")),
        );
    }
}

fn check_vlog(env: &StorageEnv, path: &Path, r: &mut CheckReport) {
    let name = path.display().to_string();
    if !path.exists() {
        return r.problem(name, "value log referenced by tables is missing");
    }
    match env
        .read_whole(path, FileKind::ValueLog)
        .and_then(|data| crate::vlog::format::check_file(&name, &data))
    {
        Ok(n) => {
            r.value_logs += 1;
            r.value_log_records += n;
        }
        Err(e) => r.error(&name, e),
    }
}

/// Reads a write-ahead log as an open would. A torn tail is a write cut short, normal
/// after a crash, in the newest log; anywhere else it is damage.
fn check_wal(env: &StorageEnv, path: &Path, newest: bool, r: &mut CheckReport) {
    let name = path.display().to_string();
    let data = match env.read_whole(path, FileKind::Wal) {
        Ok(d) => d,
        Err(e) => return r.error(&name, e),
    };
    let mut reader = LogReader::new(data, name.clone(), false);
    let mut records = 0u64;
    loop {
        match reader.next_record() {
            Ok(Some(rec)) => {
                if let Err(e) = WriteBatch::decode(&rec) {
                    return r.problem(&name, format!("record {records}: {e}"));
                }
                records += 1;
            }
            Ok(None) => break,
            Err(e) => return r.error(&name, e),
        }
    }
    r.wals += 1;
    r.wal_records += records;
    if let TailState::Truncated { dropped_bytes, .. } = reader.tail() {
        if newest || reader.tail_is_torn_write() {
            r.warning(
                &name,
                format!("torn tail of {dropped_bytes} bytes (a write cut short; an open drops it)"),
            );
        } else {
            r.problem(
                &name,
                "damaged last record, and a newer write-ahead log follows",
            );
        }
    }
}

/// Learned models (Bourbon) beside their tables: a damaged one is ignored and relearned,
/// so it is a warning; one whose table is gone is an orphan.
fn check_models(
    env: &StorageEnv,
    disk: &Inventory,
    live: &HashSet<(usize, FileNo)>,
    have_manifest: bool,
    r: &mut CheckReport,
) {
    for &(tier, no) in &disk.models {
        let path = model_path(env, tier, no);
        let name = path.display().to_string();
        if !live.contains(&(tier, no)) {
            if have_manifest {
                r.warning(
                    name,
                    "orphan learned model: its table is gone (an open removes it)",
                );
            }
            continue;
        }
        let table = table_path(env, tier, no);
        let check = std::fs::read(&path)
            .map_err(|e| Error::io(&name, e))
            .and_then(|b| {
                let file = env.open_read(&table, FileKind::Table, tier, None, false)?;
                let t = Table::open(file, no, None)?;
                crate::table::model_file::decode(
                    &b,
                    t.properties().num_entries,
                    t.file_size(),
                    &name,
                )
            });
        if let Err(e) = check {
            r.warning(
                name,
                format!("{e} (ignored at open; the table is relearned)"),
            );
        }
    }
}

/// The tuner checkpoint and `STATS.json`: advisory, so damage is a warning.
fn check_advisory(root: &Path, r: &mut CheckReport) {
    let tuner = root.join(super::tuner::CHECKPOINT_FILE);
    if let Err(e) = super::tuner::read_checkpoint(&tuner) {
        r.warning(
            tuner.display().to_string(),
            format!("{e} (ignored at open; tuning starts fresh)"),
        );
    }
    let stats = root.join(super::stats_file::STATS_FILE);
    if let Ok(b) = std::fs::read(&stats) {
        if serde_json::from_slice::<serde_json::Value>(&b).is_err() {
            r.warning(stats.display().to_string(), "not valid JSON");
        }
    }
}

/// The database files on disk, by kind.
#[derive(Default)]
struct Inventory {
    /// (tier, number), sorted.
    tables: Vec<(usize, FileNo)>,
    models: Vec<(usize, FileNo)>,
    vlogs: Vec<FileNo>,
    wals: Vec<FileNo>,
    manifests: Vec<FileNo>,
}

impl Inventory {
    fn scan(env: &StorageEnv) -> Result<Inventory> {
        let mut inv = Inventory::default();
        let names = |dir: &Path| -> Result<Vec<String>> {
            let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
            Ok(rd
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect())
        };
        let mut seen_dirs = BTreeMap::new();
        for tier in 0..env.num_tiers() {
            // Tiers may share a directory: list each once.
            if seen_dirs
                .insert(env.tier_dir(tier).to_path_buf(), tier)
                .is_some()
            {
                continue;
            }
            for n in names(env.tier_dir(tier))? {
                if let Some(no) = filenames::table_no(&n) {
                    inv.tables.push((tier, no));
                } else if let Some(no) = filenames::model_no(&n) {
                    inv.models.push((tier, no));
                }
            }
        }
        for n in names(env.root())? {
            if let Some(no) = parse_vlog_name(&n) {
                inv.vlogs.push(no);
            } else if let Some(no) = filenames::wal_no(&n) {
                inv.wals.push(no);
            } else if let Some(no) = filenames::manifest_no(&n) {
                inv.manifests.push(no);
            }
        }
        inv.tables.sort_unstable();
        inv.models.sort_unstable();
        inv.vlogs.sort_unstable();
        inv.wals.sort_unstable();
        inv.manifests.sort_unstable();
        Ok(inv)
    }
}
