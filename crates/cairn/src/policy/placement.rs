//! Hot/cold placement (SA-LSM §3.1-3.2): which records a proactive compaction moves from
//! the hot tier to the cold tier. One per-key hook, [`Placement`], that SA-LSM's cold-key
//! set and its baselines share: the heuristics and GBDT of the paper produce cold-key sets
//! too (in the external service), and the age rule (RocksDB's time-aware tiering) decides
//! from the sequence number of a key's newest version. Passive compaction (the default)
//! moves data by level size alone and needs no hook.
//!
//! Placement is advisory: it decides where a record lives, never what a read returns.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::access::{Clock, SystemClock};
use crate::learned::ColdSet;
use crate::types::SeqNo;
use crate::{Error, Result};

/// Decides, per user key, whether a proactive compaction writes it to the cold tier.
pub trait Placement: Send + Sync {
    /// A short name for reports.
    fn name(&self) -> &str;
    /// True to place `user_key` (whose newest version in the compaction has sequence
    /// number `newest_seq`) on the cold tier. Must answer the same for the same key
    /// during one compaction.
    fn is_cold(&self, user_key: &[u8], newest_seq: SeqNo) -> bool;
}

/// SA-LSM and the service's baselines: the keys of a loaded cold-key set are cold.
pub struct ColdSetPlacement(pub Arc<ColdSet>);

impl Placement for ColdSetPlacement {
    fn name(&self) -> &str {
        &self.0.method
    }
    fn is_cold(&self, user_key: &[u8], _: SeqNo) -> bool {
        self.0.contains(user_key)
    }
}

/// The age rule: a key whose newest version was written at or before `cutoff` is cold.
pub struct AgeTierPlacement {
    /// Newest sequence number written before the age threshold.
    pub cutoff: SeqNo,
}

impl Placement for AgeTierPlacement {
    fn name(&self) -> &str {
        "age-tier"
    }
    fn is_cold(&self, _: &[u8], newest_seq: SeqNo) -> bool {
        newest_seq <= self.cutoff
    }
}

/// Which placement a column family uses.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum PlacementPolicy {
    /// Passive compaction by level size only (no proactive compaction).
    #[default]
    Passive,
    /// Data older than `max_age_ms` moves to the cold tier (RocksDB's time-aware tiering).
    AgeTier {
        /// Age in milliseconds (on `PlacementOptions::clock`) past which data is cold.
        max_age_ms: u64,
    },
    /// The keys of the cold-key set loaded with `Db::load_cold_set` move to the cold tier
    /// (SA-LSM's survival forest, or one of its baselines in the service).
    ColdSet,
}

/// Hot/cold placement and proactive compaction.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PlacementOptions {
    /// The placement rule.
    pub policy: PlacementPolicy,
    /// Column families that opt in (by name); empty: every column family.
    pub column_families: Vec<String>,
    /// While placement is on, passive compaction out of the deepest hot level waits until
    /// that level holds this many times its capacity (the hot tier's size becomes dynamic,
    /// SA-LSM Fig. 9: proactive compactions move the cold data). Default 8.0.
    pub hot_level_slack: f64,
    /// A proactive compaction backs off when the database served more operations per
    /// second than this in the measuring window. `None`: no limit.
    pub max_ops_per_sec: Option<f64>,
    /// A proactive compaction backs off when the cold tier served more reads per second
    /// than this in the measuring window. `None`: no limit.
    pub max_cold_reads_per_sec: Option<f64>,
    /// Window over which the back-off rates are measured, in milliseconds. Default 200.
    pub backoff_window_ms: u64,
    /// A cold-key set whose trace ended longer ago than this (on `clock`) is stale and not
    /// used. `None`: sets never go stale.
    pub max_cold_set_age_ms: Option<u64>,
    /// The clock for the age rule and staleness (a bench drives simulated days).
    #[serde(skip, default = "crate::access::clock::system_clock")]
    pub clock: Arc<dyn Clock>,
}

impl Default for PlacementOptions {
    fn default() -> Self {
        PlacementOptions {
            policy: PlacementPolicy::Passive,
            column_families: Vec::new(),
            hot_level_slack: 8.0,
            max_ops_per_sec: None,
            max_cold_reads_per_sec: None,
            backoff_window_ms: 200,
            max_cold_set_age_ms: None,
            clock: Arc::new(SystemClock),
        }
    }
}

