//! The choice of the next compaction, as a pure function of a version and the level shape,
//! so that policies can be tested (and simulated) without disk.
//!
//! Rules (FLSM, RusKey 4 and 7):
//! - Level 0 holds one run per flush; at K_0 runs, all of them merge into level 1.
//! - Level i (not the last) with K_i = 1 is leveled: when its size passes C_i, one file at a
//!   time (round robin over the key space) merges into level i+1, as RocksDB does.
//! - Level i with K_i > 1 is tiered/hybrid: its active run is sealed at C_i / K_i; when the
//!   level holds C_i bytes (or too many runs) it is *draining* and merges into level i+1 one
//!   bounded unit at a time until it is empty.
//! - A unit taken from a level is the closure of a seed file over all runs of the level:
//!   every file of every run whose key range touches the unit's range joins it. Moving a key
//!   range out of a level therefore moves every version of those keys that the level holds,
//!   so no older version is ever left above a newer one. Leftover sealed runs from a
//!   transition (RusKey 7) are merged this way by compactions triggered by other runs.
//! - Output goes into the active run of the next level (created if the level has none),
//!   merging with the active run's overlapping files.
//! - The last level has no capacity; when it holds more than K runs, units are merged
//!   within the level into its active run.
//! - Bookkeeping comes first: sealing an active run past C_i / K_i, entering or leaving the
//!   draining state, applying a lazily requested K when the level is empty.
//! - Read-triggered compaction comes last, when nothing else is due: level 0 merges into
//!   level 1 below its trigger once seeks that had to merge it with other runs are worth
//!   more than the merge costs (LevelDB's seek compaction).
//! - Parallel jobs ([`pick_free`]): a task holds the levels from its source to its
//!   destination; a second job may take only tasks whose levels no running job holds.
//!   Data moves only downward, so jobs on disjoint level spans never meet: none adds data
//!   below another's output in its key range (its `bottommost` stays true), and none
//!   touches the runs another reads or writes.

use std::sync::Arc;

use crate::ids::FileNo;
use crate::version::{CfVersion, FileMeta, Level, PolicyState, Run};

/// Parameters of the level structure.
#[derive(Clone, Copy, Debug)]
pub struct LevelShape {
    /// C_1 in bytes.
    pub level1_bytes: u64,
    /// Size ratio T.
    pub size_ratio: usize,
    /// Number of levels including level 0.
    pub num_levels: usize,
    /// A level whose capacity is multiplied by the factor (SA-LSM: while placement is on,
    /// the deepest hot level grows until proactive compactions move its cold data).
    pub held: Option<(usize, f64)>,
}

impl LevelShape {
    /// Capacity C_i of a level >= 1.
    pub fn capacity(&self, level: usize) -> u64 {
        let mut c = self.level1_bytes;
        for _ in 1..level {
            c = c.saturating_mul(self.size_ratio as u64);
        }
        match self.held {
            Some((l, f)) if l == level => (c as f64 * f).min(u64::MAX as f64) as u64,
            _ => c,
        }
    }
    /// The bytes at which the active run of `level` is sealed (`None`: never).
    pub fn run_capacity(&self, level: usize, k: u32) -> Option<u64> {
        if level == 0 || k <= 1 {
            None
        } else {
            Some(self.capacity(level) / k as u64)
        }
    }
    /// Index of the last level.
    pub fn last(&self) -> usize {
        self.num_levels - 1
    }
}

