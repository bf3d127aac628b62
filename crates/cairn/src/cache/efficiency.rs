//! AC-Key's caching efficiency factor (paper section 4.2, equations 1-3) and the spread
//! statistic E-LRU uses to decide how many LRU-end entries to compare.
//!
//! `E = b / s`: storage reads saved per byte of cache. `b` is 1 for a block, `f(m)` for a
//! KV entry and `f(m) - 1` for a KP entry, with `f(m) = m + 2` (m filters, one index block,
//! one data block). The paper estimates `m` from the level (`n0 / 2` in L0, `l + n0`
//! below); cairn knows the real layout at read time (FLSM: several runs per level), so `m`
//! is the number of runs the lookup probed up to and including the one holding the key:
//! every overlapping run of the levels above, and the runs before it in its own level.
//! In cairn index and filter blocks are pinned in memory, so `b` overstates the reads a
//! point entry saves; it is kept as the paper defines it so the policy behaves the same.

/// What a cached entry is, for its benefit `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A data block.
    Block,
    /// A key and its value.
    Kv,
    /// A key and a pointer to its data block.
    Kp,
}

/// `f(m) = m + 2` (equation 2).
pub fn f(m: u32) -> f64 {
    f64::from(m) + 2.0
}

/// Storage reads saved by caching an entry found after probing `m` runs (equation 2).
pub fn benefit(kind: EntryKind, m: u32) -> f64 {
    match kind {
        EntryKind::Block => 1.0,
        EntryKind::Kv => f(m),
        EntryKind::Kp => f(m) - 1.0,
    }
}

/// Equation 1: `E = b / s` (saved reads per byte); a zero size counts as one byte.
pub fn efficiency(kind: EntryKind, m: u32, size: usize) -> f64 {
    benefit(kind, m) / size.max(1) as f64
}

/// Running sums of E over a component's entries, for E-LRU's `a = e^v`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spread {
    n: u64,
    sum: f64,
    sum_sq: f64,
}

impl Spread {
    /// Counts an entry in.
    pub fn add(&mut self, e: f64) {
        self.n += 1;
        self.sum += e;
        self.sum_sq += e * e;
    }

    /// Counts an entry out.
    pub fn remove(&mut self, e: f64) {
        if self.n <= 1 {
            *self = Spread::default();
            return;
        }
        self.n -= 1;
        self.sum -= e;
        self.sum_sq -= e * e;
    }

    /// Standard deviation of E relative to its mean (coefficient of variation). The paper
    /// takes `v` as the plain standard deviation; E per byte is ~0.01..0.1, where `e^v` is
    /// always 1, so the scale-free form is used to keep `a` meaningful.
    pub fn relative_deviation(&self) -> f64 {
        if self.n < 2 || self.sum <= 0.0 {
            return 0.0;
        }
        let n = self.n as f64;
        let mean = self.sum / n;
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        var.sqrt() / mean
    }

    /// E-LRU's candidate count `a = e^v`, at least 1 and at most `cap`.
    pub fn candidates(&self, cap: u32) -> usize {
        let a = self.relative_deviation().exp().floor();
        (a as usize).clamp(1, cap.max(1) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_follows_equations_1_to_3() {
        assert_eq!(benefit(EntryKind::Block, 7), 1.0);
        assert_eq!(benefit(EntryKind::Kv, 3), 5.0);
        assert_eq!(benefit(EntryKind::Kp, 3), 4.0);
        // A 16 B key + 100 B value found in the 5th run probed: 7 reads over 116 bytes.
        assert!((efficiency(EntryKind::Kv, 5, 116) - 7.0 / 116.0).abs() < 1e-12);
        // A KP entry (16 B key + 24 B pointer) is worth more per byte than its KV twin.
        assert!(efficiency(EntryKind::Kp, 5, 40) > efficiency(EntryKind::Kv, 5, 116));
        // Deeper keys are worth more; blocks least.
        assert!(efficiency(EntryKind::Kv, 6, 116) > efficiency(EntryKind::Kv, 1, 116));
        assert!(efficiency(EntryKind::Block, 0, 4096) < efficiency(EntryKind::Kv, 1, 116));
    }

    #[test]
    fn candidates_grow_with_spread_and_are_capped() {
        let mut s = Spread::default();
        for _ in 0..10 {
            s.add(0.05);
        }
        assert_eq!(s.candidates(16), 1, "identical E: plain LRU");
        let mut w = Spread::default();
        for i in 0..10 {
            w.add(if i % 2 == 0 { 0.01 } else { 0.19 });
        }
        // mean 0.1, deviation 0.09: v = 0.9, a = floor(e^0.9) = 2.
        assert_eq!(w.candidates(16), 2);
        let mut x = Spread::default();
        x.add(1.0);
        for _ in 0..99 {
            x.add(1e-6);
        }
        assert!(x.candidates(1024) > 2);
        assert_eq!(x.candidates(3), 3);
        x.remove(1.0);
        assert_eq!(x.candidates(16), 1);
    }
}
