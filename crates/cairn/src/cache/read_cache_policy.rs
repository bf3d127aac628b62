//! AC-Key's seam option: how the read cache's budget is split between key-value,
//! key-pointer and data-block entries ([`ReadCachePolicy`], `Options::read_cache`), and
//! AC-Key's own parameters.

use crate::{Error, Result};

/// How the read cache's byte budget
/// ([`Options::block_cache_bytes`](crate::options::Options::block_cache_bytes)) is split
/// between a key-value (KV) cache, a key-pointer (KP) cache and the data-block cache
/// (AC-Key, see `cache::read_cache`). Index and filter blocks are pinned by their tables in cairn, not
/// cached, so "block" here means data blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ReadCachePolicy {
    /// All of the budget to one sharded LRU block cache (RocksDB's default; cairn's
    /// behaviour before AC-Key).
    #[default]
    Block,
    /// All of the budget to a KV cache: point reads that hit return with no table access;
    /// scans and misses read blocks from storage.
    PureKv,
    /// All of the budget to a KP cache: a hit skips the filters and indexes of the runs and
    /// reads the one data block it points to.
    PureKp,
    /// A fixed split in tenths of the budget (`kv + kp + block == 10`), the paper's
    /// `offline` baseline when swept.
    Fixed {
        /// Tenths for the KV cache.
        kv: u8,
        /// Tenths for the KP cache.
        kp: u8,
        /// Tenths for the block cache.
        block: u8,
    },
    /// AC-Key: the three components adapt their sizes (E-ARC at two levels with ghost
    /// caches) and evict by caching efficiency (E-LRU).
    AcKey(AcKeyParams),
}

/// Parameters of [`ReadCachePolicy::AcKey`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AcKeyParams {
    /// Learning rate k: a ghost hit on an entry of caching efficiency E (saved I/Os per
    /// byte) moves a target boundary by `k * E` bytes. The paper's default is 100K; with E
    /// per byte, one ghost hit on a 116-byte KV entry that saves 7 I/Os moves the boundary
    /// by ~6 KB and one on a 4 KiB block by ~24 bytes.
    pub learning_rate: f64,
    /// Ghost turn-off threshold theta: ghosts are dropped (their bytes given back to the
    /// real caches) once every component's hit ratio moved by less than this fraction of
    /// itself between two windows (relative, so that ratios of a few percent are judged
    /// by their own scale), and come back when one moves by more.
    pub ghost_threshold: f64,
    /// Lookups per window over which hit ratios are compared.
    pub ghost_window: u64,
    /// Windows the ghosts stay on after they come on (and after the cache starts), before
    /// settled ratios may turn them off: the targets get time to move.
    pub ghost_min_windows: u32,
    /// Share of the budget the point (KV + KP) cache's target starts with, half of it KV.
    /// 0, the default, starts with the whole budget in blocks (AC-Key grows from RocksDB's
    /// block cache); the point cache then grows from ghost hits.
    pub initial_point_share: f64,
    /// Cap on E-LRU's `a` (entries examined at the LRU end per eviction).
    pub max_eviction_candidates: u32,
}

impl Default for AcKeyParams {
    fn default() -> Self {
        AcKeyParams {
            learning_rate: 100_000.0,
            ghost_threshold: 0.05,
            ghost_window: 10_000,
            ghost_min_windows: 4,
            initial_point_share: 0.0,
            max_eviction_candidates: 16,
        }
    }
}

impl ReadCachePolicy {
    /// The name the bench and stats use (`block`, `pure-kv`, `pure-kp`, `fixed-X-Y-Z`,
    /// `ac-key`).
    pub fn name(&self) -> String {
        match self {
            ReadCachePolicy::Block => "block".into(),
            ReadCachePolicy::PureKv => "pure-kv".into(),
            ReadCachePolicy::PureKp => "pure-kp".into(),
            ReadCachePolicy::Fixed { kv, kp, block } => format!("fixed-{kv}-{kp}-{block}"),
            ReadCachePolicy::AcKey(_) => "ac-key".into(),
        }
    }

    /// Checks the policy's parameters.
    pub fn validate(&self) -> Result<()> {
        match *self {
            ReadCachePolicy::Fixed { kv, kp, block }
                if u32::from(kv) + u32::from(kp) + u32::from(block) != 10 =>
            {
                return invalid(format!(
                    "fixed read-cache split {kv}+{kp}+{block} does not sum to 10 tenths"
                ));
            }
            ReadCachePolicy::AcKey(p) => {
                if !(p.learning_rate.is_finite() && p.learning_rate >= 0.0) {
                    return invalid("AC-Key learning rate must be a finite number >= 0".into());
                }
                if !(p.ghost_threshold.is_finite() && (0.0..=1.0).contains(&p.ghost_threshold)) {
                    return invalid("AC-Key ghost threshold must be in 0..=1".into());
                }
                if p.ghost_window == 0 {
                    return invalid("AC-Key ghost window must be positive".into());
                }
                if !(p.initial_point_share.is_finite()
                    && (0.0..=1.0).contains(&p.initial_point_share))
                {
                    return invalid("AC-Key initial point share must be in 0..=1".into());
                }
                if !(1..=1024).contains(&p.max_eviction_candidates) {
                    return invalid("AC-Key max_eviction_candidates must be in 1..=1024".into());
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn invalid<T>(msg: String) -> Result<T> {
    Err(Error::InvalidArgument(msg))
}
