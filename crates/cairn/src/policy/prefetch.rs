//! The cache around flush and compaction (DESIGN.md's seam): what happens to cached
//! blocks when a flush or compaction rewrites their keys, with Leaper and its baselines as
//! siblings behind one [`PrefetchPolicy`].
//!
//! - `Lru`: nothing; blocks of deleted tables stay until the LRU pushes them out
//!   (RocksDB's default).
//! - `EagerEvict`: blocks of deleted tables are erased when the files go (cairn's default).
//! - `Warmup` (Incremental Warmup, Leaper §2.2): output blocks that overlap a cached input
//!   block are staged in key order as they are written; at install the cached input
//!   blocks go and the staged ones take their places, one for one (within the bytes the
//!   old ones free).
//! - `WarmFlush` / `WarmAll` (RocksDB's `prepopulate_block_cache` `kFlushOnly` /
//!   `kFlushAndCompaction`): every block a flush writes goes into the cache at low
//!   priority; `WarmAll` adds every block a compaction writes, at bottom priority.
//! - `Leaper` (§5.2-5.3, §6): at a compaction's start, T1 = alpha * N (N input blocks,
//!   alpha fitted from earlier jobs) and T2 = beta * Q / S (Q reads per second, S cache
//!   blocks, beta fitted from how long earlier jobs' invalidation misses lasted) pick the
//!   steps of the k models (eq. 4): cached input blocks outside hot_T1 are evicted now;
//!   output blocks inside hot_T2 are staged as the merge writes them (no read-back,
//!   overlap by Algorithm 3), ranked by their predicted reads (probability x read rate),
//!   and at install they take the places of the input blocks still cached, best first,
//!   within the bytes those free: warming never grows the cache's charge and never shows
//!   a block before its table is readable. At a flush, output blocks inside the hot
//!   ranges of the next T2 go in at low priority (capped). No model: nothing is warmed or
//!   evicted early (as `EagerEvict`).
//! - `Oracle`: Leaper's mechanism with hot ranges from a [`HotRangeSource`] that knows the
//!   future (the bench's own op stream): an upper bound. Its first phase keeps every
//!   cached input block read within the source's whole horizon, not only within T1.
//!
//! Warming is capped per job, reads no storage (blocks come from the writer), and is never
//! counted as a foreground read. Every policy only moves blocks in and out of the cache:
//! no answer changes.
//!
//! The metric (issue 10): an *invalidation miss* is a foreground data-block miss on a key
//! inside a block range that a flush or compaction invalidated (cached input blocks of a
//! compaction; the key ranges a flush moved out of the memtable), while the job runs or
//! within T after it. Counted for T = `invalidation_window_ms`, 1 s and 60 s.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustc_hash::{FxHashMap, FxHashSet};

use super::hot_ranges::HotRangePredictor;
use super::overlap::{block_score, overlapping_blocks, Interval};
use super::staging::Staging;
use crate::access::key_number;
use crate::cache::{BlockCache, BlockKey, CacheValue, Priority, Staged};
use crate::clock::EngineClock;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::table::{Block, BlockHandle, BlockSink};
use crate::types::user_key;

/// Answers which key ranges will be read in the next slots.
///
/// Every question names the key span (key numbers, inclusive) of the job that asks: a
/// source may leave out ranges outside it, as Leaper infers only the ranges a flush or
/// compaction involves (§5.2).
pub trait HotRangeSource: Send + Sync {
    /// Inclusive key-number intervals (sorted, disjoint) read in any of `steps` (0: the
    /// next slot) within `span`; `None` means "everything".
    fn hot_intervals(&self, steps: Range<usize>, span: Interval) -> Option<Vec<Interval>>;
    /// Length of one step.
    fn slot_ms(&self) -> u64;
    /// Steps it can answer for.
    fn steps(&self) -> usize;
    /// Offset of the 8 key bytes the intervals are made of.
    fn key_offset(&self) -> usize {
        0
    }
    /// The hot ranges of `steps` within `span` with a score each, the reads expected in
    /// them (sorted by start, disjoint; the prefetcher warms best-first). Default:
    /// `hot_intervals`, each scoring 1.
    fn hot_scores(&self, steps: Range<usize>, span: Interval) -> Option<Vec<(Interval, f64)>> {
        self.hot_intervals(steps, span)
            .map(|v| v.into_iter().map(|i| (i, 1.0)).collect())
    }
    /// Model evaluations and nanoseconds spent inferring since open (0 where free).
    fn inference_cost(&self) -> (u64, u64) {
        (0, 0)
    }
}

impl HotRangeSource for HotRangePredictor {
    fn hot_intervals(&self, steps: Range<usize>, span: Interval) -> Option<Vec<Interval>> {
        HotRangePredictor::hot_intervals(self, steps, span)
    }
    fn slot_ms(&self) -> u64 {
        HotRangePredictor::slot_ms(self)
    }
    fn steps(&self) -> usize {
        HotRangePredictor::steps(self)
    }
    fn key_offset(&self) -> usize {
        self.key_offset()
    }
    fn hot_scores(&self, steps: Range<usize>, span: Interval) -> Option<Vec<(Interval, f64)>> {
        HotRangePredictor::hot_scores(self, steps, span)
    }
    fn inference_cost(&self) -> (u64, u64) {
        HotRangePredictor::inference_cost(self)
    }
}