/// The next thing to do.
#[derive(Clone, Debug)]
pub enum Task {
    /// Seal the active run of a level.
    Seal {
        /// Level.
        level: usize,
        /// Run id.
        run: u64,
    },
    /// Change a level's policy state (draining flag, lazily requested K).
    Policy {
        /// Level.
        level: usize,
        /// New state.
        state: PolicyState,
    },
    /// Merge files into the active run of `to` (a new run if `dest_run` is `None`).
    Merge {
        /// Level the unit comes from.
        from: usize,
        /// Level receiving it (equal to `from` for merges within the last level).
        to: usize,
        /// Files taken from `from`, any run.
        inputs: Vec<Arc<FileMeta>>,
        /// Files of the destination active run that overlap the unit.
        dest_inputs: Vec<Arc<FileMeta>>,
        /// Destination run id, or `None` for a new run.
        dest_run: Option<u64>,
        /// No older data for this key range exists below the output: tombstones may go.
        bottommost: bool,
        /// New round-robin cursor of `from`.
        pointer: Vec<u8>,
        /// Why.
        reason: &'static str,
    },
    /// Move one file to the next level's active run without rewriting it.
    Move {
        /// Source level.
        from: usize,
        /// Destination level.
        to: usize,
        /// The file.
        file: Arc<FileMeta>,
        /// Destination run id, or `None` for a new run.
        dest_run: Option<u64>,
        /// New round-robin cursor of `from`.
        pointer: Vec<u8>,
        /// Why.
        reason: &'static str,
    },
}

impl Task {
    /// The levels the task reads or writes, `(first, last)`: every level between them is
    /// held too, so that no job adds data below another's output while it runs.
    pub fn levels(&self) -> (usize, usize) {
        match self {
            Task::Seal { level, .. } | Task::Policy { level, .. } => (*level, *level),
            Task::Merge { from, to, .. } | Task::Move { from, to, .. } => (*from, *to),
        }
    }
}

/// Read-amplification guard: a level holding more sealed runs than this drains even if it
/// is below capacity.
fn max_runs(shape: &LevelShape) -> usize {
    2 * shape.size_ratio
}

/// Picks the next task for one column family, or `None` if the tree is in shape.
/// `same_tier(a, b)` tells whether levels a and b store files in the same directory (a
/// trivial move across tiers would leave the file in the wrong tier).
pub fn pick(
    v: &CfVersion,
    shape: &LevelShape,
    same_tier: &dyn Fn(usize, usize) -> bool,
) -> Option<Task> {
    pick_free(v, shape, same_tier, &|_| false)
}

/// [`pick`] for a job that runs beside others: `busy(l)` tells whether a running job holds
/// level `l`, and only a task whose levels ([`Task::levels`]) are all free is returned.
/// Bookkeeping of a free level still comes first, then the due level with the highest
/// score whose task is free; read-triggered compaction only when no level is due at all,
/// busy or not.
pub fn pick_free(
    v: &CfVersion,
    shape: &LevelShape,
    same_tier: &dyn Fn(usize, usize) -> bool,
    busy: &dyn Fn(usize) -> bool,
) -> Option<Task> {
    if let Some(t) = bookkeeping(v, shape, busy) {
        return Some(t);
    }
    let last = shape.last();
    let mut due: Vec<(f64, usize)> = v
        .levels
        .iter()
        .enumerate()
        .take(shape.num_levels)
        .filter(|(_, level)| !level.is_empty())
        .map(|(l, level)| (score(level, l, shape), l))
        .filter(|&(score, _)| score >= 1.0)
        .collect();
    if due.is_empty() {
        return read_triggered(v, shape, same_tier).filter(|t| is_free(t, busy));
    }
    // Highest score first; on a tie the upper level, as a single pick would choose.
    due.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let (_, l) = due.into_iter().find(|&(_, l)| {
        let to = if l == last { l } else { l + 1 };
        !(l..=to).any(busy)
    })?;
    if l == 0 {
        return Some(level0_task(v, shape, same_tier, "level0-runs"));
    }
    if l == last {
        return Some(unit_task(v, l, l, None, same_tier, "last-level-runs"));
    }
    let reason = if v.levels[l].policy.draining {
        "draining"
    } else {
        "level-size"
    };
    Some(unit_task(v, l, l + 1, None, same_tier, reason))
}

fn is_free(t: &Task, busy: &dyn Fn(usize) -> bool) -> bool {
    let (a, b) = t.levels();
    !(a..=b).any(busy)
}

