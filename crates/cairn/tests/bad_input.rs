//! Bad input gets a typed error, never a panic: oversized keys and values, invalid
//! options, directories that are not databases, a database locked by another opener,
//! files of an unknown format version, and a full disk.

mod support;

use std::process::Command;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use cairn::log::{LogReader, LogWriter};
use cairn::storage::{FileKind, StorageEnv};
use cairn::table::FOOTER_LEN;
use cairn::types::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use cairn::{Db, Error, Options, Transition, WriteBatch, WriteOptions};

use support::{files_where, key8 as key};

/// The lock test forks a child, which holds a copy of every descriptor of this process
/// (the other tests' LOCK files included) until it execs; a test closing and reopening its
/// database in that moment would see its own flock still taken. Tests that open databases
/// hold this for reading; the fork takes it for writing.
static FORK: RwLock<()> = RwLock::new(());

fn no_fork() -> RwLockReadGuard<'static, ()> {
    FORK.read().unwrap_or_else(|e| e.into_inner())
}

fn val(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat((i % 50) as usize)).into_bytes()
}

fn too_large<T>(r: cairn::Result<T>, what: &str) {
    match r {
        Err(Error::TooLarge { what: w, .. }) => assert_eq!(w, what),
        Err(e) => panic!("expected TooLarge {what}, got {e}"),
        Ok(_) => panic!("expected TooLarge {what}, got Ok"),
    }
}

fn invalid<T>(r: cairn::Result<T>, ctx: &str) {
    match r {
        Err(Error::InvalidArgument(_)) => {}
        Err(e) => panic!("{ctx}: expected InvalidArgument, got {e}"),
        Ok(_) => panic!("{ctx}: expected InvalidArgument, got Ok"),
    }
}

#[test]
fn oversized_keys_and_values_are_refused() {
    let _fork = no_fork();
    static BIG: OnceLock<Vec<u8>> = OnceLock::new();
    let big_value = BIG.get_or_init(|| vec![7u8; MAX_VALUE_SIZE + 1]);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let wo = WriteOptions::default();
    let big_key = vec![b'k'; MAX_KEY_SIZE + 1];
    too_large(db.put(&wo, &big_key, b"v"), "key");
    too_large(db.delete(&wo, &big_key), "key");
    too_large(db.get(&big_key), "key");
    too_large(db.delete_range(&wo, &big_key, b"z"), "key");
    too_large(db.put(&wo, b"k", big_value), "value");
    let mut b = WriteBatch::new();
    too_large(b.put(&big_key, b"v"), "key");
    too_large(b.put(b"k", big_value), "value");
    assert!(b.is_empty(), "a refused op must not stay in the batch");
    // At the limit is fine, and the refused writes left nothing behind.
    let max_key = vec![b'm'; MAX_KEY_SIZE];
    db.put(&wo, &max_key, b"at the limit").unwrap();
    assert_eq!(
        db.get(&max_key).unwrap().as_deref(),
        Some(&b"at the limit"[..])
    );
    assert_eq!(db.get(b"k").unwrap(), None);
    db.flush().unwrap();
    assert_eq!(
        db.get(&max_key).unwrap().as_deref(),
        Some(&b"at the limit"[..])
    );
    assert_eq!(db.scan::<&[u8], _>(..).unwrap().count(), 1);
}

