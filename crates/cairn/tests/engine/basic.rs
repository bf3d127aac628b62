//! End-to-end behaviour of the public API.

use cairn::{Db, Options, ReadOptions, Transition, WriteBatch, WriteOptions};

use crate::support::key8 as key;

#[test]
fn put_get_flush_compact_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    {
        let db = Db::open(dir.path(), Options::small()).unwrap();
        for i in 0..20_000u32 {
            db.put(&wo, &key(i), format!("value{i}").as_bytes())
                .unwrap();
        }
        for i in (0..20_000u32).step_by(3) {
            db.delete(&wo, &key(i)).unwrap();
        }
        db.flush().unwrap();
        for i in 0..20_000u32 {
            let want = (i % 3 != 0).then(|| format!("value{i}").into_bytes());
            assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
        }
        db.compact_range(None, None).unwrap();
        let blocks = |s: &cairn::DbStats| {
            s.levels
                .iter()
                .map(|l| l.data_block_hits + l.data_block_misses)
                .sum::<u64>()
        };
        let before = blocks(&db.stats());
        let n = db.scan(key(100)..key(200)).unwrap().count();
        assert_eq!(n, 67);
        assert!(
            blocks(&db.stats()) > before,
            "scans count their block reads"
        );
        let s = db.stats();
        assert!(s.flushes > 0);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), Options::small()).unwrap();
    for i in 0..20_000u32 {
        let want = (i % 3 != 0).then(|| format!("value{i}").into_bytes());
        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i} after reopen");
    }
    let all: Vec<_> = db
        .scan::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(all.len(), 20_000 - 6667);
    let rev: Vec<_> = db
        .scan_rev::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    let mut fwd = all.clone();
    fwd.reverse();
    assert_eq!(rev, fwd);
}

#[test]
fn snapshots_batches_and_range_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let wo = WriteOptions {
        sync: true,
        query_column: None,
        disable_wal: false,
    };
    let mut b = WriteBatch::new();
    for i in 0..100u32 {
        b.put(&key(i), b"a").unwrap();
    }
    db.write(&wo, b).unwrap();
    let snap = db.snapshot();
    db.delete_range(&wo, &key(10), &key(20)).unwrap();
    db.put(&wo, &key(5), b"b").unwrap();
    assert_eq!(db.get(&key(15)).unwrap(), None);
    assert_eq!(db.get(&key(20)).unwrap(), Some(b"a".to_vec()));
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    let cf = db.default_cf();
    assert_eq!(db.get_opt(&ro, &cf, &key(15)).unwrap(), Some(b"a".to_vec()));
    assert_eq!(db.get_opt(&ro, &cf, &key(5)).unwrap(), Some(b"a".to_vec()));
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get_opt(&ro, &cf, &key(15)).unwrap(), Some(b"a".to_vec()));
    assert_eq!(db.get(&key(15)).unwrap(), None);
    let n = db
        .scan_opt(&ro, &cf, key(0)..key(100), false)
        .unwrap()
        .count();
    assert_eq!(n, 100);
    assert_eq!(db.scan(key(0)..key(100)).unwrap().count(), 90);
}

#[test]
fn column_families_are_separate_trees() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    {
        let db = Db::open(dir.path(), Options::small()).unwrap();
        let users = db.create_cf("users").unwrap();
        db.put_cf(&users, &wo, b"k", b"users").unwrap();
        db.put(&wo, b"k", b"default").unwrap();
        assert_eq!(db.get_cf(&users, b"k").unwrap(), Some(b"users".to_vec()));
        assert_eq!(db.get(b"k").unwrap(), Some(b"default".to_vec()));
    }
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let users = db.cf("users").unwrap();
    assert_eq!(db.get_cf(&users, b"k").unwrap(), Some(b"users".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), Some(b"default".to_vec()));
}

#[test]
fn set_policy_validates_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let cf = db.default_cf();
    assert!(db.set_policy(&cf, 1, 0, Transition::Flexible).is_err());
    assert!(db.set_policy(&cf, 1, 11, Transition::Flexible).is_err());
    db.set_policy(&cf, 2, 4, Transition::Flexible).unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::small()).unwrap();
    assert_eq!(db.level_info(&db.default_cf()).unwrap()[2].k, 4);
}

#[derive(Default)]
struct Recorder {
    flushes: std::sync::atomic::AtomicUsize,
    compactions: std::sync::atomic::AtomicUsize,
    blocks: std::sync::atomic::AtomicUsize,
    begins: std::sync::atomic::AtomicUsize,
}

