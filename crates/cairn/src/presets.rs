//! Named option presets, used by `cairn-bench` as `cairn:NAME` and handy for users.
//! Each learned part adds its preset and its baselines' presets here.

use crate::access::{AccessOptions, RecordOptions};
use crate::options::{
    AcKeyParams, BloomAllocation, IndexPolicy, LearnMode, Options, ReadCachePolicy, Transition,
};
use crate::policy::{LerpParams, PlacementPolicy, PrefetchPolicy, Propagation, TunerPolicy};
use crate::storage::{DeviceProfile, TierConfig};

/// Names of every preset, with a one-line description.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", "cairn's defaults: leveling (K=1), uniform 10-bit blooms, LRU block cache"),
    ("learned", "all five learned parts at once, with defaults to keep: Bourbon's learned index on key-value separation, AC-Key's read cache, Leaper's prefetcher (cairn's eager-evict baseline until a model is loaded), RusKey's tuner (with the ruskey feature), SA-LSM's query store and cold-set placement (acting once Options::tiers has a cold tier and a cold set is installed)"),
    ("baseline", "the plain LSM-tree the learned parts are measured against: fence pointers, LRU block cache, K=1 at every level"),
    ("tiering", "RusKey's 'Lazy' baseline: K=T at every level"),
    ("moderate", "RusKey's 'Moderate' baseline: K=5 at every level"),
    ("k-N", "a static policy: K=N at every level below 0, at most T (e.g. k-2; k-1 is leveling)"),
    ("lazy-leveling", "Dostoevsky's Lazy-Leveling: K=T at every level but the last, K=1 there; Monkey blooms"),
    ("monkey", "leveling with Monkey bloom-filter allocation"),
    ("wisckey", "WiscKey key-value separation alone: every value in a value log, GC at space amplification 1.5; fence pointers; tables and value logs read through memory maps (LevelDB's default, which WiscKey and Bourbon ran on)"),
    ("bourbon", "Bourbon's learned index (Greedy-PLR, delta 8): tables learned in the background after 50 ms when the cost-benefit analyzer says it pays; fence pointers as fallback; on WiscKey (every value in the value log, files read through memory maps); a get whose block is not cached copies just its window's entries"),
    ("bourbon-always", "Bourbon's always-learn baseline: every table read is learned after 50 ms; on WiscKey"),
    ("bourbon-never", "Bourbon's no-learn baseline: the learner's statistics, no model (fence pointers); on WiscKey"),
    ("bourbon-always-blocks", "bourbon-always on variable-width blocks: the model reads and searches whole data blocks (through the block cache) instead of just its window's entries (ablation)"),
    ("wisckey-fixed", "wisckey with fixed-width data blocks: fence pointers over Bourbon's layout (ablation)"),
    ("ac-key", "AC-Key: KV, KP and block caches sharing the cache budget, sized by E-ARC, evicting by E-LRU"),
    ("block", "AC-Key's baseline (RocksDB's default): the whole cache budget to the block cache"),
    ("pure-kv", "AC-Key's baseline: the whole cache budget to a key-value cache"),
    ("pure-kp", "AC-Key's baseline: the whole cache budget to a key-pointer cache"),
    ("fixed-X-Y-Z", "AC-Key's 'offline' baseline: a fixed split in tenths, X KV + Y KP + Z block = 10 (e.g. fixed-3-2-5)"),
    ("block-1shard", "the block baseline with one cache shard (one lock, as AC-Key's cache has)"),
    ("ac-key-kK-tT-wW", "AC-Key with learning rate K, ghost threshold T percent, ghost window W lookups, any of them (e.g. ac-key-k10000-t20)"),
    ("CACHE-sep", "a read-cache preset (ac-key*, block*, pure-kv, pure-kp, fixed-*) on key-value separation, every value in the value log (e.g. ac-key-sep)"),
    ("lru", "Leaper's baseline (RocksDB's default): nothing warmed, blocks of deleted tables age out of the LRU"),
    ("eager-evict", "Leaper's baseline: blocks of deleted tables erased when the files go (cairn's default)"),
    ("warmup", "Leaper's baseline, Incremental Warmup: at install, compaction output blocks overlapping cached input blocks replace them one for one"),
    ("warm-flush", "Leaper's baseline, RocksDB's kFlushOnly: every block a flush writes is cached"),
    ("warm-all", "Leaper's baseline, RocksDB's kFlushAndCompaction: every block a flush writes is cached, every block a compaction writes at bottom priority"),
    ("leaper", "Leaper: access statistics per key range, and a two-phase prefetcher driven by the learner's models (load one with Db::load_leaper_model; without one nothing is warmed)"),
    ("leaper-ac-key", "Leaper on AC-Key's read cache"),
    ("ruskey", "RusKey: Lerp tunes K_1 by DDPG after every mission of 50,000 operations and copies it down (uniform blooms, flexible transitions)"),
    ("ruskey-pretrained", "RusKey pretrained on the cost-model simulator before its first mission"),
    ("ruskey-monkey", "RusKey on Monkey blooms: Lerp tunes K_1 and K_2, deeper levels follow Lemma 5.1"),
    ("ruskey-prior", "ruskey whose exploration walks toward eq. 5's K fitted online from the counts (beyond the paper)"),
    ("greedy", "RusKey's greedy-threshold baseline: a level's K + 1 when its lookup share is under 33%, K - 1 over 67%"),
    ("greedy-B-T", "the greedy baseline with thresholds in percent (e.g. greedy-25-75)"),
    ("transition-greedy", "RusKey 4.1's greedy transition (Fig. 10): K=1 at every level; a change of K merges the level into the next one first"),
    ("transition-lazy", "RusKey 4.1's lazy transition (Fig. 10): K=1 at every level; a change of K waits until the level empties"),
    ("transition-flexible", "RusKey 4.2's flexible transition (Fig. 10): K=1 at every level; a change of K resizes the active run at once"),
    ("passive", "SA-LSM's baseline: a hot ssd tier (levels 0-1) and a cold hdd tier (2+), data moves down by level size only"),
    ("age-tier", "SA-LSM's baseline, RocksDB's time-aware tiering: on the two tiers, proactive compaction moves data older than 7 days to the cold tier"),
    ("sa-lsm", "SA-LSM: on the two tiers, a query store per column family; proactive compaction moves the keys the external service's random survival forest predicts cold"),
    ("sa-gbdt", "SA-LSM's GBDT baseline made censoring-aware (gbdt-h): as sa-lsm, the cold keys chosen by the service's LightGBM classifier trained without the samples censored before the horizon"),
    ("sa-gbdt-naive", "SA-LSM's GBDT baseline as the paper runs it (gbdt-naive): a censored sample counts as no event"),
    ("sa-random", "SA-LSM's random placement: as sa-lsm, the cold keys drawn at random"),
    ("sa-oracle", "SA-LSM's Bayes oracle (benchmarks only): the cold keys ranked by the true read probability the benchmark's workload generator hands the service"),
    ("sa-cox", "SA-LSM's Cox baseline: as sa-lsm, the cold keys chosen by the service's Cox model"),
    ("sa-lru", "SA-LSM's LRU baseline: as sa-lsm, the least recently used keys are cold"),
    ("sa-lfu", "SA-LSM's LFU baseline: as sa-lsm, the least frequently used keys are cold"),
    ("sa-lru2", "SA-LSM's LRU-2 baseline: as sa-lsm, ranked by the second most recent access"),
    ("sa-lirs", "SA-LSM's LIRS baseline: as sa-lsm, ranked by inter-reference recency"),
];

