//! AC-Key's read cache (paper section 4): a KV cache, a KP cache and a data-block cache
//! sharing one byte budget, ghosts included, with the paper's baselines (pure KV, pure KP,
//! a fixed split) behind the same type. The `Block` baseline is [`super::LruBlockCache`].
//!
//! * Point reads that miss the memtables ask [`ReadCache::lookup_point`]: a KV hit is the
//!   answer; a KP hit names the data block holding the key (file number and block number
//!   in the table), which the caller reads through the block cache and checks; a miss goes
//!   to the levels and [`ReadCache::admit`] caches what it found, in KP form the first time
//!   (a "warm" key) and in KV form after a ghost hit; a KP hit promotes the key to the KV
//!   cache ([`ReadCache::promote`]). Values no longer than a pointer stay in the KP entry.
//! * Sizes (AcKey): two E-ARC levels (section 4.3). The lower one moves the KV/KP target
//!   boundary inside the point cache on KV/KP ghost hits; the upper one moves the
//!   point/block boundary on point/block ghost hits. A hit on a ghost of efficiency E moves
//!   a boundary by `k * E` bytes. The point cache grows at the block cache's expense only
//!   once its target exceeds its size by a whole block. Within a component E-LRU picks the
//!   victim. Ghosts turn off while every hit ratio stays within theta (relative) between
//!   windows, after a minimum number of windows on. Initial targets: the whole budget to
//!   blocks (`initial_point_share` 0), as AC-Key starts from RocksDB's block cache.
//!   Fixed splits and the baselines have no targets to move.
//! * Staleness: an entry stands for the newest version of its key in the tables. Flushes
//!   bring newer versions: [`ReadCache::on_flush`] rewrites KV values and repoints (or
//!   drops) KP entries of flushed keys, and bumps a generation number; a reader admits what
//!   it found only if the generation did not move since before it took its super version
//!   (otherwise a flush may have overtaken it). Compactions move entries without changing
//!   the newest version: [`ReadCache::on_compaction`] repoints KP entries into the new
//!   files. Entries carry their sequence number; reads at an older snapshot bypass them.
//!
//! * Compaction also replaces each cached data block of its input tables by the output
//!   block overlapping it most ([`super::BlockReplacer`]), handed over by the table writers.
//!   Index and filter blocks are pinned in memory by each open table unless
//!   `Options::cache_index_and_filter_blocks` puts them in the block component, charged
//!   to the budget as AC-Key's RocksDB does; a KP hit then skips them as well as the
//!   levels above.
//!
//! Charges: a KV entry costs key + value bytes, a KP entry key + 24 bytes (the paper's
//! sizes, not allocator overhead), a block its decoded size; ghosts 4 bytes (fingerprint) or
//! 24 bytes (block handle), taken off the budget while ghosts are on.
//!
//! Choices the paper leaves open: E-LRU's `v` is E's coefficient of variation (see
//! `efficiency`); entries refused for want of room are recorded as ghosts too (so that a
//! component shrunk to nothing can grow back); a component may fill free space beyond its
//! target while the cache is not full; theta compares hit ratios between windows of
//! `ghost_window` lookups, relative to the larger of the two (ratios of 0 in both windows
//! have not moved).
//!
//! One mutex guards the whole cache: the components share a budget, so every insert may
//! evict from any of them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::component::Component;
use super::efficiency::{efficiency, EntryKind};
use super::ghost::{fingerprint, GhostList, BLOCK_GHOST_BYTES, FINGERPRINT_BYTES};
use super::{BlockCache, BlockKey, BlockReplacer, CacheStats, CacheValue};
use crate::events::OutputFile;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::memtable::Memtable;
use crate::options::{AcKeyParams, ReadCachePolicy};
use crate::stats::ReadCacheStats;
use crate::table::{Block, BlockHandle};
use crate::types::{make_lookup_key, parse_internal_key, ValueKind, MAX_SEQ};
use crate::vlog::ValuePointer;

/// Bytes a KP entry's pointer is charged (the paper's `<SstID|BlockOffset>`, 24 B).
pub const POINTER_BYTES: usize = 24;

