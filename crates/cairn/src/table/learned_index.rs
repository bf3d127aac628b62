//! Bourbon's learned index of one table: a [`Plr`] model from key numbers to table
//! positions (ordinals), used by [`Table::get`](super::Table::get) in place of the fence
//! pointers when [`IndexPolicy::Learned`](crate::options::IndexPolicy) is set.
//!
//! Lookup of an internal key `k` (user key `u`):
//! 1. `x` = the number of `u` in the table's [`KeySpace`] (8 bytes after the keys' common
//!    prefix); outside the trained domain → fall back.
//! 2. predict position `p`; the window is `[p - delta, p + delta]` clamped to `[0, n)`.
//! 3. map the window to data blocks ([`FenceIndex::block_for_ordinal`]); when it spans
//!    blocks, pick the one that holds the answer (the first entry with internal key >= `k`)
//!    by their last keys (in memory), starting from the block of `p`; read that block and
//!    binary search the window's part of it (neighbours are read only if the block's
//!    contents contradict the fence keys). A get on a fixed-width block that is not cached
//!    reads only the chunks holding the window's part (Bourbon's read of the predicted
//!    entries); a seek reads the whole block, which its iterator walks on.
//! 4. check that the answer lies inside the window: the entry before the window is < `k`
//!    (or the window starts at 0), and some window entry is >= `k` (or the window ends the
//!    table). If not (the prediction cannot be trusted, e.g. user keys colliding in their
//!    8 numbered bytes, or a run of equal keys longer than `2 * delta + 1`) → fall back.
//!
//! The answer is a position (block and entry), so a table iterator's seek takes the same
//! path as a get.
//!
//! A fallback is the baseline fence-pointer path, so the learned path never answers
//! differently from the baseline; only the blocks it reads can differ.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::block::{Block, KeyRef};
use super::index::FenceIndex;
use crate::learned::{KeySpace, Plr, PlrBuilder};
use crate::types::{cmp_internal, user_key};
use crate::Result;

/// Where an entry lies: data block `block_no` (`block`, as read) and its entry `pos`.
#[derive(Clone, Debug)]
pub struct Position {
    /// The data block's number in the table.
    pub block_no: usize,
    /// The block.
    pub block: Arc<Block>,
    /// The entry's index in the block.
    pub pos: usize,
}

impl Position {
    /// The entry's (internal key, value), copied out.
    pub fn to_entry(&self) -> (Vec<u8>, Vec<u8>) {
        let (k, v) = self.block.entry(self.pos);
        (k.to_vec(), v.to_vec())
    }
}

/// What a learned lookup found.
#[derive(Debug)]
pub enum LearnedLookup {
    /// The answer: where the first entry with internal key >= the lookup key lies, `None`
    /// if every entry is smaller. (A get checks the user key, as on the baseline path.)
    Found(Option<Position>),
    /// The model cannot answer; use the fence pointers.
    Fallback,
}

/// One data block's part of a lookup window.
struct Piece {
    block: Arc<Block>,
    /// The window's entries in the block: `[from, to)`.
    from: usize,
    to: usize,
    /// The first of them whose key is >= the lookup key (`to` if none).
    l: usize,
    /// `from` is the window's first entry.
    starts_window: bool,
}

