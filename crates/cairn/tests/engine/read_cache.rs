//! AC-Key's read cache through the `Db` API: every policy answers like the plain LSM-tree
//! on a read-heavy workload with overwrites and deletes across flushes and compactions;
//! KP pointers survive compactions; a hot key overwritten while readers hit it in the
//! cache is never read older than its last acknowledged write.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use cairn::cache::BlockKind;
use cairn::{AcKeyParams, Db, Options, ReadCachePolicy, ReadOptions, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::support::{env_u64, key6 as key, Model};

fn options(policy: ReadCachePolicy, budget: usize, background: bool) -> Options {
    Options {
        write_buffer_size: 32 << 10,
        block_size: 1024,
        block_cache_bytes: budget,
        size_ratio: 4,
        level1_bytes: 64 << 10,
        num_levels: 4,
        l0_compaction_trigger: 2,
        target_file_size: 16 << 10,
        background_work: background,
        read_cache: policy,
        ..Options::default()
    }
}

fn policies() -> Vec<ReadCachePolicy> {
    vec![
        ReadCachePolicy::AcKey(AcKeyParams {
            ghost_window: 200,
            ..AcKeyParams::default()
        }),
        ReadCachePolicy::AcKey(AcKeyParams::default()),
        ReadCachePolicy::PureKv,
        ReadCachePolicy::PureKp,
        ReadCachePolicy::Fixed {
            kv: 2,
            kp: 3,
            block: 5,
        },
        ReadCachePolicy::Block,
    ]
}

/// Hot-key gets (90% of reads on 50 keys) interleaved with overwrites, deletes, flushes
/// and compactions; every answer is checked against a map, and at a snapshot.
#[test]
fn every_policy_answers_like_the_lsm_tree() {
    // Index and filter blocks pinned, then in the cache charged to its budget.
    for (policy, meta) in policies().into_iter().flat_map(|p| [(p, false), (p, true)]) {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            cache_index_and_filter_blocks: meta,
            ..options(policy, 24 << 10, false)
        };
        let db = Db::open(dir.path(), opts).unwrap();
        let mut model = Model::new();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut snap: Option<(cairn::Snapshot, Model)> = None;
        for op in 0..12_000u32 {
            let i = if rng.random_ratio(9, 10) {
                rng.random_range(0..50)
            } else {
                rng.random_range(0..2000)
            };
            let k = key(i);
            match rng.random_range(0..100) {
                0..=7 => {
                    let len = if rng.random_bool(0.2) { 10 } else { 100 };
                    let mut v = format!("{op}-").into_bytes();
                    v.resize(len.max(v.len()), b'v');
                    db.put(&WriteOptions::default(), &k, &v).unwrap();
                    model.insert(k, v);
                }
                8..=9 => {
                    db.delete(&WriteOptions::default(), &k).unwrap();
                    model.remove(&k);
                }
                10 => {
                    db.run_background_work().unwrap();
                }
                11 if rng.random_ratio(1, 20) => {
                    db.flush().unwrap();
                    db.compact_range(None, None).unwrap();
                }
                12 if rng.random_ratio(1, 10) => {
                    snap = Some((db.snapshot(), model.clone()));
                }
                13 => {
                    if let Some((s, m)) = &snap {
                        let ro = ReadOptions {
                            snapshot: Some(s.clone()),
                            ..Default::default()
                        };
                        let got = db.get_opt(&ro, &db.default_cf(), &k).unwrap();
                        assert_eq!(got.as_ref(), m.get(&k), "{policy:?} op {op} at snapshot");
                    }
                }
                _ => {
                    let got = db.get(&k).unwrap();
                    assert_eq!(got.as_ref(), model.get(&k), "{policy:?} op {op} key {i}");
                }
            }
        }
        let s = db.stats().read_cache;
        assert_eq!(s.policy, policy.name());
        match policy {
            ReadCachePolicy::Block => assert_eq!(s.kv_hits + s.kp_hits, 0),
            ReadCachePolicy::PureKv => assert!(s.kv_hits > 0 && s.kp_hits == 0, "{s:?}"),
            ReadCachePolicy::PureKp => assert!(s.kp_hits > 0 && s.kv_hits == 0, "{s:?}"),
            _ => assert!(s.kv_hits > 0 && s.kp_hits > 0, "{s:?}"),
        }
        assert!(s.block_hits + s.block_misses > 0);
    }
}