/// The external service's method behind a SA-LSM preset (`sa-lsm` is the survival forest).
pub fn salsm_method(preset: &str) -> Option<&'static str> {
    Some(match preset {
        "sa-lsm" => "rsf",
        "sa-gbdt" => "gbdt-h",
        "sa-gbdt-naive" => "gbdt-naive",
        "sa-random" => "random",
        "sa-oracle" => "oracle",
        "sa-cox" => "cox",
        "sa-lru" => "lru",
        "sa-lfu" => "lfu",
        "sa-lru2" => "lru2",
        "sa-lirs" => "lirs",
        _ => return None,
    })
}

/// SA-LSM's two tiers (Table 4's media): levels 0-1 on `hot/` (ssd), 2+ on `cold/` (hdd).
pub fn salsm_tiers() -> Vec<TierConfig> {
    vec![
        TierConfig {
            dir: "hot".into(),
            first_level: 0,
            profile: DeviceProfile::Ssd,
        },
        TierConfig {
            dir: "cold".into(),
            first_level: 2,
            profile: DeviceProfile::Hdd,
        },
    ]
}

/// Simulated missions RusKey's presets pretrain on before the first real one.
pub const RUSKEY_PRETRAIN_MISSIONS: u32 = 400;

/// Turns on every learned part (the `learned` preset) in `o`, keeping its sizes:
/// - Bourbon: the learned index (delta 8, cost-benefit analyzer) on WiscKey's key-value
///   separation with fixed-width blocks, read through memory maps;
/// - AC-Key: KV, KP and block caches sized by ghost caches;
/// - Leaper: access statistics and the prefetcher, which acts once a model bundle is
///   loaded (`Db::load_leaper_model` or `LeaperParams::model`) and until then is the
///   eager-evict baseline, cairn's default;
/// - RusKey: Lerp's tuner of K per level (only with the `ruskey` feature, which brings
///   candle; without it the preset leaves K as it is);
/// - SA-LSM: the query store and cold-set placement, which moves records only with a hot
///   and a cold tier in `Options::tiers` and a cold set installed (without the tiers,
///   `Db::proactive_compact` is refused, saying so, and nothing else changes).
pub fn apply_learned(o: &mut Options) {
    o.index = IndexPolicy::BOURBON;
    o.value_threshold = Some(0);
    o.fixed_width_entries = true;
    o.mmap_reads = true;
    o.read_cache = ReadCachePolicy::AcKey(AcKeyParams::default());
    o.access = Some(AccessOptions::default());
    o.prefetch = PrefetchPolicy::Leaper(Default::default());
    if cfg!(feature = "ruskey") {
        o.tuner.policy = TunerPolicy::Lerp(LerpParams::default());
    }
    o.records = Some(RecordOptions::default());
    o.placement.policy = PlacementPolicy::ColdSet;
}