#[test]
fn invalid_options_are_refused() {
    let _fork = no_fork();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let base = Options::small;
    let t = base().size_ratio;
    let cases: Vec<(&str, Options)> = vec![
        (
            "level_runs K=0",
            Options {
                level_runs: vec![0],
                ..base()
            },
        ),
        (
            "level_runs K=T+1",
            Options {
                level_runs: vec![1, t + 1],
                ..base()
            },
        ),
        (
            "too many level_runs",
            Options {
                level_runs: vec![1; 7],
                ..base()
            },
        ),
        (
            "write_buffer_size 0",
            Options {
                write_buffer_size: 0,
                ..base()
            },
        ),
        (
            "max_write_buffers 0",
            Options {
                max_write_buffers: 0,
                ..base()
            },
        ),
        (
            "block_size 0",
            Options {
                block_size: 0,
                ..base()
            },
        ),
        (
            "block_cache_shards 2000",
            Options {
                block_cache_shards: 2000,
                ..base()
            },
        ),
        (
            "target_file_size 0",
            Options {
                target_file_size: 0,
                ..base()
            },
        ),
        (
            "level1_bytes 0",
            Options {
                level1_bytes: 0,
                ..base()
            },
        ),
        (
            "size_ratio 0",
            Options {
                size_ratio: 0,
                ..base()
            },
        ),
        (
            "size_ratio 1",
            Options {
                size_ratio: 1,
                ..base()
            },
        ),
        (
            "num_levels 0",
            Options {
                num_levels: 0,
                ..base()
            },
        ),
        (
            "num_levels 1",
            Options {
                num_levels: 1,
                ..base()
            },
        ),
        (
            "num_levels 100",
            Options {
                num_levels: 100,
                ..base()
            },
        ),
        (
            "bloom bits -1",
            Options {
                bloom_bits_per_key: -1.0,
                ..base()
            },
        ),
        (
            "bloom bits NaN",
            Options {
                bloom_bits_per_key: f64::NAN,
                ..base()
            },
        ),
        (
            "bloom bits inf",
            Options {
                bloom_bits_per_key: f64::INFINITY,
                ..base()
            },
        ),
        (
            "l0 triggers 0",
            Options {
                l0_compaction_trigger: 0,
                ..base()
            },
        ),
        (
            "l0 stop below slowdown",
            Options {
                l0_slowdown_trigger: 8,
                l0_stop_trigger: 4,
                ..base()
            },
        ),
        (
            "latency_scale NaN",
            Options {
                latency_scale: f64::NAN,
                ..base()
            },
        ),
    ];
    for (name, o) in cases {
        invalid(Db::open(&path, o), name);
        assert!(
            !path.exists(),
            "{name}: a refused open created the directory"
        );
    }
    // Run limits through set_policy.
    let db = Db::open(&path, base()).unwrap();
    let cf = db.default_cf();
    for tr in [Transition::Greedy, Transition::Lazy, Transition::Flexible] {
        invalid(db.set_policy(&cf, 1, 0, tr), "set_policy K=0");
        invalid(db.set_policy(&cf, 1, t + 1, tr), "set_policy K=T+1");
        invalid(db.set_policy(&cf, 2, usize::MAX, tr), "set_policy K=MAX");
        invalid(db.set_policy(&cf, 0, 0, tr), "set_policy K_0=0");
        invalid(db.set_policy(&cf, 100, 1, tr), "set_policy level 100");
    }
    db.set_policy(&cf, 1, t, Transition::Lazy).unwrap();
    db.close().unwrap();
    // Reopening an existing database with another number of levels.
    invalid(
        Db::open(
            &path,
            Options {
                num_levels: 3,
                ..base()
            },
        ),
        "num_levels changed",
    );
    // error_if_exists.
    invalid(
        Db::open(
            &path,
            Options {
                error_if_exists: true,
                ..base()
            },
        ),
        "error_if_exists",
    );
}

#[test]
fn paths_that_are_not_databases() {
    let _fork = no_fork();
    let dir = tempfile::tempdir().unwrap();
    // A directory holding other files.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"mine").unwrap();
    match Db::open(&other, Options::small()) {
        Err(Error::NotADatabase(p)) => assert_eq!(p, other),
        r => panic!("expected NotADatabase, got {:?}", r.err()),
    }
    assert_eq!(
        files_where(&other, |_| true).len(),
        1,
        "the directory was touched"
    );
    // A file.
    let file = dir.path().join("file");
    std::fs::write(&file, b"data").unwrap();
    assert!(matches!(
        Db::open(&file, Options::small()),
        Err(Error::NotADatabase(_))
    ));
    assert_eq!(std::fs::read(&file).unwrap(), b"data");
    // create_if_missing = false: an empty directory, a missing one.
    let no_create = || Options {
        create_if_missing: false,
        ..Options::small()
    };
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(matches!(
        Db::open(&empty, no_create()),
        Err(Error::NotFound(_))
    ));
    assert!(files_where(&empty, |_| true).is_empty());
    let missing = dir.path().join("missing");
    assert!(matches!(
        Db::open(&missing, no_create()),
        Err(Error::NotFound(_))
    ));
    assert!(!missing.exists());
}

const LOCK_CHILD_ENV: &str = "CAIRN_LOCK_CHILD";

