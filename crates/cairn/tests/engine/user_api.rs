//! What an embedding user reaches for beside put and get: `multi_get` at one moment,
//! reads that leave the caches alone, writes without the log, and syncing the log on demand.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cairn::storage::FaultInjector;
use cairn::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

use crate::support::key8;

fn small() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size: 16 << 10,
        level1_bytes: 64 << 10,
        ..Options::small()
    }
}

/// A writer keeps two keys equal (one batch sets both); readers never see them differ
/// through `multi_get`, while flushes and compactions run beside them.
#[test]
fn multi_get_answers_from_one_moment() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), small()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut b = WriteBatch::new();
                let v = n.to_be_bytes();
                b.put(b"a", &v).unwrap();
                // Filler between them, so that flushes put them in different blocks.
                b.put(format!("f{:06}", n % 5000).as_bytes(), &[7u8; 64])
                    .unwrap();
                b.put(b"z", &v).unwrap();
                db.write(&WriteOptions::default(), b).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut checked = 0;
    while checked < 20_000 {
        let got = db.multi_get(&[&b"z"[..], b"missing", b"a"]);
        let got: Vec<Option<Vec<u8>>> = got.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(got[1], None);
        assert_eq!(got[0], got[2], "multi_get saw two moments");
        checked += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(writes > 100, "the writer ran ({writes} batches)");
    assert!(db.stats().flushes > 0, "flushes ran beside the reads");
}

#[test]
fn multi_get_keeps_the_order_of_its_keys_and_refuses_bad_keys_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    let wo = WriteOptions::default();
    for i in 0..500 {
        db.put(&wo, &key8(i), format!("v{i}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.put(&wo, &key8(7), b"newer").unwrap();
    let snap = db.snapshot();
    db.delete(&wo, &key8(3)).unwrap();
    let keys = [
        key8(400),
        key8(3),
        key8(7),
        key8(9999),
        key8(400),
        vec![b'k'; 70_000],
    ];
    let got = db.multi_get(&keys);
    assert_eq!(got.len(), keys.len());
    let ok: Vec<Option<Vec<u8>>> = got[..5]
        .iter()
        .map(|r| r.as_ref().unwrap().clone())
        .collect();
    assert_eq!(
        ok,
        vec![
            Some(b"v400".to_vec()),
            None,
            Some(b"newer".to_vec()),
            None,
            Some(b"v400".to_vec())
        ]
    );
    assert!(
        matches!(got[5], Err(Error::TooLarge { .. })),
        "an oversized key is refused alone: {:?}",
        got[5]
    );
    // At a snapshot: the delete after it does not show.
    let ro = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    let got = db.multi_get_opt(&ro, &db.default_cf(), &[key8(3)]);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"v3"[..]));
}

/// A scan or get with `fill_cache` off reads through the block cache without adding to
/// it; the same reads with it on fill it.
#[test]
fn reads_without_fill_cache_leave_the_block_cache_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        block_cache_bytes: 8 << 20,
        ..small()
    };
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..3000 {
            db.put(&WriteOptions::default(), &key8(i), &[1u8; 100])
                .unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), opts).unwrap();
    let cache = db.block_cache().clone();
    let before = cache.usage();
    let no_fill = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    let n = db
        .scan_opt::<&[u8], _>(&no_fill, &db.default_cf(), .., false)
        .unwrap()
        .count();
    assert_eq!(n, 3000);
    for i in (0..3000).step_by(7) {
        assert!(db
            .get_opt(&no_fill, &db.default_cf(), &key8(i))
            .unwrap()
            .is_some());
    }
    assert_eq!(
        cache.usage(),
        before,
        "reads without fill_cache added blocks"
    );
    let n = db.scan::<&[u8], _>(..).unwrap().count();
    assert_eq!(n, 3000);
    assert!(cache.usage() > before, "a scan with fill_cache fills it");
}

/// Power-loss helpers: a database on a fault injector, and the directory as a power loss
/// leaves it.
fn open_with(dir: &std::path::Path, faults: &Arc<FaultInjector>) -> Db {
    Db::open(
        dir,
        Options {
            faults: Some(faults.clone()),
            background_work: false,
            ..small()
        },
    )
    .unwrap()
}