/// With index and filter blocks in the cache (`cache_index_and_filter_blocks`), a KP hit
/// reads its data block by the handle it keeps: no index or filter lookup, where a plain
/// block-cache read makes one of each per table it probes. Half the budget is KP, half
/// blocks, so index and filter blocks can be cached (and their hits counted), and each
/// KP hit's data block is cached too: one cache lookup per hit, no storage read.
#[test]
fn kp_hits_skip_index_and_filter_blocks() {
    let kp_and_blocks = ReadCachePolicy::Fixed {
        kv: 0,
        kp: 5,
        block: 5,
    };
    for policy in [kp_and_blocks, ReadCachePolicy::Block] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            cache_index_and_filter_blocks: true,
            ..options(policy, 1 << 20, false)
        };
        let db = Db::open(dir.path(), opts).unwrap();
        for i in 0..3000 {
            db.put(&WriteOptions::default(), &key(i), &[b'v'; 100])
                .unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get(&key(7)).unwrap().as_deref(), Some(&[b'v'; 100][..]));
        let counts = || {
            let s = db.block_cache().stats();
            let meta = s.kind(BlockKind::Index).hits + s.kind(BlockKind::Filter).hits;
            (meta, s.hits + s.misses, db.stats().read_cache.kp_hits)
        };
        let (meta0, lookups0, kp0) = counts();
        let reads0 = db.env().stats().snapshot().total().read_ops;
        for _ in 0..10 {
            assert_eq!(db.get(&key(7)).unwrap().as_deref(), Some(&[b'v'; 100][..]));
        }
        let (meta1, lookups1, kp1) = counts();
        let (meta, lookups, kp) = (meta1 - meta0, lookups1 - lookups0, kp1 - kp0);
        if policy == kp_and_blocks {
            assert_eq!(kp, 10, "every get after the first is a KP hit");
            assert_eq!(meta, 0, "KP hits looked up index or filter blocks");
            assert_eq!(lookups, 10, "one data-block lookup per KP hit");
            let reads = db.env().stats().snapshot().total().read_ops - reads0;
            assert_eq!(reads, 0, "the hot key's data block stays cached");
        } else {
            assert!(
                meta >= 20,
                "each get looks up an index and a filter: {meta}"
            );
        }
    }
}

/// A KP entry whose table is compacted away is repointed at the compaction and still
/// answers (as a KP hit, not a fallback to the levels).
#[test]
fn kp_pointers_follow_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(ReadCachePolicy::PureKp, 1 << 20, false)).unwrap();
    for i in 0..3000 {
        db.put(
            &WriteOptions::default(),
            &key(i),
            &[b'a' + (i % 26) as u8; 100],
        )
        .unwrap();
    }
    db.flush().unwrap();
    for i in (0..3000).step_by(7) {
        assert!(db.get(&key(i)).unwrap().is_some()); // cached as KP entries
    }
    let before = db.stats();
    assert_eq!(before.read_cache.kp_hits, 0);
    let kp_entries = before.read_cache.kp_entries;
    assert!(kp_entries > 400, "{:?}", before.read_cache);
    // Overwrite the other keys so that the compaction rewrites (not moves) the tables the
    // pointers name.
    for i in (0..3000).filter(|i| i % 7 != 0) {
        db.put(&WriteOptions::default(), &key(i), b"new").unwrap();
    }
    db.flush().unwrap();
    let compactions = db.stats().compactions;
    db.compact_range(None, None).unwrap();
    assert!(db.stats().compactions > compactions);
    for i in (0..3000).step_by(7) {
        assert_eq!(
            db.get(&key(i)).unwrap(),
            Some(vec![b'a' + (i % 26) as u8; 100])
        );
    }
    let after = db.stats();
    assert_eq!(
        after.read_cache.kp_hits, kp_entries,
        "every pointer was repointed"
    );
    // A KP hit reads only the block it points to: no more table probes than hits.
    let served: u64 = after.levels.iter().map(|l| l.gets_served).sum::<u64>()
        - before.levels.iter().map(|l| l.gets_served).sum::<u64>();
    assert_eq!(served, kp_entries);
}