/// Where a KP entry says its key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KpPointer {
    /// Table file number.
    pub file_no: FileNo,
    /// Where the data block is in the table: a hit reads it without the table's index
    /// (with `cache_index_and_filter_blocks`, that saves an index lookup, maybe a read).
    pub block: BlockHandle,
    /// Sequence number of the entry pointed to.
    pub seq: u64,
    /// Runs probed when the entry was found (for E).
    pub m: u32,
    /// With key-value separation, where the entry's value lives in the value log: a KP
    /// hit then reads the value directly, without the data block (AC-Key on WiscKey).
    /// Cleared when a flush or compaction repoints the entry (GC may have moved the value);
    /// the block path then finds the new pointer.
    pub value: Option<ValuePointer>,
}

/// What the point cache knows about a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PointLookup {
    /// The value (KV hit, or a KP entry holding a small value).
    Value(Vec<u8>),
    /// A KP hit: read this block.
    Pointer(KpPointer),
    /// Not cached (or only newer than the read); `ghost_hit` says a ghost remembered the
    /// key, so what is found should go to the KV cache.
    Miss {
        /// A KV, KP or point ghost held the key.
        ghost_hit: bool,
    },
}

struct KvVal {
    value: Vec<u8>,
    seq: u64,
    m: u32,
}

struct KpVal {
    ptr: KpPointer,
    inline: Option<Vec<u8>>,
}

/// Component sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Each component capped at its share (baselines: LRU, no ghosts).
    Fixed { kv: usize, kp: usize, block: usize },
    /// AC-Key.
    Adaptive(AcKeyParams),
}

#[derive(Default, Clone, Copy)]
struct Window {
    point_lookups: u64,
    kv_hits: u64,
    kp_hits: u64,
    block_lookups: u64,
    block_hits: u64,
}

impl Window {
    fn ratios(&self) -> [f64; 3] {
        let r = |h: u64, n: u64| if n == 0 { 0.0 } else { h as f64 / n as f64 };
        [
            r(self.kv_hits, self.point_lookups),
            r(self.kp_hits, self.point_lookups),
            r(self.block_hits, self.block_lookups),
        ]
    }
}

struct State {
    kv: Component<Vec<u8>, KvVal>,
    kp: Component<Vec<u8>, KpVal>,
    blocks: Component<BlockKey, CacheValue>,
    g_kv: GhostList<u32>,
    g_kp: GhostList<u32>,
    g_point: GhostList<u32>,
    g_block: GhostList<BlockKey>,
    /// Target bytes of the point (KV + KP) cache, out of the whole budget.
    point_target: f64,
    /// Target bytes of the KV cache (<= point_target).
    kv_target: f64,
    ghosts_on: bool,
    /// Windows closed since the ghosts last came on.
    windows_on: u32,
    window: Window,
    last_ratios: Option<[f64; 3]>,
    totals: ReadCacheStats,
    blocks_stats: CacheStats,
}

/// The KV + KP + block read cache (every policy but `Block`).
pub struct ReadCache {
    name: String,
    mode: Mode,
    capacity: usize,
    /// One block's size: the point cache takes space from blocks only in whole blocks.
    block_unit: usize,
    generation: AtomicU64,
    state: Mutex<State>,
}

fn point_key(cf: CfId, ukey: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + ukey.len());
    k.extend_from_slice(&cf.get().to_be_bytes());
    k.extend_from_slice(ukey);
    k
}

fn kv_charge(ukey_len: usize, value: &[u8]) -> usize {
    ukey_len + value.len()
}

fn kp_charge(ukey_len: usize) -> usize {
    ukey_len + POINTER_BYTES
}

fn kp_efficiency(v: &KpVal, charge: usize) -> f64 {
    // A KP entry holding its value saves what a KV entry saves.
    let kind = if v.inline.is_some() {
        EntryKind::Kv
    } else {
        EntryKind::Kp
    };
    efficiency(kind, v.ptr.m, charge)
}

