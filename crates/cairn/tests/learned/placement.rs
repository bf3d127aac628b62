//! SA-LSM's placement in a database: a proactive compaction puts exactly the cold set on
//! the cold tier, never changes an answer (model-based, with snapshots and reopens), the
//! age rule moves old writes, passive compaction waits while placement is on, the query
//! store survives restarts, and damaged cold-key sets and query stores are refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn::access::{ManualClock, RecordOptions};
use cairn::learned::ColdSet;
use cairn::policy::{PlacementOptions, PlacementPolicy};
use cairn::{Compression, Db, DeviceProfile, Options, ReadOptions, TierConfig, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const DAY: u64 = 86_400_000;

fn tiers() -> Vec<TierConfig> {
    vec![
        TierConfig {
            dir: "hot".into(),
            first_level: 0,
            profile: DeviceProfile::None,
        },
        TierConfig {
            dir: "cold".into(),
            first_level: 2,
            profile: DeviceProfile::None,
        },
    ]
}

fn opts(policy: PlacementPolicy, clock: &ManualClock) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        level1_bytes: 64 << 10,
        size_ratio: 4,
        num_levels: 4,
        block_size: 512,
        block_cache_bytes: 0,
        background_work: false,
        tiers: tiers(),
        records: Some(RecordOptions {
            clock: Arc::new(clock.clone()),
            ..Default::default()
        }),
        placement: PlacementOptions {
            policy,
            clock: Arc::new(clock.clone()),
            ..Default::default()
        },
        ..Options::small()
    }
    // Level sizes here are the bytes written.
    .with_compression(Compression::None)
}

