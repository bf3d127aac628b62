//! Leaper's collector (§5.1): read and write counts per key range and time slot.
//!
//! A key maps to a number (8 bytes at `key_offset`, big-endian) and the number to a range
//! (`number / range_width`). Each range's counters are created on its first access
//! (lazy initialisation behind double-checked locking: a shared lock to look up, the
//! exclusive lock only to insert, checking again under it) and updated with atomics, so no
//! request takes a global mutex. In each (range, slot) cell the first access is always
//! counted and every later one with probability P, so eq. 1 (`N = (S - 1) / P + 1`)
//! estimates the true count from the sampled one.
//!
//! Each range keeps a ring of [`RING`] slots. Slots that have ended are folded into the
//! trace (rows of range, slot, sampled reads and writes) by [`RangeCollector::fold`],
//! which a background thread calls; a request that finds its ring about to wrap over an
//! unfolded slot (a clock that jumped) folds first. Features for prediction read the
//! last complete slots from the ring directly.
//!
//! The first access of a range in a slot (the one that moves its cell to the slot) also
//! notes the range in that slot's list of touched ranges, so the fold and the features
//! visit only the ranges read or written in the slots they read, not every range ever
//! seen (with 100 ms slots that walk cost more than the models' inference).

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::clock::Clock;
use super::trace::{TraceHeader, TraceRow, TransferRow};
use super::AccessOptions;
use crate::ids::CfId;

/// Slots a range remembers: the 6 of the features, the current one and one being folded.
pub const RING: usize = 8;
/// Accesses in a thread's recent history for Algorithm 2's transfers (gamma).
pub const GAMMA: usize = 3;
const SHARDS: usize = 16;
const NO_SLOT: u64 = u64::MAX;

/// A multiplicative hash for range ids (SipHash costs more than the rest of a request).
#[derive(Default, Clone, Copy)]
struct RangeHasher(u64);

impl std::hash::Hasher for RangeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<RangeHasher>>;

/// The counts of one range in one slot.
struct SlotCell {
    slot: AtomicU64,
    reads: AtomicU32,
    writes: AtomicU32,
}

impl SlotCell {
    fn new() -> Self {
        SlotCell {
            slot: AtomicU64::new(NO_SLOT),
            reads: AtomicU32::new(0),
            writes: AtomicU32::new(0),
        }
    }
}

struct RangeCounters {
    cells: [SlotCell; RING],
}

impl RangeCounters {
    fn new() -> Self {
        RangeCounters {
            cells: std::array::from_fn(|_| SlotCell::new()),
        }
    }

    /// The cell of `slot`, reset if it still holds an older slot, and whether this call
    /// moved it to `slot` (the range's first access in the slot: exactly one call per
    /// range and slot does). Two threads may race on the reset; the loser's increment can
    /// be lost, which sampling already tolerates.
    fn cell(&self, slot: u64) -> (&SlotCell, bool) {
        let c = &self.cells[(slot % RING as u64) as usize];
        let cur = c.slot.load(Ordering::Acquire);
        let moved = cur != slot
            && c.slot
                .compare_exchange(cur, slot, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        if moved {
            c.reads.store(0, Ordering::Relaxed);
            c.writes.store(0, Ordering::Relaxed);
        }
        (c, moved)
    }

    /// Sampled (reads, writes) of `slot`, if the ring still holds it.
    fn counts(&self, slot: u64) -> (u32, u32) {
        let c = &self.cells[(slot % RING as u64) as usize];
        if c.slot.load(Ordering::Acquire) != slot {
            return (0, 0);
        }
        (
            c.reads.load(Ordering::Relaxed),
            c.writes.load(Ordering::Relaxed),
        )
    }
}

/// The ranges first accessed in one slot (a ring entry, reused RING slots later).
struct Touched {
    slot: u64,
    ranges: Vec<u64>,
}

/// Per ring position, the ranges touched in the slot it holds.
struct TouchedRing([Mutex<Touched>; RING]);

impl TouchedRing {
    fn new() -> Self {
        TouchedRing(std::array::from_fn(|_| {
            Mutex::new(Touched {
                slot: NO_SLOT,
                ranges: Vec::new(),
            })
        }))
    }