impl ReadCache {
    /// A cache of `capacity` bytes for `policy` (not `Block`, which is the LRU block cache;
    /// given `Block`, this caches blocks only). `block_size` is the tables' block size.
    pub fn new(policy: ReadCachePolicy, capacity: usize, block_size: usize) -> ReadCache {
        let tenths = |t: u8| capacity / 10 * usize::from(t);
        let mode = match policy {
            ReadCachePolicy::Block => Mode::Fixed {
                kv: 0,
                kp: 0,
                block: capacity,
            },
            ReadCachePolicy::PureKv => Mode::Fixed {
                kv: capacity,
                kp: 0,
                block: 0,
            },
            ReadCachePolicy::PureKp => Mode::Fixed {
                kv: 0,
                kp: capacity,
                block: 0,
            },
            ReadCachePolicy::Fixed { kv, kp, block } => Mode::Fixed {
                kv: tenths(kv),
                kp: tenths(kp),
                block: tenths(block),
            },
            ReadCachePolicy::AcKey(p) => Mode::Adaptive(p),
        };
        let point = match mode {
            Mode::Adaptive(p) => capacity as f64 * p.initial_point_share,
            Mode::Fixed { .. } => 0.0,
        };
        ReadCache {
            name: policy.name(),
            mode,
            capacity,
            block_unit: block_size.max(1),
            generation: AtomicU64::new(0),
            state: Mutex::new(State {
                kv: Component::new(),
                kp: Component::new(),
                blocks: Component::new(),
                g_kv: GhostList::new(FINGERPRINT_BYTES),
                g_kp: GhostList::new(FINGERPRINT_BYTES),
                g_point: GhostList::new(FINGERPRINT_BYTES),
                g_block: GhostList::new(BLOCK_GHOST_BYTES),
                point_target: point,
                kv_target: point / 2.0,
                ghosts_on: matches!(mode, Mode::Adaptive(_)),
                windows_on: 0,
                window: Window::default(),
                last_ratios: None,
                totals: ReadCacheStats::default(),
                blocks_stats: CacheStats::default(),
            }),
        }
    }

