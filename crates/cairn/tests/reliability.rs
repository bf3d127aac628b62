//! Paths to lost or wrong data found by review, each pinned by a test that failed before
//! its fix: a failed manifest write whose bytes persisted, a failed WAL fsync, flushes
//! racing each other, a panicking write leader, a dead flush thread, listeners that call
//! back into the database, and column-family ids reused after a manifest rollover.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn::storage::{FaultError, FaultInjector, FaultOp};
use cairn::{Db, Options, WriteOptions};

const SYNC: WriteOptions = WriteOptions { sync: true };

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// The manifest `CURRENT` names now.
fn current_manifest(dir: &Path) -> String {
    let c = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    c.trim_end().to_string()
}

fn small(faults: &Arc<FaultInjector>) -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size: 16 << 10,
        level1_bytes: 64 << 10,
        faults: Some(faults.clone()),
        ..Default::default()
    }
}

/// A manifest fsync that fails after the record reached the disk: the edit may be what a
/// restart reads, so its files must stay. Before the fix the dropped edit queued its new
/// tables as obsolete, the background purge deleted them, and the reopen failed on the
/// missing files. Failing `CURRENT` renames keep the retries from writing a new manifest.
#[test]
fn a_failed_manifest_sync_whose_record_persisted_keeps_its_files() {
    for err in [FaultError::IoPersisted, FaultError::Io] {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(FaultInjector::new());
        let db = Db::open(dir.path(), small(&faults)).unwrap();
        for i in 0..200 {
            db.put(&SYNC, &key(i), &[b'v'; 100]).unwrap();
        }
        db.flush().unwrap();
        let manifest = current_manifest(dir.path());
        faults.fail_nth_on(FaultOp::Sync, &manifest, 1, err);
        for n in 1..=200 {
            faults.fail_nth_on(FaultOp::Rename, "CURRENT", n, FaultError::Io);
        }
        let mut acked = 200;
        for i in 200..400 {
            if db.put(&SYNC, &key(i), &[b'w'; 100]).is_err() {
                break;
            }
            acked = i + 1;
        }
        let _ = db.flush();
        std::thread::sleep(Duration::from_secs(1)); // the background purge runs by then
        let stopped = db.put(&SYNC, b"after", b"x").is_err();
        drop(db);
        let db = Db::open(dir.path(), Options::default())
            .unwrap_or_else(|e| panic!("reopen after {err:?}: {e}"));
        for i in 0..acked {
            assert!(db.get(&key(i)).unwrap().is_some(), "key {i} lost ({err:?})");
        }
        assert!(
            stopped,
            "writes must stop after a failed manifest write ({err:?})"
        );
    }
}

/// A `drop_cf` whose manifest record reached the disk though its fsync failed: before
/// the fix the family stayed live in memory and took synced writes that the reopen then
/// dropped with the family.
#[test]
fn a_failed_drop_cf_stops_writes_to_the_family() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new());
    let db = Db::open(dir.path(), small(&faults)).unwrap();
    let cf = db.create_cf("logs").unwrap();
    db.put_cf(&cf, &SYNC, b"a", b"1").unwrap();
    let manifest = current_manifest(dir.path());
    faults.fail_nth_on(FaultOp::Sync, &manifest, 1, FaultError::IoPersisted);
    assert!(db.drop_cf(&cf).is_err());
    let acked = db.put_cf(&cf, &SYNC, b"b", b"2").is_ok();
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    if acked {
        let cf = db
            .cf("logs")
            .expect("a family that took a synced write must survive");
        assert_eq!(db.get_cf(&cf, b"b").unwrap().as_deref(), Some(&b"2"[..]));
    }
}

/// A failed WAL fsync may drop the pages it covered (Linux marks them clean), so the next
/// fsync succeeds without them. Before the fix writes went on in a new log: a later synced
/// write survived a power loss that took an earlier acknowledged one.
#[test]
fn a_failed_wal_fsync_stops_writes_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new());
    let opts = Options {
        background_work: false,
        ..small(&faults)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put(&SYNC, b"a", b"1").unwrap();
    db.put(&WriteOptions::default(), b"b", b"2").unwrap();
    faults.fail_nth_on(FaultOp::Sync, ".log", 1, FaultError::Io);
    assert!(db.put(&SYNC, b"c", b"3").is_err());
    let later = db.put(&SYNC, b"d", b"4");
    assert!(later.is_err(), "writes must stop after a failed WAL fsync");
    assert!(db.flush().is_err());
    drop(db);
    faults.apply_power_loss().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    if db.get(b"d").unwrap().is_some() {
        assert!(db.get(b"b").unwrap().is_some(), "d survived without b");
    }
    db.put(&SYNC, b"e", b"5").unwrap();
}

/// Flushes from several threads at once (`flush` without background threads, as the
/// virtual-clock harness does). Before the fix two callers could flush the same immutable
/// memtable, and an older memtable's run could land above a newer one: reads went stale.
#[test]
fn concurrent_flushes_never_install_an_older_memtable_above_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        background_work: false,
        l0_compaction_trigger: 1000,
        l0_slowdown_trigger: 1000,
        l0_stop_trigger: 1000,
        ..Default::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = &db;
            s.spawn(move || {
                let k = format!("thread{t}");
                for i in 0..150u32 {
                    db.put(&WriteOptions::default(), k.as_bytes(), &i.to_be_bytes())
                        .unwrap();
                    db.flush().unwrap();
                    let got = db.get(k.as_bytes()).unwrap();
                    assert_eq!(got.as_deref(), Some(&i.to_be_bytes()[..]), "{k} stale");
                }
            });
        }
    });
    let flushes = db.stats().flushes;
    let files: usize = db.level_info(&db.default_cf()).unwrap()[0]
        .runs
        .iter()
        .map(|r| r.files)
        .sum();
    assert_eq!(
        files as u64, flushes,
        "each flush wrote its own memtable once"
    );
}