impl PlacementOptions {
    /// Checks the options.
    pub fn validate(&self) -> Result<()> {
        if !(self.hot_level_slack.is_finite() && self.hot_level_slack >= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "placement: hot_level_slack {} must be a finite number >= 1",
                self.hot_level_slack
            )));
        }
        for r in [self.max_ops_per_sec, self.max_cold_reads_per_sec]
            .into_iter()
            .flatten()
        {
            if !(r.is_finite() && r > 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "placement: back-off rate {r} must be positive"
                )));
            }
        }
        Ok(())
    }

    /// True if placement acts on the column family `name`.
    pub fn applies_to(&self, name: &str) -> bool {
        self.policy != PlacementPolicy::Passive
            && (self.column_families.is_empty() || self.column_families.iter().any(|c| c == name))
    }
}

/// Samples of (time, newest sequence number), so the age rule can turn an age into a
/// sequence number (as RocksDB's seqno-to-time mapping does). Kept in memory: after a
/// restart the rule knows only times written since, and moves nothing older than it can
/// date (placement is advisory).
pub struct SeqTimes {
    granularity_ms: u64,
    cap: usize,
    samples: Mutex<VecDeque<(u64, SeqNo)>>,
}

impl SeqTimes {
    /// A map keeping one sample per `granularity_ms`, at most `cap` of them.
    pub fn new(granularity_ms: u64, cap: usize) -> Self {
        SeqTimes {
            granularity_ms: granularity_ms.max(1),
            cap: cap.max(2),
            samples: Mutex::new(VecDeque::new()),
        }
    }

    /// Notes that `seq` was the newest sequence number at `now_ms`.
    pub fn note(&self, now_ms: u64, seq: SeqNo) {
        let mut s = self.samples.lock();
        match s.back_mut() {
            Some(b) if now_ms < b.0 + self.granularity_ms => b.1 = b.1.max(seq),
            _ => {
                s.push_back((now_ms, seq));
                if s.len() > self.cap {
                    // Thin the older half rather than forget the past altogether.
                    let keep: VecDeque<_> = s
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i >= self.cap / 2 || i % 2 == 0)
                        .map(|(_, x)| *x)
                        .collect();
                    *s = keep;
                }
            }
        }
    }

    /// The newest sequence number known to be written at or before `time_ms`, or `None`
    /// if no sample is that old.
    pub fn seq_at_or_before(&self, time_ms: u64) -> Option<SeqNo> {
        let s = self.samples.lock();
        let i = s.partition_point(|&(t, _)| t <= time_ms);
        // Sample i-1 covers writes up to its granularity window's end, which may reach past
        // `time_ms`; the sample before it is safely older.
        match i {
            0 => None,
            _ if s[i - 1].0 + self.granularity_ms <= time_ms + 1 => Some(s[i - 1].1),
            1 => None,
            _ => Some(s[i - 2].1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CfId;

    #[test]
    fn seq_times_date_sequence_numbers_conservatively() {
        let t = SeqTimes::new(10, 100);
        assert_eq!(t.seq_at_or_before(1000), None);
        t.note(0, 5);
        t.note(3, 9); // same window: the sample's newest seq grows
        t.note(20, 30);
        t.note(45, 50);
        assert_eq!(t.seq_at_or_before(5), None); // window [0, 10) not over
        assert_eq!(t.seq_at_or_before(9), Some(9));
        assert_eq!(t.seq_at_or_before(25), Some(9));
        assert_eq!(t.seq_at_or_before(30), Some(30));
        assert_eq!(t.seq_at_or_before(1000), Some(50));
    }

    #[test]
    fn seq_times_stay_bounded() {
        let t = SeqTimes::new(1, 8);
        for i in 0..1000 {
            t.note(i, i);
        }
        assert!(t.samples.lock().len() <= 8);
        assert_eq!(t.seq_at_or_before(2000), Some(999));
        assert!(t.seq_at_or_before(500).unwrap() <= 500);
    }

    #[test]
    fn placements_decide_per_key() {
        let set = Arc::new(ColdSet::new(
            CfId::DEFAULT,
            0,
            1.0,
            "rsf",
            vec![b"c".to_vec()],
        ));
        let p = ColdSetPlacement(set);
        assert!(p.is_cold(b"c", 1) && !p.is_cold(b"h", 1));
        assert_eq!(p.name(), "rsf");
        let a = AgeTierPlacement { cutoff: 10 };
        assert!(a.is_cold(b"x", 10) && !a.is_cold(b"x", 11));
        let o = PlacementOptions {
            policy: PlacementPolicy::ColdSet,
            column_families: vec!["orders".into()],
            ..Default::default()
        };
        assert!(o.applies_to("orders") && !o.applies_to("default"));
        assert!(!PlacementOptions::default().applies_to("default"));
    }
}