/// Leaper's settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LeaperParams {
    /// A model bundle to load at open for the default column family (others:
    /// [`Db::load_leaper_model`](crate::Db::load_leaper_model)). Needs `Options::access`.
    pub model: Option<PathBuf>,
    /// Most blocks one flush may warm (a compaction warms within the room it frees).
    pub max_warm_blocks: usize,
    /// Most of the block cache's capacity one flush may fill with warmed blocks (0..=1):
    /// warming more than the cache holds pushes out the hot blocks it was meant to keep.
    pub max_warm_cache_share: f64,
    /// The guardrail (§7.4's rollback; ours counts invalidation misses where the paper
    /// counts slow queries): when one job's invalidation misses exceed this share of the
    /// cached blocks it invalidated (and [`ROLLBACK_MIN_MISSES`]), the predictions are
    /// wrong for the workload now, and Leaper stops evicting and warming until a model is
    /// loaded again. 0 turns it off.
    pub rollback_share: f64,
}

/// Fewest invalidation misses of one job that can roll Leaper back.
pub const ROLLBACK_MIN_MISSES: u64 = 32;

impl Default for LeaperParams {
    fn default() -> Self {
        LeaperParams {
            model: None,
            max_warm_blocks: 4096,
            max_warm_cache_share: 0.5,
            rollback_share: 0.5,
        }
    }
}

/// What happens to cached blocks around flushes and compactions.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub enum PrefetchPolicy {
    /// Nothing; dead blocks age out of the LRU.
    Lru,
    /// Dead blocks are erased when their files go.
    #[default]
    EagerEvict,
    /// Incremental Warmup.
    Warmup,
    /// Every block a flush writes is cached.
    WarmFlush,
    /// Every block a flush or compaction writes is cached.
    WarmAll,
    /// Leaper's two-phase prefetcher.
    Leaper(LeaperParams),
    /// Leaper's mechanism with hot ranges that a bench knows in advance (not kept in an
    /// options file: the source is code).
    #[serde(skip)]
    Oracle(Arc<dyn HotRangeSource>),
}

impl std::fmt::Debug for PrefetchPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PrefetchPolicy {
    /// Short name (as in the presets).
    pub fn name(&self) -> &'static str {
        match self {
            PrefetchPolicy::Lru => "lru",
            PrefetchPolicy::EagerEvict => "eager-evict",
            PrefetchPolicy::Warmup => "warmup",
            PrefetchPolicy::WarmFlush => "warm-flush",
            PrefetchPolicy::WarmAll => "warm-all",
            PrefetchPolicy::Leaper(_) => "leaper",
            PrefetchPolicy::Oracle(_) => "oracle",
        }
    }
}

/// Counters of the prefetcher and of the invalidation metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PrefetchStats {
    /// Blocks put in the cache by warming.
    pub warmed_blocks: u64,
    /// Warmed blocks that a read found afterwards (precision = this / warmed_blocks).
    pub warmed_hits: u64,
    /// Cached input blocks a policy dropped before the job ended.
    pub evicted_blocks: u64,
    /// Cached blocks flushes and compactions made obsolete.
    pub invalidated_blocks: u64,
    /// Invalidation misses within `invalidation_window_ms` (or during the job).
    pub invalidation_misses: u64,
    /// Of those, while the job ran (T1).
    pub invalidation_misses_during: u64,
    /// Of those, after a flush (the rest: after a compaction).
    pub invalidation_misses_flush: u64,
    /// Of those, by range scans (iterators; the rest: point reads).
    pub invalidation_misses_scan: u64,
    /// Invalidation misses with T = 1 s.
    pub invalidation_misses_1s: u64,
    /// Invalidation misses with T = 60 s.
    pub invalidation_misses_60s: u64,
    /// Model bundles refused (damaged, foreign, not fitting the collector).
    pub model_errors: u64,
    /// Flushes and compactions that had hot ranges to act on.
    pub jobs_with_model: u64,
    /// Fitted alpha of eq. 3 (ms of compaction per input block); 0 until a job ran.
    pub alpha_ms_per_block: f64,
    /// Fitted beta of eq. 3 (T2 = beta * Q / S, seconds); 0 until fitted.
    pub beta: f64,
    /// Times the guardrail stopped Leaper (until the next model load).
    pub rollbacks: u64,
    /// Whether it is stopped now.
    pub rolled_back: bool,
    /// Model evaluations, one key range through one step's model (§5.2: only the ranges
    /// a job involves, only the steps it asks about).
    pub model_evals: u64,
    /// Nanoseconds spent inferring (reading the counts included), all models loaded.
    pub inference_ns: u64,
}

#[derive(Default)]
struct Counters {
    warmed_blocks: AtomicU64,
    warmed_hits: AtomicU64,
    evicted_blocks: AtomicU64,
    invalidated_blocks: AtomicU64,
    misses: AtomicU64,
    misses_during: AtomicU64,
    misses_flush: AtomicU64,
    misses_scan: AtomicU64,
    misses_1s: AtomicU64,
    misses_60s: AtomicU64,
    model_errors: AtomicU64,
    jobs_with_model: AtomicU64,
    rollbacks: AtomicU64,
    /// Inference cost of sources since replaced.
    retired_evals: AtomicU64,
    retired_ns: AtomicU64,
}

/// One flush's or compaction's invalidated key ranges.
struct Event {
    /// Creation order: a miss counts for the newest job holding its key.
    seq: u64,
    begin: Duration,
    end: Mutex<Option<Duration>>,
    /// A flush's (else a compaction's).
    flush: bool,
    /// The key ranges of the cached blocks a compaction invalidated, with the input table
    /// each block is of; sorted by first key, may overlap.
    ranges: Vec<(Vec<u8>, Vec<u8>, FileNo)>,
    /// Fingerprints of the keys the job took away: those a flush moved out of the
    /// memtable, those a compaction's cached input blocks held. A span covers keys it
    /// never held (a sparse memtable; a block of one input, between keys of another).
    keys: FxHashSet<u64>,
    /// A compaction's input tables. While it runs, a miss on one of them counts only in
    /// the range of a block of that same table that was cached at the start (a policy
    /// dropped it, or it aged out), not in another input's range (an older version of
    /// the key in a cached block of another table says nothing of this block).
    inputs: HashSet<FileNo>,
    /// The job's output tables (a compaction's once installed; a flush's): a miss on one
    /// counts for a key in any invalidated range (or moved out of the memtable). A miss
    /// on any other table (a newer version of the key elsewhere, a level the job did not
    /// touch, another column family) is no block the job removed.
    outputs: Mutex<HashSet<FileNo>>,
    /// Reads per second over cache blocks when the job ran (eq. 3's Q / S).
    q_over_s: f64,
    last_miss: Mutex<Option<Duration>>,
    /// Leaper's guardrail: the invalidation misses that roll it back (None: the job was
    /// not Leaper's), and the misses so far.
    rollback_at: Option<u64>,
    misses: AtomicU64,
}