/// Writers overwrite hot keys and publish each acknowledged version; readers hitting
/// those keys in the KV/KP caches must never see a version older than the one acknowledged
/// before their read began, while background flushes and compactions run. `Block` with no
/// cache at all is the control: it caught an engine race (a get took its sequence number
/// before its super version, and a flush in between could drop the version it should
/// see), fixed in `DbInner::get`.
#[test]
fn hot_keys_are_never_read_stale_under_concurrency() {
    let secs: u64 = env_u64("CAIRN_CONC_SECS", 4);
    for policy in [
        ReadCachePolicy::Block,
        ReadCachePolicy::AcKey(AcKeyParams {
            ghost_window: 1000,
            ..AcKeyParams::default()
        }),
        ReadCachePolicy::PureKv,
    ] {
        const HOT: u32 = 16;
        const COLD_PER_HOT: usize = 24;
        let dir = tempfile::tempdir().unwrap();
        // The control caches nothing: that is where the engine's own race shows.
        let budget = if policy == ReadCachePolicy::Block {
            0
        } else {
            64 << 10
        };
        let db = Arc::new(Db::open(dir.path(), options(policy, budget, true)).unwrap());
        let acked: Arc<Vec<AtomicU64>> = Arc::new((0..HOT).map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(1);
                let mut version = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    version += 1;
                    let i = rng.random_range(0..HOT);
                    let mut v = format!("{version:012}").into_bytes();
                    v.resize(100, b'.');
                    db.put(&WriteOptions::default(), &key(i), &v).unwrap();
                    acked[i as usize].store(version, Ordering::SeqCst);
                    // Cold keys fill memtables so that flushes and compactions keep coming,
                    // and so many of them that a hot key is rewritten about once every
                    // second memtable: between writes it lies in the tables, where the
                    // caches serve it. (With one cold key a write, every hot key sat in the
                    // memtables whenever flushes fell behind, and the caches went unused.)
                    for _ in 0..COLD_PER_HOT {
                        let cold = key(1000 + rng.random_range(0..5000));
                        db.put(&WriteOptions::default(), &cold, &[b'c'; 100])
                            .unwrap();
                    }
                }
                version
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
                thread::spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(10 + r);
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let i = rng.random_range(0..HOT);
                        let floor = acked[i as usize].load(Ordering::SeqCst);
                        let got = db.get(&key(i)).unwrap();
                        let seen = got.map_or(0, |v| {
                            std::str::from_utf8(&v[..12])
                                .unwrap()
                                .parse::<u64>()
                                .unwrap()
                        });
                        assert!(
                            seen >= floor,
                            "{policy:?}: key {i} read at version {seen}, {floor} was acknowledged"
                        );
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(secs) && !writer.is_finished() {
            thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        let hot_writes = writer.join().unwrap();
        let reads: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
        let s = db.stats();
        eprintln!(
            "{policy:?}: {hot_writes} hot writes, {reads} reads, {} flushes, {} compactions, {:?}",
            s.flushes, s.compactions, s.read_cache
        );
        assert!(s.flushes > 0);
        if policy != ReadCachePolicy::Block {
            assert!(s.read_cache.kv_hits + s.read_cache.kp_hits > 0);
        }
    }
}

/// Cached blocks of compacted tables are replaced by the compaction's new blocks that
/// overlap them most, without storage reads: reads after the compaction hit the cache.
#[test]
fn compaction_replaces_cached_blocks_with_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let policy = ReadCachePolicy::Fixed {
        kv: 0,
        kp: 0,
        block: 10,
    };
    let db = Db::open(dir.path(), options(policy, 1 << 20, false)).unwrap();
    let wo = WriteOptions::default();
    for i in 0..4000 {
        db.put(&wo, &key(i), &[b'x'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Cache the blocks holding a hot range, then overwrite every other key so that the
    // next compaction merges (rather than moves) the tables holding them.
    for i in 1000..1100 {
        db.get(&key(i)).unwrap();
    }
    for i in (0..4000).step_by(2) {
        db.put(&wo, &key(i), &[b'y'; 100]).unwrap();
    }
    db.flush().unwrap();
    let before = db.stats().read_cache;
    db.compact_range(None, None).unwrap();
    let after = db.stats().read_cache;
    assert!(after.block_replacements > 0, "{after:?}");
    for i in 1000..1100 {
        let want = if i % 2 == 0 { b'y' } else { b'x' };
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![want; 100]));
    }
    let end = db.stats().read_cache;
    // Each cached block hands its place to the one new block it overlaps most, so where
    // the new blocks cut the range differently, a new block at its edge may be uncached.
    assert!(
        end.block_misses <= after.block_misses + 1,
        "the hot range's reads hit replaced blocks ({before:?} -> {end:?})"
    );
    assert!(end.block_hits >= after.block_hits + 99);
}

/// AC-Key on key-value separation: a KP entry keeps the value-log pointer, so a KP hit
/// reads the value record and no data block; after a compaction (here with value-log GC
/// moving the values) the repointed entry drops the old pointer and the block path finds
/// the new one, so answers stay right.
#[test]
fn kp_hits_on_separated_values_skip_the_data_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(ReadCachePolicy::PureKp, 1 << 20, false);
    o.value_threshold = Some(0);
    o.vlog_gc_space_amp = Some(1.05);
    let db = Db::open(dir.path(), o).unwrap();
    let value = |i: u32, round: u8| vec![b'a' + ((i as u8).wrapping_add(round) % 26); 100];
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &key(i), &value(i, 0))
            .unwrap();
    }
    db.flush().unwrap();
    let blocks = |db: &Db| -> u64 {
        let s = db.stats();
        s.levels
            .iter()
            .map(|l| l.data_block_hits + l.data_block_misses)
            .sum()
    };
    for i in (0..2000).step_by(5) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 0))); // admitted as KP
    }
    let (b0, s0) = (blocks(&db), db.stats());
    for i in (0..2000).step_by(5) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 0))); // KP hits
    }
    let s1 = db.stats();
    assert_eq!(s1.read_cache.kp_hits - s0.read_cache.kp_hits, 400);
    assert_eq!(
        blocks(&db),
        b0,
        "a KP hit on a separated value read a data block"
    );
    assert_eq!(s1.vlog.reads - s0.vlog.reads, 400);
    // Overwrite the other keys, compact, and let GC move the values the KP entries name.
    for i in (0..2000).filter(|i| i % 5 != 0) {
        db.put(&WriteOptions::default(), &key(i), &value(i, 1))
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.run_background_work().unwrap();
    let s2 = db.stats();
    assert!(
        s2.vlog.gc_rewrites > s1.vlog.gc_rewrites && s2.vlog.gc_records_relocated > 0,
        "value-log GC did not run: {:?}",
        s2.vlog
    );
    for i in 0..2000 {
        let round = u8::from(i % 5 != 0);
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, round)), "key {i}");
    }
    // The repointed entries still hit (through their new blocks); the other keys missed.
    let s3 = db.stats();
    assert_eq!(s3.read_cache.kp_hits - s2.read_cache.kp_hits, 400);
}

