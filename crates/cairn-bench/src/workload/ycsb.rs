//! YCSB core workloads A-F (proportions and request distributions from YCSB's
//! `workloads/workload[a-f]` property files).

use super::mix::{Distribution, Mix, OpKind};
use super::ScanLen;

pub struct YcsbPreset {
    pub mix: Mix,
    pub distribution: Distribution,
    pub scan: ScanLen,
}

/// `letter` is one of a..f.
pub fn preset(letter: char) -> YcsbPreset {
    use OpKind::*;
    let (parts, distribution): (&[(OpKind, f64)], Distribution) = match letter {
        'a' => (&[(Read, 0.5), (Update, 0.5)], Distribution::Zipfian),
        'b' => (&[(Read, 0.95), (Update, 0.05)], Distribution::Zipfian),
        'c' => (&[(Read, 1.0)], Distribution::Zipfian),
        'd' => (&[(Read, 0.95), (Insert, 0.05)], Distribution::Latest),
        'e' => (&[(Scan, 0.95), (Insert, 0.05)], Distribution::Zipfian),
        'f' => (&[(Read, 0.5), (Rmw, 0.5)], Distribution::Zipfian),
        other => panic!("no YCSB workload {other}"),
    };
    YcsbPreset {
        mix: Mix::new(parts).expect("preset proportions sum to 1"),
        distribution,
        // YCSB E: maxscanlength=100, scanlengthdistribution=uniform (1..=100).
        scan: ScanLen::Uniform(100),
    }
}
