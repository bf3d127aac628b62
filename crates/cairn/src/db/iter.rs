//! User-facing iteration: a run iterator that walks a run's files lazily, and the database
//! iterator that turns merged internal entries into the newest visible value per key.

use std::cmp::Ordering;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Instant;

use super::table_cache::TableCache;
use super::SuperVersion;
use crate::access::{Access, RangeCollector, RecordStore};
use crate::iter::InternalIterator;
use crate::merging::MergingIterator;
use crate::options::ReadOptions;
use crate::policy::prefetch::Prefetcher;
use crate::stats::{OpKind, StatsInner};
use crate::table::TableIterator;
use crate::types::{make_internal_key, make_lookup_key, parse_internal_key, SeqNo, ValueKind};
use crate::version::{FileMeta, Run};
use crate::{Error, Result};

/// Iterates one sorted run: its files in key order, opening each table when reached (and
/// holding only that one open).
pub(crate) struct RunIterator {
    files: Vec<Arc<FileMeta>>,
    level: usize,
    tables: Arc<TableCache>,
    /// A compaction's input: tables opened outside the table cache, and no reads told to
    /// the level's scan counters or the prefetcher.
    compaction: bool,
    stats: Arc<StatsInner>,
    /// Told of the data-block misses and warmed hits of each step (a scan's reads count
    /// in Leaper's invalidation metric and precision as a get's do).
    prefetch: Arc<Prefetcher>,
    /// (data misses, warmed hits) of `cur`'s trace already told to `prefetch`.
    seen: (u32, u32),
    /// Put the blocks read from storage in the block cache.
    fill_cache: bool,
    /// The last move went backward (a table left invalid was left at its start).
    backward: bool,
    index: usize,
    cur: Option<TableIterator>,
    err: Option<Error>,
}

impl RunIterator {
    pub(crate) fn new(
        run: &Run,
        level: usize,
        tables: Arc<TableCache>,
        stats: Arc<StatsInner>,
        prefetch: Arc<Prefetcher>,
    ) -> Self {
        Self::over(run.files.clone(), level, tables, stats, prefetch, false)
    }

    fn over(
        files: Vec<Arc<FileMeta>>,
        level: usize,
        tables: Arc<TableCache>,
        stats: Arc<StatsInner>,
        prefetch: Arc<Prefetcher>,
        compaction: bool,
    ) -> Self {
        RunIterator {
            files,
            level,
            tables,
            compaction,
            stats,
            prefetch,
            seen: (0, 0),
            fill_cache: true,
            backward: false,
            index: 0,
            cur: None,
            err: None,
        }
    }

    /// Iterates a compaction's input `files` of `level` (sorted by key, their ranges
    /// disjoint) through tables opened outside the table cache, one at a time: a
    /// compaction keeps one input file per sorted run open, not every input
    /// (`Options::max_open_files`).
    pub(crate) fn compaction_input(
        files: Vec<Arc<FileMeta>>,
        level: usize,
        tables: Arc<TableCache>,
        stats: Arc<StatsInner>,
        prefetch: Arc<Prefetcher>,
    ) -> Self {
        debug_assert!(files
            .windows(2)
            .all(|w| w[0].ends_before(w[1].smallest_user())));
        Self::over(files, level, tables, stats, prefetch, true)
    }

    /// Tells the prefetcher of the current table's (`files[index]`'s) block misses and
    /// warmed hits since the last call, on the key the iterator stands at (the block it
    /// loaded holds it); run off the table, on the key of the end it left by (its last or
    /// first block held that).
    fn observe(&mut self) {
        if self.compaction {
            return;
        }
        let Some(c) = &self.cur else { return };
        let Some(f) = self.files.get(self.index) else {
            return;
        };
        let t = c.trace();
        let (misses, warmed) = (
            t.data_misses.saturating_sub(self.seen.0),
            t.warmed_hits.saturating_sub(self.seen.1),
        );
        if misses == 0 && warmed == 0 {
            return;
        }
        self.seen = (t.data_misses, t.warmed_hits);
        let key = if c.valid() {
            crate::types::user_key(c.key())
        } else if self.backward {
            f.smallest_user()
        } else {
            f.largest_user()
        };
        self.prefetch
            .note_read(key, f.file_no(), misses, warmed, true);
    }

    /// Adds the block reads of the table iterator being left to the level's counters.
    fn retire(&mut self) {
        self.observe();
        if let Some(c) = self.cur.take() {
            if !self.compaction {
                self.stats.level(self.level).record_scan(c.trace());
            }
        }
        self.seen = (0, 0);
    }

