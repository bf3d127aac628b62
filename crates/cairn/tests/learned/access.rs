//! Leaper's access collector through the database: gets, writes and scans are counted per
//! key range and slot on a clock the test drives, the estimator recovers true counts from
//! sampled ones, and the exported trace file reads back exactly.

use std::sync::Arc;

use cairn::access::{estimate, trace, AccessOptions, ManualClock};
use cairn::{Db, Options, ReadOptions, WriteOptions};

use crate::support::key_be16 as key;

fn options(clock: &ManualClock, p: f64) -> Options {
    Options {
        access: Some(AccessOptions {
            range_width: 10,
            slot_ms: 1000,
            sample_p: p,
            transfer_sample: 1,
            clock: Arc::new(clock.clone()),
            ..AccessOptions::default()
        }),
        ..Options::small()
    }
}

#[test]
fn gets_writes_and_scans_are_counted_per_range_and_slot() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let db = Db::open(dir.path(), options(&clock, 1.0)).unwrap();
    let wo = WriteOptions::default();
    // Slot 0: 5 writes in range 0 (keys 0..5), 3 gets in range 2 (keys 20..23).
    for i in 0..5 {
        db.put(&wo, &key(i), b"v").unwrap();
    }
    for i in 20..23 {
        db.get(&key(i)).unwrap();
    }
    clock.advance(1000);
    // Slot 1: a scan over keys 0..=4 and 35..=44 touches ranges 0, 3 and 4 once each.
    for i in 35..45 {
        db.put(&wo, &key(i), b"v").unwrap();
    }
    let n = db.scan(key(0).to_vec()..key(45).to_vec()).unwrap().count();
    assert_eq!(n, 15);
    clock.advance(1000);
    // Slot 2 is still running: not in the trace.
    db.get(&key(99)).unwrap();
    let out = dir.path().join("trace.cairnltr");
    let rows = db.export_access_trace(&db.default_cf(), &out).unwrap();
    let (h, rows_read, transfers) = trace::read(&out).unwrap();
    assert_eq!(rows_read.len(), rows);
    assert_eq!(h.range_width, 10);
    assert_eq!(h.slot_ms, 1000);
    assert_eq!(h.start_unix_ms, 1_700_000_000_000);
    let cells: Vec<(u64, u64, u32, u32)> = rows_read
        .iter()
        .map(|r| (r.slot, r.range, r.reads, r.writes))
        .collect();
    assert_eq!(
        cells,
        vec![
            (0, 0, 0, 5),
            (0, 2, 3, 0),
            (1, 0, 1, 0),
            (1, 3, 1, 5),
            (1, 4, 1, 5),
        ]
    );
    // The thread went 0 -> 2 (slot 0), then 3, 4 (writes), 0, 3, 4 (scan).
    let t = |to, from| {
        transfers
            .iter()
            .find(|x| x.to == to && x.from == from)
            .map_or(0, |x| x.count)
    };
    assert!(t(2, 0) >= 1, "{transfers:?}");
    assert!(t(4, 3) >= 2, "{transfers:?}");
    assert_eq!(t(2, 2), 0, "no self-transfers");
    // Features read the ring directly: range 3 in the last complete slot (slot 1).
    let c = db.access_collector(&db.default_cf()).unwrap();
    assert_eq!(c.history(3, 2), vec![(1, 5), (0, 0)]);
    db.close().unwrap();
}

#[test]
fn sampling_keeps_the_estimate_close_and_the_first_access_always_counts() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let db = Db::open(dir.path(), options(&clock, 0.1)).unwrap();
    let n = 50_000u64;
    for _ in 0..n {
        db.get(&key(7)).unwrap();
    }
    // A range read once is counted once whatever P is.
    db.get(&key(500)).unwrap();
    clock.advance(1000);
    let (h, rows, _) = db.access_collector(&db.default_cf()).unwrap().trace();
    let hot = rows.iter().find(|r| r.range == 0).unwrap();
    let once = rows.iter().find(|r| r.range == 50).unwrap();
    assert_eq!(once.reads, 1);
    assert_eq!(estimate(once.reads, h.sample_p), 1.0);
    let est = estimate(hot.reads, h.sample_p);
    // Sampling error (Leaper §5.1): sd = sqrt((N - 1)(1 - P) / P) ~ 670 here; allow 5 sd.
    assert!((est - n as f64).abs() < 3400.0, "estimate {est} of {n}");
    assert!(
        hot.reads < 10_000,
        "sampled, not every access: {}",
        hot.reads
    );
    db.close().unwrap();
}