/// Parses `greedy-B-T` (percent thresholds, B <= T).
fn greedy_thresholds(name: &str) -> Option<TunerPolicy> {
    let (b, t) = name.strip_prefix("greedy-")?.split_once('-')?;
    let (b, t) = (b.parse::<u8>().ok()?, t.parse::<u8>().ok()?);
    (b <= t && t <= 100).then(|| TunerPolicy::Greedy {
        h_bottom: b as f64 / 100.0,
        h_top: t as f64 / 100.0,
    })
}

/// Parses `ac-key-` followed by `kK` (learning rate), `tT` (ghost threshold, percent) and
/// `wW` (ghost window), dash-separated, each at most once.
fn ac_key_variant(name: &str) -> Option<ReadCachePolicy> {
    let mut p = AcKeyParams::default();
    let mut seen = [false; 3];
    for part in name.strip_prefix("ac-key-")?.split('-') {
        let (tag, num) = part.split_at_checked(1)?;
        let i = "ktw".find(tag)?;
        if std::mem::replace(&mut seen[i], true) {
            return None;
        }
        match tag {
            "k" => p.learning_rate = num.parse().ok()?,
            "t" => p.ghost_threshold = num.parse::<f64>().ok()? / 100.0,
            _ => p.ghost_window = num.parse().ok()?,
        }
    }
    let policy = ReadCachePolicy::AcKey(p);
    policy.validate().is_ok().then_some(policy)
}