    fn open(&mut self, i: usize) -> bool {
        // Retire first: its last reads are told against the table it read.
        self.retire();
        self.index = i;
        if i >= self.files.len() {
            return false;
        }
        let t = if self.compaction {
            self.tables.open_uncached(&self.files[i], self.level)
        } else {
            self.tables.get(&self.files[i], self.level)
        };
        match t {
            Ok(t) => {
                let it = t.iter();
                self.cur = Some(if self.fill_cache {
                    it
                } else {
                    it.without_filling()
                });
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn skip_forward(&mut self) {
        while self.err.is_none() && self.cur.as_ref().is_some_and(|c| !c.valid()) {
            if self.cur.as_ref().is_some_and(|c| c.status().is_err()) {
                return;
            }
            let next = self.index + 1;
            if !self.open(next) {
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.err.is_none() && self.cur.as_ref().is_some_and(|c| !c.valid()) {
            // Keep a failed table's error before retiring it: the scan must end with it,
            // not as if the run had no more keys.
            if let Some(Err(e)) = self.cur.as_ref().map(|c| c.status()) {
                self.err = Some(e);
            }
            if self.err.is_some() || self.index == 0 {
                self.retire();
                return;
            }
            let prev = self.index - 1;
            if !self.open(prev) {
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl Drop for RunIterator {
    fn drop(&mut self) {
        self.retire();
    }
}

impl InternalIterator for RunIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.cur.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        self.backward = false;
        if self.open(0) {
            self.cur.as_mut().expect("opened").seek_to_first();
        }
        self.skip_forward();
        self.observe();
    }
    fn seek_to_last(&mut self) {
        self.backward = true;
        if !self.files.is_empty() && self.open(self.files.len() - 1) {
            self.cur.as_mut().expect("opened").seek_to_last();
        }
        self.skip_backward();
        self.observe();
    }
    fn seek(&mut self, ikey: &[u8]) {
        self.backward = false;
        let uk = crate::types::user_key(ikey);
        let i = self.files.partition_point(|f| f.ends_before(uk));
        if self.open(i) {
            self.cur.as_mut().expect("opened").seek(ikey);
        }
        self.skip_forward();
        self.observe();
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.backward = true;
        let uk = crate::types::user_key(ikey);
        let i = self.files.partition_point(|f| f.smallest_user() <= uk);
        if i == 0 {
            self.retire();
            return;
        }
        if self.open(i - 1) {
            self.cur.as_mut().expect("opened").seek_for_prev(ikey);
        }
        self.skip_backward();
        self.observe();
    }
    fn next(&mut self) {
        self.backward = false;
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
        self.observe();
    }
    fn prev(&mut self) {
        self.backward = true;
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
        self.observe();
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().expect("valid iterator").key()
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().expect("valid iterator").value()
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.duplicate());
        }
        match &self.cur {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}

/// Splits `files` into as few chains as may be of files sorted by key whose user-key
/// ranges do not touch (a sorted run's files, or a level-0 compaction's flushes, each
/// chain read as one [`RunIterator::compaction_input`]). Greedy by smallest key, which
/// needs no more chains than files overlap at any key.
pub(crate) fn sorted_chains(files: &[Arc<FileMeta>]) -> Vec<Vec<Arc<FileMeta>>> {
    let mut sorted: Vec<&Arc<FileMeta>> = files.iter().collect();
    sorted.sort_by(|a, b| a.smallest_user().cmp(b.smallest_user()));
    let mut chains: Vec<Vec<Arc<FileMeta>>> = Vec::new();
    for f in sorted {
        // Strictly after: a user key split between two files keeps them apart.
        match chains
            .iter_mut()
            .find(|c| c.last().is_some_and(|l| l.ends_before(f.smallest_user())))
        {
            Some(c) => c.push(f.clone()),
            None => chains.push(vec![f.clone()]),
        }
    }
    chains
}

/// One `next` or `prev` in this many is timed, standing for all of them in the scan
/// latency histogram and the time the tuner sees.
const STEP_SAMPLE: u32 = 16;

/// Builds the merged internal iterator over everything a super version holds.
pub(crate) fn merged_iter(
    sv: &SuperVersion,
    tables: &Arc<TableCache>,
    stats: &Arc<StatsInner>,
    prefetch: &Arc<Prefetcher>,
    fill_cache: bool,
) -> MergingIterator {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    children.push(Box::new(sv.mem.iter()));
    for (m, _) in &sv.imms {
        children.push(Box::new(m.iter()));
    }
    for (level, l) in sv.version.levels.iter().enumerate() {
        for run in &l.runs {
            let mut it =
                RunIterator::new(run, level, tables.clone(), stats.clone(), prefetch.clone());
            it.fill_cache = fill_cache;
            children.push(Box::new(it));
        }
    }
    MergingIterator::new(children)
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over the user keys visible at one sequence number, in both directions, within
/// optional bounds. Holds the memtables and tables it reads alive.
pub struct DbIterator {
    inner: MergingIterator,
    seq: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The user key whose older versions a forward step skips (a buffer kept for reuse).
    skip: Vec<u8>,
    stats: Arc<StatsInner>,
    vlog: Option<Arc<crate::vlog::VlogStore>>,
    /// A failure to resolve a value pointer (the iterator stops, invalid).
    err: Option<Error>,
    /// Leave value pointers unresolved (callers that need only keys).
    keys_only: bool,
    /// Leaper's collector and the last range counted: a range query counts one read on
    /// every range it touches.
    access: Option<(Arc<RangeCollector>, u64)>,
    /// SA-LSM's query store: each record the iterator yields is read (scan coverage).
    records: Option<Arc<RecordStore>>,
    /// Charge seeks to level-0 files (read-triggered compaction).
    charge_reads: bool,
    /// The range deletions the cursor applies (memtables' and tables').
    range_dels: Option<Arc<crate::range_del::RangeDels>>,
    /// Steps (`next`, `prev`) taken, for sampling their latency.
    steps: u32,
    sv: Arc<SuperVersion>,
    _snapshot: Option<super::Snapshot>,
}

impl DbIterator {
    /// A cursor over `sv` at `seq`, within `ro`'s bounds (`ro`'s snapshot, if any, is
    /// held as long as the cursor).
    pub(crate) fn new(
        sv: Arc<SuperVersion>,
        tables: &Arc<TableCache>,
        seq: SeqNo,
        ro: &ReadOptions,
        stats: Arc<StatsInner>,
        prefetch: Arc<Prefetcher>,
    ) -> Self {
        DbIterator {
            inner: merged_iter(&sv, tables, &stats, &prefetch, ro.fill_cache),
            seq,
            lower: ro.lower_bound.clone(),
            upper: ro.upper_bound.clone(),
            direction: Direction::Forward,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            skip: Vec::new(),
            stats,
            vlog: None,
            err: None,
            keys_only: false,
            access: None,
            records: None,
            charge_reads: false,
            range_dels: None,
            steps: 0,
            sv,
            _snapshot: ro.snapshot.clone(),
        }
    }

    /// Hides the entries that `dels` delete.
    pub(crate) fn with_range_dels(
        mut self,
        dels: Option<Arc<crate::range_del::RangeDels>>,
    ) -> Self {
        self.range_dels = dels;
        self
    }

    /// The kind of entry `(user_key, seq)` as the cursor sees it: a deletion when a
    /// range deletion it sees is newer.
    fn seen_kind(&self, user_key: &[u8], seq: SeqNo, kind: u8) -> Option<ValueKind> {
        match &self.range_dels {
            Some(d) if d.max_cover(user_key, self.seq) > seq => Some(ValueKind::Deletion),
            _ => ValueKind::from_u8(kind),
        }
    }

    /// Resolves value pointers through `vlog` (key-value separation).
    pub(crate) fn with_vlog(mut self, vlog: Arc<crate::vlog::VlogStore>) -> Self {
        self.vlog = Some(vlog);
        self
    }

    /// Counts the ranges the iterator visits in `collector`.
    pub(crate) fn with_access(mut self, collector: Option<Arc<RangeCollector>>) -> Self {
        self.access = collector.map(|c| (c, u64::MAX));
        self
    }

    /// Traces each record the iterator yields in SA-LSM's query store.
    pub(crate) fn with_records(mut self, records: Option<Arc<RecordStore>>) -> Self {
        self.records = records;
        self
    }

    /// Charges seeks to level-0 files (read-triggered compaction).
    pub(crate) fn with_read_charges(mut self, on: bool) -> Self {
        self.charge_reads = on;
        self
    }

    /// Charges a seek to `target` to the newest level-0 file holding it, when another run
    /// (in level 0 or below) holds it too: the seek had to position in both. The picker
    /// weighs the charges against the cost of merging level 0 down; the compaction thread
    /// sees them when it next wakes (at least every 500 ms).
    fn charge_read(&self, target: &[u8]) {
        if !self.charge_reads {
            return;
        }
        let levels = &self.sv.version.levels;
        let Some(l0) = levels.first() else { return };
        let mut covering = l0.runs.iter().filter_map(|r| r.file_for(target));
        let Some(newest) = covering.next() else {
            return;
        };
        let another = covering.next().is_some()
            || levels[1..]
                .iter()
                .any(|l| l.runs.iter().any(|r| r.file_for(target).is_some()));
        if another {
            newest.charge_read();
        }
    }

    /// Counts a read of the current key's range, once per range in a row, and of its
    /// record.
    fn record_access(&mut self) {
        if let Some(r) = &self.records {
            r.record_covered(&self.key);
        }
        if let Some((c, last)) = &mut self.access {
            let r = c.range_of(&self.key);
            if r != *last {
                *last = r;
                c.record_range(r, Access::Read);
            }
        }
    }

    /// An iterator whose values are unspecified for separated values (no value-log
    /// reads): for callers that need only the keys.
    pub fn keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    /// True if positioned at a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value. Requires `valid()`.
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// The first error met; an iterator that stopped early on an error is not valid.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.duplicate());
        }
        self.inner.status()
    }

    /// Replaces a value pointer at the current position by its value. The iterator holds
    /// its version, so the value-log file cannot be deleted meanwhile.
    fn resolve(&mut self, kind: ValueKind) {
        if kind != ValueKind::ValuePointer || self.keys_only {
            return;
        }
        let r = match &self.vlog {
            Some(vlog) => vlog.get(&self.key, &self.value),
            None => Err(Error::corruption(
                "iterator",
                "a value pointer where no value log is open",
            )),
        };
        match r {
            Ok(v) => self.value = v,
            Err(e) => {
                self.err = Some(e);
                self.valid = false;
            }
        }
    }

    fn above_upper(&self, k: &[u8]) -> bool {
        self.upper.as_deref().is_some_and(|u| k >= u)
    }

    fn below_lower(&self, k: &[u8]) -> bool {
        self.lower.as_deref().is_some_and(|l| k < l)
    }

    /// Positions at the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        let t = Instant::now();
        match self.lower.clone() {
            Some(l) => {
                self.charge_read(&l);
                self.inner.seek(&make_lookup_key(&l, self.seq))
            }
            None => self.inner.seek_to_first(),
        }
        self.direction = Direction::Forward;
        self.find_next_user_entry(false);
        self.record(t);
    }

    /// Positions at the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        let t = Instant::now();
        match self.upper.clone() {
            // The last entry < (upper, newest): every version of keys below `upper`.
            Some(u) => {
                self.charge_read(&u);
                self.inner
                    .seek_for_prev(&make_lookup_key(&u, crate::types::MAX_SEQ));
                if self.inner.valid() && crate::types::user_key(self.inner.key()) >= u.as_slice() {
                    self.inner.prev();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.direction = Direction::Reverse;
        self.find_prev_user_entry();
        self.record(t);
    }

    /// Positions at the first key >= `target` (clamped to the bounds).
    pub fn seek(&mut self, target: &[u8]) {
        let t = Instant::now();
        let target = match &self.lower {
            Some(l) if target < l.as_slice() => l.clone(),
            _ => target.to_vec(),
        };
        self.charge_read(&target);
        self.inner.seek(&make_lookup_key(&target, self.seq));
        self.direction = Direction::Forward;
        self.find_next_user_entry(false);
        self.record(t);
    }

    /// Positions at the last key <= `target` (clamped to the bounds).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        let t = Instant::now();
        if self.above_upper(target) {
            self.seek_to_last();
            return;
        }
        self.charge_read(target);
        self.inner
            .seek_for_prev(&make_internal_key(target, 0, ValueKind::Deletion));
        self.direction = Direction::Reverse;
        self.find_prev_user_entry();
        self.record(t);
    }

    /// Moves to the next key. Requires `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        let t = self.step_timer();
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The inner iterator is before every entry of the current key.
            if self.inner.valid() {
                self.inner.next();
            } else {
                self.inner.seek_to_first();
            }
        }
        self.find_next_user_entry(true);
        self.record_step(t);
    }

    /// Moves to the previous key. Requires `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        let t = self.step_timer();
        if self.direction == Direction::Forward {
            // Back up to before every entry of the current key.
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    break;
                }
                if crate::types::user_key(self.inner.key()) < self.key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
            if !self.inner.valid() {
                self.valid = false;
                self.record_step(t);
                return;
            }
        }
        self.find_prev_user_entry();
        self.record_step(t);
    }

    fn record(&self, t: Instant) {
        self.stats
            .record_latency(OpKind::Scan, t.elapsed().as_nanos() as u64);
    }

    /// A clock for one step in [`STEP_SAMPLE`]: timing every step cost two clock reads and
    /// a shared histogram lock per entry, more than a step in a cached block costs.
    fn step_timer(&mut self) -> Option<Instant> {
        self.steps = self.steps.wrapping_add(1);
        self.steps.is_multiple_of(STEP_SAMPLE).then(Instant::now)
    }

    fn record_step(&self, t: Option<Instant>) {
        if let Some(t) = t {
            self.stats.record_latency_n(
                OpKind::Scan,
                t.elapsed().as_nanos() as u64,
                u64::from(STEP_SAMPLE),
            );
        }
    }

    /// Forward: skip to the newest visible, non-deleted entry whose user key is after the
    /// current one (when `skipping`).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        // The key stepped past becomes the key to skip; the buffers trade places, so a
        // step allocates nothing.
        if skipping {
            std::mem::swap(&mut self.skip, &mut self.key);
        } else {
            self.skip.clear();
        }
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.valid = false;
                return;
            };
            if p.seq <= self.seq {
                if self.above_upper(p.user_key) {
                    break;
                }
                let hidden = skipping && p.user_key <= self.skip.as_slice();
                if !hidden {
                    match self.seen_kind(p.user_key, p.seq, p.kind) {
                        Some(ValueKind::Deletion) => {
                            self.skip.clear();
                            self.skip.extend_from_slice(p.user_key);
                            skipping = true;
                        }
                        Some(kind) => {
                            self.key.clear();
                            self.key.extend_from_slice(p.user_key);
                            self.value.clear();
                            self.value.extend_from_slice(self.inner.value());
                            self.valid = true;
                            self.record_access();
                            self.resolve(kind);
                            return;
                        }
                        None => break,
                    }
                }
            }
            self.inner.next();
        }
        self.valid = false;
    }

    /// Reverse: find the newest visible entry of the previous user key; the inner iterator
    /// ends up just before all of that key's entries.
    fn find_prev_user_entry(&mut self) {
        let mut kind = ValueKind::Deletion;
        let mut key: Vec<u8> = Vec::new();
        let mut value: Vec<u8> = Vec::new();
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                break;
            };
            if p.seq <= self.seq {
                if kind != ValueKind::Deletion && p.user_key.cmp(key.as_slice()) == Ordering::Less {
                    break; // `key` holds the newest visible version of the later key
                }
                if self.below_lower(p.user_key) {
                    kind = ValueKind::Deletion;
                    break;
                }
                kind = self
                    .seen_kind(p.user_key, p.seq, p.kind)
                    .unwrap_or(ValueKind::Deletion);
                if kind == ValueKind::Deletion {
                    key.clear();
                    value.clear();
                } else {
                    key.clear();
                    key.extend_from_slice(p.user_key);
                    value.clear();
                    value.extend_from_slice(self.inner.value());
                }
            }
            self.inner.prev();
        }
        if kind == ValueKind::Deletion || (self.inner.status().is_err()) {
            self.valid = false;
        } else {
            self.key = key;
            self.value = value;
            self.valid = true;
            self.record_access();
            self.resolve(kind);
        }
    }
}