#[test]
fn off_by_default_and_export_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    db.get(b"k").unwrap();
    assert!(db.access_collector(&db.default_cf()).is_none());
    let err = db
        .export_access_trace(&db.default_cf(), dir.path().join("t"))
        .unwrap_err();
    assert!(matches!(err, cairn::Error::InvalidArgument(_)), "{err}");
    let mut it = db.iter(&ReadOptions::default(), &db.default_cf()).unwrap();
    it.seek_to_first();
    assert!(!it.valid());
    db.close().unwrap();
}

#[test]
fn a_clock_jump_past_the_ring_folds_and_keeps_the_ended_slots() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let db = Db::open(
        dir.path(),
        Options {
            background_work: false,
            ..options(&clock, 1.0)
        },
    )
    .unwrap();
    for slot in 0..20u64 {
        db.get(&key(slot * 10)).unwrap();
        clock.advance(1000);
    }
    let (_, rows, _) = db.access_collector(&db.default_cf()).unwrap().trace();
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (r.slot, r.range)).collect();
    let want: Vec<(u64, u64)> = (0..20).map(|s| (s, s)).collect();
    assert_eq!(got, want);
    db.close().unwrap();
}

/// Features read only the ranges touched in the window, each once, in key order, with
/// their counts per slot (the collector keeps per slot the ranges first touched in it).
#[test]
fn the_feature_window_holds_the_ranges_touched_in_it_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let db = Db::open(
        dir.path(),
        Options {
            background_work: false,
            ..options(&clock, 1.0)
        },
    )
    .unwrap();
    let c = db.access_collector(&db.default_cf()).unwrap();
    // Slot 0: range 90 (it leaves the 3-slot window later); slots 1..=3: 50 and 20, with
    // 20 read twice in slot 3; 70 written in slot 3 only.
    db.get(&key(900)).unwrap();
    for _ in 1..=3 {
        clock.advance(1000);
        db.get(&key(500)).unwrap();
        db.get(&key(200)).unwrap();
    }
    db.get(&key(201)).unwrap();
    db.put(&WriteOptions::default(), &key(700), b"v").unwrap();
    clock.advance(1000);
    let got = c.all_history(3);
    assert_eq!(
        got,
        vec![
            (20, vec![(2, 0), (1, 0), (1, 0)]),
            (50, vec![(1, 0), (1, 0), (1, 0)]),
            (70, vec![(0, 1), (0, 0), (0, 0)]),
        ]
    );
    // A window of 4 reaches slot 0. The ring (8 slots) reuses slot 0's place at slot 8:
    // then range 30 is touched there and range 90 is in no window.
    assert!(c.all_history(4).iter().any(|(r, _)| *r == 90));
    clock.advance(4000);
    db.get(&key(300)).unwrap();
    clock.advance(1000);
    let got: Vec<u64> = c.all_history(8).into_iter().map(|(r, _)| r).collect();
    assert_eq!(got, vec![20, 30, 50, 70]);
    db.close().unwrap();
}

#[test]
fn bad_access_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for a in [
        AccessOptions {
            range_width: 0,
            ..AccessOptions::default()
        },
        AccessOptions {
            sample_p: 0.0,
            ..AccessOptions::default()
        },
        AccessOptions {
            sample_p: f64::NAN,
            ..AccessOptions::default()
        },
    ] {
        let o = Options {
            access: Some(a),
            ..Options::small()
        };
        assert!(matches!(
            Db::open(dir.path(), o),
            Err(cairn::Error::InvalidArgument(_))
        ));
    }
}
