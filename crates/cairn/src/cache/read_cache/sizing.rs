//! AC-Key's sizing of the read cache: the E-ARC targets scaled to the budget the ghosts
//! leave, making room by E-LRU eviction within the component over its target, the ghost
//! lists and the windows that turn them on and off.

use super::*;

impl ReadCache {
    pub(super) fn avail(&self, st: &State) -> f64 {
        let ghosts =
            st.g_kv.charged() + st.g_kp.charged() + st.g_point.charged() + st.g_block.charged();
        self.capacity.saturating_sub(ghosts) as f64
    }

    /// (point target, KV target, block target) in bytes now: the targets scaled to the
    /// budget left after the ghosts' charge.
    pub(super) fn targets(&self, st: &State) -> (f64, f64, f64) {
        let avail = self.avail(st);
        let scale = if self.capacity == 0 {
            0.0
        } else {
            avail / self.capacity as f64
        };
        let point = st.point_target * scale;
        (point, st.kv_target * scale, avail - point)
    }

    pub(super) fn used(st: &State) -> usize {
        st.kv.bytes() + st.kp.bytes() + st.blocks.bytes()
    }

    /// Evicts until `charge` more bytes of `kind` fit; false if they cannot (the entry is
    /// then not cached).
    pub(super) fn make_room(&self, st: &mut State, kind: EntryKind, charge: usize) -> bool {
        if let Mode::Fixed { kv, kp, block } = self.mode {
            let cap = match kind {
                EntryKind::Kv => kv,
                EntryKind::Kp => kp,
                EntryKind::Block => block,
            };
            if charge > cap {
                return false;
            }
            loop {
                let bytes = match kind {
                    EntryKind::Kv => st.kv.bytes(),
                    EntryKind::Kp => st.kp.bytes(),
                    EntryKind::Block => st.blocks.bytes(),
                };
                if bytes + charge <= cap {
                    return true;
                }
                let evicted = match kind {
                    EntryKind::Kv => st.kv.evict(1).is_some(),
                    EntryKind::Kp => st.kp.evict(1).is_some(),
                    EntryKind::Block => match st.blocks.evict(1) {
                        Some((_, s)) => {
                            st.blocks_stats.evictions += 1;
                            st.blocks_stats.by_kind[s.value.kind().index()].evictions += 1;
                            true
                        }
                        None => false,
                    },
                };
                if !evicted {
                    return false;
                }
            }
        }
        loop {
            let avail = self.avail(st);
            if (charge as f64) > avail {
                return false;
            }
            if (Self::used(st) + charge) as f64 <= avail {
                return true;
            }
            let (point_t, _, block_t) = self.targets(st);
            let point = (st.kv.bytes() + st.kp.bytes()) as f64;
            let ok = if kind == EntryKind::Block {
                if st.blocks.bytes() as f64 + charge as f64 > block_t {
                    self.evict_block(st) // the block cache does not grow
                } else {
                    self.evict_point(st) || self.evict_block(st)
                }
            } else if point + charge as f64 > point_t {
                self.evict_point(st) // the point cache does not grow
            } else if point_t - point >= self.block_unit as f64 {
                // The target is a whole block above the point cache: take a block.
                self.evict_block(st) || self.evict_point(st)
            } else {
                self.evict_point(st)
            };
            if !ok {
                return false;
            }
        }
    }

    /// Evicts one KV or KP entry (KV if the KV cache is above its target), into ghosts.
    pub(super) fn evict_point(&self, st: &mut State) -> bool {
        let (_, kv_t, _) = self.targets(st);
        let from_kv = if st.kv.is_empty() {
            false
        } else if st.kp.is_empty() {
            true
        } else {
            st.kv.bytes() as f64 > kv_t
        };
        let cap = self.adaptive().map_or(1, |p| p.max_eviction_candidates);
        if from_kv {
            let Some((k, s)) = st.kv.evict(cap) else {
                return false;
            };
            self.ghost_point(st, EntryKind::Kv, &k, s.charge, s.e);
        } else {
            let Some((k, s)) = st.kp.evict(cap) else {
                return false;
            };
            self.ghost_point(st, EntryKind::Kp, &k, s.charge, s.e);
        }
        true
    }