fn lose_power(db: Db, faults: &FaultInjector, dir: &std::path::Path) -> Db {
    faults.cut_power_after(0);
    drop(db);
    faults.apply_power_loss().unwrap();
    Db::open(dir, small()).unwrap()
}

#[test]
fn sync_wal_makes_earlier_unsynced_writes_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let faults = Arc::new(FaultInjector::new());
    let db = open_with(&dir, &faults);
    let wo = WriteOptions::default();
    db.put(&wo, b"before", b"1").unwrap();
    db.sync_wal().unwrap();
    db.flush_wal(false).unwrap();
    db.put(&wo, b"after", b"2").unwrap();
    let db = lose_power(db, &faults, &dir);
    assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db.get(b"after").unwrap(),
        None,
        "an unsynced write survived the power loss: the simulation did not bite"
    );
}

#[test]
fn writes_without_the_log_survive_a_clean_close() {
    let tmp = tempfile::tempdir().unwrap();
    let unlogged = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    for background in [false, true] {
        let dir = tmp.path().join(format!("db-{background}"));
        let opts = Options {
            background_work: background,
            ..small()
        };
        let db = Db::open(&dir, opts.clone()).unwrap();
        db.put(&unlogged, b"bulk", b"1").unwrap();
        db.put(&WriteOptions::default(), b"logged", b"2").unwrap();
        db.close().unwrap();
        let db = Db::open(&dir, opts).unwrap();
        assert_eq!(db.get(b"bulk").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(db.get(b"logged").unwrap().as_deref(), Some(&b"2"[..]));
    }
}

#[test]
fn writes_without_the_log_last_once_flushed_and_never_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let faults = Arc::new(FaultInjector::new());
    let db = open_with(&dir, &faults);
    let unlogged = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    let synced = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    assert!(matches!(
        db.put(
            &WriteOptions {
                sync: true,
                disable_wal: true,
                ..WriteOptions::default()
            },
            b"k",
            b"v"
        ),
        Err(Error::InvalidArgument(_))
    ));
    db.put(&unlogged, b"flushed", b"1").unwrap();
    db.flush().unwrap();
    db.put(&unlogged, b"unlogged", b"2").unwrap();
    db.put(&synced, b"logged", b"3").unwrap();
    assert_eq!(db.get(b"unlogged").unwrap().as_deref(), Some(&b"2"[..]));
    let db = lose_power(db, &faults, &dir);
    assert_eq!(db.get(b"flushed").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"logged").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(
        db.get(b"unlogged").unwrap(),
        None,
        "a write kept out of the log came back from it"
    );
}