impl Event {
    fn contains(&self, key: &[u8], file_no: FileNo) -> bool {
        if self.outputs.lock().contains(&file_no) {
            return self.keys.contains(&fingerprint(key));
        }
        if !self.inputs.contains(&file_no) {
            return false;
        }
        // An input table's key inside one of its own cached blocks' span is in that block.
        let n = self.ranges.partition_point(|r| r.0.as_slice() <= key);
        self.ranges[..n]
            .iter()
            .any(|r| r.1.as_slice() >= key && r.2 == file_no)
    }
}

/// The jobs of the last [`LONGEST_WINDOW`], oldest first, and each table's among them,
/// so that a block miss looks only at the jobs that named its table (a scan of every
/// job per miss cost more CPU than Leaper's inference).
#[derive(Default)]
struct EventLog {
    list: VecDeque<Arc<Event>>,
    /// The jobs each table is an input or output of, in no order.
    by_file: FxHashMap<FileNo, Vec<Arc<Event>>>,
    next_seq: u64,
}

impl EventLog {
    fn push(&mut self, e: Arc<Event>) {
        let outputs: Vec<FileNo> = e.outputs.lock().iter().copied().collect();
        for &f in e.inputs.iter().chain(&outputs) {
            self.by_file.entry(f).or_default().push(e.clone());
        }
        self.list.push_back(e);
    }

    /// `e`'s outputs are installed: misses on them may be its.
    fn add_outputs(&mut self, e: &Arc<Event>, outputs: &[FileNo]) {
        let mut held = e.outputs.lock();
        for &f in outputs {
            if held.insert(f) && !e.inputs.contains(&f) {
                self.by_file.entry(f).or_default().push(e.clone());
            }
        }
    }

    fn pop_front(&mut self) {
        let Some(e) = self.list.pop_front() else {
            return;
        };
        let outputs: Vec<FileNo> = e.outputs.lock().iter().copied().collect();
        for f in e.inputs.iter().chain(&outputs) {
            if let Some(v) = self.by_file.get_mut(f) {
                v.retain(|x| !Arc::ptr_eq(x, &e));
                if v.is_empty() {
                    self.by_file.remove(f);
                }
            }
        }
    }

    /// The newest job that took `key` of table `file_no` away (see [`Event::contains`]).
    fn newest_holding(&self, key: &[u8], file_no: FileNo) -> Option<&Arc<Event>> {
        self.by_file
            .get(&file_no)?
            .iter()
            .filter(|e| e.contains(key, file_no))
            .max_by_key(|e| e.seq)
    }
}

/// A job's smallest and largest user key.
pub(crate) type KeySpan<'a> = (&'a [u8], &'a [u8]);

/// The key numbers of a job's keys, as its source numbers them. Key numbers follow key
/// order only among keys that share the bytes before the offset: where the two ends do
/// not, the job may hold any number.
fn span(keys: KeySpan<'_>, key_offset: usize) -> Interval {
    let (lo, hi) = (
        key_number(keys.0, key_offset),
        key_number(keys.1, key_offset),
    );
    let prefix = |k: &[u8]| k.get(..key_offset.min(k.len())).map(<[u8]>::to_vec);
    if lo <= hi && prefix(keys.0) == prefix(keys.1) {
        (lo, hi)
    } else {
        (0, u64::MAX)
    }
}

fn files_of(inputs: &[(FileNo, u64)]) -> HashSet<FileNo> {
    inputs.iter().map(|&(f, _)| f).collect()
}

fn fingerprint(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

const LONGEST_WINDOW: Duration = Duration::from_secs(60);

/// Timing fits for eq. 3.
#[derive(Default)]
struct Fits {
    alpha_ms_per_block: Option<f64>,
    beta: Option<f64>,
    /// (time, reads so far) of the last rate sample.
    last_reads: Option<(Duration, u64)>,
    reads_per_s: f64,
}

fn ewma(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |o| 0.7 * o + 0.3 * new)
}

/// Which output blocks a job puts in the cache.
enum Warm {
    All,
    /// Inside these key-number intervals (sorted, disjoint), scored by expected reads.
    Hot {
        hot: Vec<(Interval, f64)>,
        key_offset: usize,
    },
    /// Overlapping these user-key ranges (sorted by first key).
    Overlapping(Vec<(Vec<u8>, Vec<u8>)>),
}

/// A job's warming: offered each block its writer finishes.
pub(crate) struct Warmer {
    warm: Warm,
    cache: Arc<dyn BlockCache>,
    /// Blocks a flush may still put in (compactions are bounded by their staging).
    left: AtomicUsize,
    counters: Arc<Counters>,
    /// A compaction's chosen blocks wait here for the install (`None`: straight in).
    stage: Option<Mutex<Staging>>,
    /// Where blocks that go straight in enter the recency order.
    priority: Priority,
}