/// E-ARC at database level: the targets start with the whole budget in blocks; a phase of
/// hot point reads grows the point cache from ghost hits, and a phase of scans gives the
/// space back to blocks.
#[test]
fn ac_key_targets_follow_the_workload_phases() {
    let dir = tempfile::tempdir().unwrap();
    let policy = ReadCachePolicy::AcKey(AcKeyParams {
        ghost_window: 500,
        ..AcKeyParams::default()
    });
    let db = Db::open(dir.path(), options(policy, 128 << 10, false)).unwrap();
    let n = 4000;
    for i in 0..n {
        db.put(&WriteOptions::default(), &key(i), &[b'v'; 100])
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let targets = |db: &Db| {
        let r = db.stats().read_cache;
        (
            r.point_target_bytes,
            r.ghost_hits,
            r.kv_entries + r.kp_entries,
        )
    };
    assert_eq!(targets(&db).0, 0, "the budget starts in blocks");
    let mut rng = SmallRng::seed_from_u64(12);
    let scan_phase = |db: &Db, rng: &mut SmallRng| {
        for _ in 0..400 {
            let mut it = db.iter(&ReadOptions::default(), &db.default_cf()).unwrap();
            it.seek(&key(rng.random_range(0..n - 60)));
            for _ in 0..50 {
                assert!(it.valid());
                it.next();
            }
        }
    };
    scan_phase(&db, &mut rng);
    let after_scans = targets(&db);
    // Hot point reads: 300 keys (about 35 KiB as KV entries) over scattered blocks.
    let hot: Vec<u32> = (0..300).map(|i| i * 13 % n).collect();
    for _ in 0..40_000 {
        let k = hot[rng.random_range(0..hot.len())];
        assert_eq!(db.get(&key(k)).unwrap(), Some(vec![b'v'; 100]));
    }
    let after_points = targets(&db);
    assert!(
        after_points.1 > after_scans.1,
        "no ghost hit in the point phase"
    );
    assert!(
        after_points.0 > after_scans.0 + (16 << 10),
        "the point target did not grow: {after_scans:?} -> {after_points:?}"
    );
    assert!(
        after_points.2 > 100,
        "hot keys are cached as points: {after_points:?}"
    );
    // The event log notes the split's move at the next flush.
    db.put(&WriteOptions::default(), b"~flush", b"x").unwrap();
    db.flush().unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains(" ac_key_split kv_target="), "{log}");
    scan_phase(&db, &mut rng);
    scan_phase(&db, &mut rng);
    let end = targets(&db);
    assert!(
        end.0 < after_points.0,
        "scans did not take space back: {after_points:?} -> {end:?}"
    );
}
