//! Versions: the immutable shape of each column family's LSM-tree (levels of runs of
//! table files) and the manifest that records how it changes.
//!
//! FLSM (RusKey 4): level i >= 1 has capacity C_i and holds up to about K_i sorted runs,
//! newest first. The newest run, while unsealed, is the *active* run: data merged down
//! from the level above goes into it, and it is sealed at C_i / K_i. Level 0 holds one
//! run per flush. Runs are ordered by age, so a read stops at the first run holding the
//! key.

mod edit;
pub(crate) mod set;

pub use edit::{
    AddedFile, CfAdded, CompactPointer, DeletedFile, FileDesc, LevelPolicy, PolicyState, SealedRun,
    VersionEdit,
};
pub use set::{ObsoleteFiles, VersionSet};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::ids::CfId;
use crate::ids::FileNo;
use crate::range_del::RangeDels;
use crate::table::Table;
use crate::types::{is_range_bound, user_key};
use crate::Error;

/// An installed table file. When the last version holding it goes away, it is queued for
/// deletion.
#[derive(Debug)]
pub struct FileMeta {
    /// The durable description.
    pub desc: FileDesc,
    /// The column family holding it.
    pub cf: CfId,
    obsolete: Option<Arc<ObsoleteFiles>>,
    /// Holds on the value-log files the table references (dropped with the table).
    _vlogs: Vec<Arc<crate::vlog::VlogRef>>,
    /// Seeks charged to this file (read-triggered compaction, level 0 only): each one had
    /// to position in this file and in at least one other run.
    read_charge: AtomicU64,
    /// The open table, once a read asked the table cache for it, when the cache is
    /// unbounded (`Options::max_open_files` unset): later reads of this version's file
    /// skip the cache's lock and map (it lives as long as the cache's entry, which goes
    /// when the file is deleted, after this is dropped). Under a bound it stays empty, or
    /// every version's files would keep their tables open whatever the cache closed.
    table: OnceLock<Arc<Table>>,
}

impl FileMeta {
    /// Wraps a description; `obsolete` receives the file number when it is dropped.
    pub fn new(desc: FileDesc, obsolete: Option<Arc<ObsoleteFiles>>) -> Self {
        FileMeta {
            desc,
            cf: CfId::DEFAULT,
            obsolete,
            _vlogs: Vec::new(),
            read_charge: AtomicU64::new(0),
            table: OnceLock::new(),
        }
    }
    /// Names the column family holding the file.
    pub fn in_family(mut self, cf: CfId) -> Self {
        self.cf = cf;
        self
    }
    /// Takes a hold, in `registry`, on every value-log file the table references.
    pub fn with_vlogs(mut self, registry: &Arc<crate::vlog::VlogRegistry>) -> Self {
        self._vlogs = self
            .desc
            .vlog_refs
            .iter()
            .map(|&(no, _)| registry.acquire(no))
            .collect();
        self
    }
    /// File number.
    pub fn file_no(&self) -> FileNo {
        self.desc.file_no
    }
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.desc.size
    }
    /// Smallest user key.
    pub fn smallest_user(&self) -> &[u8] {
        user_key(&self.desc.smallest)
    }
    /// Largest user key.
    pub fn largest_user(&self) -> &[u8] {
        user_key(&self.desc.largest)
    }
    /// Charges one seek to the file (read-triggered compaction).
    pub fn charge_read(&self) {
        self.read_charge.fetch_add(1, Ordering::Relaxed);
    }
    /// Seeks charged to the file so far.
    pub fn read_charges(&self) -> u64 {
        self.read_charge.load(Ordering::Relaxed)
    }
    /// The open table, if the table cache handed it out for this file before.
    pub(crate) fn open_table(&self) -> Option<&Arc<Table>> {
        self.table.get()
    }
    /// Keeps the open table the table cache handed out for this file (unbounded cache
    /// only).
    pub(crate) fn keep_table(&self, t: &Arc<Table>) {
        let _ = self.table.set(t.clone());
    }
    /// True if the file's user-key range intersects [lo, hi] (inclusive).
    pub fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest_user() <= hi && !self.ends_before(lo)
    }
    /// True if every key of the file is below `key`: its largest user key is, or it is
    /// `key` itself as a range deletion's exclusive end.
    pub fn ends_before(&self, key: &[u8]) -> bool {
        match self.largest_user().cmp(key) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => is_range_bound(&self.desc.largest),
            std::cmp::Ordering::Greater => false,
        }
    }
    /// True if the file's range holds `key`.
    pub fn holds(&self, key: &[u8]) -> bool {
        self.smallest_user() <= key && !self.ends_before(key)
    }
}