impl Warmer {
    /// A data block of table `file_no`, just written.
    pub(crate) fn offer(
        &self,
        file_no: FileNo,
        handle: BlockHandle,
        first: &[u8],
        last: &[u8],
        contents: &[u8],
    ) {
        let score = match &self.warm {
            Warm::All => Some(1.0),
            Warm::Hot { hot, key_offset } => block_score(
                (
                    key_number(first, *key_offset),
                    key_number(last, *key_offset),
                ),
                hot,
            ),
            // Incremental Warmup has no ranking: key order (the order blocks come in).
            Warm::Overlapping(olds) => {
                let end = olds.partition_point(|o| o.0.as_slice() <= last);
                olds[..end]
                    .iter()
                    .any(|o| o.1.as_slice() >= first)
                    .then_some(0.0)
            }
        };
        let Some(score) = score else { return };
        if self.stage.is_none()
            && self
                .left
                .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
                .is_err()
        {
            return;
        }
        // A cache hint only: a block that does not decode is not cached.
        let Ok(block) = Block::decode(contents.to_vec(), "new table") else {
            return;
        };
        let key = BlockKey {
            file_no,
            offset: handle.offset,
        };
        match &self.stage {
            Some(stage) => stage.lock().offer(score, key, Arc::new(block)),
            None => {
                let charge = block.charge();
                self.cache.insert_with(
                    key,
                    CacheValue::warmed(Arc::new(block)),
                    charge,
                    self.priority,
                );
                self.counters.warmed_blocks.fetch_add(1, Relaxed);
            }
        }
    }

    /// The staged blocks, best first (none for a warmer that stages nothing).
    fn take_staged(&self) -> Option<Vec<Staged>> {
        let stage = self.stage.as_ref()?;
        let s = std::mem::replace(&mut *stage.lock(), Staging::new(0));
        Some(s.into_best_first())
    }
}

impl Warmer {
    /// A table writer's sink for table `file_no` that offers each finished block here.
    pub(crate) fn sink(self: &Arc<Self>, file_no: FileNo) -> BlockSink {
        let w = self.clone();
        Box::new(move |h, first, last, contents| w.offer(file_no, h, first, last, contents))
    }
}

/// What a compaction's start decided, for its end.
pub(crate) struct CompactionJob {
    event: Option<Arc<Event>>,
    begin: Duration,
    input_blocks: u64,
    /// The input tables' file numbers.
    inputs: HashSet<FileNo>,
    /// Warming of the job's output blocks, if any.
    pub(crate) warmer: Option<Arc<Warmer>>,
}

/// The engine's side of the seam: one per database.
pub(crate) struct Prefetcher {
    policy: PrefetchPolicy,
    cache: Arc<dyn BlockCache>,
    block_size: u64,
    window: Duration,
    /// Whether invalidation misses are counted (Leaper's policies always count: eq. 3's
    /// beta is fitted from them).
    metric: bool,
    sources: RwLock<HashMap<CfId, Arc<dyn HotRangeSource>>>,
    counters: Arc<Counters>,
    events: Mutex<EventLog>,
    fits: Mutex<Fits>,
    /// Leaper's guardrail tripped: no model acts until one is loaded again.
    rolled_back: AtomicBool,
    /// The clock job windows and read rates are measured on (virtual time on the
    /// virtual clock); times are durations since its origin.
    clock: EngineClock,
}

impl Prefetcher {
    pub(crate) fn new(
        policy: PrefetchPolicy,
        cache: Arc<dyn BlockCache>,
        block_size: usize,
        window_ms: u64,
        metric: bool,
        clock: EngineClock,
    ) -> Self {
        let metric = metric
            || matches!(
                policy,
                PrefetchPolicy::Leaper(_) | PrefetchPolicy::Oracle(_)
            );
        let mut sources: HashMap<CfId, Arc<dyn HotRangeSource>> = HashMap::new();
        if let PrefetchPolicy::Oracle(src) = &policy {
            sources.insert(CfId::DEFAULT, src.clone());
        }
        Prefetcher {
            policy,
            cache,
            block_size: block_size.max(1) as u64,
            window: Duration::from_millis(window_ms),
            metric,
            sources: RwLock::new(sources),
            counters: Arc::default(),
            events: Mutex::new(EventLog::default()),
            fits: Mutex::new(Fits::default()),
            rolled_back: AtomicBool::new(false),
            clock,
        }
    }

    pub(crate) fn policy(&self) -> &PrefetchPolicy {
        &self.policy
    }

    /// Whether blocks of deleted tables are erased from the cache.
    pub(crate) fn erase_obsolete(&self) -> bool {
        !matches!(self.policy, PrefetchPolicy::Lru)
    }

    /// Installs (or replaces) the hot-range source of a column family.
    pub(crate) fn set_source(&self, cf: CfId, src: Arc<dyn HotRangeSource>) {
        if let Some(old) = self.sources.write().insert(cf, src) {
            let (ranges, nanos) = old.inference_cost();
            self.counters.retired_evals.fetch_add(ranges, Relaxed);
            self.counters.retired_ns.fetch_add(nanos, Relaxed);
        }
        self.rolled_back.store(false, Relaxed);
    }

    pub(crate) fn model_error(&self) {
        self.counters.model_errors.fetch_add(1, Relaxed);
    }

    fn source(&self, cf: CfId) -> Option<Arc<dyn HotRangeSource>> {
        match self.policy {
            PrefetchPolicy::Leaper(_) if self.rolled_back.load(Relaxed) => None,
            PrefetchPolicy::Leaper(_) | PrefetchPolicy::Oracle(_) => {
                self.sources.read().get(&cf).cloned()
            }
            _ => None,
        }
    }