    /// Notes `range`'s first access in `slot`.
    fn note(&self, slot: u64, range: u64) {
        let mut t = self.0[(slot % RING as u64) as usize].lock();
        if t.slot != slot {
            // A slot RING later than the one held: that one was folded before the ring
            // could wrap (`record_range` folds first).
            t.slot = slot;
            t.ranges.clear();
        }
        t.ranges.push(range);
    }

    /// Appends the ranges touched in `slot` (if the ring still holds it) to `out`.
    fn ranges_of(&self, slot: u64, out: &mut Vec<u64>) {
        let t = self.0[(slot % RING as u64) as usize].lock();
        if t.slot == slot {
            out.extend_from_slice(&t.ranges);
        }
    }
}

/// Whether an access is a read or a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A point read, or a range query touching the range.
    Read,
    /// A put or delete.
    Write,
}

thread_local! {
    /// xorshift state for sampling (per thread: no shared cache line).
    static RNG: Cell<u64> = Cell::new(THREAD_SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) | 1);
    /// The thread's last GAMMA ranges, newest first, tagged with the collector's id.
    static RECENT: Cell<(u64, [u64; GAMMA])> = const { Cell::new((0, [u64::MAX; GAMMA])) };
}

static THREAD_SEEDS: AtomicU64 = AtomicU64::new(0x2545_f491_4f6c_dd1d);

fn next_random() -> u64 {
    RNG.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Per-range access counters of one column family.
pub struct RangeCollector {
    id: u64,
    cf_id: CfId,
    opts: AccessOptions,
    clock: Arc<dyn Clock>,
    start_ms: u64,
    /// Sampling threshold on a 64-bit random number (P * 2^64).
    sample_below: u64,
    shards: Vec<RwLock<FastMap<u64, Arc<RangeCounters>>>>,
    touched: TouchedRing,
    /// Slots below this are in the trace.
    folded_to: AtomicU64,
    fold_lock: Mutex<()>,
    rows: Mutex<VecDeque<TraceRow>>,
    /// T[to][from], sharded by `to` so that threads rarely meet on one lock.
    transfers: Vec<Mutex<FastMap<(u64, u64), u32>>>,
}

impl std::fmt::Debug for RangeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeCollector")
            .field("cf_id", &self.cf_id)
            .field("ranges", &self.num_ranges())
            .finish_non_exhaustive()
    }
}