/// Converts a range of user keys into (inclusive lower, exclusive upper) bounds.
pub(crate) fn range_to_bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(
    range: &R,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let lower = match range.start_bound() {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => {
            let mut v = k.as_ref().to_vec();
            v.push(0);
            Some(v)
        }
        Bound::Unbounded => None,
    };
    let upper = match range.end_bound() {
        Bound::Included(k) => {
            let mut v = k.as_ref().to_vec();
            v.push(0);
            Some(v)
        }
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    (lower, upper)
}

/// A forward (or reverse) scan over a key range, as a Rust iterator of owned pairs.
pub struct Scan {
    it: DbIterator,
    started: bool,
    reverse: bool,
    done: bool,
}

impl Scan {
    pub(crate) fn new(it: DbIterator, reverse: bool) -> Self {
        Scan {
            it,
            started: false,
            reverse,
            done: false,
        }
    }

    /// The same scan yielding keys only: values (left unspecified) are not read from the
    /// value log, so a scan of keys over separated values costs no value-log reads.
    pub fn keys_only(mut self) -> Self {
        self.it = self.it.keys_only();
        self
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            if self.reverse {
                self.it.seek_to_last();
            } else {
                self.it.seek_to_first();
            }
        } else if self.reverse {
            self.it.prev();
        } else {
            self.it.next();
        }
        if self.it.valid() {
            return Some(Ok((self.it.key().to_vec(), self.it.value().to_vec())));
        }
        self.done = true;
        match self.it.status() {
            Ok(()) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
