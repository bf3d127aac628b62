//! Named option presets, used by `cairn-bench` as `cairn:NAME` and handy for users.
//! Each learned part adds its preset and its baselines' presets here.

use crate::options::{BloomAllocation, IndexPolicy, Options};

/// Names of every preset, with a one-line description.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", "cairn's defaults: leveling (K=1), uniform 10-bit blooms, LRU block cache"),
    ("baseline", "the plain LSM-tree the learned parts are measured against: fence pointers, LRU block cache, K=1 at every level"),
    ("tiering", "RusKey's 'Lazy' baseline: K=T at every level"),
    ("moderate", "RusKey's 'Moderate' baseline: K=5 at every level"),
    ("lazy-leveling", "Dostoevsky's Lazy-Leveling: K=T at every level but the last, K=1 there; Monkey blooms"),
    ("monkey", "leveling with Monkey bloom-filter allocation"),
    ("wisckey", "WiscKey key-value separation alone: every value in a value log, GC at space amplification 1.5; fence pointers"),
    ("bourbon", "Bourbon's learned index (Greedy-PLR, delta 8) on every table, learned at open; fence pointers as fallback"),
];

/// The options of a preset, or `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Options> {
    let mut o = Options::default();
    let below_l0 = o.num_levels - 1;
    match name {
        "default" | "baseline" => {}
        "tiering" => o.level_runs = vec![o.size_ratio; below_l0],
        "moderate" => o.level_runs = vec![5.min(o.size_ratio); below_l0],
        "lazy-leveling" => {
            o.level_runs = vec![o.size_ratio; below_l0];
            if let Some(last) = o.level_runs.last_mut() {
                *last = 1;
            }
            o.bloom_allocation = BloomAllocation::Monkey;
        }
        "monkey" => o.bloom_allocation = BloomAllocation::Monkey,
        "bourbon" => o.index = IndexPolicy::Learned { delta: 8 },
        "wisckey" => o.value_threshold = Some(0),
        _ => return None,
    }
    // Bourbon runs on WiscKey: every value separated.
    if name == "bourbon" {
        o.value_threshold = Some(0);
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for (name, _) in PRESETS {
            let o = by_name(name).unwrap_or_else(|| panic!("{name} missing"));
            o.validate().unwrap();
        }
        assert!(by_name("nope").is_none());
        assert_eq!(by_name("baseline").unwrap().index, IndexPolicy::Fence);
        assert_eq!(
            by_name("bourbon").unwrap().index,
            IndexPolicy::Learned { delta: 8 }
        );
        assert_eq!(by_name("bourbon").unwrap().value_threshold, Some(0));
        assert_eq!(by_name("baseline").unwrap().value_threshold, None);
    }
}
