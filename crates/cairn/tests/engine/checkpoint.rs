//! `Db::checkpoint`: the copy opens as a database holding exactly the state of its moment,
//! whatever the source does afterwards, with writers and background work running beside
//! it, with value logs, learned models, a second tier and writes kept out of the log.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cairn::storage::TierConfig;
use cairn::{Db, Error, Options, WriteOptions};

use crate::support::key8;

type State = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn state(db: &Db) -> State {
    let mut s = State::new();
    for name in db.cf_names() {
        let cf = db.cf(&name).unwrap();
        let scan = db
            .scan_opt::<&[u8], _>(&Default::default(), &cf, .., false)
            .unwrap();
        for r in scan {
            let (k, v) = r.unwrap();
            s.insert((name.clone(), k), v);
        }
    }
    s
}

fn options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size: 16 << 10,
        level1_bytes: 64 << 10,
        value_threshold: Some(40),
        index: cairn::IndexPolicy::learn_all(8),
        tiers: vec![
            TierConfig {
                dir: ".".into(),
                first_level: 0,
                profile: cairn::storage::DeviceProfile::None,
            },
            TierConfig {
                dir: "cold".into(),
                first_level: 2,
                profile: cairn::storage::DeviceProfile::None,
            },
        ],
        ..Options::small()
    }
}

#[test]
fn a_checkpoint_opens_with_the_state_of_its_moment() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, copy) = (tmp.path().join("db"), tmp.path().join("copy"));
    let db = Db::open(&src, options()).unwrap();
    let second = db.create_cf("second").unwrap();
    let dropped = db.create_cf("dropped").unwrap();
    let wo = WriteOptions::default();
    for i in 0..4000u32 {
        let v = vec![b'a' + (i % 26) as u8; if i % 3 == 0 { 80 } else { 10 }];
        db.put(&wo, &key8(i), &v).unwrap();
        if i % 4 == 0 {
            db.put_cf(&second, &wo, &key8(i), b"second").unwrap();
        }
    }
    db.put_cf(&dropped, &wo, b"gone", b"x").unwrap();
    db.drop_cf(&dropped).unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..40 {
        db.get(&key8(i * 97)).unwrap(); // the learner's tables are read ones
    }
    db.run_background_work().unwrap();
    // Memtable only: logged, and kept out of the log.
    db.delete(&wo, &key8(5)).unwrap();
    db.put(&wo, b"logged-late", b"1").unwrap();
    let unlogged = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    db.put(&unlogged, b"unlogged", b"2").unwrap();
    let want = state(&db);
    let cold_tables = |dir: &std::path::Path| {
        std::fs::read_dir(dir.join("cold"))
            .map(|rd| rd.flatten().count())
            .unwrap_or(0)
    };
    assert!(cold_tables(&src) > 0, "the second tier holds tables");

    db.checkpoint(&copy).unwrap();
    assert!(matches!(
        db.checkpoint(&copy),
        Err(Error::InvalidArgument(_))
    ));
    // The source moves on: its files are rewritten and deleted.
    for i in 0..4000u32 {
        db.put(&wo, &key8(i), b"later").unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();

    assert!(cold_tables(&copy) > 0, "the tier's tables are in the copy");
    assert_eq!(
        Options::load_latest(&copy).unwrap().tiers,
        options().tiers,
        "the options file is in the copy"
    );
    let report = Db::check(&copy, &options()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let c = Db::open(&copy, options()).unwrap();
    assert_eq!(state(&c), want);
    assert!(c.cf("dropped").is_none());
    assert_eq!(c.get(b"unlogged").unwrap().as_deref(), Some(&b"2"[..]));
    // It is a database of its own: it takes writes and reopens.
    c.put(&wo, b"new", b"3").unwrap();
    c.close().unwrap();
    let c = Db::open(&copy, options()).unwrap();
    assert_eq!(c.get(b"new").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(c.get(&key8(5)).unwrap(), None);
}

/// Writers and background work run while checkpoints are taken: each copy holds every
/// write acknowledged before its call and is a prefix of the write order.
#[test]
fn checkpoints_beside_writers_hold_every_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Db::open(
            tmp.path().join("db"),
            Options {
                tiers: Vec::new(),
                ..options()
            },
        )
        .unwrap(),
    );
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                db.put(&WriteOptions::default(), &key8(n), &[7u8; 60])
                    .unwrap();
                n += 1;
                acked.store(n as u64, Ordering::Release);
            }
        })
    };
    for round in 0..4 {
        while acked.load(Ordering::Acquire) < 3000 * (round + 1) {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let dir = tmp.path().join(format!("copy{round}"));
        db.checkpoint(&dir).unwrap();
        let after = acked.load(Ordering::Acquire);
        let c = Db::open(&dir, Options::small()).unwrap();
        let keys: Vec<Vec<u8>> = c
            .scan::<&[u8], _>(..)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        let n = keys.len() as u64;
        assert!(
            (before..=after + 1).contains(&n),
            "round {round}: {n} keys, acknowledged {before} before and {after} after"
        );
        assert!(
            keys.iter().enumerate().all(|(i, k)| *k == key8(i as u32)),
            "round {round}: the copy is no prefix of the writes"
        );
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// A tier outside the database directory, absolute or through `..` (which, beside the
/// copy, would be the source's own directory): refused, the source untouched.
#[test]
fn a_tier_outside_the_database_cannot_be_checkpointed() {
    for outside in ["ABSOLUTE", "../cold"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = options();
        opts.tiers[1].dir = match outside {
            "ABSOLUTE" => tmp.path().join("elsewhere"),
            rel => rel.into(),
        };
        let db = Db::open(tmp.path().join("db"), opts).unwrap();
        for i in 0..3000u32 {
            db.put(&WriteOptions::default(), &key8(i), &[3u8; 50])
                .unwrap();
        }
        db.compact_range(None, None).unwrap();
        let dir = tmp.path().join("copy");
        assert!(matches!(
            db.checkpoint(&dir),
            Err(Error::InvalidArgument(_))
        ));
        let left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("copy"))
            .collect();
        assert!(left.is_empty(), "{outside}: left {left:?}");
        assert_eq!(db.scan::<&[u8], _>(..).unwrap().count(), 3000);
    }
}
