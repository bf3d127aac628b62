//! Key-value separation: values in value logs, read through pointers; garbage collection
//! (space reclaimed, snapshots and open iterators kept whole, failures at every point of a
//! GC losing nothing); corruption and missing files; option validation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cairn::{Db, Error, Options, ReadOptions, WriteOptions};

use crate::support::{copy_dir, key6 as key, key_no, Model};

/// A value that names its key and round, `len` bytes long (at least the name's length).
fn val(i: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}-{round}|").into_bytes();
    let fill = b'a' + ((i + round) % 26) as u8;
    v.resize(len.max(v.len()), fill);
    v
}

fn opts(threshold: Option<usize>) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 16 << 10,
        block_size: 1024,
        level1_bytes: 64 << 10,
        background_work: false,
        value_threshold: threshold,
        vlog_gc_space_amp: None,
        ..Options::small()
    }
}

fn vlog_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vlog"))
        .collect();
    v.sort();
    v
}

fn check_all(db: &Db, model: &Model, what: &str) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: get {k:?}");
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan::<&[u8], _>(..)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(got == want, "{what}: forward scan differs");
    let mut rev: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan_rev::<&[u8], _>(..)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rev.reverse();
    assert!(rev == want, "{what}: reverse scan differs");
}

/// Writes keys 0..n with `len`-byte values, overwrites every `step`-th key, deletes every
/// `del`-th, flushing and compacting in between. Returns the model.
fn load(db: &Db, n: u32, len: usize, step: u32, del: u32) -> Model {
    let wo = WriteOptions::default();
    let mut m = Model::new();
    for i in 0..n {
        // Every fifth value is small, so a mid-size threshold keeps some inline.
        let l = if i % 5 == 0 { 10 } else { len };
        db.put(&wo, &key(i), &val(i, 0, l)).unwrap();
        m.insert(key(i), val(i, 0, l));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..n).step_by(step as usize) {
        db.put(&wo, &key(i), &val(i, 1, len)).unwrap();
        m.insert(key(i), val(i, 1, len));
    }
    for i in (0..n).step_by(del as usize) {
        db.delete(&wo, &key(i)).unwrap();
        m.remove(&key(i));
    }
    db.flush().unwrap();
    m
}

#[test]
fn separated_values_read_back_through_gets_scans_and_reopen() {
    for threshold in [Some(0), Some(100), None] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts(threshold)).unwrap();
        let m = load(&db, 600, 300, 3, 7);
        // Unflushed writes are read from the memtable as before.
        db.put(&WriteOptions::default(), &key(1), b"fresh").unwrap();
        let mut m2 = m.clone();
        m2.insert(key(1), b"fresh".to_vec());
        check_all(&db, &m2, &format!("threshold {threshold:?}"));
        let s = db.stats();
        match threshold {
            Some(t) => {
                assert!(s.vlog.records_written > 0, "{s:?}");
                assert!(s.vlog.reads > 0);
                assert!(s.vlog.files_live > 0);
                // Small values stay inline with a threshold above them.
                let inline = if t == 0 { 0 } else { 1 };
                assert!(
                    (s.vlog.records_written as usize) < 900 || inline == 0,
                    "{}",
                    s.vlog.records_written
                );
                assert!(s.io.kind(cairn::storage::FileKind::ValueLog).write_bytes > 0);
            }
            None => {
                assert_eq!(s.vlog.records_written, 0);
                assert!(vlog_files(dir.path()).is_empty());
            }
        }
        drop(db);
        // Reopen with separation off: values already separated stay readable.
        let db = Db::open(dir.path(), opts(None)).unwrap();
        check_all(&db, &m2, &format!("reopened, threshold {threshold:?}"));
    }
}

#[test]
fn mid_size_threshold_separates_only_large_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(Some(100))).unwrap();
    let wo = WriteOptions::default();
    for i in 0..200 {
        db.put(&wo, &key(i), &val(i, 0, if i % 2 == 0 { 20 } else { 200 }))
            .unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.stats().vlog.records_written, 100);
    let before = db.stats().vlog.reads;
    assert_eq!(db.get(&key(2)).unwrap(), Some(val(2, 0, 20)));
    assert_eq!(
        db.stats().vlog.reads,
        before,
        "an inline value read the value log"
    );
    assert_eq!(db.get(&key(3)).unwrap(), Some(val(3, 0, 200)));
    assert_eq!(
        db.stats().vlog.reads,
        before + 1,
        "one value-log read per get"
    );
}