    /// The invalidation misses of a Leaper compaction of `blocks` cached input blocks
    /// that roll Leaper back (None: no guardrail for this job).
    fn rollback_at(&self, cf: CfId, blocks: u64) -> Option<u64> {
        match &self.policy {
            PrefetchPolicy::Leaper(p) if p.rollback_share > 0.0 && self.source(cf).is_some() => {
                let at = (p.rollback_share * blocks as f64).ceil() as u64;
                Some(at.max(ROLLBACK_MIN_MISSES))
            }
            _ => None,
        }
    }

    fn cache_blocks(&self) -> f64 {
        (self.cache.capacity() as u64 / self.block_size).max(1) as f64
    }

    /// Updates the read rate (Q of eq. 3) from the database's read counter.
    pub(crate) fn sample_reads(&self, reads: u64) {
        let mut f = self.fits.lock();
        let now = self.clock.now();
        match f.last_reads {
            Some((t, r)) if now.saturating_sub(t) >= Duration::from_millis(200) => {
                let dt = now.saturating_sub(t).as_secs_f64();
                f.reads_per_s = reads.saturating_sub(r) as f64 / dt;
                f.last_reads = Some((now, reads));
            }
            None => f.last_reads = Some((now, reads)),
            _ => {}
        }
    }

    /// T2 of eq. 3 in milliseconds, if beta is fitted.
    fn t2_ms(&self) -> Option<u64> {
        let f = self.fits.lock();
        let beta = f.beta?;
        Some((beta * f.reads_per_s / self.cache_blocks() * 1000.0) as u64)
    }

    fn record_event(
        &self,
        ranges: Vec<(Vec<u8>, Vec<u8>, FileNo)>,
        keys: FxHashSet<u64>,
        inputs: HashSet<FileNo>,
        outputs: HashSet<FileNo>,
        flush: bool,
        rollback_at: Option<u64>,
    ) -> Option<Arc<Event>> {
        if keys.is_empty() {
            return None;
        }
        let now = self.clock.now();
        let q_over_s = self.fits.lock().reads_per_s / self.cache_blocks();
        let mut ranges = ranges;
        ranges.sort();
        let mut events = self.events.lock();
        self.expire(&mut events, now);
        let seq = events.next_seq;
        events.next_seq += 1;
        let e = Arc::new(Event {
            seq,
            begin: now,
            end: Mutex::new(flush.then_some(now)),
            flush,
            ranges,
            keys,
            inputs,
            outputs: Mutex::new(outputs),
            q_over_s,
            last_miss: Mutex::new(None),
            rollback_at,
            misses: AtomicU64::new(0),
        });
        events.push(e.clone());
        Some(e)
    }

    /// Drops events past the longest window, fitting beta from how long each one's
    /// misses lasted after its job ended (the recovery time T2).
    fn expire(&self, events: &mut EventLog, now: Duration) {
        while let Some(e) = events.list.front() {
            let end = *e.end.lock();
            match end {
                Some(end) if now.saturating_sub(end) > LONGEST_WINDOW => {
                    if let Some(last) = *e.last_miss.lock() {
                        let recovery = last.saturating_sub(end).as_secs_f64();
                        if e.q_over_s > 0.0 {
                            let mut f = self.fits.lock();
                            f.beta = Some(ewma(f.beta, recovery / e.q_over_s));
                        }
                    }
                    events.pop_front();
                }
                _ => break,
            }
        }
    }

    /// A warmer for a flush of `cf` whose keys lie in `keys` (smallest and largest user
    /// key), if the policy warms flushed blocks.
    pub(crate) fn flush_warmer(&self, cf: CfId, keys: KeySpan<'_>) -> Option<Arc<Warmer>> {
        let warm = match &self.policy {
            PrefetchPolicy::WarmFlush | PrefetchPolicy::WarmAll => Warm::All,
            PrefetchPolicy::Leaper(_) | PrefetchPolicy::Oracle(_) => {
                let src = self.source(cf)?;
                let steps = self
                    .t2_ms()
                    .map_or(1, |t| t.div_ceil(src.slot_ms().max(1)) as usize)
                    .clamp(1, src.steps());
                self.counters.jobs_with_model.fetch_add(1, Relaxed);
                match src.hot_scores(0..steps, span(keys, src.key_offset())) {
                    Some(hot) => Warm::Hot {
                        hot,
                        key_offset: src.key_offset(),
                    },
                    None => Warm::All,
                }
            }
            _ => return None,
        };
        Some(self.warmer(warm, None, Priority::Low))
    }

    /// Most blocks one flush may warm.
    fn warm_cap(&self) -> usize {
        match &self.policy {
            PrefetchPolicy::Leaper(p) => {
                let share = p.max_warm_cache_share.clamp(0.0, 1.0);
                p.max_warm_blocks
                    .min((share * self.cache_blocks()) as usize)
            }
            _ => usize::MAX,
        }
    }

    /// A warmer; `stage_bytes`: a compaction's, staging that much for its install.
    fn warmer(&self, warm: Warm, stage_bytes: Option<usize>, priority: Priority) -> Arc<Warmer> {
        Arc::new(Warmer {
            warm,
            cache: self.cache.clone(),
            left: AtomicUsize::new(self.warm_cap()),
            counters: self.counters.clone(),
            stage: stage_bytes.map(|b| Mutex::new(Staging::new(b))),
            priority,
        })
    }

    /// A flush of `mem` into the tables `outputs` is about to be installed: reads of its
    /// keys then go to them.
    pub(crate) fn flush_done(&self, mem: &Arc<crate::memtable::Memtable>, outputs: &[FileNo]) {
        use crate::iter::InternalIterator;
        if !self.metric {
            return;
        }
        let mut keys = FxHashSet::default();
        let mut it = mem.iter();
        it.seek_to_first();
        while it.valid() {
            keys.insert(fingerprint(user_key(it.key())));
            it.next();
        }
        let outputs = outputs.iter().copied().collect();
        self.record_event(Vec::new(), keys, HashSet::new(), outputs, true, None);
    }