impl cairn::EventListener for Recorder {
    fn on_flush_begin(&self, _: &cairn::FlushInfo) {
        self.begins
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn on_flush_end(&self, info: &cairn::FlushInfo) {
        use std::sync::atomic::Ordering::Relaxed;
        self.flushes.fetch_add(1, Relaxed);
        for o in &info.outputs {
            assert!(o.smallest <= o.largest);
            assert!(!o.blocks.is_empty());
            for b in &o.blocks {
                assert!(b.first_key <= b.last_key);
                assert!(o.smallest <= b.first_key && b.last_key <= o.largest);
            }
            self.blocks.fetch_add(o.blocks.len(), Relaxed);
        }
    }
    fn on_compaction_end(&self, info: &cairn::CompactionInfo) {
        self.compactions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(!info.inputs.is_empty());
        assert!(info.trivial_move || info.output_level >= info.input_level);
    }
}

#[test]
fn listeners_see_flushes_and_compactions_with_block_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let rec = std::sync::Arc::new(Recorder::default());
    let opts = Options {
        listeners: vec![rec.clone()],
        ..Options::small()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let wo = WriteOptions::default();
    for i in 0..30_000u32 {
        db.put(&wo, &key(i), &[7u8; 64]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    use std::sync::atomic::Ordering::Relaxed;
    assert!(rec.flushes.load(Relaxed) > 0);
    assert_eq!(rec.flushes.load(Relaxed), rec.begins.load(Relaxed));
    assert!(rec.compactions.load(Relaxed) > 0);
    assert!(rec.blocks.load(Relaxed) > 10);
}

/// Holds the flush thread in `on_flush_end`, after the flushed memtable left the
/// database's view, as a slow listener would.
struct SlowFlushEnd;

impl cairn::EventListener for SlowFlushEnd {
    fn on_flush_end(&self, _: &cairn::FlushInfo) {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

#[test]
fn a_flush_is_counted_when_flush_returns() {
    // Db::flush returns once no immutable memtable is left; the flush count must already
    // include it, however long the flush thread takes after that (the count came last,
    // after the listeners, and a caller could read the old count).
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        listeners: vec![std::sync::Arc::new(SlowFlushEnd)],
        ..Options::small()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..3u32 {
        db.put(&WriteOptions::default(), &key(round), b"v").unwrap();
        let before = db.stats().flushes;
        db.flush().unwrap();
        assert_eq!(db.stats().flushes, before + 1, "round {round}");
    }
}

#[test]
fn tiers_place_levels_in_their_directories_and_count_io_per_tier() {
    use cairn::{DeviceProfile, TierConfig};
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        tiers: vec![
            TierConfig {
                dir: "hot".into(),
                first_level: 0,
                profile: DeviceProfile::None,
            },
            TierConfig {
                dir: "cold".into(),
                first_level: 2,
                profile: DeviceProfile::Ssd,
            },
        ],
        latency_scale: 0.01,
        level1_bytes: 64 << 10,
        ..Options::small()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let wo = WriteOptions::default();
    for i in 0..20_000u32 {
        db.put(&wo, &key(i), &[1u8; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let ssts = |d: &str| {
        std::fs::read_dir(dir.path().join(d))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "sst")
            })
            .count()
    };
    assert!(ssts("cold") > 0, "the last level lives in the cold tier");
    let before = db.stats().io.tier(1).read_ops;
    for i in (0..20_000u32).step_by(97) {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    assert!(
        db.stats().io.tier(1).read_ops > before,
        "cold reads are counted"
    );
    let s = db.stats();
    assert!(s.levels.iter().map(|l| l.gets_served).sum::<u64>() > 0);
    drop(db);
    // Reopen finds every file in its tier.
    let db = Db::open(
        dir.path(),
        Options {
            tiers: vec![
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
            ],
            level1_bytes: 64 << 10,
            ..Options::small()
        },
    )
    .unwrap();
    assert_eq!(db.get(&key(12_345)).unwrap(), Some(vec![1u8; 100]));
}

/// What a get tells the counters and samplers (the read path's observer): every get is
/// counted, every level it reaches and the one that serves it, one get in 8 times its
/// levels (RusKey's t_i) and one in 64 its steps (Bourbon's breakdown).
#[test]
fn gets_report_to_the_level_counters_and_the_samplers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    for i in 0..200u32 {
        db.put(&WriteOptions::default(), &key(i), b"v").unwrap();
    }
    db.flush().unwrap();
    let n = 256u64;
    for i in 0..n as u32 {
        assert!(db.get(&key(i % 200)).unwrap().is_some());
    }
    let s = db.stats();
    assert_eq!(s.gets, n);
    let served: u64 = s.levels.iter().map(|l| l.gets_served).sum();
    assert_eq!(served, n, "every get is served by a table");
    let reached: u64 = s.levels.iter().map(|l| l.lookups_reached).sum();
    assert!(reached >= n, "{reached}");
    assert!(s.levels.iter().map(|l| l.read_ns).sum::<u64>() > 0);
    assert_eq!(s.lookup_steps.samples, n / 64);
    db.close().unwrap();
}