impl RangeCollector {
    /// A collector for column family `cf_id`; slot 0 starts now.
    pub fn new(cf_id: CfId, opts: AccessOptions) -> Self {
        let clock = opts.clock.clone();
        let start_ms = clock.now_ms();
        let p = opts.sample_p.clamp(0.0, 1.0);
        RangeCollector {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            cf_id,
            sample_below: if p >= 1.0 {
                u64::MAX
            } else {
                (p * u64::MAX as f64) as u64
            },
            opts,
            clock,
            start_ms,
            shards: (0..SHARDS)
                .map(|_| RwLock::new(FastMap::default()))
                .collect(),
            touched: TouchedRing::new(),
            folded_to: AtomicU64::new(0),
            fold_lock: Mutex::new(()),
            rows: Mutex::new(VecDeque::new()),
            transfers: (0..SHARDS)
                .map(|_| Mutex::new(FastMap::default()))
                .collect(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &AccessOptions {
        &self.opts
    }

    /// The range of a user key.
    pub fn range_of(&self, key: &[u8]) -> u64 {
        key_number(key, self.opts.key_offset) / self.opts.range_width
    }

    /// The current slot.
    pub fn current_slot(&self) -> u64 {
        self.clock.now_ms().saturating_sub(self.start_ms) / self.opts.slot_ms
    }

    /// Wall-clock time (ms since the epoch) at which `slot` ends.
    pub fn slot_end_ms(&self, slot: u64) -> u64 {
        self.start_ms + (slot + 1) * self.opts.slot_ms
    }

    /// Runs `f` on the counters of `range`, creating them on first use. The shared lock
    /// is held while `f` runs, so no reference count is touched on the request path.
    fn with_counters<R>(&self, range: u64, f: impl Fn(&RangeCounters) -> R) -> R {
        let shard = &self.shards[(range as usize) % SHARDS];
        if let Some(c) = shard.read().get(&range) {
            return f(c);
        }
        let mut w = shard.write();
        f(w.entry(range)
            .or_insert_with(|| Arc::new(RangeCounters::new())))
    }

    /// Records one access to the range of `key`.
    pub fn record(&self, key: &[u8], kind: Access) {
        self.record_range(self.range_of(key), kind);
    }

    /// Records one access to `range`.
    pub fn record_range(&self, range: u64, kind: Access) {
        let slot = self.current_slot();
        if slot >= self.folded_to.load(Ordering::Relaxed) + RING as u64 - 1 {
            self.fold(); // the ring would wrap over slots not yet in the trace
        }
        let sample_below = self.sample_below;
        let (sampled, first) = self.with_counters(range, |counters| {
            let (cell, first) = counters.cell(slot);
            let counter = match kind {
                Access::Read => &cell.reads,
                Access::Write => &cell.writes,
            };
            // The first access of a cell always counts (eq. 1's "+ 1").
            let sampled = counter.load(Ordering::Relaxed) == 0 || next_random() <= sample_below;
            if sampled {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            (sampled, first)
        });
        if first {
            self.touched.note(slot, range);
        }
        if sampled {
            let every = self.opts.transfer_sample.max(1);
            self.note_transfer(range, every == 1 || next_random().is_multiple_of(every));
        }
    }

    /// Algorithm 2's input: the thread's sampled accesses in order; one in
    /// `transfer_sample` adds one to T[to][from] for the GAMMA distinct ranges before it.
    fn note_transfer(&self, to: u64, count: bool) {
        let recent = RECENT.with(|r| {
            let (owner, mut last) = r.get();
            if owner != self.id {
                last = [u64::MAX; GAMMA];
            }
            let before = last;
            if last[0] != to {
                last.rotate_right(1);
                last[0] = to;
            }
            r.set((self.id, last));
            before
        });
        if !count || recent[0] == to || recent[0] == u64::MAX {
            return;
        }
        let mut t = self.transfers[(to as usize) % SHARDS].lock();
        let cap = self.opts.max_transfer_pairs / SHARDS;
        for from in recent.into_iter().filter(|&f| f != u64::MAX && f != to) {
            let n = t.len();
            if let Some(c) = t.get_mut(&(to, from)) {
                *c = c.saturating_add(1);
            } else if n < cap {
                t.insert((to, from), 1);
            }
        }
    }

    /// Sampled (reads, writes) of `range` in each of the `n` slots before the current one,
    /// most recent first (at most RING - 2 slots are kept).
    pub fn history(&self, range: u64, n: usize) -> Vec<(u32, u32)> {
        let now = self.current_slot();
        let shard = &self.shards[(range as usize) % SHARDS];
        let Some(c) = shard.read().get(&range).cloned() else {
            return vec![(0, 0); n];
        };
        (1..=n as u64)
            .map(|back| now.checked_sub(back).map_or((0, 0), |s| c.counts(s)))
            .collect()
    }

    /// Every range accessed in the `n` slots before the current one, ascending, with its
    /// sampled (reads, writes) in each of them, most recent first.
    pub fn all_history(&self, n: usize) -> Vec<(u64, Vec<(u32, u32)>)> {
        let now = self.current_slot();
        // Older slots than the ring holds read as zero.
        let kept = n.min(RING);
        let mut h = [(0u32, 0u32); RING];
        let mut out = Vec::new();
        for (range, c) in self.touched_in(now.saturating_sub(kept as u64)..now) {
            let mut any = false;
            for (back, cell) in (1..=kept as u64).zip(h.iter_mut()) {
                *cell = now.checked_sub(back).map_or((0, 0), |s| c.counts(s));
                any |= cell.0 > 0 || cell.1 > 0;
            }
            if any {
                let mut v = h[..kept].to_vec();
                v.resize(n, (0, 0));
                out.push((range, v));
            }
        }
        out
    }

    /// The ranges first accessed in one of `slots`, ascending and each once, with their
    /// counters.
    fn touched_in(&self, slots: std::ops::Range<u64>) -> Vec<(u64, Arc<RangeCounters>)> {
        let mut ranges = Vec::new();
        for slot in slots {
            self.touched.ranges_of(slot, &mut ranges);
        }
        ranges.sort_unstable();
        ranges.dedup();
        ranges
            .into_iter()
            .filter_map(|r| {
                let c = self.shards[(r as usize) % SHARDS].read().get(&r).cloned()?;
                Some((r, c))
            })
            .collect()
    }

    /// Ranges seen so far.
    pub fn num_ranges(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }

    /// Moves every ended slot's non-zero counts into the trace. Cheap when no slot ended.
    pub fn fold(&self) {
        let now = self.current_slot();
        if self.folded_to.load(Ordering::Acquire) >= now {
            return;
        }
        let _g = self.fold_lock.lock();
        let from = self.folded_to.load(Ordering::Acquire);
        if from >= now {
            return;
        }
        // Slots older than the ring are gone (the clock jumped past them unobserved).
        let from = from.max(now.saturating_sub(RING as u64 - 1));
        let mut new_rows = Vec::new();
        for (range, c) in self.touched_in(from..now) {
            for slot in from..now {
                let (reads, writes) = c.counts(slot);
                if reads > 0 || writes > 0 {
                    new_rows.push(TraceRow {
                        range,
                        slot,
                        reads,
                        writes,
                    });
                }
            }
        }
        new_rows.sort_unstable_by_key(|r| (r.slot, r.range));
        let mut rows = self.rows.lock();
        rows.extend(new_rows);
        while rows.len() > self.opts.max_trace_rows {
            rows.pop_front(); // the oldest slots go first
        }
        drop(rows);
        self.folded_to.store(now, Ordering::Release);
    }

    /// The trace so far (ended slots only): header, rows sorted by (slot, range), and the
    /// transfer counts.
    pub fn trace(&self) -> (TraceHeader, Vec<TraceRow>, Vec<TransferRow>) {
        self.fold();
        let rows: Vec<TraceRow> = self.rows.lock().iter().copied().collect();
        let mut transfers: Vec<TransferRow> = self
            .transfers
            .iter()
            .flat_map(|shard| {
                shard
                    .lock()
                    .iter()
                    .map(|(&(to, from), &count)| TransferRow { to, from, count })
                    .collect::<Vec<_>>()
            })
            .collect();
        transfers.sort_unstable_by_key(|t| (t.to, t.from));
        let header = TraceHeader {
            cf_id: self.cf_id,
            key_offset: self.opts.key_offset as u32,
            range_width: self.opts.range_width,
            slot_ms: self.opts.slot_ms,
            sample_p: self.opts.sample_p,
            start_unix_ms: self.start_ms,
        };
        (header, rows, transfers)
    }
}

/// The number of a key: 8 bytes from `offset`, big-endian, zero-padded.
pub fn key_number(key: &[u8], offset: usize) -> u64 {
    let tail = key.get(offset..).unwrap_or(&[]);
    crate::learned::key_to_u64(tail)
}

/// Eq. 1: the estimated count of a cell from its sampled count `s`.
pub fn estimate(s: u32, p: f64) -> f64 {
    if s == 0 {
        0.0
    } else {
        (f64::from(s) - 1.0) / p + 1.0
    }
}