    /// A compaction of `inputs` (file numbers, with their sizes) whose keys lie in `keys`
    /// starts.
    pub(crate) fn compaction_begin(
        &self,
        cf: CfId,
        inputs: &[(FileNo, u64)],
        keys: KeySpan<'_>,
    ) -> CompactionJob {
        let begin = self.clock.now();
        let input_blocks: u64 = inputs
            .iter()
            .map(|&(_, size)| size.div_ceil(self.block_size))
            .sum();
        let files = files_of(inputs);
        let cached = self.cache.cached_data_blocks(&files);
        let ranges: Vec<(Vec<u8>, Vec<u8>, FileNo)> = cached
            .iter()
            .filter(|(_, b)| b.entry_count() > 0)
            .map(|(k, b)| {
                (
                    b.key(0).user_key_vec(),
                    b.key(b.entry_count() - 1).user_key_vec(),
                    k.file_no,
                )
            })
            .collect();
        self.counters
            .invalidated_blocks
            .fetch_add(ranges.len() as u64, Relaxed);
        let event = if self.metric {
            let keys = cached
                .iter()
                .flat_map(|(_, b)| {
                    (0..b.entry_count()).map(|i| fingerprint(&b.key(i).user_key_vec()))
                })
                .collect();
            let rollback_at = self.rollback_at(cf, ranges.len() as u64);
            self.record_event(
                ranges.clone(),
                keys,
                files,
                HashSet::new(),
                false,
                rollback_at,
            )
        } else {
            None
        };
        let warmer = match &self.policy {
            PrefetchPolicy::Warmup if !ranges.is_empty() => {
                let mut olds: Vec<(Vec<u8>, Vec<u8>)> =
                    ranges.into_iter().map(|(a, b, _)| (a, b)).collect();
                olds.sort();
                let room = cached.iter().map(|(_, b)| b.charge()).sum();
                Some(self.warmer(Warm::Overlapping(olds), Some(room), Priority::Low))
            }
            PrefetchPolicy::WarmAll => Some(self.warmer(Warm::All, None, Priority::Bottom)),
            PrefetchPolicy::Leaper(_) | PrefetchPolicy::Oracle(_) => self
                .leaper_begin(cf, input_blocks, &cached, keys)
                .map(|(w, room)| self.warmer(w, Some(room), Priority::Low)),
            _ => None,
        };
        CompactionJob {
            event,
            begin,
            input_blocks,
            inputs: files_of(inputs),
            warmer,
        }
    }

    /// Leaper's two phases at a compaction's start: evict the cached input blocks no one
    /// reads during the job (outside hot_T1), and choose the output blocks to warm
    /// (inside hot_T2), with the bytes of the input blocks it kept: the most the install
    /// can swap in.
    fn leaper_begin(
        &self,
        cf: CfId,
        input_blocks: u64,
        cached: &[(BlockKey, Arc<Block>)],
        keys: KeySpan<'_>,
    ) -> Option<(Warm, usize)> {
        let src = self.source(cf)?;
        let job_span = span(keys, src.key_offset());
        let t = src.slot_ms().max(1);
        let k = src.steps().max(1);
        let t1_ms = self
            .fits
            .lock()
            .alpha_ms_per_block
            .map_or(0, |a| (a * input_blocks as f64) as u64);
        let k1 = (t1_ms.div_ceil(t) as usize).clamp(1, k);
        let k2 = self.t2_ms().map_or(1, |t2| t2.div_ceil(t) as usize).max(1);
        let t2_steps = k1.min(k - 1)..(k1 + k2).min(k);
        self.counters.jobs_with_model.fetch_add(1, Relaxed);
        let off = src.key_offset();
        // The oracle knows every read of its horizon, so it keeps every block any of them
        // reads: a job that outlasts the T1 estimate then never reads a block it dropped
        // (Leaper can only keep what its k1 steps predict).
        let keep_steps = if matches!(self.policy, PrefetchPolicy::Oracle(_)) {
            k
        } else {
            k1
        };
        let mut kept: usize = cached.iter().map(|(_, b)| b.charge()).sum();
        if let Some(hot_t1) = src.hot_intervals(0..keep_steps, job_span) {
            let intervals: Vec<Interval> = cached
                .iter()
                .filter(|(_, b)| b.entry_count() > 0)
                .map(|(_, b)| {
                    (
                        key_number(&b.key(0).user_key_vec(), off),
                        key_number(&b.key(b.entry_count() - 1).user_key_vec(), off),
                    )
                })
                .collect();
            // Overlap wants blocks sorted by start; cached blocks come in cache order.
            let mut order: Vec<usize> = (0..intervals.len()).collect();
            order.sort_by_key(|&i| intervals[i]);
            let sorted: Vec<Interval> = order.iter().map(|&i| intervals[i]).collect();
            let keep: HashSet<usize> = overlapping_blocks(&sorted, &hot_t1)
                .into_iter()
                .map(|j| order[j])
                .collect();
            for (i, (key, b)) in cached.iter().enumerate() {
                if !keep.contains(&i) {
                    self.cache.erase(key);
                    kept -= b.charge();
                    self.counters.evicted_blocks.fetch_add(1, Relaxed);
                }
            }
        }
        let warm = match src.hot_scores(t2_steps, job_span) {
            Some(hot) => Warm::Hot {
                hot,
                key_offset: off,
            },
            None => Warm::All,
        };
        Some((warm, kept))
    }

    /// The compaction's outputs are installed: reads of its keys now go to them.
    pub(crate) fn compaction_outputs(&self, job: &CompactionJob, outputs: &[FileNo]) {
        if let Some(e) = &job.event {
            self.events.lock().add_outputs(e, outputs);
        }
    }

