//! The cache around flush and compaction, policy by policy, on scripted jobs: which
//! blocks each keeps, warms and drops, and how the invalidation-miss metric counts.

use std::sync::Arc;

use cairn::policy::{HotRangeSource, LeaperParams, PrefetchPolicy};
use cairn::{Db, Options, WriteOptions};

use crate::support::key_be16 as key;

const KEYS: u64 = 4000;
const HOT: std::ops::Range<u64> = 1000..1100;

/// Knows that keys 1000..1100 will be read.
struct Oracle;

impl HotRangeSource for Oracle {
    fn hot_intervals(
        &self,
        _steps: std::ops::Range<usize>,
        _span: (u64, u64),
    ) -> Option<Vec<(u64, u64)>> {
        Some(vec![(HOT.start, HOT.end - 1)])
    }
    fn slot_ms(&self) -> u64 {
        1000
    }
    fn steps(&self) -> usize {
        2
    }
}

fn options(policy: PrefetchPolicy) -> Options {
    Options {
        write_buffer_size: 1 << 20,
        target_file_size: 64 << 10,
        block_size: 1024,
        block_cache_bytes: 8 << 20,
        background_work: false,
        prefetch: policy,
        invalidation_metric: true,
        ..Options::small()
    }
}

/// Loads every key, flushes and compacts, reads the hot keys (caching their blocks),
/// then overwrites every tenth key and compacts again: the hot keys' blocks are rewritten.
/// Returns the data-block misses of reading the hot keys after that, and the stats.
fn run(policy: PrefetchPolicy) -> (u64, cairn::DbStats) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(policy)).unwrap();
    let wo = WriteOptions::default();
    for i in 0..KEYS {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in HOT {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    for i in (0..KEYS).step_by(10) {
        db.put(&wo, &key(i), &[b'b'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let before = db.stats().block_cache_misses;
    for i in HOT {
        let want = if i % 10 == 0 { b'b' } else { b'a' };
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![want; 100]), "key {i}");
    }
    let stats = db.stats();
    let misses = stats.block_cache_misses - before;
    db.close().unwrap();
    (misses, stats)
}

#[test]
fn hot_blocks_survive_compaction_under_the_oracle_and_warmup() {
    let (evict_misses, evict) = run(PrefetchPolicy::EagerEvict);
    assert!(
        evict_misses > 0,
        "the rewritten hot blocks must be read again"
    );
    assert_eq!(evict.prefetch.warmed_blocks, 0);
    assert!(evict.prefetch.invalidated_blocks > 0);
    assert!(
        evict.prefetch.invalidation_misses > 0,
        "{:?}",
        evict.prefetch
    );
    assert!(evict.prefetch.invalidation_misses_60s >= evict.prefetch.invalidation_misses);

    let (oracle_misses, oracle) = run(PrefetchPolicy::Oracle(Arc::new(Oracle)));
    assert_eq!(oracle_misses, 0, "{:?}", oracle.prefetch);
    assert_eq!(oracle.prefetch.invalidation_misses, 0);
    let p = oracle.prefetch;
    assert!(p.warmed_blocks > 0 && p.warmed_hits > 0, "{p:?}");
    // Only the hot blocks are warmed (about 13 per compaction, two compactions), not the
    // whole output.
    assert!(p.warmed_blocks < 40, "{p:?}");
    assert!(p.warmed_hits <= p.warmed_blocks);

    // Incremental Warmup swaps one for one: the hot keys' 13 cached blocks overlap 14
    // new ones, and the one past the freed room stays cold.
    let (warmup_misses, warmup) = run(PrefetchPolicy::Warmup);
    assert!(warmup_misses <= 1, "{:?}", warmup.prefetch);
    assert!(warmup.prefetch.warmed_blocks > 0);
    assert!(warmup.prefetch.warmed_blocks <= warmup.prefetch.invalidated_blocks);

    let (all_misses, all) = run(PrefetchPolicy::WarmAll);
    assert_eq!(all_misses, 0);
    // Warm-all caches every output block: far more than the hot ones.
    assert!(
        all.prefetch.warmed_blocks > 10 * p.warmed_blocks,
        "{:?}",
        all.prefetch
    );
    assert!(all.prefetch.warmed_hits < all.prefetch.warmed_blocks / 5);
}

#[test]
fn lru_leaves_dead_blocks_to_age_out_and_eager_evict_drops_them() {
    let (_, lru) = run(PrefetchPolicy::Lru);
    let (_, evict) = run(PrefetchPolicy::EagerEvict);
    // The same reads; under LRU the dead blocks still take cache space.
    assert!(
        lru.block_cache_usage > evict.block_cache_usage,
        "lru {} vs eager-evict {}",
        lru.block_cache_usage,
        evict.block_cache_usage
    );
}

#[test]
fn warm_flush_caches_what_a_flush_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(PrefetchPolicy::WarmFlush)).unwrap();
    let wo = WriteOptions::default();
    for i in 0..500 {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.flush().unwrap();
    let before = db.stats().block_cache_misses;
    for i in 0..500 {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    let s = db.stats();
    assert_eq!(s.block_cache_misses, before, "{:?}", s.prefetch);
    assert!(s.prefetch.warmed_hits > 0);
    db.close().unwrap();
}

#[test]
fn a_damaged_leaper_model_changes_nothing_but_speed() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.bundle");
    let good =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leaper/synth.bundle");
    let mut bytes = std::fs::read(&good).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&bad, &bytes).unwrap();
    let leaper = |model: Option<std::path::PathBuf>| Options {
        access: Some(cairn::access::AccessOptions::default()),
        ..options(PrefetchPolicy::Leaper(LeaperParams {
            model,
            ..LeaperParams::default()
        }))
    };
    // Opening with a damaged model works, without the model.
    let db = Db::open(dir.path().join("db"), leaper(Some(bad.clone()))).unwrap();
    assert_eq!(db.stats().prefetch.model_errors, 1);
    let err = db.load_leaper_model(&db.default_cf(), &bad).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert_eq!(db.stats().prefetch.model_errors, 2);
    let wo = WriteOptions::default();
    for i in 0..2000 {
        db.put(&wo, &key(i), &i.to_be_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 0..2000 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(i.to_be_bytes().to_vec()));
    }
    assert_eq!(db.stats().prefetch.jobs_with_model, 0);
    // The good model loads while the database runs and is used by the next job.
    db.load_leaper_model(&db.default_cf(), &good).unwrap();
    for i in 0..2000 {
        db.put(&wo, &key(i), &(i + 1).to_be_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert!(db.stats().prefetch.jobs_with_model > 0);
    for i in 0..2000 {
        assert_eq!(
            db.get(&key(i)).unwrap(),
            Some((i + 1).to_be_bytes().to_vec())
        );
    }
    db.close().unwrap();
    // A policy other than Leaper refuses models; so does Leaper without access statistics.
    let db = Db::open(dir.path().join("db2"), options(PrefetchPolicy::Lru)).unwrap();
    assert!(db.load_leaper_model(&db.default_cf(), &good).is_err());
    db.close().unwrap();
    let no_access = Options {
        access: None,
        ..leaper(Some(good))
    };
    assert!(matches!(
        Db::open(dir.path().join("db3"), no_access),
        Err(cairn::Error::InvalidArgument(_))
    ));
}

#[test]
fn a_flush_invalidates_the_keys_it_moved_not_its_whole_span() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    let wo = WriteOptions::default();
    for i in 0..1000 {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    // A new session: the load's own flush is not a recent event.
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    // A sparse flush whose key span covers everything.
    for i in (0..1000).step_by(10) {
        db.put(&wo, &key(i), &[b'b'; 100]).unwrap();
    }
    db.flush().unwrap();
    // Keys the flush never held: misses, but no invalidation misses.
    for i in 501..510 {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    let p = db.stats().prefetch;
    assert_eq!(p.invalidation_misses, 0, "{p:?}");
    // A key the flush moved out of the memtable: its first read misses, and counts.
    assert_eq!(db.get(&key(700)).unwrap(), Some(vec![b'b'; 100]));
    let p = db.stats().prefetch;
    assert_eq!(p.invalidation_misses, 1, "{p:?}");
    db.close().unwrap();
    // With the metric off (the default) the same read counts nothing: the read path
    // does not pay for Leaper's bookkeeping unless asked to.
    let off = Options {
        invalidation_metric: false,
        ..options(PrefetchPolicy::EagerEvict)
    };
    let db = Db::open(dir.path(), off).unwrap();
    db.put(&wo, &key(300), &[b'c'; 100]).unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(&key(300)).unwrap(), Some(vec![b'c'; 100]));
    let p = db.stats().prefetch;
    assert_eq!(
        (p.invalidation_misses, p.invalidation_misses_60s),
        (0, 0),
        "{p:?}"
    );
    db.close().unwrap();
}

#[test]
fn a_compaction_counts_misses_on_its_own_tables_only() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    let other = db.create_cf("other").unwrap();
    for i in 0..1000 {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
        db.put_cf(&other, &wo, &key(i), &[b'o'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.compact_range_cf(&other, None, None).unwrap();
    db.close().unwrap();
    // A new session: the load's jobs are not recent events.
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    let other = db.cf("other").unwrap();
    for i in 0..1000 {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    // The compaction rewrites (and eager-evict drops) every cached block of the family.
    for i in (0..1000).step_by(10) {
        db.put(&wo, &key(i), &[b'b'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let p = db.stats().prefetch;
    assert!(p.invalidated_blocks > 0, "{p:?}");
    // The same keys in another family miss on tables the job never touched: no count.
    let misses = db.stats().block_cache_misses;
    for i in 0..100 {
        assert_eq!(db.get_cf(&other, &key(i)).unwrap(), Some(vec![b'o'; 100]));
    }
    assert!(db.stats().block_cache_misses > misses);
    let p = db.stats().prefetch;
    assert_eq!(p.invalidation_misses, 0, "{p:?}");
    // A key whose cached block the job removed misses on the job's output: it counts.
    assert_eq!(db.get(&key(5)).unwrap(), Some(vec![b'a'; 100]));
    let p = db.stats().prefetch;
    assert_eq!(p.invalidation_misses, 1, "{p:?}");
    db.close().unwrap();
}

#[test]
fn a_compaction_invalidates_the_keys_its_cached_blocks_held_not_their_span() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    for i in (0..1000).step_by(2) {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    // Cache the blocks of the even keys 400..500, then write the odd keys between them
    // (into a level-0 table no one reads) and merge both.
    for i in (400..500).step_by(2) {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    for i in (401..500).step_by(2) {
        db.put(&wo, &key(i), &[b'o'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let p = db.stats().prefetch;
    assert!(p.invalidated_blocks > 0, "{p:?}");
    // An odd key lies inside a cached block's first..last but was never in it: its
    // miss is no block the job took away.
    assert_eq!(db.get(&key(451)).unwrap(), Some(vec![b'o'; 100]));
    let p = db.stats().prefetch;
    assert_eq!(p.invalidation_misses, 0, "{p:?}");
    // An even key was in a cached block: its miss counts.
    assert_eq!(db.get(&key(300 + 160)).unwrap(), Some(vec![b'a'; 100]));
    let p = db.stats().prefetch;
    assert_eq!(p.invalidation_misses, 1, "{p:?}");
    db.close().unwrap();
}

#[test]
fn leaper_drops_cold_input_blocks_at_the_jobs_start_whatever_the_room() {
    // Phase one (§6.2) evicts the cached input blocks outside hot_T1 unconditionally: a
    // block no one reads during the job only holds a place LRU could give another.
    for cache in [48usize << 10, 8 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            block_cache_bytes: cache,
            ..options(PrefetchPolicy::Oracle(Arc::new(Oracle)))
        };
        let db = Db::open(dir.path(), opts).unwrap();
        let wo = WriteOptions::default();
        for i in 0..KEYS {
            db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
        }
        db.compact_range(None, None).unwrap();
        // Every block read once: a small cache ends up full of the last keys' blocks,
        // outside the oracle's hot keys; a large one holds them all, with room to spare.
        for i in 0..KEYS {
            assert!(db.get(&key(i)).unwrap().is_some());
        }
        for i in (0..KEYS).step_by(10) {
            db.put(&wo, &key(i), &[b'b'; 100]).unwrap();
        }
        db.compact_range(None, None).unwrap();
        let p = db.stats().prefetch;
        assert!(p.invalidated_blocks > 0, "{p:?}");
        // Only blocks of the 100 hot keys stay (about 13 of 1 KiB; in the small cache,
        // the few of them the reads left cached); the rest go, room or not.
        let kept = p.invalidated_blocks - p.evicted_blocks;
        assert!(p.evicted_blocks > 0 && kept <= 20, "{p:?}");
        if cache > 1 << 20 {
            assert!((10..=20).contains(&kept), "{p:?}");
        }
        for i in (0..KEYS).step_by(97) {
            let want = if i % 10 == 0 { b'b' } else { b'a' };
            assert_eq!(db.get(&key(i)).unwrap(), Some(vec![want; 100]), "key {i}");
        }
        db.close().unwrap();
    }
}

#[test]
fn scans_count_invalidation_misses_and_warmed_hits_as_gets_do() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    for i in 0..KEYS {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let scan = |db: &Db, lo: u64, hi: u64| {
        let mut n = 0u64;
        for kv in db.scan(key(lo)..key(hi)).unwrap() {
            kv.unwrap();
            n += 1;
        }
        n
    };
    // A new session: the load's jobs are not recent events.
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    assert_eq!(scan(&db, 1000, 2000), 1000);
    let p = db.stats().prefetch;
    assert_eq!(
        p.invalidation_misses, 0,
        "cold reads are no invalidation: {p:?}"
    );
    // The compaction rewrites the scanned blocks; scanning them again misses on its
    // outputs, and each miss counts, as a scan's.
    for i in (0..KEYS).step_by(10) {
        db.put(&wo, &key(i), &[b'b'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let misses = db.stats().block_cache_misses;
    assert_eq!(scan(&db, 1000, 2000), 1000);
    let p = db.stats().prefetch;
    let block_misses = db.stats().block_cache_misses - misses;
    assert!(p.invalidation_misses > 0, "{p:?}");
    assert_eq!(p.invalidation_misses_scan, p.invalidation_misses, "{p:?}");
    assert_eq!(p.invalidation_misses_flush, 0, "{p:?}");
    assert!(
        p.invalidation_misses <= block_misses,
        "{p:?} vs {block_misses}"
    );
    // Outside the scanned range nothing was cached, so nothing was invalidated there.
    let before = p.invalidation_misses;
    assert_eq!(scan(&db, 3000, 3500), 500);
    assert_eq!(db.stats().prefetch.invalidation_misses, before);
    // A flush moves keys out of the memtable; a scan's miss on its table counts for it.
    for i in 1000..1010 {
        db.put(&wo, &key(i), &[b'c'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(scan(&db, 1000, 1010), 10);
    let p = db.stats().prefetch;
    assert!(p.invalidation_misses_flush > 0, "{p:?}");
    assert_eq!(p.invalidation_misses_scan, p.invalidation_misses, "{p:?}");
    db.close().unwrap();

    // Warmed blocks a scan reads count as warmed hits (the precision).
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(PrefetchPolicy::WarmAll)).unwrap();
    for i in 0..KEYS {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let misses = db.stats().block_cache_misses;
    let scan = |db: &Db, lo: u64, hi: u64| db.scan(key(lo)..key(hi)).unwrap().count() as u64;
    assert_eq!(scan(&db, 0, KEYS), KEYS);
    let s = db.stats();
    assert_eq!(s.block_cache_misses, misses, "every block was warmed");
    assert!(s.prefetch.warmed_hits > 0, "{:?}", s.prefetch);
    assert!(s.prefetch.warmed_hits <= s.prefetch.warmed_blocks);
    db.close().unwrap();
}

/// Knows that keys 1000..1100 are read, but only from the second slot on (after a job
/// that outlasts Leaper's one-slot T1 estimate would have dropped their blocks).
struct LateOracle {
    horizon: usize,
}

impl HotRangeSource for LateOracle {
    fn hot_intervals(
        &self,
        steps: std::ops::Range<usize>,
        _span: (u64, u64),
    ) -> Option<Vec<(u64, u64)>> {
        Some(if steps.end > 1 {
            vec![(HOT.start, HOT.end - 1)]
        } else {
            Vec::new()
        })
    }
    fn slot_ms(&self) -> u64 {
        1000
    }
    fn steps(&self) -> usize {
        self.horizon
    }
}

#[test]
fn the_oracle_keeps_every_block_read_within_its_horizon() {
    // (horizon, hot input blocks kept): with a horizon of one slot the oracle knows no
    // read of the hot keys and drops every cached input block; with two it keeps theirs.
    for (horizon, keeps_hot) in [(1usize, false), (2, true)] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            block_cache_bytes: 48 << 10,
            ..options(PrefetchPolicy::Oracle(Arc::new(LateOracle { horizon })))
        };
        let db = Db::open(dir.path(), opts).unwrap();
        let wo = WriteOptions::default();
        for i in 0..KEYS {
            db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
        }
        db.compact_range(None, None).unwrap();
        // Fill the cache (the job then needs room), the hot keys' blocks last.
        for i in (0..KEYS).chain(HOT) {
            assert!(db.get(&key(i)).unwrap().is_some());
        }
        for i in (0..KEYS).step_by(10) {
            db.put(&wo, &key(i), &[b'b'; 100]).unwrap();
        }
        db.compact_range(None, None).unwrap();
        let p = db.stats().prefetch;
        let kept = p.invalidated_blocks - p.evicted_blocks;
        assert!(p.invalidated_blocks > 20, "{p:?}");
        if keeps_hot {
            // About 13 blocks of 1 KiB hold the 100 hot keys.
            assert!((10..=20).contains(&kept), "{p:?}");
        } else {
            assert_eq!(kept, 0, "{p:?}");
        }
        db.close().unwrap();
    }
}

#[test]
fn a_scan_that_runs_off_a_table_counts_on_that_table() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), options(PrefetchPolicy::EagerEvict)).unwrap();
    // One table of 300 keys.
    for i in 0..300 {
        db.put(&wo, &key(i), &[b'a'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Cache its first block; the next compaction rewrites it.
    assert!(db.get(&key(0)).unwrap().is_some());
    db.put(&wo, &key(1), &[b'b'; 100]).unwrap();
    db.compact_range(None, None).unwrap();
    let before = db.stats().prefetch;
    // Backward from an upper bound equal to the table's first key: the run iterator reads
    // the first block (a miss on a block the compaction invalidated), steps back off the
    // table's start and leaves it. The miss counts, on that table's first key.
    let ro = cairn::ReadOptions {
        upper_bound: Some(key(0).to_vec()),
        ..Default::default()
    };
    let mut it = db.iter(&ro, &db.default_cf()).unwrap();
    it.seek_to_last();
    assert!(!it.valid());
    drop(it);
    let p = db.stats().prefetch;
    assert_eq!(
        p.invalidation_misses_scan - before.invalidation_misses_scan,
        1,
        "{p:?}"
    );
    db.close().unwrap();
}