impl Drop for FileMeta {
    fn drop(&mut self) {
        if let Some(o) = &self.obsolete {
            o.push(self.desc.file_no, self.desc.tier);
        }
    }
}

/// A sorted run: table files with disjoint key ranges, sorted by key.
#[derive(Clone, Debug)]
pub struct Run {
    /// Run id, unique within the database; newer runs have larger ids.
    pub id: u64,
    /// The files, sorted.
    pub files: Vec<Arc<FileMeta>>,
    /// A sealed run takes no more data.
    pub sealed: bool,
}

impl Run {
    /// Total bytes.
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.size()).sum()
    }
    /// The file that may hold `key`.
    pub fn file_for(&self, key: &[u8]) -> Option<&Arc<FileMeta>> {
        let i = self.files.partition_point(|f| f.ends_before(key));
        self.files.get(i).filter(|f| f.smallest_user() <= key)
    }
    /// Files whose range intersects [lo, hi].
    pub fn overlapping(&self, lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMeta>> {
        let start = self.files.partition_point(|f| f.ends_before(lo));
        self.files[start..]
            .iter()
            .take_while(|f| f.smallest_user() <= hi)
            .cloned()
            .collect()
    }
}

/// One level: runs, newest first, and the level's policy state.
#[derive(Clone, Debug)]
pub struct Level {
    /// Runs, newest first.
    pub runs: Vec<Run>,
    /// Policy state (K_i, pending lazy K, draining).
    pub policy: PolicyState,
    /// Round-robin cursor for picking the next file to compact.
    pub compact_pointer: Vec<u8>,
}

impl Level {
    /// Total bytes.
    pub fn size(&self) -> u64 {
        self.runs.iter().map(Run::size).sum()
    }
    /// Number of files.
    pub fn num_files(&self) -> usize {
        self.runs.iter().map(|r| r.files.len()).sum()
    }
    /// The active (unsealed, newest) run.
    pub fn active(&self) -> Option<&Run> {
        self.runs.first().filter(|r| !r.sealed)
    }
    /// Number of sealed runs.
    pub fn sealed_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.sealed).count()
    }
    /// True if the level holds no file.
    pub fn is_empty(&self) -> bool {
        self.runs.iter().all(|r| r.files.is_empty())
    }
}

/// The levels of one column family at one moment. Immutable once built; changes make a new
/// one with [`CfVersion::apply`].
#[derive(Clone, Debug)]
pub struct CfVersion {
    /// Levels 0..num_levels.
    pub levels: Vec<Level>,
    /// The range deletions of every table, fragmented, once a reader gathered them.
    range_dels: OnceLock<Option<Arc<RangeDels>>>,
}

impl CfVersion {
    /// An empty tree with the given initial run limits per level.
    pub fn empty(initial_k: impl Fn(usize) -> usize, num_levels: usize) -> Self {
        CfVersion {
            levels: (0..num_levels)
                .map(|l| Level {
                    runs: Vec::new(),
                    policy: PolicyState {
                        k: initial_k(l) as u32,
                        pending_k: None,
                        draining: false,
                    },
                    compact_pointer: Vec::new(),
                })
                .collect(),
            range_dels: OnceLock::new(),
        }
    }

    /// The files holding range deletions, with their levels.
    pub fn files_with_range_dels(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> + '_ {
        self.levels.iter().enumerate().flat_map(|(i, l)| {
            l.runs
                .iter()
                .flat_map(|r| r.files.iter())
                .filter(|f| f.desc.range_dels > 0)
                .map(move |f| (i, f))
        })
    }

    /// The tables' range deletions as gathered by the first reader, if one has.
    pub(crate) fn cached_range_dels(&self) -> Option<&Option<Arc<RangeDels>>> {
        self.range_dels.get()
    }

    /// Keeps the tables' range deletions for the version's later readers.
    pub(crate) fn cache_range_dels(&self, d: Option<Arc<RangeDels>>) {
        let _ = self.range_dels.set(d);
    }

