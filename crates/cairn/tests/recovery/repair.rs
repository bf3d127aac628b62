//! A database whose `CURRENT` or manifest is gone refuses to open and touches nothing;
//! `Db::repair` brings it back, from the newest intact manifest or from the tables and
//! write-ahead logs alone, and the repaired database answers as a model of every write says.

use std::collections::BTreeMap;
use std::path::Path;

use cairn::{Db, Options, RepairMethod, WriteBatch, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

fn opts() -> Options {
    Options {
        write_buffer_size: 8 << 10,
        target_file_size: 8 << 10,
        level1_bytes: 32 << 10,
        size_ratio: 4,
        num_levels: 4,
        l0_compaction_trigger: 2,
        block_size: 512,
        ..Options::small()
    }
}

fn separated() -> Options {
    Options {
        value_threshold: Some(0),
        ..opts()
    }
}

/// Every file under `dir` with its contents, to prove a refused open changed nothing.
fn snapshot_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walk(dir) {
        if e.file_name().is_some_and(|n| n != "LOCK") {
            let rel = e.strip_prefix(dir).unwrap().display().to_string();
            out.insert(rel, std::fs::read(&e).unwrap());
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

/// Random puts, overwrites, deletes and batches over three column families, with flushes
/// and compactions in between, so versions of one key sit in several tables and levels
/// and some writes are only in the write-ahead log at the end.
fn fill(dir: &Path, o: Options, seed: u64) -> Model {
    let mut rng = SmallRng::seed_from_u64(seed);
    let db = Db::open(dir, o).unwrap();
    let names = ["default", "logs", "users"];
    for n in &names[1..] {
        db.create_cf(n).unwrap();
    }
    let mut model: Model = names
        .iter()
        .map(|n| (n.to_string(), BTreeMap::new()))
        .collect();
    let wo = WriteOptions::default();
    for round in 0..6 {
        for _ in 0..400 {
            let name = names[rng.random_range(0..names.len())];
            let cf = db.cf(name).unwrap();
            let m = model.get_mut(name).unwrap();
            let key = format!("k{:04}", rng.random_range(0..300)).into_bytes();
            match rng.random_range(0..10) {
                0..=5 => {
                    let v = format!("{name}-{round}-{}", rng.random::<u32>()).repeat(3);
                    db.put_cf(&cf, &wo, &key, v.as_bytes()).unwrap();
                    m.insert(key, v.into_bytes());
                }
                6..=7 => {
                    db.delete_cf(&cf, &wo, &key).unwrap();
                    m.remove(&key);
                }
                _ => {
                    let mut b = WriteBatch::new();
                    let k2 = format!("k{:04}", rng.random_range(0..300)).into_bytes();
                    b.put_cf(cf.id(), &key, b"batched").unwrap();
                    b.delete_cf(cf.id(), &k2).unwrap();
                    db.write(&wo, b).unwrap();
                    m.insert(key, b"batched".to_vec());
                    m.remove(&k2);
                }
            }
        }
        if round == 5 {
            break; // the last round stays in the WAL (close does not flush it)
        }
        db.flush().unwrap();
        if round % 2 == 1 {
            db.compact_range(None, None).unwrap(); // flushes too
        }
    }
    db.close().unwrap();
    model
}

fn check(dir: &Path, o: Options, model: &Model) {
    let db = Db::open(dir, o).unwrap();
    let mut names = db.cf_names();
    names.sort();
    let mut want: Vec<String> = model.keys().cloned().collect();
    want.sort();
    assert_eq!(names, want, "column families after repair");
    for (name, m) in model {
        let cf = db.cf(name).unwrap();
        let ro = cairn::ReadOptions::default();
        let mut it = db.iter(&ro, &cf).unwrap();
        it.seek_to_first();
        let mut got = BTreeMap::new();
        while it.valid() {
            got.insert(it.key().to_vec(), it.value().to_vec());
            it.next();
        }
        it.status().unwrap();
        assert_eq!(&got, m, "contents of {name}");
        for k in m.keys().take(50) {
            assert_eq!(
                db.get_cf(&cf, k).unwrap().as_ref(),
                m.get(k),
                "get in {name}"
            );
        }
    }
    db.close().unwrap();
}

fn remove_matching(dir: &Path, f: impl Fn(&str) -> bool) -> usize {
    let mut n = 0;
    for p in walk(dir) {
        if p.file_name().and_then(|n| n.to_str()).is_some_and(&f) {
            std::fs::remove_file(p).unwrap();
            n += 1;
        }
    }
    n
}

#[test]
fn a_missing_current_is_refused_and_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let model = fill(dir.path(), opts(), 1);
    assert_eq!(remove_matching(dir.path(), |n| n == "CURRENT"), 1);
    let before = snapshot_files(dir.path());
    assert!(before.keys().any(|n| n.ends_with(".sst")));
    for o in [
        opts(),
        Options {
            create_if_missing: false,
            ..opts()
        },
    ] {
        let err = Db::open(dir.path(), o).err().expect("open must fail");
        assert!(err.is_corruption(), "{err}");
        assert!(err.to_string().contains("repair"), "{err}");
    }
    assert_eq!(
        snapshot_files(dir.path()),
        before,
        "a refused open changed files"
    );
    // The manifest is intact: repair points CURRENT at it and changes nothing else.
    let r = Db::repair(dir.path(), opts()).unwrap();
    assert!(matches!(r.method, RepairMethod::Manifest(_)), "{r:?}");
    let mut after = snapshot_files(dir.path());
    assert!(after.remove("CURRENT").is_some());
    assert_eq!(after, before);
    check(dir.path(), opts(), &model);
}

/// A creation killed after the first manifest was written but before `CURRENT` (the
/// crash tests met it): that manifest alone, whole or torn anywhere, describes an empty
/// database, so the next open creates the database afresh. A first manifest that holds more
/// (a column family) is refused like any missing `CURRENT`.
#[test]
fn a_creation_cut_before_current_starts_over() {
    let src = tempfile::tempdir().unwrap();
    Db::open(src.path(), opts()).unwrap().close().unwrap();
    let manifest = std::fs::read(src.path().join("MANIFEST-000001")).unwrap();
    assert!(!manifest.is_empty());
    // What makes the rule safe: a database that was ever open has a log beside it.
    assert!(
        snapshot_files(src.path())
            .keys()
            .any(|n| n.ends_with(".log")),
        "{:?}",
        snapshot_files(src.path()).keys()
    );
    for cut in (0..=manifest.len()).rev() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("MANIFEST-000001"), &manifest[..cut]).unwrap();
        let db = Db::open(dir.path(), opts()).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        db.close().unwrap();
        let db = Db::open(dir.path(), opts()).unwrap();
        assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()), "cut at {cut}");
        db.close().unwrap();
    }
    // The whole manifest must start over.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MANIFEST-000001"), &manifest).unwrap();
    Db::open(dir.path(), opts()).unwrap().close().unwrap();

    // With a column family in it, it is a database's manifest: refused, untouched.
    let src = tempfile::tempdir().unwrap();
    let db = Db::open(src.path(), opts()).unwrap();
    db.create_cf("logs").unwrap();
    db.close().unwrap();
    let manifest = std::fs::read(src.path().join("MANIFEST-000001")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MANIFEST-000001"), &manifest).unwrap();
    let err = Db::open(dir.path(), opts()).err().expect("open must fail");
    assert!(
        err.is_corruption() && err.to_string().contains("repair"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("MANIFEST-000001")).unwrap(),
        manifest
    );
}

