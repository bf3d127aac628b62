//! Leaper's workloads (Yang et al., VLDB 2020, Table 2), shaped after the paper's table:
//! the op shares, read/write ratio and skew are the paper's; the key streams are synthetic
//! (the paper's e-commerce and instant-messaging traces are not public).
//!
//! | workload | point | range | update | insert | R/W | skew |
//! |---|---:|---:|---:|---:|---:|---|
//! | `leaper-synthetic` | 75% | 0% | 20% | 5% | 3:1 | Zipf 0.5, hot keys clustered (SysBench's zipfian) |
//! | `leaper-ecommerce` | 75% | 10% | 10% | 5% | 6:1 | Zipf 0.3, clustered |
//! | `leaper-im` | 40% | 0% | 35% | 25% | 2:3 | Zipf 0.9 over recency (YCSB's latest): new messages are the hot ones |
//! | `leaper-moving` | 75% | 0% | 20% | 5% | 3:1 | hot windows that move and recur (`moving-hot`): Fig. 4's structure, which static Zipf lacks |
//!
//! Every Leaper workload has a warm-up part (`--warmup-ops`, the same mix and keys) that
//! the harness runs unmeasured before the measured part: every engine sees the same
//! stream and starts measuring from the same point, and the `leaper` engines train their
//! model on the warm-up's access trace in between.

use super::mix::{Distribution, Mix, OpKind};
use anyhow::{bail, Result};

/// The shape of one Leaper workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeaperShape {
    /// Point lookups, range lookups, updates, inserts (sum 1).
    pub point: f64,
    pub range: f64,
    pub update: f64,
    pub insert: f64,
    /// Zipf factor of the key popularity.
    pub theta: f64,
    pub distribution: Distribution,
}

pub const SYNTHETIC: LeaperShape = LeaperShape {
    point: 0.75,
    range: 0.0,
    update: 0.20,
    insert: 0.05,
    theta: 0.5,
    distribution: Distribution::ZipfianClustered,
};

pub const ECOMMERCE: LeaperShape = LeaperShape {
    point: 0.75,
    range: 0.10,
    update: 0.10,
    insert: 0.05,
    theta: 0.3,
    distribution: Distribution::ZipfianClustered,
};

/// The synthetic mix over hot ranges that move and recur, reads and writes on the same
/// hot keys: what a prefetcher that predicts can win on and a cache of the past cannot.
pub const MOVING: LeaperShape = LeaperShape {
    point: 0.75,
    range: 0.0,
    update: 0.20,
    insert: 0.05,
    theta: 0.5,
    distribution: Distribution::MovingHot,
};

pub const IM: LeaperShape = LeaperShape {
    point: 0.40,
    range: 0.0,
    update: 0.35,
    insert: 0.25,
    theta: 0.9,
    distribution: Distribution::Latest,
};

impl LeaperShape {
    /// Read share (point + range).
    pub fn reads(&self) -> f64 {
        self.point + self.range
    }

    /// The mix, with the read share (`read_share`, the rest writes in this shape's
    /// update:insert ratio; Fig. 13b) and the share of reads that are range lookups
    /// (`range_ratio`; Fig. 13a) overridden when given.
    pub fn mix(&self, read_share: Option<f64>, range_ratio: Option<f64>) -> Result<Mix> {
        let reads = read_share.unwrap_or(self.reads());
        if !(0.0..=1.0).contains(&reads) {
            bail!("--read-share must be within [0, 1], got {reads}");
        }
        let rr = range_ratio.unwrap_or(if self.reads() > 0.0 {
            self.range / self.reads()
        } else {
            0.0
        });
        if !(0.0..=1.0).contains(&rr) {
            bail!("--range-ratio must be within [0, 1], got {rr}");
        }
        let writes = 1.0 - reads;
        let w = self.update + self.insert;
        let upd = if w > 0.0 { self.update / w } else { 1.0 };
        let range = reads * rr;
        // Compute the last share as the remainder so the sum is exactly 1.
        let point = reads - range;
        let update = writes * upd;
        let insert = (1.0 - point - range - update).max(0.0);
        Mix::new(&[
            (OpKind::Read, point),
            (OpKind::Scan, range),
            (OpKind::Update, update),
            (OpKind::Insert, insert),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_2_shapes() {
        let m = SYNTHETIC.mix(None, None).unwrap();
        assert_eq!(m.proportion(OpKind::Read), 0.75);
        assert!((m.proportion(OpKind::Update) - 0.20).abs() < 1e-12);
        assert!((m.proportion(OpKind::Insert) - 0.05).abs() < 1e-12);
        let m = ECOMMERCE.mix(None, None).unwrap();
        assert!((m.proportion(OpKind::Scan) - 0.10).abs() < 1e-12);
        assert!((m.proportion(OpKind::Read) - 0.75).abs() < 1e-12);
        let m = IM.mix(None, None).unwrap();
        assert!((m.proportion(OpKind::Insert) - 0.25).abs() < 1e-12);
        // Fig. 13a: 20% of the reads are range lookups, R/W stays 3:1.
        let m = SYNTHETIC.mix(None, Some(0.2)).unwrap();
        assert!((m.proportion(OpKind::Scan) - 0.15).abs() < 1e-12);
        assert!((m.proportion(OpKind::Read) - 0.60).abs() < 1e-12);
        // Fig. 13b: 90% reads, updates:inserts stays 4:1.
        let m = SYNTHETIC.mix(Some(0.9), None).unwrap();
        assert!((m.proportion(OpKind::Update) - 0.08).abs() < 1e-12);
        assert!((m.proportion(OpKind::Insert) - 0.02).abs() < 1e-12);
        assert!(SYNTHETIC.mix(Some(1.5), None).is_err());
        assert!(SYNTHETIC.mix(None, Some(-0.1)).is_err());
    }
}