/// The first entry of `block` in `[from, to)` (`from <= guess < to`) whose key is not
/// `below` (`to` if none), probing the guess and its neighbour first: with an exact or
/// off-by-one prediction that is two key reads, adjacent in memory, instead of a binary
/// search's ~log2(2 * delta) reads spread over the block.
fn search_from(
    block: &Block,
    from: usize,
    to: usize,
    guess: usize,
    below: impl Fn(KeyRef<'_>) -> bool,
) -> usize {
    let (mut l, mut h) = if below(block.key(guess)) {
        if guess + 1 == to || !below(block.key(guess + 1)) {
            return guess + 1;
        }
        (guess + 2, to)
    } else {
        if guess == from || below(block.key(guess - 1)) {
            return guess;
        }
        (from, guess - 1)
    };
    while l < h {
        let mid = l + (h - l) / 2;
        if below(block.key(mid)) {
            l = mid + 1;
        } else {
            h = mid;
        }
    }
    l
}

/// A trained model of one table plus its counters.
#[derive(Debug)]
pub struct LearnedIndex {
    plr: Plr,
    space: KeySpace,
    num_entries: u64,
    lookups: AtomicU64,
    fallbacks: AtomicU64,
}

impl LearnedIndex {
    /// Trains on the user keys of a table's entries in order (entry `i` at position `i`),
    /// numbered in the key space they span.
    pub fn train(user_keys: &[&[u8]], delta: u32) -> Self {
        let space = match (user_keys.first(), user_keys.last()) {
            (Some(a), Some(b)) => KeySpace::spanning(a, b),
            _ => KeySpace::default(),
        };
        let mut b = PlrBuilder::new(delta);
        for (n, k) in user_keys.iter().enumerate() {
            let x = space.number(k).expect("sorted keys share the ends' prefix");
            b.add(x, n as u64);
        }
        Self::from_plr(b.finish(), space, user_keys.len() as u64)
    }

    /// An index from a given model over `space` of a table of `num_entries` entries.
    pub fn from_plr(plr: Plr, space: KeySpace, num_entries: u64) -> Self {
        LearnedIndex {
            plr,
            space,
            num_entries,
            lookups: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// The model.
    pub fn plr(&self) -> &Plr {
        &self.plr
    }

    /// How keys are numbered for the model.
    pub fn space(&self) -> &KeySpace {
        &self.space
    }

    /// Number of segments of the model.
    pub fn num_segments(&self) -> usize {
        self.plr.segments().len()
    }

    /// Entries the model was trained on.
    pub fn num_entries(&self) -> u64 {
        self.num_entries
    }

    /// Lookups answered by the model (fallbacks not counted).
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Relaxed)
    }

    /// Lookups that fell back to the fence pointers.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Relaxed)
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        self.plr.memory() + self.space.memory() + std::mem::size_of::<Self>()
    }

    /// The ordinal window `[lo, hi]` predicted for `lookup_ikey`, or `None` outside the
    /// trained domain.
    pub fn window(&self, lookup_ikey: &[u8]) -> Option<(u64, u64)> {
        self.predict(lookup_ikey).map(|(lo, _, hi)| (lo, hi))
    }

    /// Finds where the first entry >= `lookup_ikey` lies through the model, reading data
    /// blocks with `read` (block number and the entries of it the lookup will look at ->
    /// the block, or for a fixed-width block possibly just the chunks holding those
    /// entries). Counts the lookup or the fallback.
    pub fn lookup(
        &self,
        fence: &FenceIndex,
        lookup_ikey: &[u8],
        mut read: impl FnMut(usize, Range<usize>) -> Result<Arc<Block>>,
    ) -> Result<LearnedLookup> {
        let r = self.lookup_inner(fence, lookup_ikey, &mut read)?;
        match r {
            LearnedLookup::Found(_) => self.lookups.fetch_add(1, Relaxed),
            LearnedLookup::Fallback => self.fallbacks.fetch_add(1, Relaxed),
        };
        Ok(r)
    }

    fn lookup_inner(
        &self,
        fence: &FenceIndex,
        lookup_ikey: &[u8],
        read: &mut impl FnMut(usize, Range<usize>) -> Result<Arc<Block>>,
    ) -> Result<LearnedLookup> {
        let Some((lo, p, hi)) = self.predict(lookup_ikey) else {
            return Ok(LearnedLookup::Fallback);
        };
        let below = |k: &[u8]| cmp_internal(k, lookup_ikey) == Ordering::Less;
        let entry_below = |k: KeyRef<'_>| k.cmp_internal(lookup_ikey) == Ordering::Less;
        // Block `b`'s part of the window, entries [from, to), and the first of them whose
        // key is >= lookup_ikey (`to` if none); `None` if the block does not hold the
        // ordinals the fence index says (the baseline path reports such corruption).
        let mut piece = |b: usize| -> Result<Option<Piece>> {
            let first = fence.first_ordinal(b);
            let from = lo.saturating_sub(first) as usize;
            let n = fence.block_entries(b) as usize;
            let to = (hi.saturating_add(1).saturating_sub(first) as usize).min(n);
            if from >= to {
                return Ok(None);
            }
            // The entry before the window's part is read too: it says whether the answer
            // lies before the window.
            let block = read(b, from.saturating_sub(1)..to)?;
            let to = to.min(block.entry_count());
            if from >= to {
                return Ok(None);
            }
            let guess = (p.saturating_sub(first) as usize).clamp(from, to - 1);
            let l = search_from(&block, from, to, guess, entry_below);
            let starts_window = first + from as u64 == lo;
            Ok(Some(Piece {
                block,
                from,
                to,
                l,
                starts_window,
            }))
        };
        let found = |block_no: usize, block: Arc<Block>, pos: usize| {
            Ok(LearnedLookup::Found(Some(Position {
                block_no,
                block,
                pos,
            })))
        };
        // Whether the entry just before entry `from` of block `b` is smaller than the lookup
        // key (read from the block, or from the fence pointers' last key of block `b - 1`).
        let prev_below = |b: usize, block: &Block, from: usize| {
            if from > 0 {
                entry_below(block.key(from - 1))
            } else {
                b == 0 || below(&fence.block(b - 1).last_key)
            }
        };
        // Start with the block of the predicted position: usually the only one read.
        let Some(b_p) = fence.block_for_ordinal(p) else {
            return Ok(LearnedLookup::Fallback);
        };
        // The window is far smaller than a block as a rule: walk to its ends' blocks
        // rather than searching again.
        let first = |b: usize| fence.first_ordinal(b);
        let mut b_lo = b_p;
        while first(b_lo) > lo {
            b_lo -= 1; // block 0 starts at ordinal 0 <= lo
        }
        let mut b_hi = b_p;
        while b_hi + 1 < fence.num_blocks() && first(b_hi + 1) <= hi {
            b_hi += 1;
        }
        // When the window spans blocks, their last keys (in memory) tell which one holds
        // the answer, so that one block is read, as on the fence path.
        let mut b_p = b_p;
        while b_p < b_hi && below(&fence.block(b_p).last_key) {
            b_p += 1;
        }
        while b_p > b_lo && !below(&fence.block(b_p - 1).last_key) {
            b_p -= 1;
        }
        let Some(Piece {
            block,
            from,
            to,
            l,
            starts_window,
        }) = piece(b_p)?
        else {
            return Ok(LearnedLookup::Fallback);
        };
        if l == from && starts_window && lo > 0 && !prev_below(b_p, &block, from) {
            return Ok(LearnedLookup::Fallback); // the answer lies before the window
        }
        if l > from || starts_window {
            if l < to {
                return found(b_p, block, l);
            }
            // Every key up to here is smaller: go right within the window.
            for b in b_p + 1..=b_hi {
                let Some(Piece { block, to, l, .. }) = piece(b)? else {
                    return Ok(LearnedLookup::Fallback);
                };
                if l < to {
                    return found(b, block, l);
                }
            }
            return Ok(if hi + 1 == self.num_entries {
                LearnedLookup::Found(None) // every entry is smaller
            } else {
                LearnedLookup::Fallback // the answer may lie after the window
            });
        }
        // This block's part starts at or after the lookup key and the window goes on to
        // the left: the answer is its first entry unless an earlier one is >= lookup_ikey.
        let mut cand = (b_p, block, from);
        for b in (b_lo..b_p).rev() {
            if below(&fence.block(b).last_key) {
                break; // block `b` (and all before it) is smaller: no need to read it
            }
            let Some(Piece {
                block,
                from,
                to,
                l,
                starts_window,
            }) = piece(b)?
            else {
                return Ok(LearnedLookup::Fallback);
            };
            if l == to {
                break; // every key of this part is smaller: the candidate is the answer
            }
            if l > from {
                return found(b, block, l);
            }
            if starts_window && lo > 0 && !prev_below(b, &block, from) {
                return Ok(LearnedLookup::Fallback); // the answer lies before the window
            }
            cand = (b, block, from);
        }
        found(cand.0, cand.1, cand.2)
    }

    /// The ordinal window `[lo, hi]` and the predicted position `p` (in it) for
    /// `lookup_ikey`, or `None` outside the trained domain.
    fn predict(&self, lookup_ikey: &[u8]) -> Option<(u64, u64, u64)> {
        if self.num_entries == 0 {
            return None;
        }
        let p = self
            .plr
            .predict(self.space.number(user_key(lookup_ikey))?)?;
        let d = self.plr.delta() as u64;
        let last = self.num_entries - 1;
        let lo = p.saturating_sub(d).min(last);
        let hi = p.saturating_add(d).min(last);
        Some((lo, p.clamp(lo, hi), hi))
    }
}