fn key(i: u32) -> Vec<u8> {
    format!("user{i:06}").into_bytes()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, ro: &ReadOptions) {
    let cf = db.default_cf();
    for (k, v) in model {
        assert_eq!(db.get_opt(ro, &cf, k).unwrap().as_ref(), Some(v), "{k:?}");
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan_opt::<&[u8], _>(ro, &cf, .., false)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
}

/// Cold-tier reads a get of `k` makes (tables already open, no block cache).
fn cold_reads(db: &Db, k: &[u8]) -> u64 {
    let before = db.stats().io.tier(1).read_ops;
    db.get(k).unwrap();
    db.stats().io.tier(1).read_ops - before
}

#[test]
fn proactive_compaction_moves_exactly_the_cold_set() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(DAY);
    let db = Db::open(dir.path(), opts(PlacementPolicy::ColdSet, &clock)).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    let n = 3000u32;
    for i in 0..n {
        db.put(&wo, &key(i), format!("v{i}").repeat(8).as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    // Nothing loaded: the compaction says why it did nothing.
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!(r.skipped.as_deref(), Some("no cold-key set loaded"));
    let cold: Vec<Vec<u8>> = (0..n).filter(|i| i % 3 == 0).map(key).collect();
    db.install_cold_set(&cf, ColdSet::new(cf.id(), DAY, 1.0, "test", cold.clone()))
        .unwrap();
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!(r.skipped, None);
    assert_eq!((r.hot_level, r.cold_level), (1, 2));
    assert_eq!(r.cold_records, cold.len() as u64);
    assert_eq!(r.hot_records, (n - cold.len() as u32) as u64);
    assert!(r.cold_bytes > 0 && r.hot_bytes > r.cold_bytes);
    let info = db.level_info(&cf).unwrap();
    assert!(info[0].runs.is_empty());
    assert_eq!(info[1].runs.len(), 1);
    assert_eq!(info[2].runs.len(), 1);
    assert!(std::fs::read_dir(dir.path().join("cold")).unwrap().count() > 0);
    // Open every table, then see which keys a get reads from the cold tier.
    for i in 0..n {
        db.get(&key(i)).unwrap();
    }
    for i in 0..n {
        let reads = cold_reads(&db, &key(i));
        if i % 3 == 0 {
            assert!(reads > 0, "cold key {i} not on the cold tier");
        } else {
            assert_eq!(reads, 0, "hot key {i} read from the cold tier");
        }
    }
    // A cold record updated again goes through the normal write path.
    db.put(&wo, &key(0), b"new").unwrap();
    assert_eq!(db.get(&key(0)).unwrap().as_deref(), Some(&b"new"[..]));
    let s = db.stats();
    assert_eq!(s.proactive_compactions, 1);
    assert_eq!(s.proactive_cold_records, cold.len() as u64);
    // The event log has the cold set and the compaction's result.
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains(&format!(" sa_lsm_cold_set cf=default keys={}", cold.len())));
    assert!(
        log.contains(&format!("cold_records={} hot_records=", cold.len())),
        "{log}"
    );
}

#[test]
fn placement_never_changes_an_answer() {
    for seed in 0..3u64 {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(DAY);
        let policy = if seed == 2 {
            PlacementPolicy::AgeTier { max_age_ms: DAY }
        } else {
            PlacementPolicy::ColdSet
        };
        let mut db = Db::open(dir.path(), opts(policy.clone(), &clock)).unwrap();
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let wo = WriteOptions::default();
        let mut moved = 0;
        for step in 0..2500u32 {
            let k = key(rng.random_range(0..600));
            match rng.random_range(0..10) {
                0..=5 => {
                    let v = format!("{step}-")
                        .repeat(rng.random_range(1..20))
                        .into_bytes();
                    db.put(&wo, &k, &v).unwrap();
                    model.insert(k, v);
                }
                6 => {
                    db.delete(&wo, &k).unwrap();
                    model.remove(&k);
                }
                7 => {
                    let a = rng.random_range(0..600);
                    let (lo, hi) = (key(a), key(a + rng.random_range(1..8)));
                    db.delete_range(&wo, &lo, &hi).unwrap();
                    let gone: Vec<Vec<u8>> = model
                        .range(lo.clone()..hi.clone())
                        .map(|(k, _)| k.clone())
                        .collect();
                    for g in gone {
                        model.remove(&g);
                    }
                }
                _ => assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "{k:?}"),
            }
            if step % 97 == 0 {
                clock.advance(DAY / 3);
            }
            if step % 151 == 0 {
                db.flush().unwrap();
            }
            if step % 211 == 0 {
                db.run_background_work().unwrap();
            }
            if step % 173 == 0 {
                let cf = db.default_cf();
                let cold: Vec<Vec<u8>> = (0..150).map(|_| key(rng.random_range(0..600))).collect();
                db.install_cold_set(&cf, ColdSet::new(cf.id(), 0, 0.0, "rand", cold))
                    .unwrap();
                // A snapshot taken before the move reads the same after it.
                let snap = db.snapshot();
                let ro = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..Default::default()
                };
                let r = db.proactive_compact(&cf).unwrap();
                moved += r.cold_records;
                check(&db, &model, &ro);
                drop(ro);
                drop(snap);
                check(&db, &model, &ReadOptions::default());
            }
            if step % 997 == 0 {
                drop(db);
                db = Db::open(dir.path(), opts(policy.clone(), &clock)).unwrap();
                check(&db, &model, &ReadOptions::default());
            }
        }
        assert!(moved > 0, "seed {seed}: nothing moved");
        check(&db, &model, &ReadOptions::default());
    }
}

#[test]
fn age_tier_moves_old_writes_only() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(DAY);
    let db = Db::open(
        dir.path(),
        opts(
            PlacementPolicy::AgeTier {
                max_age_ms: 7 * DAY,
            },
            &clock,
        ),
    )
    .unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    for i in 0..500 {
        db.put(&wo, &key(i), b"old").unwrap();
    }
    // Nothing is old enough yet.
    let r = db.proactive_compact(&cf).unwrap();
    assert!(r.skipped.is_some(), "{r:?}");
    clock.advance(10 * DAY);
    for i in 500..800 {
        db.put(&wo, &key(i), b"new").unwrap();
    }
    db.put(&wo, &key(7), b"rewritten").unwrap(); // an old key written again is hot
    db.flush().unwrap();
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!(r.skipped, None, "{r:?}");
    assert_eq!(r.placement, "age-tier");
    assert_eq!((r.cold_records, r.hot_records), (499, 301));
    assert_eq!(db.get(&key(7)).unwrap().as_deref(), Some(&b"rewritten"[..]));
}

