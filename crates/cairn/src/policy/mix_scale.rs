//! Lerp's reward unit per workload mix (ours: the paper uses alpha t_i + (1 - alpha) t'
//! as it comes, with no unit). A mission's cost is divided by the reference cost
//! of its mix (lookup share rounded to a tenth) at its level, so that a read-heavy mix
//! whose operations cost five times a write-heavy mix's does not drown, in the replay,
//! the few percent that separate neighbouring K within one mix. The reference is the
//! mean cost of the first [`WARMUP`] missions seen in the mix, then fixed: a running
//! mean would cancel the very differences the agents learn from.

use std::collections::BTreeMap;

use crate::coding::take;

/// Missions whose mean becomes a mix's reference.
pub const WARMUP: u32 = 5;

/// Reference costs per (level, mix bucket).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MixScale {
    refs: BTreeMap<(u32, u8), (f64, u32)>,
}

/// The mix bucket of a lookup share: 0..=10.
pub fn bucket(read_fraction: f64) -> u8 {
    (read_fraction.clamp(0.0, 1.0) * 10.0).round() as u8
}

impl MixScale {
    /// `cost` of `level` in a mission of lookup share `read_fraction`, in units of the
    /// mix's reference (about 1). Missions of the warm-up feed the reference first.
    pub fn normalise(&mut self, level: usize, read_fraction: f64, cost: f64) -> f64 {
        let e = self
            .refs
            .entry((level as u32, bucket(read_fraction)))
            .or_insert((0.0, 0));
        if e.1 < WARMUP && cost.is_finite() && cost > 0.0 {
            e.0 += cost;
            e.1 += 1;
        }
        let reference = if e.1 > 0 { e.0 / e.1 as f64 } else { 1.0 };
        cost / reference.max(1e-9)
    }

    /// Forgets every reference (after pretraining on the simulator, whose units differ).
    pub fn clear(&mut self) {
        self.refs.clear();
    }

    /// Appends the references to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.refs.len() as u32).to_le_bytes());
        for (&(level, b), &(sum, n)) in &self.refs {
            out.extend_from_slice(&level.to_le_bytes());
            out.push(b);
            out.extend_from_slice(&sum.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
    }

    /// Reads what [`MixScale::encode`] wrote from the front of `input`; `None` on a
    /// truncated or impossible entry.
    pub fn decode(input: &mut &[u8]) -> Option<MixScale> {
        let u32_at =
            |i: &mut &[u8]| take(i, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let n = u32_at(input)?;
        if n > 11 * 64 {
            return None;
        }
        let mut refs = BTreeMap::new();
        for _ in 0..n {
            let level = u32_at(input)?;
            let b = take(input, 1)?[0];
            let sum = f64::from_le_bytes(take(input, 8)?.try_into().ok()?);
            let count = u32_at(input)?;
            if b > 10 || !sum.is_finite() || sum < 0.0 || count > WARMUP {
                return None;
            }
            refs.insert((level, b), (sum, count));
        }
        Some(MixScale { refs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mix_is_its_own_unit() {
        let mut s = MixScale::default();
        // Read-heavy missions cost 80, write-heavy 16: both normalise to about 1.
        for _ in 0..WARMUP {
            s.normalise(1, 0.9, 80.0);
            s.normalise(1, 0.1, 16.0);
        }
        assert!((s.normalise(1, 0.9, 80.0) - 1.0).abs() < 1e-12);
        assert!((s.normalise(1, 0.12, 16.0) - 1.0).abs() < 1e-12);
        // After the warm-up the reference is fixed: a 5% better K reads 0.95.
        assert!((s.normalise(1, 0.9, 76.0) - 0.95).abs() < 1e-12);
        assert!((s.normalise(1, 0.9, 76.0) - 0.95).abs() < 1e-12);
        // Levels have their own references.
        assert!((s.normalise(2, 0.9, 5.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn round_trip_and_damage() {
        let mut s = MixScale::default();
        s.normalise(1, 0.5, 10.0);
        s.normalise(2, 0.1, 3.0);
        let mut out = Vec::new();
        s.encode(&mut out);
        let mut input = &out[..];
        assert_eq!(MixScale::decode(&mut input), Some(s));
        assert!(input.is_empty());
        for cut in 0..out.len() {
            assert_eq!(MixScale::decode(&mut &out[..cut]), None, "{cut}");
        }
        let mut bad = out.clone();
        bad[8] = 11; // bucket out of range
        assert_eq!(MixScale::decode(&mut &bad[..]), None);
    }
}