/// Overwrites half the keys and compacts, so the first value-log file is half garbage;
/// returns the model.
fn half_garbage(db: &Db, n: u32) -> Model {
    let wo = WriteOptions::default();
    let mut m = Model::new();
    for i in 0..n {
        db.put(&wo, &key(i), &val(i, 0, 500)).unwrap();
        m.insert(key(i), val(i, 0, 500));
    }
    db.flush().unwrap();
    for i in (0..n).step_by(2) {
        db.put(&wo, &key(i), &val(i, 1, 500)).unwrap();
        m.insert(key(i), val(i, 1, 500));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    m
}

#[test]
fn gc_reclaims_the_space_of_overwritten_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(Some(0))).unwrap();
    let m = half_garbage(&db, 400);
    let s = db.stats();
    // The first flush's files: 400 records, 200 live; the second's: 200, all live.
    assert!(
        s.vlog.space_amp > 1.3 && s.vlog.space_amp < 1.6,
        "{:?}",
        s.vlog
    );
    assert_eq!(s.vlog.gc_rewrites, 0, "GC is off");
    let first = vlog_files(dir.path())[0].clone();
    drop(db);

    let o = Options {
        vlog_gc_space_amp: Some(1.05),
        ..opts(Some(0))
    };
    let db = Db::open(dir.path(), o).unwrap();
    db.run_background_work().unwrap();
    let s = db.stats();
    assert!(s.vlog.gc_rewrites > 0, "{:?}", s.vlog);
    // Only live records of the first flush's files move (200 at most); how many depends
    // on how the flush split them into files and how many files it takes to reach 1.05.
    assert!(
        (1..=200).contains(&s.vlog.gc_records_relocated),
        "{:?}",
        s.vlog
    );
    assert!(s.vlog.space_amp <= 1.05, "{:?}", s.vlog);
    assert_eq!(s.vlog.reads, 0, "GC's reads are not counted as reads");
    assert!(s.vlog.files_deleted >= 1);
    assert!(!first.exists(), "the collected file is still there");
    check_all(&db, &m, "after GC");
    drop(db);
    let db = Db::open(dir.path(), opts(Some(0))).unwrap();
    check_all(&db, &m, "after GC and reopen");
}

/// GC moves values that only a snapshot still sees, and deletes a collected file only
/// after an iterator opened before the GC is gone.
#[test]
fn snapshots_and_open_iterators_read_old_values_across_gc() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options {
            vlog_gc_space_amp: Some(1.1),
            ..opts(Some(0))
        },
    )
    .unwrap();
    let wo = WriteOptions::default();
    let n = 300;
    let put_all = |m: &mut Model, round: u32, step: usize| {
        for i in (0..n).step_by(step) {
            db.put(&wo, &key(i), &val(i, round, 400)).unwrap();
            m.insert(key(i), val(i, round, 400));
        }
        db.flush().unwrap();
    };
    let mut first = Model::new();
    put_all(&mut first, 0, 1);
    let first_files = vlog_files(dir.path());
    // An iterator over the first version, positioned before any GC.
    let mut it = db.iter(&ReadOptions::default(), &db.default_cf()).unwrap();
    it.seek(&key(100));
    assert_eq!(it.value(), val(100, 0, 400).as_slice());
    // Half the first values become garbage.
    let mut at_snap = first.clone();
    put_all(&mut at_snap, 1, 2);
    db.compact_range(None, None).unwrap();
    // The snapshot sees odd keys' first values: GC must move them, not drop them.
    let snap = db.snapshot();
    let mut latest = at_snap.clone();
    put_all(&mut latest, 2, 1);
    db.compact_range(None, None).unwrap();
    db.run_background_work().unwrap();
    let s = db.stats();
    assert!(s.vlog.gc_rewrites > 0, "no GC ran: {:?}", s.vlog);
    assert!(s.vlog.gc_records_relocated > 0, "{:?}", s.vlog);
    assert!(
        first_files.iter().all(|f| f.exists()),
        "a file was deleted while an iterator still reads it"
    );
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    for (k, v) in &at_snap {
        let got = db.get_opt(&ro, &db.default_cf(), k).unwrap();
        assert_eq!(got.as_ref(), Some(v), "at the snapshot");
    }
    let scanned: Model = db
        .scan_opt::<&[u8], _>(&ro, &db.default_cf(), .., false)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(scanned == at_snap, "scan at the snapshot differs");
    // The iterator opened before GC still reads its version's values.
    let mut seen = 0;
    while it.valid() {
        let i = key_no(it.key());
        assert_eq!(it.value(), val(i, 0, 400).as_slice());
        seen += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(seen, n - 100);
    drop(it);
    check_all(&db, &latest, "after GC");
    // Once the iterator is gone, the next purge deletes what GC collected.
    db.compact_range(None, None).unwrap();
    assert!(
        first_files.iter().any(|f| !f.exists()),
        "collected files outlived their readers"
    );
    drop(ro);
    drop(snap);
    // With the snapshot gone, its versions are garbage and GC reclaims them too.
    db.compact_range(None, None).unwrap();
    db.run_background_work().unwrap();
    let s = db.stats();
    assert!(s.vlog.space_amp <= 1.1, "{:?}", s.vlog);
    check_all(&db, &latest, "after the snapshot went");
}