/// A proactive compaction leaves a range deletion in the hot level (its hot side keeps a
/// copy) while the values written after it go down as cold: the last level must keep
/// their numbers, which reads weigh against the deletion's (at number 0 they would read
/// as deleted).
#[test]
fn a_deletion_left_in_the_hot_level_never_hides_newer_cold_values() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(DAY);
    let db = Db::open(dir.path(), opts(PlacementPolicy::ColdSet, &clock)).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    for i in 0..100 {
        db.put(&wo, &key(i), b"before").unwrap();
    }
    db.flush().unwrap();
    db.delete_range(&wo, &key(0), &key(100)).unwrap();
    for i in 0..100 {
        db.put(&wo, &key(i), b"after").unwrap();
    }
    db.flush().unwrap();
    let cold: Vec<Vec<u8>> = (0..100).map(key).collect();
    db.install_cold_set(&cf, ColdSet::new(cf.id(), DAY, 1.0, "test", cold))
        .unwrap();
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!((r.cold_records, r.hot_records), (100, 0), "{r:?}");
    let info = db.level_info(&cf).unwrap();
    assert_eq!(info[1].runs.len(), 1, "the deletion's hot copy: {info:?}");
    for i in 0..100 {
        assert_eq!(
            db.get(&key(i)).unwrap().as_deref(),
            Some(&b"after"[..]),
            "{i}"
        );
    }
    db.compact_range(None, None).unwrap();
    for i in 0..100 {
        assert_eq!(
            db.get(&key(i)).unwrap().as_deref(),
            Some(&b"after"[..]),
            "{i}"
        );
    }
}

/// The age rule dates keys by their sequence numbers, so a merge into the last level
/// with data keeps them (elsewhere it writes old values at number 0).
#[test]
fn age_tier_dates_keys_a_bottommost_merge_rewrote() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(DAY);
    let policy = PlacementPolicy::AgeTier {
        max_age_ms: 7 * DAY,
    };
    let db = Db::open(dir.path(), opts(policy, &clock)).unwrap();
    let cf = db.default_cf();
    let wo = WriteOptions::default();
    let put_flushed = |keys: std::ops::Range<u32>, v: &[u8]| {
        for i in keys {
            db.put(&wo, &key(i), v).unwrap();
        }
        db.flush().unwrap();
    };
    put_flushed(0..250, b"old");
    put_flushed(250..500, b"old");
    clock.advance(10 * DAY);
    put_flushed(500..650, b"new");
    db.put(&wo, &key(7), b"rewritten").unwrap();
    put_flushed(650..800, b"new");
    // Level 0's four tables merge into level 1, the last level holding data.
    db.run_background_work().unwrap();
    let info = db.level_info(&cf).unwrap();
    assert_eq!(info[0].runs.len(), 0, "{info:?}");
    assert!(info[2..].iter().all(|l| l.runs.is_empty()), "{info:?}");
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!(r.skipped, None, "{r:?}");
    assert_eq!((r.cold_records, r.hot_records), (499, 301));
}

#[test]
fn passive_compaction_waits_for_the_slack_while_placement_is_on() {
    let clock = ManualClock::new(0);
    let mut l2 = Vec::new();
    for policy in [PlacementPolicy::Passive, PlacementPolicy::ColdSet] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts(policy, &clock)).unwrap();
        let wo = WriteOptions::default();
        // About 3x level 1's capacity: past it, below 8x.
        for i in 0..2000 {
            db.put(&wo, &key(i), &[b'x'; 100]).unwrap();
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
        let info = db.level_info(&db.default_cf()).unwrap();
        l2.push(info[2].runs.iter().map(|r| r.bytes).sum::<u64>());
    }
    assert!(l2[0] > 0, "passive moved nothing down: {l2:?}");
    assert_eq!(l2[1], 0, "placement on: the hot level should hold: {l2:?}");
}