#[test]
fn repair_rebuilds_from_tables_and_logs_without_a_manifest() {
    for (seed, o) in [(2, opts()), (3, separated())] {
        let dir = tempfile::tempdir().unwrap();
        let model = fill(dir.path(), o.clone(), seed);
        assert_eq!(
            remove_matching(dir.path(), |n| n == "CURRENT" || n.starts_with("MANIFEST-")),
            2
        );
        let r = Db::repair(dir.path(), o.clone()).unwrap();
        assert_eq!(r.method, RepairMethod::Rebuilt);
        assert!(r.tables_merged > 1, "{r:?}");
        assert!(
            r.wal_entries > 0,
            "the last round is only in the log: {r:?}"
        );
        assert!(r.lost.is_empty(), "{r:?}");
        check(dir.path(), o.clone(), &model);
        // Reopened again (recovery of the repaired manifest, orphans gone) it still holds.
        check(dir.path(), o, &model);
    }
}

#[test]
fn repair_rebuilds_when_the_manifest_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let model = fill(dir.path(), opts(), 4);
    let manifest = walk(dir.path())
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(&manifest, bytes).unwrap();
    assert!(Db::open(dir.path(), opts()).is_err());
    let r = Db::repair(dir.path(), opts()).unwrap();
    assert_eq!(r.method, RepairMethod::Rebuilt);
    check(dir.path(), opts(), &model);
}