    /// Number of files in all levels.
    pub fn num_files(&self) -> usize {
        self.levels.iter().map(Level::num_files).sum()
    }

    /// Every file number referenced.
    pub fn file_numbers(&self) -> impl Iterator<Item = FileNo> + '_ {
        self.levels
            .iter()
            .flat_map(|l| l.runs.iter())
            .flat_map(|r| r.files.iter().map(|f| f.file_no()))
    }

    /// Deepest level that holds data (0 if none).
    pub fn deepest_nonempty(&self) -> usize {
        self.levels.iter().rposition(|l| !l.is_empty()).unwrap_or(0)
    }

    /// Applies the parts of `edit` for column family `cf`. Files moved between levels keep
    /// their `FileMeta` (so a move never queues the file for deletion); new files get a
    /// fresh one via `make`.
    pub fn apply(
        &self,
        cf: CfId,
        edit: &VersionEdit,
        make: &dyn Fn(&FileDesc) -> Arc<FileMeta>,
    ) -> crate::Result<CfVersion> {
        let mut v = self.clone();
        v.range_dels = OnceLock::new();
        let bad = |m: String| Err(Error::corruption("manifest", m));
        let mut removed: HashMap<FileNo, Arc<FileMeta>> = HashMap::new();
        for &DeletedFile {
            cf: c,
            level,
            file_no,
        } in &edit.deleted
        {
            if c != cf {
                continue;
            }
            let Some(l) = v.levels.get_mut(level as usize) else {
                return bad(format!("delete from level {level} that does not exist"));
            };
            let mut found = false;
            for run in &mut l.runs {
                if let Some(pos) = run.files.iter().position(|f| f.file_no() == file_no) {
                    removed.insert(file_no, run.files.remove(pos));
                    found = true;
                    break;
                }
            }
            if !found {
                return bad(format!("delete of file {file_no} not in level {level}"));
            }
        }
        for AddedFile {
            cf: c,
            level,
            run: run_id,
            file: desc,
        } in &edit.added
        {
            if *c != cf {
                continue;
            }
            let Some(l) = v.levels.get_mut(*level as usize) else {
                return bad(format!("add to level {level} that does not exist"));
            };
            let meta = match removed.remove(&desc.file_no) {
                Some(m) if m.desc == *desc => m,
                _ => make(desc),
            };
            let run = match l.runs.iter_mut().position(|r| r.id == *run_id) {
                Some(i) => &mut l.runs[i],
                None => {
                    l.runs.insert(
                        0,
                        Run {
                            id: *run_id,
                            files: Vec::new(),
                            sealed: false,
                        },
                    );
                    &mut l.runs[0]
                }
            };
            let pos = run
                .files
                .partition_point(|f| f.ends_before(meta.smallest_user()));
            if run
                .files
                .get(pos)
                .is_some_and(|f| !meta.ends_before(f.smallest_user()))
            {
                return bad(format!(
                    "file {} overlaps another file of run {run_id} in level {level}",
                    desc.file_no
                ));
            }
            run.files.insert(pos, meta);
        }
        for &SealedRun {
            cf: c,
            level,
            run: run_id,
        } in &edit.sealed
        {
            if c != cf {
                continue;
            }
            if let Some(r) = v
                .levels
                .get_mut(level as usize)
                .and_then(|l| l.runs.iter_mut().find(|r| r.id == run_id))
            {
                r.sealed = true;
            }
        }
        for &LevelPolicy {
            cf: c,
            level,
            state: p,
        } in &edit.policies
        {
            if c != cf {
                continue;
            }
            // K is a run count: 0 would divide a level's capacity by zero.
            if p.k == 0 || p.k > 1 << 16 || p.pending_k.is_some_and(|k| k == 0 || k > 1 << 16) {
                return bad(format!("run limit {} of level {level} is impossible", p.k));
            }
            match v.levels.get_mut(level as usize) {
                Some(l) => l.policy = p,
                None => return bad(format!("policy for level {level} that does not exist")),
            }
        }
        for CompactPointer { cf: c, level, key } in &edit.compact_pointers {
            if *c == cf {
                if let Some(l) = v.levels.get_mut(*level as usize) {
                    l.compact_pointer = key.clone();
                }
            }
        }
        for l in &mut v.levels {
            l.runs.retain(|r| !r.files.is_empty());
        }
        Ok(v)
    }
}