#[test]
fn an_open_database_is_locked() {
    if let Ok(dir) = std::env::var(LOCK_CHILD_ENV) {
        // The child: report what a second opener sees.
        match Db::open(&dir, Options::small()) {
            Err(Error::Locked(_)) => std::process::exit(42),
            Err(e) => {
                eprintln!("child: {e}");
                std::process::exit(1)
            }
            Ok(_) => std::process::exit(2),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    // In this process.
    match Db::open(dir.path(), Options::small()) {
        Err(Error::Locked(p)) => assert_eq!(p, dir.path()),
        r => panic!("second open in the process: {:?}", r.err()),
    }
    // From another process.
    let fork = FORK.write().unwrap_or_else(|e| e.into_inner());
    let st = Command::new(std::env::current_exe().unwrap())
        .args(["an_open_database_is_locked", "--exact", "--nocapture"])
        .env(LOCK_CHILD_ENV, dir.path())
        .status()
        .unwrap();
    drop(fork);
    assert_eq!(st.code(), Some(42), "child process did not see Locked");
    // The failed opens did no harm, and the lock goes with the database.
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn unknown_table_format_version_is_refused() {
    let _fork = no_fork();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    for i in 0..500 {
        db.put(&WriteOptions::default(), &key(i), &val(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let tables = files_where(dir.path(), |n| n.ends_with(".sst"));
    assert_eq!(tables.len(), 1);
    let mut data = std::fs::read(&tables[0]).unwrap();
    let at = data.len() - FOOTER_LEN + 52; // format version (u32 LE)
    let newer = cairn::table::FORMAT_VERSION + 1;
    data[at..at + 4].copy_from_slice(&newer.to_le_bytes());
    std::fs::write(&tables[0], &data).unwrap();
    let check = |e: Error| {
        assert!(
            matches!(e, Error::UnsupportedVersion { found, .. } if found == newer),
            "expected UnsupportedVersion, got {e}"
        )
    };
    match Db::open(dir.path(), Options::small()) {
        Err(e) => check(e),
        Ok(db) => {
            check(db.get(&key(3)).unwrap_err());
            let first = db
                .scan::<&[u8], _>(..)
                .and_then(|mut s| s.next().transpose());
            check(first.unwrap_err());
        }
    }
}

#[test]
fn unknown_manifest_format_version_is_refused() {
    let _fork = no_fork();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let manifests = files_where(dir.path(), |n| n.starts_with("MANIFEST-"));
    assert_eq!(manifests.len(), 1);
    // Rewrite the manifest with the version of its first record (tag 12, varint 2 first)
    // raised, through the log writer so every checksum is right.
    let mut reader = LogReader::new(std::fs::read(&manifests[0]).unwrap(), "manifest", false);
    let mut records = Vec::new();
    while let Some(r) = reader.next_record().unwrap() {
        records.push(r);
    }
    assert_eq!(
        &records[0][..2],
        &[12, 2],
        "format version tag expected first"
    );
    records[0][1] = 3;
    let scratch = tempfile::tempdir().unwrap();
    let env = StorageEnv::new(scratch.path(), &[], 0.0).unwrap();
    let mut w = LogWriter::new(
        env.create(&manifests[0], FileKind::Manifest, 0, None)
            .unwrap(),
    );
    for r in &records {
        w.add_record(r).unwrap();
    }
    w.sync().unwrap();
    drop(w);
    match Db::open(dir.path(), Options::small()) {
        Err(Error::UnsupportedVersion { found: 3, .. }) => {}
        r => panic!("expected UnsupportedVersion, got {:?}", r.err()),
    }
    // The refused open left the files alone.
    assert!(manifests[0].exists());
    assert_eq!(files_where(dir.path(), |n| n.ends_with(".sst")).len(), 1);
}

/// Writes with sync until a write fails; returns the acknowledged keys and the error.
/// Fails the test if no error comes within `limit` (an endless stall).
fn write_until_error(db: &Arc<Db>, from: u32, limit: Duration) -> (Vec<u32>, Error) {
    let db2 = db.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut acked = Vec::new();
        for i in from.. {
            match db2.put(
                &WriteOptions {
                    sync: true,
                    query_column: None,
                    disable_wal: false,
                },
                &key(i),
                &val(i),
            ) {
                Ok(()) => acked.push(i),
                Err(e) => {
                    // Let go of the database before reporting, so the caller can take it.
                    drop(db2);
                    let _ = tx.send((acked, e));
                    return;
                }
            }
        }
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("writes neither failed nor finished under a full disk"))
}

fn full_disk_options() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size: 16 << 10,
        level1_bytes: 64 << 10,
        ..Options::small()
    }
}

fn check_keys(db: &Db, keys: impl IntoIterator<Item = u32>, ctx: &str) {
    for i in keys {
        assert_eq!(db.get(&key(i)).unwrap(), Some(val(i)), "{ctx}: key {i}");
    }
}

#[test]
fn full_disk_fails_writes_and_recovers_when_space_returns() {
    let _fork = no_fork();
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), full_disk_options()).unwrap());
    let wo = WriteOptions::default();
    for i in 0..2000 {
        db.put(&wo, &key(i), &val(i)).unwrap();
    }
    // Room for a little more, then nothing: the WAL, a flush and compactions all run out.
    db.env().set_space_quota(Some(40 << 10));
    let (acked, err) = write_until_error(&db, 2000, Duration::from_secs(20));
    assert!(err.is_no_space(), "expected a no-space error, got {err}");
    let last = acked.last().copied().unwrap_or(1999);
    eprintln!(
        "full disk: {} writes acknowledged, then {err}; background errors {}",
        acked.len(),
        db.stats().background_errors
    );
    check_keys(&db, 0..=last, "under a full disk");
    // With no room at all: still failing, still readable.
    db.env().set_space_quota(Some(0));
    let e = db
        .put(
            &WriteOptions {
                sync: true,
                query_column: None,
                disable_wal: false,
            },
            b"x",
            b"y",
        )
        .unwrap_err();
    assert!(e.is_no_space(), "{e}");
    // Space returns: writes work, background flushes resume.
    db.env().set_space_quota(None);
    let t = Instant::now();
    loop {
        match db.put(
            &WriteOptions {
                sync: true,
                query_column: None,
                disable_wal: false,
            },
            &key(last + 1),
            &val(last + 1),
        ) {
            Ok(()) => break,
            Err(e) if t.elapsed() < Duration::from_secs(10) => {
                eprintln!("write after space returned: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("writes did not resume after space returned: {e}"),
        }
    }
    // A write that waits for a flush fails with the flush's last error until the flush
    // thread's next retry (every 200 ms) succeeds; under load that can come after the
    // write above. Each write may retry within that window.
    for i in last + 2..last + 3000 {
        let t = Instant::now();
        while let Err(e) = db.put(&wo, &key(i), &val(i)) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "writes did not resume after space returned: {e}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let flushes = db.stats().flushes;
    db.flush().unwrap();
    assert!(
        db.stats().flushes > flushes,
        "no flush after space returned"
    );
    db.compact_range(None, None).unwrap();
    check_keys(&db, 0..last + 3000, "after space returned");
    drop(db);
    let db = Db::open(dir.path(), full_disk_options()).unwrap();
    check_keys(&db, 0..last + 3000, "after reopen");
    assert_eq!(db.get(b"x").unwrap(), None);
}

#[test]
fn full_disk_loses_nothing_acknowledged_across_reopen() {
    let _fork = no_fork();
    for quota in [
        0u64,
        300,
        5000,
        20 << 10,
        50 << 10,
        70 << 10,
        100 << 10,
        200 << 10,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(dir.path(), full_disk_options()).unwrap());
        for i in 0..1000 {
            db.put(&WriteOptions::default(), &key(i), &val(i)).unwrap();
        }
        db.env().set_space_quota(Some(quota));
        let (acked, err) = write_until_error(&db, 1000, Duration::from_secs(20));
        assert!(err.is_no_space(), "quota {quota}: {err}");
        let last = acked.last().copied().unwrap_or(999);
        check_keys(&db, 0..=last, "full");
        // Close while the disk is full (the close may fail to sync: fine), then reopen.
        match Arc::try_unwrap(db) {
            Ok(db) => {
                let _ = db.close();
            }
            Err(_) => panic!("db still shared"),
        }
        let db = Db::open(dir.path(), full_disk_options())
            .unwrap_or_else(|e| panic!("quota {quota}: reopen: {e}"));
        check_keys(&db, 0..=last, &format!("quota {quota}: after reopen"));
        db.put(&WriteOptions::default(), b"after", b"ok").unwrap();
        db.flush().unwrap();
    }
}