#[test]
fn a_damaged_table_goes_to_lost_and_the_rest_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let one_table_per_flush = Options {
        write_buffer_size: 1 << 20,
        target_file_size: 1 << 20,
        background_work: false, // no compaction merges the two tables
        ..opts()
    };
    let db = Db::open(dir.path(), one_table_per_flush).unwrap();
    let wo = WriteOptions::default();
    for i in 0..200u32 {
        db.put(&wo, format!("a{i:04}").as_bytes(), b"first")
            .unwrap();
    }
    db.flush().unwrap();
    for i in 0..200u32 {
        db.put(&wo, format!("b{i:04}").as_bytes(), b"second")
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let mut tables: Vec<_> = walk(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    tables.sort();
    assert_eq!(tables.len(), 2);
    // Damage the first data block of the older table (the "a" keys).
    let mut bytes = std::fs::read(&tables[0]).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&tables[0], bytes).unwrap();
    remove_matching(dir.path(), |n| n == "CURRENT" || n.starts_with("MANIFEST-"));
    let r = Db::repair(dir.path(), opts()).unwrap();
    assert_eq!(r.lost.len(), 1, "{r:?}");
    assert!(r.lost[0].0.starts_with(dir.path().join("lost")));
    assert!(r.lost[0].0.exists(), "the damaged table is kept in lost/");
    let db = Db::open(dir.path(), opts()).unwrap();
    assert_eq!(db.get(b"b0007").unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(db.get(b"a0007").unwrap(), None);
    db.close().unwrap();
    // With repair's lost/ folder beside them, the files still read as a database that
    // lost its CURRENT (repairable), not as a foreign directory.
    remove_matching(dir.path(), |n| n == "CURRENT");
    let err = Db::open(dir.path(), opts()).err().expect("open must fail");
    assert!(err.is_corruption(), "{err}");
}

#[test]
fn repair_of_a_healthy_database_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = fill(dir.path(), opts(), 5);
    let r = Db::repair(dir.path(), opts()).unwrap();
    assert!(matches!(r.method, RepairMethod::Manifest(_)));
    check(dir.path(), opts(), &model);
    // Not a database at all: nothing to repair.
    let empty = tempfile::tempdir().unwrap();
    let r = Db::repair(empty.path().join("nope"), opts());
    assert!(r.is_err());
}

/// The write-ahead log the manifest needs (its log number: writes not yet in tables) is
/// gone: the open refuses with a corruption error naming it and changes nothing, where it
/// once skipped the log's writes without a word. Repair rebuilds from what remains, and
/// the repaired database opens (its log number names no log).
#[test]
fn a_missing_wal_is_refused_and_repair_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        background_work: false,
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let wo = WriteOptions {
        sync: true,
        query_column: None,
        disable_wal: false,
    };
    for i in 0..200u32 {
        db.put(&wo, format!("flushed{i:04}").as_bytes(), b"in a table")
            .unwrap();
    }
    db.flush().unwrap();
    for i in 0..50u32 {
        db.put(&wo, format!("logged{i:04}").as_bytes(), b"only in the log")
            .unwrap();
    }
    db.close().unwrap();
    assert_eq!(remove_matching(dir.path(), |n| n.ends_with(".log")), 1);
    let before = snapshot_files(dir.path());
    let err = Db::open(dir.path(), o.clone())
        .err()
        .expect("open must fail");
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".log"), "{err}");
    assert_eq!(
        snapshot_files(dir.path()),
        before,
        "a refused open changed files"
    );
    let report = Db::check(dir.path(), &o).unwrap();
    assert!(
        report.problems.iter().any(|p| p.file.ends_with(".log")),
        "{report:?}"
    );

    let r = Db::repair(dir.path(), o.clone()).unwrap();
    assert_eq!(r.method, RepairMethod::Rebuilt, "{r:?}");
    for _ in 0..2 {
        // Twice: the repaired manifest, then the one recovery wrote.
        let db = Db::open(dir.path(), o.clone()).unwrap();
        assert_eq!(
            db.get(b"flushed0199").unwrap(),
            Some(b"in a table".to_vec())
        );
        assert_eq!(db.get(b"logged0000").unwrap(), None, "its log is gone");
        db.close().unwrap();
    }
    assert!(Db::check(dir.path(), &o).unwrap().is_ok());
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = walk(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// The bytes of every file whose name ends with `suffix`, to put back later (as an unlink
/// that was not durable when the power went would).
fn copies_of(dir: &Path, suffix: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    files_ending(dir, suffix)
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

/// A key put, flushed, then deleted and flushed again: the rebuild merges both tables,
/// and the tombstone must stay in its output. A later repair may find stale copies of the
/// older table and log (unlinks not yet durable when the power went, or files put back):
/// had the first repair dropped the tombstone as at the bottom, the old put would come
/// back.
#[test]
fn a_later_repair_with_stale_files_does_not_resurrect_a_deleted_key() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        background_work: false,
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"doomed", b"old value").unwrap();
    db.put(&wo, b"kept", b"1").unwrap();
    let stale_log = copies_of(dir.path(), ".log");
    db.flush().unwrap();
    let stale_table = copies_of(dir.path(), ".sst");
    assert_eq!(stale_table.len(), 1);
    db.delete(&wo, b"doomed").unwrap();
    db.put(&wo, b"kept", b"2").unwrap();
    db.flush().unwrap();
    db.close().unwrap();

    let drop_manifest = || {
        remove_matching(dir.path(), |n| n == "CURRENT" || n.starts_with("MANIFEST-"));
    };
    drop_manifest();
    let r = Db::repair(dir.path(), o.clone()).unwrap();
    assert_eq!(r.method, RepairMethod::Rebuilt);
    for (p, bytes) in stale_table.iter().chain(&stale_log) {
        std::fs::write(p, bytes).unwrap();
    }
    drop_manifest();
    let r = Db::repair(dir.path(), o.clone()).unwrap();
    assert_eq!(r.method, RepairMethod::Rebuilt);
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(db.get(b"doomed").unwrap(), None, "a deleted key came back");
    assert_eq!(db.get(b"kept").unwrap(), Some(b"2".to_vec()));
    db.close().unwrap();
}