    /// Taken by a reader before its super version; [`admit`](Self::admit) and
    /// [`promote`](Self::promote) do nothing if a flush moved it since.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn adaptive(&self) -> Option<AcKeyParams> {
        match self.mode {
            Mode::Adaptive(p) => Some(p),
            Mode::Fixed { .. } => None,
        }
    }

    fn kv_allowed(&self) -> bool {
        !matches!(self.mode, Mode::Fixed { kv: 0, .. })
    }

    fn kp_allowed(&self) -> bool {
        !matches!(self.mode, Mode::Fixed { kp: 0, .. })
    }

    /// The point cache's answer for `ukey` read at `seq`.
    pub fn lookup_point(&self, cf: CfId, ukey: &[u8], seq: u64) -> PointLookup {
        self.lookup_point_above(cf, ukey, seq, 0)
    }

    /// As [`lookup_point`](Self::lookup_point), taking no cached version older than
    /// `floor` (a range deletion the read sees covers the key at `floor`).
    pub fn lookup_point_above(&self, cf: CfId, ukey: &[u8], seq: u64, floor: u64) -> PointLookup {
        let k = point_key(cf, ukey);
        let mut st = self.state.lock();
        st.window.point_lookups += 1;
        if let Some(s) = st.kv.peek(&k) {
            if s.value.seq > seq || s.value.seq < floor {
                return PointLookup::Miss { ghost_hit: false }; // newer than the snapshot
            }
            let v = st
                .kv
                .get(&k)
                .map(|s| s.value.value.clone())
                .unwrap_or_default();
            st.window.kv_hits += 1;
            st.totals.kv_hits += 1;
            self.tick(&mut st);
            return PointLookup::Value(v);
        }
        if let Some(s) = st.kp.peek(&k) {
            if s.value.ptr.seq > seq || s.value.ptr.seq < floor {
                return PointLookup::Miss { ghost_hit: false };
            }
            let r = st.kp.get(&k).map(|s| match &s.value.inline {
                Some(v) => PointLookup::Value(v.clone()),
                None => PointLookup::Pointer(s.value.ptr),
            });
            if matches!(r, Some(PointLookup::Value(_))) {
                st.window.kp_hits += 1;
                st.totals.kp_hits += 1;
            } // a pointer counts once followed (`pointer_followed`)
            self.tick(&mut st);
            return r.unwrap_or(PointLookup::Miss { ghost_hit: false });
        }
        let ghost_hit = self.point_ghost_hit(&mut st, &k);
        self.tick(&mut st);
        PointLookup::Miss { ghost_hit }
    }

    /// Checks the lower-level ghosts, then the point ghost, moving targets (section 4.3).
    fn point_ghost_hit(&self, st: &mut State, k: &[u8]) -> bool {
        let Some(p) = self.adaptive() else {
            return false;
        };
        if !st.ghosts_on {
            return false;
        }
        let fp = fingerprint(k);
        let mut hit = false;
        if let Some(e) = st.g_kv.take(&fp) {
            st.kv_target = (st.kv_target + p.learning_rate * e).min(st.point_target);
            hit = true;
        }
        if let Some(e) = st.g_kp.take(&fp) {
            st.kv_target = (st.kv_target - p.learning_rate * e).max(0.0);
            hit = true;
        }
        if let Some(e) = st.g_point.take(&fp) {
            let old = st.point_target;
            let new = (old + p.learning_rate * e).min(self.capacity as f64);
            let share = if old > 0.0 { st.kv_target / old } else { 0.5 };
            st.kv_target = (st.kv_target + (new - old) * share).min(new);
            st.point_target = new;
            hit = true;
        }
        if hit {
            st.totals.ghost_hits += 1;
        }
        hit
    }

    /// Caches what a read found in the tables: `value` of the newest version (`seq`) of
    /// `ukey`, in the data block at `block` of table `file_no`, after probing `m` runs. In KV form
    /// after a ghost hit (or when there is no KP cache), in KP form otherwise. Does nothing
    /// if a flush ran since `generation` was taken.
    #[allow(clippy::too_many_arguments)]
    pub fn admit(
        &self,
        generation: u64,
        cf: CfId,
        ukey: &[u8],
        value: &[u8],
        seq: u64,
        m: u32,
        file_no: FileNo,
        block: BlockHandle,
        value_ptr: Option<ValuePointer>,
        ghost_hit: bool,
    ) {
        let mut st = self.state.lock();
        if self.generation() != generation {
            return;
        }
        let k = point_key(cf, ukey);
        if st.kv.contains(&k) || st.kp.contains(&k) {
            return; // another reader was first
        }
        let as_kv = (ghost_hit || !self.kp_allowed()) && self.kv_allowed();
        if as_kv {
            self.insert_kv(&mut st, k, ukey.len(), value.to_vec(), seq, m);
        } else if self.kp_allowed() {
            let inline = (value.len() <= POINTER_BYTES).then(|| value.to_vec());
            let ptr = KpPointer {
                file_no,
                block,
                seq,
                m,
                value: value_ptr,
            };
            self.insert_kp(&mut st, k, ukey.len(), KpVal { ptr, inline });
        }
    }

    /// After a KP hit was confirmed: moves the key to the KV cache with its value (Case
    /// II of section 4.1.1), unless there is no KV cache or a flush ran since `generation`.
    pub fn promote(&self, generation: u64, cf: CfId, ukey: &[u8], value: &[u8], ptr: KpPointer) {
        if !self.kv_allowed() {
            return;
        }
        let mut st = self.state.lock();
        if self.generation() != generation {
            return;
        }
        let k = point_key(cf, ukey);
        if st.kp.peek(&k).map(|s| s.value.ptr) != Some(ptr) {
            return;
        }
        st.kp.remove(&k);
        self.insert_kv(&mut st, k, ukey.len(), value.to_vec(), ptr.seq, ptr.m);
    }

    /// Counts a KP hit whose pointer led to the entry.
    pub fn pointer_followed(&self) {
        let mut st = self.state.lock();
        st.window.kp_hits += 1;
        st.totals.kp_hits += 1;
    }

    /// Drops a KP entry whose pointer could not be followed (its table was compacted away
    /// before the entry was repointed).
    pub fn forget_pointer(&self, cf: CfId, ukey: &[u8], ptr: KpPointer) {
        let mut st = self.state.lock();
        let k = point_key(cf, ukey);
        if st.kp.peek(&k).map(|s| s.value.ptr) == Some(ptr) {
            st.kp.remove(&k);
        }
    }

    fn insert_kv(&self, st: &mut State, k: Vec<u8>, klen: usize, value: Vec<u8>, seq: u64, m: u32) {
        let charge = kv_charge(klen, &value);
        let e = efficiency(EntryKind::Kv, m, charge);
        if self.make_room(st, EntryKind::Kv, charge) {
            st.kv.insert(k, KvVal { value, seq, m }, charge, e);
        } else {
            self.ghost_point(st, EntryKind::Kv, &k, charge, e);
        }
    }

    fn insert_kp(&self, st: &mut State, k: Vec<u8>, klen: usize, v: KpVal) {
        let charge = kp_charge(klen);
        let e = kp_efficiency(&v, charge);
        if self.make_room(st, EntryKind::Kp, charge) {
            st.kp.insert(k, v, charge, e);
        } else {
            self.ghost_point(st, EntryKind::Kp, &k, charge, e);
        }
    }

    /// Sizes, targets and hits (every field filled).
    pub fn read_cache_stats(&self) -> ReadCacheStats {
        let st = self.state.lock();
        let (point_t, kv_t) = match self.mode {
            Mode::Fixed { kv, kp, .. } => ((kv + kp) as f64, kv as f64),
            Mode::Adaptive(_) => {
                let (p, k, _) = self.targets(&st);
                (p, k)
            }
        };
        ReadCacheStats {
            policy: self.name.clone(),
            capacity: self.capacity as u64,
            kv_bytes: st.kv.bytes() as u64,
            kp_bytes: st.kp.bytes() as u64,
            block_bytes: st.blocks.bytes() as u64,
            ghost_bytes: (st.g_kv.charged()
                + st.g_kp.charged()
                + st.g_point.charged()
                + st.g_block.charged()) as u64,
            kv_entries: st.kv.len() as u64,
            kp_entries: st.kp.len() as u64,
            point_target_bytes: point_t as u64,
            kv_target_bytes: kv_t as u64,
            kv_hits: st.totals.kv_hits,
            kp_hits: st.totals.kp_hits,
            block_hits: st.blocks_stats.hits,
            block_misses: st.blocks_stats.misses,
            ghost_hits: st.totals.ghost_hits,
            block_replacements: st.totals.block_replacements,
        }
    }

    /// Whether the ghost caches are on now.
    pub fn ghosts_on(&self) -> bool {
        self.state.lock().ghosts_on
    }
}

