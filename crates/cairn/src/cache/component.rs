//! One caching component (KV, KP or blocks): an LRU list with byte charges, evicting by
//! E-LRU (paper section 4.2): among the `a` least recently used entries, the one with the
//! lowest caching efficiency E goes (the least recently used one on ties).

use std::hash::Hash;

use lru::LruCache;

use super::efficiency::Spread;

/// A cached entry with its charge and efficiency.
pub(crate) struct Slot<V> {
    pub(crate) value: V,
    pub(crate) charge: usize,
    pub(crate) e: f64,
}

pub(crate) struct Component<K: Hash + Eq, V> {
    lru: LruCache<K, Slot<V>>,
    bytes: usize,
    spread: Spread,
}

impl<K: Hash + Eq + Clone, V> Component<K, V> {
    pub(crate) fn new() -> Self {
        Component {
            lru: LruCache::unbounded(),
            bytes: 0,
            spread: Spread::default(),
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn len(&self) -> usize {
        self.lru.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }

    /// The entry, marked most recently used.
    pub(crate) fn get(&mut self, k: &K) -> Option<&Slot<V>> {
        self.lru.get(k).map(|s| s as &Slot<V>)
    }

    /// The entry, without touching recency.
    pub(crate) fn peek(&self, k: &K) -> Option<&Slot<V>> {
        self.lru.peek(k)
    }

    pub(crate) fn contains(&self, k: &K) -> bool {
        self.lru.contains(k)
    }

    /// Inserts at the MRU end, replacing any entry under the same key.
    pub(crate) fn insert(&mut self, k: K, value: V, charge: usize, e: f64) {
        self.remove(&k);
        self.bytes += charge;
        self.spread.add(e);
        self.lru.put(k, Slot { value, charge, e });
    }

    pub(crate) fn remove(&mut self, k: &K) -> Option<Slot<V>> {
        let s = self.lru.pop(k)?;
        self.bytes -= s.charge;
        self.spread.remove(s.e);
        Some(s)
    }

    /// Changes an entry in place (recency kept); `f` returns the new charge and E.
    pub(crate) fn update(&mut self, k: &K, f: impl FnOnce(&mut V) -> (usize, f64)) {
        if let Some(s) = self.lru.peek_mut(k) {
            let (charge, e) = f(&mut s.value);
            self.bytes = self.bytes - s.charge + charge;
            self.spread.remove(s.e);
            self.spread.add(e);
            s.charge = charge;
            s.e = e;
        }
    }

    /// E-LRU's victim among at most `cap` LRU-end entries (`cap` 1: plain LRU).
    pub(crate) fn victim(&self, cap: u32) -> Option<K> {
        let a = self.spread.candidates(cap);
        let mut best: Option<(&K, f64)> = None;
        for (k, s) in self.lru.iter().rev().take(a) {
            if best.is_none_or(|(_, e)| s.e < e) {
                best = Some((k, s.e));
            }
        }
        best.map(|(k, _)| k.clone())
    }

    /// Evicts E-LRU's victim.
    pub(crate) fn evict(&mut self, cap: u32) -> Option<(K, Slot<V>)> {
        let k = self.victim(cap)?;
        let s = self.remove(&k)?;
        Some((k, s))
    }

    /// Keys, LRU first.
    pub(crate) fn keys(&self) -> Vec<K> {
        self.lru.iter().rev().map(|(k, _)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_lru_evicts_the_least_efficient_of_the_lru_end() {
        let mut c: Component<u32, ()> = Component::new();
        // LRU order: 1 (oldest), 2, 3, 4; 2 is the least efficient of the oldest ones.
        c.insert(1, (), 10, 0.5);
        c.insert(2, (), 10, 0.01);
        c.insert(3, (), 10, 0.5);
        c.insert(4, (), 10, 0.001);
        // Plain LRU when capped at one candidate.
        assert_eq!(c.victim(1), Some(1));
        // The spread is large (a >= 2): 2 is worth less than 1.
        assert!(c.victim(2).is_some());
        assert_eq!(c.victim(2), Some(2));
        // a = floor(e^v) = 2 here (v = 0.98): a higher cap changes nothing.
        assert_eq!(c.victim(1024), Some(2));
        // A wider spread widens the window to the least efficient entry.
        c.insert(5, (), 10, 0.000_001);
        c.insert(6, (), 10, 5.0);
        assert_eq!(c.victim(1024), Some(5));
        c.remove(&5);
        c.remove(&6);
        // Touching 4 makes it most recent: then it is out of reach for a small a.
        c.get(&4);
        assert_eq!(c.victim(3), Some(2));
        let (k, s) = c.evict(3).unwrap();
        assert_eq!((k, s.charge), (2, 10));
        assert_eq!(c.bytes(), 30);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn equal_efficiency_is_plain_lru() {
        let mut c: Component<u32, ()> = Component::new();
        for i in 0..8 {
            c.insert(i, (), 1, 0.25);
        }
        c.get(&0);
        assert_eq!(c.victim(16), Some(1));
    }

    #[test]
    fn update_and_remove_keep_bytes() {
        let mut c: Component<u32, u32> = Component::new();
        c.insert(1, 5, 100, 0.1);
        c.update(&1, |v| {
            *v = 6;
            (40, 0.2)
        });
        assert_eq!(c.bytes(), 40);
        assert_eq!(c.peek(&1).unwrap().value, 6);
        c.insert(1, 7, 10, 0.2);
        assert_eq!(c.bytes(), 10);
        c.remove(&1);
        assert_eq!(c.bytes(), 0);
        assert!(c.is_empty());
    }
}