/// Writes flushed to a table whose log stayed behind (its unlink not yet durable when the
/// power went), then a newer table. The first table is then lost, deleted or damaged: its
/// writes are still in the log, below the sequence numbers of the table that remains, and
/// the rebuild must replay them rather than take them as already in a table.
#[test]
fn log_entries_of_a_missing_table_are_replayed() {
    for damaged in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            background_work: false,
            ..opts()
        };
        let db = Db::open(dir.path(), o.clone()).unwrap();
        let wo = WriteOptions::default();
        for i in 0..100u32 {
            db.put(&wo, format!("old{i:04}").as_bytes(), b"first table")
                .unwrap();
        }
        db.delete(&wo, b"new0000").unwrap();
        let logs = copies_of(dir.path(), ".log");
        db.flush().unwrap();
        let first = files_ending(dir.path(), ".sst");
        assert_eq!(first.len(), 1);
        for i in 0..100u32 {
            db.put(&wo, format!("new{i:04}").as_bytes(), b"second table")
                .unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
        for (p, bytes) in &logs {
            std::fs::write(p, bytes).unwrap();
        }
        if damaged {
            let mut bytes = std::fs::read(&first[0]).unwrap();
            bytes[20] ^= 0xff;
            std::fs::write(&first[0], bytes).unwrap();
            remove_matching(dir.path(), |n| n == "CURRENT" || n.starts_with("MANIFEST-"));
        } else {
            std::fs::remove_file(&first[0]).unwrap();
        }

        let r = Db::repair(dir.path(), o.clone()).unwrap();
        assert_eq!(r.method, RepairMethod::Rebuilt, "{r:?}");
        assert_eq!(r.lost.len(), usize::from(damaged), "{r:?}");
        let db = Db::open(dir.path(), o).unwrap();
        for i in [0u32, 57, 99] {
            let (old, new) = (format!("old{i:04}"), format!("new{i:04}"));
            assert_eq!(
                db.get(old.as_bytes()).unwrap().as_deref(),
                Some(&b"first table"[..]),
                "{old} (damaged: {damaged})"
            );
            // The log's older tombstone does not hide the table's newer put.
            assert_eq!(
                db.get(new.as_bytes()).unwrap().as_deref(),
                Some(&b"second table"[..]),
                "{new}"
            );
        }
        db.close().unwrap();
    }
}