/// Parses `fixed-X-Y-Z` (tenths summing to 10).
fn fixed_split(name: &str) -> Option<ReadCachePolicy> {
    let mut parts = name.strip_prefix("fixed-")?.split('-');
    let mut next = || parts.next()?.parse::<u8>().ok();
    let (kv, kp, block) = (next()?, next()?, next()?);
    if parts.next().is_some() {
        return None;
    }
    let p = ReadCachePolicy::Fixed { kv, kp, block };
    p.validate().is_ok().then_some(p)
}

/// The options of a preset, or `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Options> {
    // A read-cache preset on key-value separation (AC-Key on WiscKey: a KP hit then reads
    // the value without the data block).
    if let Some(base) = name.strip_suffix("-sep") {
        let cache_preset = ["ac-key", "block", "pure-kv", "pure-kp", "fixed-"]
            .iter()
            .any(|p| base.starts_with(p))
            && !base.ends_with("-sep");
        let mut o = by_name(base).filter(|_| cache_preset)?;
        o.value_threshold = Some(0);
        return Some(o);
    }
    let mut o = Options::default();
    let below_l0 = o.num_levels - 1;
    match name {
        "default" | "baseline" => {}
        "learned" => apply_learned(&mut o),
        "tiering" => o.level_runs = vec![o.size_ratio; below_l0],
        "moderate" => o.level_runs = vec![5.min(o.size_ratio); below_l0],
        _ if name.starts_with("k-") => {
            let k: usize = name["k-".len()..].parse().ok().filter(|k| *k >= 1)?;
            o.level_runs = vec![k.min(o.size_ratio); below_l0];
        }
        "lazy-leveling" => {
            o.level_runs = vec![o.size_ratio; below_l0];
            if let Some(last) = o.level_runs.last_mut() {
                *last = 1;
            }
            o.bloom_allocation = BloomAllocation::Monkey;
        }
        "monkey" => o.bloom_allocation = BloomAllocation::Monkey,
        "bourbon" => o.index = IndexPolicy::BOURBON,
        "bourbon-always" | "bourbon-never" | "bourbon-always-blocks" => {
            let mode = if name != "bourbon-never" {
                LearnMode::Always
            } else {
                LearnMode::Never
            };
            o.index = IndexPolicy::Learned {
                delta: 8,
                mode,
                wait_ms: 50,
            };
        }
        "ac-key" => o.read_cache = ReadCachePolicy::AcKey(Default::default()),
        "block" => o.read_cache = ReadCachePolicy::Block,
        "block-1shard" => {
            o.read_cache = ReadCachePolicy::Block;
            o.block_cache_shards = 1;
        }
        _ if name.starts_with("ac-key-") => o.read_cache = ac_key_variant(name)?,
        "pure-kv" => o.read_cache = ReadCachePolicy::PureKv,
        "pure-kp" => o.read_cache = ReadCachePolicy::PureKp,
        "wisckey" => o.value_threshold = Some(0),
        "wisckey-fixed" => {
            o.value_threshold = Some(0);
            o.fixed_width_entries = true;
        }
        "lru" | "eager-evict" | "warmup" | "warm-flush" | "warm-all" => {
            o.prefetch = match name {
                "lru" => PrefetchPolicy::Lru,
                "eager-evict" => PrefetchPolicy::EagerEvict,
                "warmup" => PrefetchPolicy::Warmup,
                "warm-flush" => PrefetchPolicy::WarmFlush,
                _ => PrefetchPolicy::WarmAll,
            };
            // Leaper's baselines are compared on its metric.
            o.invalidation_metric = true;
        }
        "leaper" | "leaper-ac-key" => {
            o.invalidation_metric = true;
            o.access = Some(AccessOptions::default());
            o.prefetch = PrefetchPolicy::Leaper(Default::default());
            if name == "leaper-ac-key" {
                o.read_cache = ReadCachePolicy::AcKey(Default::default());
            }
        }
        "ruskey" | "ruskey-pretrained" | "ruskey-monkey" | "ruskey-prior" => {
            let monkey = name == "ruskey-monkey";
            if monkey {
                o.bloom_allocation = BloomAllocation::Monkey;
            }
            o.tuner.policy = TunerPolicy::Lerp(LerpParams {
                propagation: if monkey {
                    Propagation::Monkey
                } else {
                    Propagation::Uniform
                },
                pretrain_missions: if name == "ruskey-pretrained" {
                    RUSKEY_PRETRAIN_MISSIONS
                } else {
                    0
                },
                prior: name == "ruskey-prior",
                ..Default::default()
            });
        }
        "passive" => o.tiers = salsm_tiers(),
        "age-tier" => {
            o.tiers = salsm_tiers();
            o.placement.policy = PlacementPolicy::AgeTier {
                max_age_ms: 7 * 86_400_000,
            };
        }
        _ if salsm_method(name).is_some() => {
            o.tiers = salsm_tiers();
            o.records = Some(RecordOptions::default());
            o.placement.policy = PlacementPolicy::ColdSet;
        }
        "greedy" => {
            o.tuner.policy = TunerPolicy::Greedy {
                h_bottom: 0.33,
                h_top: 0.67,
            }
        }
        _ if name.starts_with("greedy-") => o.tuner.policy = greedy_thresholds(name)?,
        "transition-greedy" => o.tuner.transition = Transition::Greedy,
        "transition-lazy" => o.tuner.transition = Transition::Lazy,
        "transition-flexible" => o.tuner.transition = Transition::Flexible,
        _ => o.read_cache = fixed_split(name)?,
    }
    // Bourbon runs on WiscKey: every value separated, entries fixed-width (key + pointer).
    if name.starts_with("bourbon") {
        o.value_threshold = Some(0);
        o.fixed_width_entries = !name.ends_with("-blocks");
    }
    // Both ran on LevelDB, which maps its tables: a learned get then copies its window out
    // of the map, where a pread costs a system call per get and the learned index gains
    // little (docs/results/bourbon.md). Data far larger than memory is better read by
    // pread: set `mmap_reads` off.
    if name.starts_with("bourbon") || name.starts_with("wisckey") {
        o.mmap_reads = true;
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for (name, _) in PRESETS {
            let name = &name
                .replace("X-Y-Z", "3-2-5")
                .replace("B-T", "25-75")
                .replace("kK-tT-wW", "k1000-t10-w500")
                .replace("CACHE", "ac-key")
                .replace("k-N", "k-2");
            let o = by_name(name).unwrap_or_else(|| panic!("{name} missing"));
            if name.starts_with("ruskey") && !cfg!(feature = "ruskey") {
                // Refused at open without RusKey's feature (candle).
                assert!(o.validate().is_err(), "{name}");
                continue;
            }
            o.validate().unwrap();
        }
        assert!(by_name("nope").is_none());
        let l = by_name("learned").unwrap();
        assert_eq!(l.index, IndexPolicy::BOURBON);
        assert!(matches!(l.read_cache, ReadCachePolicy::AcKey(_)));
        assert!(matches!(l.prefetch, PrefetchPolicy::Leaper(_)));
        assert_eq!(l.placement.policy, PlacementPolicy::ColdSet);
        assert_eq!(
            matches!(l.tuner.policy, TunerPolicy::Lerp(_)),
            cfg!(feature = "ruskey")
        );
        assert_eq!(by_name("k-2").unwrap().level_runs, vec![2; 6]);
        assert_eq!(by_name("k-99").unwrap().level_runs, vec![10; 6]);
        assert!(by_name("k-0").is_none() && by_name("k-x").is_none());
        assert!(by_name("greedy-80-20").is_none());
        assert!(by_name("greedy-x-20").is_none());
        assert_eq!(
            by_name("greedy-10-90").unwrap().tuner.policy,
            TunerPolicy::Greedy {
                h_bottom: 0.1,
                h_top: 0.9
            }
        );
        match by_name("ruskey-monkey").unwrap().tuner.policy {
            TunerPolicy::Lerp(p) => assert_eq!(p.propagation, Propagation::Monkey),
            p => panic!("{p:?}"),
        }
        assert_eq!(by_name("baseline").unwrap().index, IndexPolicy::Fence);
        assert_eq!(
            by_name("fixed-0-0-10").unwrap().read_cache,
            ReadCachePolicy::Fixed {
                kv: 0,
                kp: 0,
                block: 10
            }
        );
        for bad in [
            "fixed-3-3-3",
            "fixed-3-2",
            "fixed-3-2-5-0",
            "fixed-a-2-8",
            "fixed-11-0-0",
        ] {
            assert!(by_name(bad).is_none(), "{bad}");
        }
        assert_eq!(by_name("bourbon").unwrap().index, IndexPolicy::BOURBON);
        for b in ["bourbon", "bourbon-always", "bourbon-never", "wisckey"] {
            assert_eq!(by_name(b).unwrap().value_threshold, Some(0), "{b}");
            assert!(by_name(b).unwrap().mmap_reads, "{b}");
        }
        assert!(!by_name("baseline").unwrap().mmap_reads);
        assert_eq!(by_name("baseline").unwrap().value_threshold, None);
        for (name, fixed) in [
            ("bourbon", true),
            ("bourbon-always", true),
            ("bourbon-never", true),
            ("bourbon-always-blocks", false),
            ("wisckey", false),
            ("wisckey-fixed", true),
            ("baseline", false),
        ] {
            assert_eq!(by_name(name).unwrap().fixed_width_entries, fixed, "{name}");
        }
        assert_eq!(
            by_name("bourbon-always-blocks").unwrap().index,
            by_name("bourbon-always").unwrap().index
        );
        match by_name("ac-key-k1000-t10-w500").unwrap().read_cache {
            ReadCachePolicy::AcKey(p) => {
                assert_eq!(p.learning_rate, 1000.0);
                assert!((p.ghost_threshold - 0.1).abs() < 1e-12);
                assert_eq!(p.ghost_window, 500);
                assert_eq!(
                    p.ghost_min_windows,
                    AcKeyParams::default().ghost_min_windows
                );
            }
            p => panic!("{p:?}"),
        }
        for bad in [
            "ac-key-k",
            "ac-key-x5",
            "ac-key-k5-k6",
            "ac-key-t200",
            "ac-key-w0",
            "ac-key-",
        ] {
            assert!(by_name(bad).is_none(), "{bad}");
        }
        for (name, base) in [
            ("ac-key-sep", "ac-key"),
            ("block-sep", "block"),
            ("pure-kp-sep", "pure-kp"),
            ("fixed-3-2-5-sep", "fixed-3-2-5"),
            ("ac-key-k500-sep", "ac-key-k500"),
        ] {
            let o = by_name(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(o.value_threshold, Some(0), "{name}");
            assert_eq!(o.read_cache, by_name(base).unwrap().read_cache, "{name}");
        }
        assert!(by_name("bourbon-sep").is_none());
        assert!(by_name("ac-key-sep-sep").is_none());
        assert_eq!(by_name("block-1shard").unwrap().block_cache_shards, 1);
        for (name, t) in [
            ("transition-greedy", Transition::Greedy),
            ("transition-lazy", Transition::Lazy),
            ("transition-flexible", Transition::Flexible),
        ] {
            let o = by_name(name).unwrap();
            assert_eq!(o.tuner.transition, t, "{name}");
            assert_eq!(o.tuner.policy, TunerPolicy::Static, "{name}");
            assert_eq!(o.level_runs, Options::default().level_runs, "{name}");
        }
    }
}