#[test]
fn query_store_survives_a_restart_and_exports_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(5 * DAY);
    let o = || opts(PlacementPolicy::ColdSet, &clock);
    {
        let db = Db::open(dir.path(), o()).unwrap();
        let wo = WriteOptions::default();
        for i in 0..100 {
            db.put(&wo, &key(i), b"v").unwrap();
        }
        clock.advance(DAY);
        for i in 0..50 {
            db.get(&key(i)).unwrap();
        }
        drop(db.iter(&ReadOptions::default(), &db.default_cf()).unwrap());
    }
    let db = Db::open(dir.path(), o()).unwrap();
    clock.advance(DAY);
    db.get(&key(1)).unwrap();
    let out = dir.path().join("trace.rtr");
    assert_eq!(db.export_record_trace(&db.default_cf(), &out).unwrap(), 100);
    let (h, records) = cairn::access::record_trace::read(&out).unwrap();
    assert_eq!((h.point_reads, h.writes, h.scans), (51, 100, 1));
    assert_eq!((h.start_ms, h.end_ms), (5 * DAY, 7 * DAY));
    let r1 = &records[1];
    assert_eq!(r1.key, key(1));
    assert_eq!(r1.days, vec![(5, 0, 1), (6, 1, 0), (7, 1, 0)]);
    drop(db);
    // A damaged store is set aside: the database opens and the store starts fresh.
    let path = dir.path().join("QUERYSTORE-0.rtr");
    let mut b = std::fs::read(&path).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0xff;
    std::fs::write(&path, b).unwrap();
    let db = Db::open(dir.path(), o()).unwrap();
    assert_eq!(db.record_store(&db.default_cf()).unwrap().len(), 0);
    assert_eq!(db.get(&key(3)).unwrap().as_deref(), Some(&b"v"[..]));
}

/// The records a scan yields are read (a cold record a scan covers costs a cold-tier read),
/// and a write names the column it updates.
#[test]
fn query_store_traces_scan_coverage_and_columns() {
    use cairn::access::record_trace::{tag_time, time_is_write};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(DAY);
    let db = Db::open(dir.path(), opts(PlacementPolicy::ColdSet, &clock)).unwrap();
    for i in 0..10 {
        db.put(&WriteOptions::default(), &key(i), b"v").unwrap();
    }
    clock.advance(1000);
    let col = WriteOptions {
        query_column: Some(4),
        ..WriteOptions::default()
    };
    db.put(&col, &key(7), b"w").unwrap();
    clock.advance(1000);
    let n = db.scan(key(2)..key(5)).unwrap().count();
    assert_eq!(n, 3);
    let out = dir.path().join("trace.rtr");
    db.export_record_trace(&db.default_cf(), &out).unwrap();
    let (h, records) = cairn::access::record_trace::read(&out).unwrap();
    assert_eq!((h.point_reads, h.scans), (0, 1));
    for (i, r) in records.iter().enumerate() {
        let reads = r.times.iter().filter(|&&t| !time_is_write(t)).count();
        assert_eq!(reads, usize::from((2..5).contains(&i)), "record {i}");
    }
    assert_eq!(records[7].times[1], tag_time(DAY + 1000, true, Some(4)));
}

