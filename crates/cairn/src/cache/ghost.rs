//! Ghost caches (paper section 4.3): what a component evicted, without the data, so that
//! a later request for it says "this component should have been larger". Each ghost
//! remembers the evicted entry's size (its "virtual" size, bounded by equations 4 and 5)
//! and its caching efficiency E (the step of the boundary move on a hit). What a ghost
//! really costs is charged to the cache budget: 4 bytes per KV/KP fingerprint and 24 bytes
//! per block handle, the paper's sizes.

use std::hash::Hash;

use lru::LruCache;

/// Bytes charged per KV/KP/point ghost: a 4-byte fingerprint of the key.
pub const FINGERPRINT_BYTES: usize = 4;
/// Bytes charged per block ghost: a block handle (`<SstID|BlockOffset>`, 24 B in the paper).
pub const BLOCK_GHOST_BYTES: usize = 24;

/// A 4-byte fingerprint of a point key (false positives only move a boundary by mistake).
pub fn fingerprint(key: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(key) as u32
}

struct Ghost {
    size: usize,
    e: f64,
}

pub(crate) struct GhostList<K: Hash + Eq> {
    lru: LruCache<K, Ghost>,
    virtual_bytes: usize,
    entry_bytes: usize,
}

impl<K: Hash + Eq> GhostList<K> {
    pub(crate) fn new(entry_bytes: usize) -> Self {
        GhostList {
            lru: LruCache::unbounded(),
            virtual_bytes: 0,
            entry_bytes,
        }
    }

    /// Records an evicted entry of `size` bytes and efficiency `e`.
    pub(crate) fn add(&mut self, k: K, size: usize, e: f64) {
        self.take(&k);
        self.virtual_bytes += size;
        self.lru.put(k, Ghost { size, e });
    }

    /// On a hit: removes the ghost and returns its E.
    pub(crate) fn take(&mut self, k: &K) -> Option<f64> {
        let g = self.lru.pop(k)?;
        self.virtual_bytes -= g.size;
        Some(g.e)
    }

    /// Drops the oldest ghosts until their virtual size is at most `limit`.
    pub(crate) fn trim(&mut self, limit: usize) {
        while self.virtual_bytes > limit {
            match self.lru.pop_lru() {
                Some((_, g)) => self.virtual_bytes -= g.size,
                None => break,
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.lru.clear();
        self.virtual_bytes = 0;
    }

    /// Bytes the ghosts really take from the budget.
    pub(crate) fn charged(&self) -> usize {
        self.lru.len() * self.entry_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ghosts_are_bounded_by_virtual_size_and_charge_fingerprints() {
        let mut g = GhostList::new(FINGERPRINT_BYTES);
        for i in 0..10u32 {
            g.add(i, 100, 0.01 * f64::from(i));
        }
        assert_eq!(g.charged(), 40);
        g.trim(500);
        assert_eq!(g.charged(), 20, "the five oldest went");
        assert_eq!(g.take(&2), None);
        assert_eq!(g.take(&7), Some(0.07));
        assert_eq!(g.take(&7), None, "a ghost hits once");
        g.clear();
        assert_eq!(g.charged(), 0);
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
    }
}