/// Two repairs each move a damaged table of the same name to `lost/` (the second a copy
/// put back and damaged anew): both are kept, the second beside the first.
#[test]
fn a_later_repair_keeps_what_an_earlier_one_moved_to_lost() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        write_buffer_size: 1 << 20,
        target_file_size: 1 << 20,
        background_work: false,
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let wo = WriteOptions::default();
    for i in 0..200u32 {
        db.put(&wo, format!("a{i:04}").as_bytes(), b"first")
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let tables = files_ending(dir.path(), ".sst");
    assert_eq!(tables.len(), 1);
    let table = tables[0].clone();
    let good = std::fs::read(&table).unwrap();

    let mut kept = Vec::new();
    for at in [20, 21] {
        let mut bad = good.clone();
        bad[at] ^= 0xff;
        std::fs::write(&table, &bad).unwrap();
        remove_matching(dir.path(), |n| n == "CURRENT" || n.starts_with("MANIFEST-"));
        let r = Db::repair(dir.path(), o.clone()).unwrap();
        assert_eq!(r.lost.len(), 1, "{r:?}");
        assert!(r.lost[0].0.starts_with(dir.path().join("lost")), "{r:?}");
        kept.push((r.lost[0].0.clone(), bad));
    }
    assert_ne!(kept[0].0, kept[1].0, "both repairs moved to the same name");
    for (path, bytes) in &kept {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
    assert_eq!(walk(&dir.path().join("lost")).len(), 2);
}

/// The newest table is damaged: the rebuilt tables are numbered above it, not given its
/// number again beside its copy in `lost/`.
#[test]
fn rebuilt_tables_do_not_reuse_the_number_of_a_lost_one() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        write_buffer_size: 1 << 20,
        target_file_size: 1 << 20,
        background_work: false,
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"x", b"1").unwrap();
    db.flush().unwrap();
    db.put(&wo, b"y", b"2").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let newest = files_ending(dir.path(), ".sst").pop().unwrap();
    let mut bad = std::fs::read(&newest).unwrap();
    bad[20] ^= 0xff;
    std::fs::write(&newest, &bad).unwrap();
    remove_matching(dir.path(), |n| n == "CURRENT" || n.starts_with("MANIFEST-"));
    let r = Db::repair(dir.path(), o.clone()).unwrap();
    assert_eq!(r.lost.len(), 1, "{r:?}");
    assert!(
        !newest.exists(),
        "a rebuilt table took the lost one's number: {r:?}"
    );
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(db.get(b"x").unwrap(), Some(b"1".to_vec()));
    db.close().unwrap();
}

/// Puts `logs` back (a crash left them behind, their unlinks not durable), loses the
/// manifest, repairs with every table intact, and reopens.
fn repair_with_logs_left_behind(
    dir: &Path,
    logs: &[(std::path::PathBuf, Vec<u8>)],
    o: Options,
) -> Db {
    for (p, bytes) in logs {
        std::fs::write(p, bytes).unwrap();
    }
    remove_matching(dir, |n| n == "CURRENT" || n.starts_with("MANIFEST-"));
    let r = Db::repair(dir, o.clone()).unwrap();
    assert!(r.lost.is_empty(), "{r:?}");
    Db::open(dir, o).unwrap()
}

/// As below, with the last level rewritten twice after the log: the second rewrite
/// copies values the first wrote at sequence number 0, and its table must still say which
/// writes it reflects, or repair replays the old log over it.
#[test]
fn an_old_log_left_behind_stays_old_after_two_last_level_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        background_work: false,
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let wo = WriteOptions::default();
    for i in 0..20u32 {
        db.put(&wo, format!("k{i:02}").as_bytes(), b"old").unwrap();
    }
    let logs = copies_of(dir.path(), ".log");
    db.flush().unwrap();
    db.put(&wo, b"k00", b"newer").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.delete_range(&wo, b"k10", b"k20").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = repair_with_logs_left_behind(dir.path(), &logs, o);
    assert_eq!(db.get(b"k00").unwrap().as_deref(), Some(&b"newer"[..]));
    assert_eq!(db.get(b"k05").unwrap().as_deref(), Some(&b"old"[..]));
    for i in 10..20u32 {
        let k = format!("k{i:02}");
        assert_eq!(db.get(k.as_bytes()).unwrap(), None, "{k} came back");
    }
}

/// A log already flushed and compacted away, left behind by a crash (its unlink not
/// durable), reaches a repair with every table intact: its entries are older than the
/// tables', so they must not bring back a key a compaction has since dropped with its
/// tombstone. (Replaying every entry regardless, as a first fix for lost tables did,
/// resurrected it.)
#[test]
fn an_old_log_left_behind_does_not_resurrect_a_compacted_delete() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        background_work: false,
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"doomed", b"old value").unwrap();
    let logs = copies_of(dir.path(), ".log");
    db.flush().unwrap();
    db.delete(&wo, b"doomed").unwrap();
    db.put(&wo, b"later", b"x").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = repair_with_logs_left_behind(dir.path(), &logs, o);
    assert_eq!(
        db.get(b"doomed").unwrap(),
        None,
        "a compacted delete came back"
    );
    assert_eq!(db.get(b"later").unwrap().as_deref(), Some(&b"x"[..]));
}