#[test]
fn damaged_or_foreign_cold_sets_are_refused_and_the_old_one_stays() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let db = Db::open(dir.path(), opts(PlacementPolicy::ColdSet, &clock)).unwrap();
    let cf = db.default_cf();
    let good = ColdSet::new(cf.id(), 0, 1.0, "rsf", vec![key(1), key(2)]);
    let path = dir.path().join("cold.keys");
    std::fs::write(&path, good.encode()).unwrap();
    assert_eq!(db.load_cold_set(&cf, &path).unwrap(), 2);
    let mut bad = good.encode();
    bad[20] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let e = db.load_cold_set(&cf, &path).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    let other = ColdSet::new(
        cairn::CfId::new(cf.id().get() + 5),
        0,
        1.0,
        "rsf",
        vec![key(3)],
    );
    std::fs::write(&path, other.encode()).unwrap();
    assert!(matches!(
        db.load_cold_set(&cf, &path),
        Err(cairn::Error::InvalidArgument(_))
    ));
    // The good set is still the one used.
    let wo = WriteOptions::default();
    for i in 0..10 {
        db.put(&wo, &key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!((r.placement.as_str(), r.cold_records), ("rsf", 2));
}

#[test]
fn stale_sets_and_load_back_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let mut o = opts(PlacementPolicy::ColdSet, &clock);
    o.placement.max_cold_set_age_ms = Some(DAY);
    o.placement.max_ops_per_sec = Some(50.0);
    o.placement.backoff_window_ms = 100;
    let db = Arc::new(Db::open(dir.path(), o).unwrap());
    let cf = db.default_cf();
    db.put(&WriteOptions::default(), &key(1), b"v").unwrap();
    db.flush().unwrap();
    db.install_cold_set(&cf, ColdSet::new(cf.id(), 0, 1.0, "rsf", vec![key(1)]))
        .unwrap();
    clock.advance(2 * DAY);
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!(r.skipped.as_deref(), Some("cold-key set is stale"));
    db.install_cold_set(
        &cf,
        ColdSet::new(cf.id(), 2 * DAY, 1.0, "rsf", vec![key(1)]),
    )
    .unwrap();
    // Readers busy through the measuring window: the compaction backs off.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.get(&key(1)).unwrap();
            }
        })
    };
    let r = db.proactive_compact(&cf).unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert!(
        r.skipped
            .as_deref()
            .is_some_and(|s| s.starts_with("backed off")),
        "{r:?}"
    );
    assert_eq!(db.stats().proactive_backoffs, 1);
    // Quiet again: it runs.
    let r = db.proactive_compact(&cf).unwrap();
    assert_eq!((r.skipped, r.cold_records), (None, 1));
}

#[test]
fn proactive_compaction_needs_a_cold_tier() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let mut o = opts(PlacementPolicy::ColdSet, &clock);
    o.tiers.clear();
    let db = Db::open(dir.path(), o).unwrap();
    assert!(matches!(
        db.proactive_compact(&db.default_cf()),
        Err(cairn::Error::InvalidArgument(_))
    ));
}

/// Files the Python service wrote (`tests/data/salsm`, made with `cairn.learn.salsm`'s
/// writers) read in the engine: the two sides agree on both formats.
#[test]
fn files_written_by_the_python_service_load() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/salsm");
    let (h, records) = cairn::access::record_trace::read(&data.join("python.rtr")).unwrap();
    assert_eq!((h.cf_id, records.len()), (cairn::CfId::new(2), 29));
    assert_eq!(
        (h.start_ms, h.end_ms),
        (1_702_080_000_000, 1_702_944_000_000)
    );
    assert_eq!(records[0].key, b"order:00000000");
    assert!(records
        .iter()
        .all(|r| r.times.len() <= h.max_times as usize));
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let db = Db::open(dir.path(), opts(PlacementPolicy::ColdSet, &clock)).unwrap();
    db.create_cf("one").unwrap();
    let two = db.create_cf("two").unwrap();
    assert_eq!(two.id(), cairn::CfId::new(2));
    assert_eq!(db.load_cold_set(&two, data.join("python.cld")).unwrap(), 10);
    let set = ColdSet::read(&data.join("python.cld")).unwrap();
    assert_eq!((set.method.as_str(), set.trace_end_ms), ("rsf", h.end_ms));
    assert!(set.contains(b"order:00000000"));
}