    /// The compaction's edit is installed: its staged blocks take the places of the input
    /// blocks still cached (which go either way), best first, within the bytes those free.
    pub(crate) fn compaction_installed(&self, job: &CompactionJob) {
        let Some(staged) = job.warmer.as_ref().and_then(|w| w.take_staged()) else {
            return;
        };
        let out = self.cache.swap_in(&job.inputs, staged);
        self.counters
            .warmed_blocks
            .fetch_add(out.inserted as u64, Relaxed);
    }

    /// The compaction ended (installed or failed).
    pub(crate) fn compaction_end(&self, job: CompactionJob) {
        let now = self.clock.now();
        if let Some(e) = &job.event {
            *e.end.lock() = Some(now);
        }
        if job.input_blocks > 0 {
            let ms = now.saturating_sub(job.begin).as_secs_f64() * 1000.0;
            let mut f = self.fits.lock();
            f.alpha_ms_per_block = Some(ewma(f.alpha_ms_per_block, ms / job.input_blocks as f64));
        }
    }

    /// A foreground read of `key` in table `file_no` finished: `misses` data blocks came
    /// from storage and `warmed_hits` warmed blocks were found. `scan`: an iterator's step
    /// (its position's key stands for the block it loaded), else a point read.
    pub(crate) fn note_read(
        &self,
        key: &[u8],
        file_no: FileNo,
        misses: u32,
        warmed_hits: u32,
        scan: bool,
    ) {
        if warmed_hits > 0 {
            self.counters
                .warmed_hits
                .fetch_add(u64::from(warmed_hits), Relaxed);
        }
        if misses == 0 || !self.metric {
            return;
        }
        let now = self.clock.now();
        let events = self.events.lock();
        let Some(e) = events.newest_holding(key, file_no) else {
            return;
        };
        let end = *e.end.lock();
        let since_end = end.map(|t| now.saturating_sub(t));
        if since_end.is_some_and(|d| d > LONGEST_WINDOW) || now < e.begin {
            return;
        }
        *e.last_miss.lock() = Some(now);
        let within = |w: Duration| since_end.is_none_or(|d| d <= w);
        if within(self.window) {
            self.guard(e);
        }
        let c = &self.counters;
        c.misses_60s.fetch_add(1, Relaxed);
        if within(Duration::from_secs(1)) {
            c.misses_1s.fetch_add(1, Relaxed);
        }
        if within(self.window) {
            c.misses.fetch_add(1, Relaxed);
        }
        if since_end.is_none() {
            c.misses_during.fetch_add(1, Relaxed);
        }
        if within(self.window) {
            if e.flush {
                c.misses_flush.fetch_add(1, Relaxed);
            }
            if scan {
                c.misses_scan.fetch_add(1, Relaxed);
            }
        }
    }

    /// Counts an invalidation miss against its job's guardrail, rolling Leaper back the
    /// first time a job exceeds it.
    fn guard(&self, e: &Event) {
        let Some(at) = e.rollback_at else { return };
        if e.misses.fetch_add(1, Relaxed) + 1 == at + 1 {
            self.rolled_back.store(true, Relaxed);
            self.counters.rollbacks.fetch_add(1, Relaxed);
            log::warn!(
                "Leaper: a compaction's invalidation misses passed {at}; prefetching stops \
                 until a model is loaded again"
            );
        }
    }