/// Writers and readers run while background threads flush, compact and collect: readers
/// always get a value written for their key, never an error.
#[test]
fn gc_runs_concurrently_with_reads_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        background_work: true,
        write_buffer_size: 32 << 10,
        vlog_gc_space_amp: Some(1.1),
        ..opts(Some(0))
    };
    let db = Arc::new(Db::open(dir.path(), o).unwrap());
    let n = 200u32;
    let wo = WriteOptions::default();
    for i in 0..n {
        db.put(&wo, &key(i), &val(i, 0, 300)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut i = t;
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i = (i * 7 + 13) % n;
                    let v = db.get(&key(i)).unwrap().expect("never deleted");
                    let head = format!("v{i}-");
                    assert!(v.starts_with(head.as_bytes()), "key {i}: wrong value");
                    assert_eq!(v.len(), 300);
                    if reads.is_multiple_of(50) {
                        let snap = db.snapshot();
                        let ro = ReadOptions {
                            snapshot: Some(snap),
                            ..Default::default()
                        };
                        let all: Vec<_> = db
                            .scan_opt::<&[u8], _>(&ro, &db.default_cf(), .., false)
                            .unwrap()
                            .map(|r| r.unwrap())
                            .collect();
                        assert_eq!(all.len(), n as usize);
                        for (k, v) in all {
                            let head = format!("v{}-", key_no(&k));
                            assert!(v.starts_with(head.as_bytes()), "scan: wrong value");
                        }
                    }
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for round in 1..=30u32 {
        for i in (0..n).filter(|i| (i + round) % 3 == 0) {
            db.put(&wo, &key(i), &val(i, round, 300)).unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let s = db.stats();
    assert!(s.vlog.gc_rewrites > 0, "no GC ran: {:?}", s.vlog);
    assert_eq!(s.background_errors, 0);
}

/// A failure at every point of a GC (value-log write, table write, manifest edit: a full
/// disk after `quota` bytes) followed by a reopen loses no value and leaves no orphan.
#[test]
fn gc_interrupted_at_every_point_loses_nothing() {
    let base = tempfile::tempdir().unwrap();
    let db = Db::open(base.path(), opts(Some(0))).unwrap();
    let m = half_garbage(&db, 120);
    drop(db);
    let gc_opts = || Options {
        vlog_gc_space_amp: Some(1.2),
        ..opts(Some(0))
    };
    // How many bytes a whole GC writes.
    let full = {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let db = Db::open(d.path(), gc_opts()).unwrap();
        let before = db.env().stats().snapshot().total().write_bytes;
        db.run_background_work().unwrap();
        assert!(db.stats().vlog.gc_rewrites > 0);
        db.env().stats().snapshot().total().write_bytes - before
    };
    let mut failures = 0;
    let step = (full / 40).max(1);
    let mut quota = 0;
    while quota <= full + step {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        {
            let db = Db::open(d.path(), gc_opts()).unwrap();
            db.env().set_space_quota(Some(quota));
            if db.run_background_work().is_err() {
                failures += 1;
            }
            // Dropped without lifting the quota: what is on disk is what a crash leaves.
        }
        let db = Db::open(d.path(), opts(Some(0))).unwrap();
        check_all(&db, &m, &format!("quota {quota}"));
        // No file is left that no table references.
        let live = db.stats().vlog.files_live as usize;
        assert_eq!(vlog_files(d.path()).len(), live, "quota {quota}: orphans");
        // And GC completes after the failure.
        drop(db);
        let db = Db::open(d.path(), gc_opts()).unwrap();
        db.run_background_work().unwrap();
        assert!(db.stats().vlog.space_amp <= 1.2, "quota {quota}");
        check_all(&db, &m, &format!("quota {quota}, GC finished"));
        quota += step;
    }
    assert!(failures > 10, "the quota never cut a GC short");
}

#[test]
fn corrupt_value_log_gives_corruption_errors_never_wrong_values() {
    let base = tempfile::tempdir().unwrap();
    let db = Db::open(base.path(), opts(Some(0))).unwrap();
    let m = load(&db, 300, 200, 3, 7);
    drop(db);
    let files = vlog_files(base.path());
    assert!(!files.is_empty());
    let len = std::fs::metadata(&files[0]).unwrap().len() as usize;
    // Damage the header, then bytes spread over the records.
    let mut positions: Vec<usize> = vec![0, 5, 9];
    positions.extend((12..len).step_by(len / 37 + 1));
    let (mut detected, tried) = (0, positions.len());
    for pos in positions {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let f = d.path().join(files[0].file_name().unwrap());
        let mut data = std::fs::read(&f).unwrap();
        data[pos] ^= 0x5a;
        std::fs::write(&f, data).unwrap();
        let db = match Db::open(d.path(), opts(Some(0))) {
            Ok(db) => db,
            Err(e) => {
                assert!(e.is_corruption(), "pos {pos}: {e}");
                continue;
            }
        };
        let mut errors = 0;
        for (k, v) in &m {
            match db.get(k) {
                Ok(got) => assert_eq!(got.as_ref(), Some(v), "pos {pos}: wrong value"),
                Err(e) => {
                    assert!(e.is_corruption(), "pos {pos}: {e}");
                    errors += 1;
                }
            }
        }
        // Damage to a record no table references (a deleted or overwritten value) is
        // harmless; count the damage that reads met.
        if errors > 0 {
            detected += 1;
        }
        // A scan stops with the error; what it returned before is right.
        let mut scan_err = false;
        for r in db.scan::<&[u8], _>(..).unwrap() {
            match r {
                Ok((k, v)) => assert_eq!(m.get(&k), Some(&v), "pos {pos}: scan"),
                Err(e) => {
                    assert!(e.is_corruption(), "{e}");
                    scan_err = true;
                }
            }
        }
        assert_eq!(
            scan_err,
            errors > 0,
            "pos {pos}: the scan and the gets disagree"
        );
    }
    assert!(
        detected > tried / 2,
        "{detected} of {tried} damaged files were noticed"
    );
}

#[test]
fn truncated_or_missing_value_log_is_corruption() {
    let base = tempfile::tempdir().unwrap();
    let db = Db::open(base.path(), opts(Some(0))).unwrap();
    let m = load(&db, 200, 200, 3, 7);
    drop(db);
    let name = vlog_files(base.path())[0].file_name().unwrap().to_owned();

    let d = tempfile::tempdir().unwrap();
    copy_dir(base.path(), d.path());
    let f = d.path().join(&name);
    let len = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let db = Db::open(d.path(), opts(Some(0))).unwrap();
    let mut errors = 0;
    for (k, v) in &m {
        match db.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v)),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
    drop(db);

    let d = tempfile::tempdir().unwrap();
    copy_dir(base.path(), d.path());
    std::fs::remove_file(d.path().join(&name)).unwrap();
    let e = Db::open(d.path(), opts(Some(0)))
        .err()
        .expect("open must fail");
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("missing"), "{e}");
}

#[test]
fn orphan_value_logs_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(Some(0))).unwrap();
    let m = load(&db, 100, 100, 2, 9);
    drop(db);
    let live = vlog_files(dir.path());
    let orphan = dir.path().join("999999.vlog");
    std::fs::write(&orphan, b"left by a GC cut short").unwrap();
    let db = Db::open(dir.path(), opts(Some(0))).unwrap();
    assert!(!orphan.exists());
    assert_eq!(vlog_files(dir.path()), live);
    check_all(&db, &m, "after orphan removal");
    // New files never reuse the orphan's number range below it.
    db.put(&WriteOptions::default(), b"zz", &[7u8; 64]).unwrap();
    db.flush().unwrap();
    let newest = vlog_files(dir.path()).pop().unwrap();
    let no: u64 = newest
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(no > 999_999, "{no}");
}

#[test]
fn bad_value_log_options_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    for (what, o) in [
        (
            "amp 1",
            Options {
                vlog_gc_space_amp: Some(1.0),
                ..opts(Some(0))
            },
        ),
        (
            "amp below 1",
            Options {
                vlog_gc_space_amp: Some(0.5),
                ..opts(Some(0))
            },
        ),
        (
            "amp NaN",
            Options {
                vlog_gc_space_amp: Some(f64::NAN),
                ..opts(Some(0))
            },
        ),
        (
            "amp inf",
            Options {
                vlog_gc_space_amp: Some(f64::INFINITY),
                ..opts(Some(0))
            },
        ),
        (
            "threshold",
            Options {
                value_threshold: Some(usize::MAX),
                ..opts(None)
            },
        ),
    ] {
        match Db::open(dir.path().join(what), o) {
            Err(Error::InvalidArgument(_)) => {}
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: accepted"),
        }
    }
    Options {
        vlog_gc_space_amp: Some(1.01),
        ..opts(Some(0))
    }
    .validate()
    .unwrap();
}