/// A manual compaction step for user keys in `[lo, hi]` (`hi = None`: unbounded) at
/// `level`: level 0 merges into level 1; a middle level moves one unit down; the last level
/// merges units until one run holds the range. `None` when the level is done.
pub fn manual(
    v: &CfVersion,
    level: usize,
    lo: &[u8],
    hi: Option<&[u8]>,
    shape: &LevelShape,
    same_tier: &dyn Fn(usize, usize) -> bool,
) -> Option<Task> {
    let overlaps = |f: &FileMeta| !f.ends_before(lo) && hi.is_none_or(|h| f.smallest_user() <= h);
    let l = v.levels.get(level)?;
    let seed_run = l
        .runs
        .iter()
        .rev()
        .find(|r| r.files.iter().any(|f| overlaps(f)))?;
    let seed = seed_run.files.iter().find(|f| overlaps(f))?.clone();
    if level == 0 {
        return Some(level0_task(v, shape, same_tier, "manual"));
    }
    if level == shape.last() {
        let runs = l
            .runs
            .iter()
            .filter(|r| r.files.iter().any(|f| overlaps(f)))
            .count();
        if runs <= 1 {
            return None;
        }
        return Some(unit_task(v, level, level, Some(&seed), same_tier, "manual"));
    }
    Some(unit_task(
        v,
        level,
        level + 1,
        Some(&seed),
        same_tier,
        "manual",
    ))
}

/// A merge, within `level` (the last level, or the deepest holding data), of the unit
/// around `seed`: what runs on a bottom table holding range deletions, so that what they
/// cover goes (and they with it) once no snapshot needs either.
pub fn rewrite_last_level(
    v: &CfVersion,
    level: usize,
    seed: &Arc<FileMeta>,
    same_tier: &dyn Fn(usize, usize) -> bool,
) -> Task {
    unit_task(v, level, level, Some(seed), same_tier, "range deletions")
}

fn score(level: &Level, l: usize, shape: &LevelShape) -> f64 {
    let k = level.policy.k.max(1) as f64;
    if l == 0 {
        return level.runs.len() as f64 / k;
    }
    if l == shape.last() {
        return if level.runs.len() as f64 > k {
            level.runs.len() as f64 / k
        } else {
            0.0
        };
    }
    let fill = level.size() as f64 / shape.capacity(l) as f64;
    if level.policy.draining {
        // Finish a drain before most other work, but let a full level 0 go first.
        1.5 + fill
    } else if level.policy.k <= 1 {
        fill
    } else {
        0.0
    }
}

fn bookkeeping(v: &CfVersion, shape: &LevelShape, busy: &dyn Fn(usize) -> bool) -> Option<Task> {
    for (l, level) in v.levels.iter().enumerate().take(shape.num_levels).skip(1) {
        if busy(l) {
            continue;
        }
        let p = level.policy;
        if level.is_empty() && (p.draining || p.pending_k.is_some()) {
            return Some(Task::Policy {
                level: l,
                state: PolicyState {
                    k: p.pending_k.unwrap_or(p.k),
                    pending_k: None,
                    draining: false,
                },
            });
        }
        if let (Some(active), Some(cap)) = (level.active(), shape.run_capacity(l, p.k)) {
            if active.size() >= cap {
                return Some(Task::Seal {
                    level: l,
                    run: active.id,
                });
            }
        }
        if l < shape.last()
            && !p.draining
            && p.k > 1
            && (level.size() >= shape.capacity(l) || level.sealed_runs() > max_runs(shape))
        {
            return Some(Task::Policy {
                level: l,
                state: PolicyState {
                    draining: true,
                    ..p
                },
            });
        }
    }
    None
}

fn file_numbers(files: &[Arc<FileMeta>]) -> Vec<FileNo> {
    let mut n: Vec<FileNo> = files.iter().map(|f| f.file_no()).collect();
    n.sort_unstable();
    n
}

fn key_range(files: &[Arc<FileMeta>]) -> (Vec<u8>, Vec<u8>) {
    let lo = files.iter().map(|f| f.smallest_user()).min().unwrap_or(&[]);
    let hi = files.iter().map(|f| f.largest_user()).max().unwrap_or(&[]);
    (lo.to_vec(), hi.to_vec())
}