    pub(crate) fn stats(&self) -> PrefetchStats {
        let c = &self.counters;
        let (ranges, nanos) = self
            .sources
            .read()
            .values()
            .map(|s| s.inference_cost())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let f = self.fits.lock();
        PrefetchStats {
            warmed_blocks: c.warmed_blocks.load(Relaxed),
            warmed_hits: c.warmed_hits.load(Relaxed),
            evicted_blocks: c.evicted_blocks.load(Relaxed),
            invalidated_blocks: c.invalidated_blocks.load(Relaxed),
            invalidation_misses: c.misses.load(Relaxed),
            invalidation_misses_during: c.misses_during.load(Relaxed),
            invalidation_misses_flush: c.misses_flush.load(Relaxed),
            invalidation_misses_scan: c.misses_scan.load(Relaxed),
            invalidation_misses_1s: c.misses_1s.load(Relaxed),
            invalidation_misses_60s: c.misses_60s.load(Relaxed),
            model_errors: c.model_errors.load(Relaxed),
            jobs_with_model: c.jobs_with_model.load(Relaxed),
            alpha_ms_per_block: f.alpha_ms_per_block.unwrap_or(0.0),
            beta: f.beta.unwrap_or(0.0),
            rollbacks: c.rollbacks.load(Relaxed),
            rolled_back: self.rolled_back.load(Relaxed),
            model_evals: c.retired_evals.load(Relaxed) + ranges,
            inference_ns: c.retired_ns.load(Relaxed) + nanos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::LruBlockCache;
    use crate::table::block::BlockBuilder;
    use crate::types::{make_internal_key, ValueKind};

    /// Every key.
    const ALL: KeySpan<'static> = (&[], &[0xff; 16]);

    /// Keys `a..=b` (8-byte big-endian numbers) as one encoded block.
    fn block(a: u64, b: u64) -> Vec<u8> {
        let mut bb = BlockBuilder::default();
        for i in a..=b {
            bb.add(
                &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Value),
                b"v",
            );
        }
        bb.finish()
    }

    /// Hot ranges with scores: [0, 99] read 1x, [100, 199] 5x, [200, 299] 3x.
    struct Scored;

    impl HotRangeSource for Scored {
        fn hot_intervals(&self, _: Range<usize>, _span: (u64, u64)) -> Option<Vec<Interval>> {
            Some(vec![(0, 299)])
        }
        fn hot_scores(&self, _: Range<usize>, _span: (u64, u64)) -> Option<Vec<(Interval, f64)>> {
            Some(vec![((0, 99), 1.0), ((100, 199), 5.0), ((200, 299), 3.0)])
        }
        fn slot_ms(&self) -> u64 {
            1000
        }
        fn steps(&self) -> usize {
            4
        }
    }

    fn data(b: &[u8]) -> CacheValue {
        CacheValue::Data(Arc::new(Block::decode(b.to_vec(), "t").unwrap()))
    }

    /// Predicts no reads at all: every cached input block goes, nothing is warmed.
    struct Nothing;

    impl HotRangeSource for Nothing {
        fn hot_intervals(&self, _: Range<usize>, _span: (u64, u64)) -> Option<Vec<Interval>> {
            Some(Vec::new())
        }
        fn slot_ms(&self) -> u64 {
            1000
        }
        fn steps(&self) -> usize {
            4
        }
    }

    /// 40 cached blocks of table `file_no`, 10 keys each.
    fn cache_blocks(cache: &Arc<dyn BlockCache>, file_no: u64) {
        for i in 0..40u64 {
            let v = data(&block(i * 10, i * 10 + 9));
            let charge = v.data().unwrap().charge();
            let key = BlockKey {
                file_no: FileNo::new(file_no),
                offset: i * 4096,
            };
            cache.insert(key, v, charge);
        }
    }

    #[test]
    fn the_guardrail_stops_leaper_after_a_job_full_of_misses_until_a_model_loads() {
        let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(1 << 20, 1));
        let policy = PrefetchPolicy::Leaper(LeaperParams::default());
        let p = Prefetcher::new(policy, cache.clone(), 4096, 60_000, true, EngineClock::Wall);
        p.set_source(CfId::DEFAULT, Arc::new(Nothing));
        cache_blocks(&cache, 1);
        let job = p.compaction_begin(CfId::DEFAULT, &[(FileNo::new(1), 40 * 4096)], ALL);
        assert_eq!(
            p.stats().evicted_blocks,
            40,
            "phase one dropped every cold block"
        );
        p.compaction_outputs(&job, &[FileNo::new(2)]);
        p.compaction_installed(&job);
        p.compaction_end(job);
        // Every key of the 40 blocks read right after: 40 misses, the limit is 32.
        for i in 0..40u64 {
            p.note_read(&(i * 10).to_be_bytes(), FileNo::new(2), 1, 0, false);
            assert_eq!(p.stats().rolled_back, i >= 32, "after {} misses", i + 1);
        }
        assert_eq!(p.stats().rollbacks, 1);
        // Stopped: the next job evicts and warms nothing.
        cache_blocks(&cache, 3);
        let job = p.compaction_begin(CfId::DEFAULT, &[(FileNo::new(3), 40 * 4096)], ALL);
        assert!(job.warmer.is_none());
        assert_eq!(p.stats().evicted_blocks, 40);
        p.compaction_end(job);
        // A model loaded again: Leaper acts again.
        p.set_source(CfId::DEFAULT, Arc::new(Nothing));
        assert!(!p.stats().rolled_back);
        let job = p.compaction_begin(CfId::DEFAULT, &[(FileNo::new(3), 40 * 4096)], ALL);
        assert!(job.warmer.is_some());
        assert_eq!(p.stats().evicted_blocks, 80);
        p.compaction_end(job);
    }

    #[test]
    fn compaction_warming_waits_for_the_install_and_fills_the_room_best_first() {
        let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(1 << 20, 1));
        let p = Prefetcher::new(
            PrefetchPolicy::Oracle(Arc::new(Scored)),
            cache.clone(),
            4096,
            1000,
            false,
            EngineClock::Wall,
        );
        // Two cached blocks of input table 1, both hot (kept by phase one).
        let old = [block(0, 49), block(150, 199)];
        for (i, b) in old.iter().enumerate() {
            let key = BlockKey {
                file_no: FileNo::new(1),
                offset: i as u64 * 4096,
            };
            let v = data(b);
            let charge = v.data().unwrap().charge();
            cache.insert(key, v, charge);
        }
        let usage = cache.usage();
        let job = p.compaction_begin(CfId::DEFAULT, &[(FileNo::new(1), 8192)], ALL);
        let w = job.warmer.clone().expect("the oracle warms");
        // Output table 9: four blocks of the same size, scores 1, 5, 3 and none.
        let outs: [(u64, u64); 4] = [(0, 49), (150, 199), (200, 249), (400, 449)];
        for (i, &(a, b)) in outs.iter().enumerate() {
            let h = BlockHandle::new(i as u64 * 4096, 100);
            w.offer(
                FileNo::new(9),
                h,
                &a.to_be_bytes(),
                &b.to_be_bytes(),
                &block(a, b),
            );
        }
        let out_key = |i: u64| BlockKey {
            file_no: FileNo::new(9),
            offset: i * 4096,
        };
        for i in 0..4 {
            assert!(
                cache.lookup(&out_key(i)).is_none(),
                "block {i} cached before its table is installed"
            );
        }
        p.compaction_installed(&job);
        // Room for two: the two best (scores 5 and 3) took the input blocks' places.
        assert!(cache.lookup(&out_key(1)).is_some());
        assert!(cache.lookup(&out_key(2)).is_some());
        assert!(cache.lookup(&out_key(0)).is_none());
        assert!(cache.lookup(&out_key(3)).is_none());
        assert!(cache
            .cached_data_blocks(&HashSet::from([FileNo::new(1)]))
            .is_empty());
        assert_eq!(cache.usage(), usage, "warming did not grow the cache");
        assert_eq!(p.stats().warmed_blocks, 2);
        p.compaction_end(job);
    }
}