/// Names and sizes of every file under `dir`.
fn listing(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            (e.file_name().to_string_lossy().into_owned(), m.len())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_read_only_open_reads_everything_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    // No background threads: the writer below is forgotten, not closed, and its threads
    // would go on compacting.
    let opts = Options {
        value_threshold: Some(40),
        background_work: false,
        ..small()
    };
    {
        let db = Db::open(&dir, opts.clone()).unwrap();
        let logs = db.create_cf("logs").unwrap();
        for i in 0..3000 {
            db.put(&WriteOptions::default(), &key8(i), &[b'v'; 60])
                .unwrap();
        }
        db.flush().unwrap();
        db.put_cf(&logs, &WriteOptions::default(), b"only-in-the-log", b"1")
            .unwrap();
        db.delete(&WriteOptions::default(), &key8(7)).unwrap();
        // Dropped without close: the last writes are in the log alone.
        std::mem::forget(db);
    }
    let before = listing(&dir);
    let ro = Db::open_read_only(&dir, opts.clone()).unwrap();
    let logs = ro.cf("logs").unwrap();
    assert_eq!(
        ro.get_cf(&logs, b"only-in-the-log").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(ro.get(&key8(7)).unwrap(), None);
    assert_eq!(ro.scan::<&[u8], _>(..).unwrap().count(), 2999);
    let refused = |r: cairn::Result<()>, what: &str| {
        assert!(matches!(r, Err(Error::ReadOnly(_))), "{what}: {r:?}");
    };
    refused(ro.put(&WriteOptions::default(), b"k", b"v"), "put");
    refused(ro.flush(), "flush");
    refused(ro.compact_range(None, None), "compact_range");
    refused(ro.create_cf("x").map(|_| ()), "create_cf");
    refused(ro.drop_cf(&logs), "drop_cf");
    refused(ro.run_background_work(), "background work");
    refused(ro.checkpoint(tmp.path().join("copy")), "checkpoint");
    assert!(!tmp.path().join("copy").exists());
    ro.close().unwrap();
    assert_eq!(
        listing(&dir),
        before,
        "a read-only session changed the directory"
    );
    // A database that is not there is not created.
    let missing = tmp.path().join("missing");
    assert!(matches!(
        Db::open_read_only(&missing, opts),
        Err(Error::NotFound(_))
    ));
    assert!(!missing.exists());
}

#[test]
fn a_read_only_open_runs_beside_the_writer_and_sees_its_moment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, small()).unwrap();
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &key8(i), b"first")
            .unwrap();
    }
    db.flush().unwrap();
    db.put(&WriteOptions::default(), b"unflushed", b"yes")
        .unwrap();
    assert!(matches!(Db::open(&dir, small()), Err(Error::Locked(_))));
    let ro = Db::open_read_only(&dir, small()).unwrap();
    assert_eq!(ro.get(b"unflushed").unwrap().as_deref(), Some(&b"yes"[..]));
    // The writer goes on (flushes and compactions rewrite files); the reader keeps the
    // state of its open.
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &key8(i), b"second")
            .unwrap();
    }
    db.put(&WriteOptions::default(), b"later", b"x").unwrap();
    db.flush().unwrap();
    assert_eq!(ro.get(b"later").unwrap(), None);
    assert_eq!(ro.get(&key8(5)).unwrap().as_deref(), Some(&b"first"[..]));
    ro.close().unwrap();
    let ro = Db::open_read_only(&dir, small()).unwrap();
    assert_eq!(ro.get(&key8(5)).unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(ro.get(b"later").unwrap().as_deref(), Some(&b"x"[..]));
}

fn options_files(dir: &std::path::Path) -> Vec<String> {
    listing(dir)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.starts_with("OPTIONS-"))
        .collect()
}

#[test]
fn the_options_file_gives_back_the_options_and_refuses_contradictions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut opts = cairn::presets::by_name("sa-lsm").expect("preset");
    opts.write_buffer_size = 123 << 10;
    opts.value_threshold = Some(77);
    for _ in 0..3 {
        let db = Db::open(&dir, opts.clone()).unwrap();
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        db.close().unwrap();
    }
    assert_eq!(options_files(&dir).len(), 2, "the two newest are kept");
    let back = Options::load_latest(&dir).unwrap();
    assert_eq!(back.write_buffer_size, 123 << 10);
    assert_eq!(back.value_threshold, Some(77));
    assert_eq!(back.tiers, opts.tiers);
    assert_eq!(back.index, opts.index);
    assert_eq!(back.num_levels, opts.num_levels);
    let db = Db::open(&dir, back).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();

    // Fewer levels, or other tiers, contradict the database.
    let fewer = Options {
        num_levels: opts.num_levels - 1,
        ..opts.clone()
    };
    assert!(
        matches!(Db::open(&dir, fewer), Err(Error::InvalidArgument(m)) if m.contains("options file"))
    );
    let mut moved = opts.clone();
    moved.tiers[1].dir = "elsewhere".into();
    assert!(matches!(Db::open(&dir, moved), Err(Error::InvalidArgument(m)) if m.contains("tiers")));

    // Damage: a clear error from load_latest; an open warns and writes a sound one.
    let newest = dir.join(options_files(&dir).pop().unwrap());
    let mut bytes = std::fs::read(&newest).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&newest, bytes).unwrap();
    assert!(Options::load_latest(&dir).is_err_and(|e| e.is_corruption()));
    Db::open(&dir, opts.clone()).unwrap().close().unwrap();
    assert_eq!(
        Options::load_latest(&dir).unwrap().write_buffer_size,
        123 << 10
    );
    // A database without one says so.
    let bare = tmp.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    assert!(matches!(
        Options::load_latest(&bare),
        Err(Error::InvalidArgument(_))
    ));
}