/// The files of `r` that `files` (spanning `[lo, hi]`) reach. A file whose range ends at
/// a range deletion's exclusive end `hi` does not reach one that starts there: without
/// this, tables cut inside one deletion, each ending where the next starts, would pull a
/// whole level into one merge.
fn reached(r: &Run, files: &[Arc<FileMeta>], lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMeta>> {
    let open_end = files
        .iter()
        .filter(|f| f.largest_user() == hi)
        .all(|f| f.ends_before(hi));
    let mut out = r.overlapping(lo, hi);
    if open_end && !files.is_empty() {
        out.retain(|f| f.smallest_user() != hi);
    }
    out
}

/// The user-key range a merge rewrites: its inputs and the destination files they
/// overlap. Whether tombstones may be dropped must be judged over all of it: a destination
/// file can reach beyond the inputs' range, and its tombstones there still shadow older
/// data in deeper levels (judging over the inputs' range alone resurrected deleted keys).
pub(crate) fn merged_range(
    inputs: &[Arc<FileMeta>],
    dest_inputs: &[Arc<FileMeta>],
) -> (Vec<u8>, Vec<u8>) {
    let all: Vec<Arc<FileMeta>> = inputs.iter().chain(dest_inputs).cloned().collect();
    key_range(&all)
}

fn dest_overlap(
    v: &CfVersion,
    to: usize,
    inputs: &[Arc<FileMeta>],
) -> (Option<u64>, Vec<Arc<FileMeta>>) {
    let (lo, hi) = key_range(inputs);
    match v.levels[to].active() {
        Some(r) => (Some(r.id), reached(r, inputs, &lo, &hi)),
        None => (None, Vec::new()),
    }
}

/// True if nothing older than the destination active run holds keys in [lo, hi].
pub(crate) fn is_bottommost(
    v: &CfVersion,
    to: usize,
    dest_run: Option<u64>,
    lo: &[u8],
    hi: &[u8],
) -> bool {
    v.levels[to..].iter().enumerate().all(|(i, level)| {
        level
            .runs
            .iter()
            .all(|r| (i == 0 && Some(r.id) == dest_run) || r.overlapping(lo, hi).is_empty())
    })
}

/// Bytes of compaction one seek is worth (LevelDB's seek compaction: a seek costs about
/// what compacting 40 KB does, 16 KiB taken to be conservative).
const SEEK_WORTH_BYTES: u64 = 16 << 10;
/// Seeks charged before any read-triggered compaction (LevelDB's floor per file).
const MIN_READ_CHARGES: u64 = 100;

/// Level 0 merged into level 1 below its trigger, because the seeks that had to position
/// in a level-0 table and another run (the iterator charges them to the newest level-0
/// table) are worth more than the merge costs: one seek per 16 KiB it would read, level 0
/// and the level-1 files it overlaps, and at least 100. LevelDB allows each file one seek
/// per 16 KiB of itself; here the merge takes all of level 0 and rewrites what it overlaps
/// in level 1, so that is what the seeks must pay for. Only when the tree is otherwise in
/// shape.
fn read_triggered(
    v: &CfVersion,
    shape: &LevelShape,
    same_tier: &dyn Fn(usize, usize) -> bool,
) -> Option<Task> {
    let charged: u64 = v
        .levels
        .first()?
        .runs
        .iter()
        .flat_map(|r| &r.files)
        .map(|f| f.read_charges())
        .sum();
    if charged < MIN_READ_CHARGES {
        return None;
    }
    let task = level0_task(v, shape, same_tier, "read-triggered");
    let bytes: u64 = match &task {
        Task::Merge {
            inputs,
            dest_inputs,
            ..
        } => inputs.iter().chain(dest_inputs).map(|f| f.size()).sum(),
        Task::Move { file, .. } => file.size(),
        _ => 0,
    };
    (charged >= (bytes / SEEK_WORTH_BYTES).max(MIN_READ_CHARGES)).then_some(task)
}

fn level0_task(
    v: &CfVersion,
    _shape: &LevelShape,
    same_tier: &dyn Fn(usize, usize) -> bool,
    reason: &'static str,
) -> Task {
    let inputs: Vec<Arc<FileMeta>> = v.levels[0]
        .runs
        .iter()
        .flat_map(|r| r.files.iter().cloned())
        .collect();
    let (dest_run, dest_inputs) = dest_overlap(v, 1, &inputs);
    if inputs.len() == 1 && dest_inputs.is_empty() && same_tier(0, 1) {
        return Task::Move {
            from: 0,
            to: 1,
            file: inputs[0].clone(),
            dest_run,
            pointer: Vec::new(),
            reason,
        };
    }
    let (lo, hi) = merged_range(&inputs, &dest_inputs);
    let bottommost = is_bottommost(v, 1, dest_run, &lo, &hi);
    Task::Merge {
        from: 0,
        to: 1,
        inputs,
        dest_inputs,
        dest_run,
        bottommost,
        pointer: Vec::new(),
        reason,
    }
}

/// A bounded unit from level `from` into the active run of level `to`.
fn unit_task(
    v: &CfVersion,
    from: usize,
    to: usize,
    seed: Option<&Arc<FileMeta>>,
    same_tier: &dyn Fn(usize, usize) -> bool,
    reason: &'static str,
) -> Task {
    let level = &v.levels[from];
    // Seed from the oldest run, so leftover sealed runs drain first.
    let oldest = level
        .runs
        .iter()
        .rev()
        .find(|r| !r.files.is_empty())
        .expect("a non-empty level has a non-empty run");
    let seed = seed.unwrap_or_else(|| {
        oldest
            .files
            .iter()
            .find(|f| f.smallest_user() > level.compact_pointer.as_slice())
            .unwrap_or(&oldest.files[0])
    });
    let mut lo = seed.smallest_user().to_vec();
    let mut hi = seed.largest_user().to_vec();
    let mut inputs: Vec<Arc<FileMeta>> = vec![seed.clone()];
    // Until the files, not only their range, stop changing: a file that joins without
    // widening the range can still end at `hi` with an entry there, and then the file
    // starting at `hi` is reached too. Left out, its newer versions of `hi` would sit
    // beside the merge's older ones (in the same run: an overlap; in an older run than
    // the output's: shadowed by them).
    loop {
        let next: Vec<Arc<FileMeta>> = level
            .runs
            .iter()
            .flat_map(|r| reached(r, &inputs, &lo, &hi))
            .collect();
        let (nlo, nhi) = key_range(&next);
        let same = file_numbers(&next) == file_numbers(&inputs);
        inputs = next;
        if same && nlo == lo && nhi == hi {
            break;
        }
        lo = nlo;
        hi = nhi;
    }
    if from == to {
        // Within the last level: the unit itself includes the active run's files.
        let dest_run = level.active().map(|r| r.id);
        return Task::Merge {
            from,
            to,
            inputs,
            dest_inputs: Vec::new(),
            dest_run,
            bottommost: is_bottommost_below(v, to, &lo, &hi),
            pointer: hi,
            reason,
        };
    }
    let (dest_run, dest_inputs) = dest_overlap(v, to, &inputs);
    if inputs.len() == 1 && dest_inputs.is_empty() && same_tier(from, to) {
        return Task::Move {
            from,
            to,
            file: inputs[0].clone(),
            dest_run,
            pointer: hi,
            reason,
        };
    }
    let (mlo, mhi) = merged_range(&inputs, &dest_inputs);
    let bottommost = is_bottommost(v, to, dest_run, &mlo, &mhi);
    Task::Merge {
        from,
        to,
        inputs,
        dest_inputs,
        dest_run,
        bottommost,
        pointer: hi,
        reason,
    }
}

fn is_bottommost_below(v: &CfVersion, level: usize, lo: &[u8], hi: &[u8]) -> bool {
    v.levels[level + 1..]
        .iter()
        .all(|l| l.runs.iter().all(|r| r.overlapping(lo, hi).is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CfId;
    use crate::types::{make_internal_key, range_bound_key, ValueKind};
    use crate::version::{AddedFile, FileDesc, VersionEdit};

    /// A file of `[lo, hi]`, or of `[lo, hi)` when a range deletion sets its end.
    fn desc(file_no: u64, lo: &[u8], hi: &[u8], open_end: bool) -> FileDesc {
        FileDesc {
            file_no: FileNo::new(file_no),
            size: 1000,
            smallest: make_internal_key(lo, 5, ValueKind::Value),
            largest: if open_end {
                range_bound_key(hi)
            } else {
                make_internal_key(hi, 5, ValueKind::Value)
            },
            num_entries: 2,
            min_seq: 5,
            max_seq: 5,
            range_dels: u64::from(open_end),
            ..Default::default()
        }
    }

    /// A file that joins the unit without widening it, but holds an entry at the unit's
    /// end, makes the file starting there part of the unit: left out, its newer version
    /// of that key would overlap (or be shadowed by) the merge's output.
    #[test]
    fn a_file_with_an_entry_at_the_units_end_reaches_the_file_starting_there() {
        // Last level: an older run with "c".."h" (an entry at "h"); the newer run holds
        // a deletion's table "a".."h" (exclusive) and a table from "h".
        let edit = VersionEdit {
            added: vec![
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 3,
                    run: 1,
                    file: desc(3, b"c", b"h", false),
                },
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 3,
                    run: 2,
                    file: desc(1, b"a", b"h", true),
                },
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 3,
                    run: 2,
                    file: desc(2, b"h", b"z", false),
                },
            ],
            ..Default::default()
        };
        let v = CfVersion::empty(|_| 1, 4)
            .apply(CfId::DEFAULT, &edit, &|d| {
                Arc::new(FileMeta::new(d.clone(), None))
            })
            .expect("files do not overlap within a run");
        let seed = v.levels[3].runs[0].files[0].clone();
        assert_eq!(seed.file_no(), FileNo::new(1));
        let Task::Merge { inputs, .. } = rewrite_last_level(&v, 3, &seed, &|_, _| true) else {
            panic!("a merge within the level");
        };
        assert_eq!(file_numbers(&inputs), [1, 2, 3].map(FileNo::new));
    }

    #[test]
    fn a_range_deletions_exclusive_end_does_not_reach_the_next_file() {
        let shape = LevelShape {
            level1_bytes: 1 << 30,
            size_ratio: 10,
            num_levels: 4,
            held: None,
        };
        // Level 1: a, cut inside one deletion at "m" and "t", as a merge writes them.
        // Level 2: one file starting where level 1's first ends.
        let edit = VersionEdit {
            added: vec![
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 1,
                    run: 1,
                    file: desc(1, b"a", b"m", true),
                },
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 1,
                    run: 1,
                    file: desc(2, b"m", b"t", true),
                },
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 1,
                    run: 1,
                    file: desc(3, b"t", b"z", false),
                },
                AddedFile {
                    cf: CfId::DEFAULT,
                    level: 2,
                    run: 2,
                    file: desc(4, b"m", b"p", false),
                },
            ],
            ..Default::default()
        };
        let v = CfVersion::empty(|_| 1, 4)
            .apply(CfId::DEFAULT, &edit, &|d| {
                Arc::new(FileMeta::new(d.clone(), None))
            })
            .expect("files do not overlap");
        let task = manual(&v, 1, b"a", Some(b"b"), &shape, &|_, _| true);
        let Some(Task::Move { file, .. }) = task else {
            panic!("one file moves alone: {task:?}");
        };
        assert_eq!(file.file_no(), FileNo::new(1));
        // The file starting at "m" is reached from one ending there inclusively.
        let task = manual(&v, 1, b"m", Some(b"m"), &shape, &|_, _| true);
        let Some(Task::Merge {
            inputs,
            dest_inputs,
            ..
        }) = task
        else {
            panic!("a merge: {task:?}");
        };
        let nos = |fs: &[Arc<FileMeta>]| fs.iter().map(|f| f.file_no()).collect::<Vec<_>>();
        assert_eq!(
            (nos(&inputs), nos(&dest_inputs)),
            (vec![FileNo::new(2)], vec![FileNo::new(4)])
        );
    }
}