impl BlockCache for ReadCache {
    fn lookup(&self, key: &BlockKey) -> Option<CacheValue> {
        let mut st = self.state.lock();
        st.window.block_lookups += 1;
        if let Some(s) = st.blocks.get(key) {
            let b = s.value.clone();
            let kind = b.kind();
            st.window.block_hits += 1;
            st.blocks_stats.hits += 1;
            st.blocks_stats.by_kind[kind.index()].hits += 1;
            self.tick(&mut st);
            return Some(b);
        }
        st.blocks_stats.misses += 1;
        if let Some(p) = self.adaptive() {
            if st.ghosts_on {
                if let Some(e) = st.g_block.take(key) {
                    // The block cache should have been larger: shrink the point target,
                    // spreading the change over KV and KP by their target shares.
                    let old = st.point_target;
                    let new = (old - p.learning_rate * e).max(0.0);
                    st.kv_target = if old > 0.0 {
                        st.kv_target * new / old
                    } else {
                        0.0
                    };
                    st.point_target = new;
                    st.totals.ghost_hits += 1;
                }
            }
        }
        self.tick(&mut st);
        None
    }

    fn insert(&self, key: BlockKey, value: CacheValue, charge: usize) {
        let kind = value.kind();
        let mut st = self.state.lock();
        st.blocks.remove(&key);
        let e = efficiency(EntryKind::Block, 0, charge);
        if self.make_room(&mut st, EntryKind::Block, charge) {
            st.blocks.insert(key, value, charge, e);
            st.blocks_stats.inserts += 1;
            st.blocks_stats.by_kind[kind.index()].inserts += 1;
        } else {
            st.blocks_stats.rejected += 1;
            if self.adaptive().is_some() && st.ghosts_on {
                st.g_block.add(key, charge, e);
                self.trim_ghosts(&mut st);
            }
        }
    }

    fn erase(&self, key: &BlockKey) {
        self.state.lock().blocks.remove(key);
    }

    fn erase_file(&self, file_no: FileNo) {
        let mut st = self.state.lock();
        for k in st.blocks.keys() {
            if k.file_no == file_no {
                st.blocks.remove(&k);
            }
        }
    }

    fn usage(&self) -> usize {
        let st = self.state.lock();
        Self::used(&st)
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn cached_data_blocks(&self, files: &HashSet<FileNo>) -> Vec<(BlockKey, Arc<Block>)> {
        let st = self.state.lock();
        st.blocks
            .keys()
            .into_iter()
            .filter(|k| files.contains(&k.file_no))
            .filter_map(|k| {
                let s = st.blocks.peek(&k)?;
                Some((k, s.value.data()?.clone()))
            })
            .collect()
    }

    fn stats(&self) -> CacheStats {
        self.state.lock().blocks_stats
    }
}

#[cfg(test)]
impl ReadCache {
    fn set_targets(&self, point: f64, kv: f64) {
        let mut st = self.state.lock();
        st.point_target = point;
        st.kv_target = kv;
    }

    fn raw_targets(&self) -> (f64, f64) {
        let st = self.state.lock();
        (st.point_target, st.kv_target)
    }
}

mod repoint;
mod sizing;
#[cfg(test)]
mod tests;