    pub(super) fn evict_block(&self, st: &mut State) -> bool {
        let cap = self.adaptive().map_or(1, |p| p.max_eviction_candidates);
        let Some((k, s)) = st.blocks.evict(cap) else {
            return false;
        };
        st.blocks_stats.evictions += 1;
        st.blocks_stats.by_kind[s.value.kind().index()].evictions += 1;
        if self.adaptive().is_some() && st.ghosts_on {
            st.g_block.add(k, s.charge, s.e);
            self.trim_ghosts(st);
        }
        true
    }

    /// Records an evicted (or refused) point entry in its component's ghost and the point
    /// ghost.
    pub(super) fn ghost_point(
        &self,
        st: &mut State,
        kind: EntryKind,
        k: &[u8],
        charge: usize,
        e: f64,
    ) {
        if self.adaptive().is_none() || !st.ghosts_on {
            return;
        }
        let fp = fingerprint(k);
        match kind {
            EntryKind::Kv => st.g_kv.add(fp, charge, e),
            _ => st.g_kp.add(fp, charge, e),
        }
        st.g_point.add(fp, charge, e);
        self.trim_ghosts(st);
    }

    /// Equations 4 and 5, read as in ARC: a real cache and its ghost together span at
    /// most their level's size (the point target below, the whole budget above).
    pub(super) fn trim_ghosts(&self, st: &mut State) {
        let (kv, kp, blocks) = (st.kv.bytes(), st.kp.bytes(), st.blocks.bytes());
        let point_t = st.point_target as usize;
        st.g_kv.trim(point_t.saturating_sub(kv));
        st.g_kp.trim(point_t.saturating_sub(kp));
        st.g_point.trim(self.capacity.saturating_sub(kv + kp));
        st.g_block.trim(self.capacity.saturating_sub(blocks));
    }

    /// Closes a window of lookups: ghosts go off when no hit ratio moved by theta, and
    /// come back on when one did (section 4.3.3).
    pub(super) fn tick(&self, st: &mut State) {
        let Some(p) = self.adaptive() else {
            return;
        };
        let w = st.window;
        if w.point_lookups + w.block_lookups < p.ghost_window {
            return;
        }
        let now = w.ratios();
        if let Some(last) = st.last_ratios {
            let moved = now.iter().zip(last.iter()).any(|(&a, &b)| {
                let scale = a.max(b);
                scale > 0.0 && (a - b).abs() >= p.ghost_threshold * scale
            });
            // The minimum counts only windows with the cache full: before that nothing is
            // evicted, so no ghost can have been hit and the targets cannot have moved.
            let full = Self::used(st) + self.block_unit >= self.avail(st) as usize;
            if st.ghosts_on && full {
                st.windows_on = st.windows_on.saturating_add(1);
            }
            if moved {
                self.set_ghosts(st, true);
            } else if st.windows_on >= p.ghost_min_windows {
                self.set_ghosts(st, false);
            }
        }
        st.last_ratios = Some(now);
        st.window = Window::default();
    }

    pub(super) fn set_ghosts(&self, st: &mut State, on: bool) {
        if on && !st.ghosts_on {
            st.windows_on = 0;
        }
        if st.ghosts_on && !on {
            // Their bytes go back to the real caches (the targets scale up with `avail`).
            st.g_kv.clear();
            st.g_kp.clear();
            st.g_point.clear();
            st.g_block.clear();
        }
        st.ghosts_on = on;
    }

    /// Evicts until the real caches fit their budgets (after values changed size).
    pub(super) fn shrink(&self, st: &mut State) {
        if let Mode::Fixed { kv, kp, .. } = self.mode {
            while st.kv.bytes() > kv && st.kv.evict(1).is_some() {}
            while st.kp.bytes() > kp && st.kp.evict(1).is_some() {}
            return;
        }
        while Self::used(st) as f64 > self.avail(st) {
            let (point_t, _, _) = self.targets(st);
            let point_first = (st.kv.bytes() + st.kp.bytes()) as f64 > point_t;
            let ok = [point_first, !point_first].iter().any(|&p| {
                if p {
                    self.evict_point(st)
                } else {
                    self.evict_block(st)
                }
            });
            if !ok {
                break;
            }
        }
    }
}