/// Read-only opens while a writer flushes and compacts beside them: each shows a prefix
/// of the writes (never later writes without earlier ones, never an error about a file
/// the manifest it read named and the writer deleted).
#[test]
fn read_only_opens_beside_a_busy_writer_see_a_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = Options {
        write_buffer_size: 128 << 10,
        target_file_size: 128 << 10,
        level1_bytes: 512 << 10,
        ..Options::small()
    };
    let db = Arc::new(Db::open(&dir, opts.clone()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u32;
            // Bursts of writes (each a few flushes and compactions), then a pause.
            while !stop.load(Ordering::Relaxed) && n < 400_000 {
                db.put(&WriteOptions::default(), &key8(n), &[9u8; 40])
                    .unwrap();
                n += 1;
                if n.is_multiple_of(5000) {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                }
            }
            n
        })
    };
    let mut seen = 0;
    let mut opened = 0;
    for round in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        let ro = match Db::open_read_only(&dir, opts.clone()) {
            Ok(ro) => ro,
            // The writer changed the tree during every try (a slow, busy machine): the
            // one error allowed, and it says to try again.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::Interrupted => {
                continue
            }
            Err(e) => panic!("round {round}: read-only open failed: {e}"),
        };
        opened += 1;
        let keys: Vec<Vec<u8>> = ro
            .scan::<&[u8], _>(..)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        assert!(
            keys.iter().enumerate().all(|(i, k)| *k == key8(i as u32)),
            "round {round}: {} keys, not a prefix of the writes",
            keys.len()
        );
        assert!(keys.len() >= seen, "round {round}: went back");
        seen = keys.len();
    }
    stop.store(true, Ordering::Relaxed);
    let n = writer.join().unwrap();
    assert!(
        db.stats().flushes > 2 && n > 1000,
        "the writer was busy ({n} writes)"
    );
    assert!(opened >= 5, "{opened} of 20 read-only opens got through");
}

/// AC-Key's point cache: a read without filling is answered by a key-pointer entry but
/// does not promote it to the key-value cache; the same read with filling does.
#[test]
fn reads_without_fill_cache_leave_ac_keys_point_cache_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts = Options {
        read_cache: cairn::ReadCachePolicy::Fixed {
            kv: 5,
            kp: 5,
            block: 0,
        },
        block_cache_bytes: 1 << 20,
        ..small()
    };
    let db = Db::open(&dir, opts).unwrap();
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &key8(i), &[5u8; 30])
            .unwrap();
    }
    db.flush().unwrap();
    let no_fill = ReadOptions {
        fill_cache: false,
        ..ReadOptions::default()
    };
    let cf = db.default_cf();
    let k = key8(1234);
    // Not admitted without filling.
    db.get_opt(&no_fill, &cf, &k).unwrap();
    let rc = db.stats().read_cache;
    assert_eq!(rc.kv_entries + rc.kp_entries, 0, "{rc:?}");
    db.get(&k).unwrap();
    let after_admit = db.stats().read_cache;
    assert_eq!(
        after_admit.kp_entries, 1,
        "admitted as a key pointer: {after_admit:?}"
    );
    assert_eq!(
        db.get_opt(&no_fill, &cf, &k).unwrap().as_deref(),
        Some(&[5u8; 30][..])
    );
    let rc = db.stats().read_cache;
    assert_eq!(
        rc.kp_hits,
        after_admit.kp_hits + 1,
        "answered by the pointer"
    );
    assert_eq!(rc.kv_entries, 0, "not promoted without filling: {rc:?}");
    db.get(&k).unwrap();
    assert_eq!(db.stats().read_cache.kv_entries, 1, "promoted with filling");
}

/// A close releases the lock for the next open even while another thread spawns processes:
/// a forked child shares the `LOCK` file until its exec, so without the grace period about
/// one reopen in fifteen failed with `Locked` here (and the CLI tests flaked under load).
#[cfg(unix)]
#[test]
fn a_reopen_right_after_close_survives_a_thread_spawning_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    Db::open(&dir, small()).unwrap().close().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spawner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::process::Command::new("true").status();
            }
        })
    };
    let reopened = (0..150).try_for_each(|_| Db::open(&dir, small())?.close());
    stop.store(true, Ordering::Relaxed);
    spawner.join().unwrap();
    reopened.unwrap();
    // A lock that is really held is still refused.
    let db = Db::open(&dir, small()).unwrap();
    assert!(matches!(Db::open(&dir, small()), Err(Error::Locked(_))));
    db.close().unwrap();
}
