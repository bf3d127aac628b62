//! Range deletions as one record: the cost of `delete_range` does not grow with its range,
//! and reads, snapshots, flushes, compactions (split or not), the point cache, value
//! logs, reopen, check and repair all honour it.

use cairn::storage::FileKind;
use cairn::{AcKeyParams, Db, Options, ReadCachePolicy, ReadOptions, WriteBatch, WriteOptions};

use crate::support::{contents, key8 as key, Model};

/// Small buffers and files, so that a few thousand keys make several levels.
fn small_opts() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        level1_bytes: 128 << 10,
        ..Options::default()
    }
}

fn load(db: &Db, n: u32, tag: &str) -> Model {
    let wo = WriteOptions::default();
    let mut m = Model::new();
    for i in 0..n {
        let v = format!("{tag}-{i}").into_bytes();
        db.put(&wo, &key(i), &v).unwrap();
        m.insert(key(i), v);
    }
    m
}

fn delete_from_model(m: &mut Model, lo: u32, hi: u32) {
    m.retain(|k, _| !(k.as_slice() >= key(lo).as_slice() && k.as_slice() < key(hi).as_slice()));
}

/// What the reads say: every key by `get`, and a forward and a backward scan.
fn check_reads(db: &Db, want: &Model, n: u32) {
    for i in 0..n {
        assert_eq!(
            db.get(&key(i)).unwrap().as_ref(),
            want.get(&key(i)),
            "key {i}"
        );
    }
    assert_eq!(&contents(db, None), want);
    let back: Vec<Vec<u8>> = db
        .scan_rev(..key(n))
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    let want_back: Vec<Vec<u8>> = want.keys().rev().cloned().collect();
    assert_eq!(back, want_back);
}

fn table_entries(path: &std::path::Path, opts: &Options) -> u64 {
    let info = Db::inspect(path, opts).unwrap();
    info.column_families[0]
        .tables
        .iter()
        .map(|t| t.entries)
        .sum()
}

#[test]
fn one_deletion_costs_the_same_whatever_its_range() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_opts();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut m = load(&db, 20_000, "a");
    db.flush().unwrap();
    let before = db.stats();
    db.delete_range(&WriteOptions::default(), &key(100), &key(19_900))
        .unwrap();
    let after = db.stats();
    // One record in the WAL and one entry written, not one per key.
    assert_eq!(after.entries_written - before.entries_written, 1);
    let wal = |s: &cairn::DbStats| s.io.kind(FileKind::Wal).write_bytes;
    let wal_bytes = wal(&after) - wal(&before);
    assert!(wal_bytes < 128, "{wal_bytes} bytes logged");
    delete_from_model(&mut m, 100, 19_900);
    check_reads(&db, &m, 20_000);
    db.close().unwrap();
}

#[test]
fn deletions_hold_across_flushes_compactions_snapshots_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_subcompactions: 4,
        ..small_opts()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let wo = WriteOptions::default();
    let n = 6_000;
    let mut m = load(&db, n, "a");
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let old = m.clone();
    let snap = db.snapshot();
    // One deletion over tables of several levels, one in the memtable only.
    db.delete_range(&wo, &key(1_000), &key(4_000)).unwrap();
    delete_from_model(&mut m, 1_000, 4_000);
    check_reads(&db, &m, n);
    db.flush().unwrap();
    check_reads(&db, &m, n);
    // Writes after the deletion are visible, older ones under it are not.
    db.put(&wo, &key(2_000), b"again").unwrap();
    m.insert(key(2_000), b"again".to_vec());
    let mut b = WriteBatch::new();
    b.delete_range(&key(4_500), &key(4_600)).unwrap();
    b.put(&key(4_550), b"same-batch").unwrap();
    db.write(&wo, b).unwrap();
    delete_from_model(&mut m, 4_500, 4_600);
    m.insert(key(4_550), b"same-batch".to_vec());
    check_reads(&db, &m, n);
    // A snapshot from before the deletion sees everything, through every compaction.
    assert_eq!(contents(&db, Some(&snap)), old);
    db.compact_range(None, None).unwrap();
    assert_eq!(contents(&db, Some(&snap)), old);
    check_reads(&db, &m, n);
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    let v = db.get_opt(&ro, &db.default_cf(), &key(1_500)).unwrap();
    assert_eq!(v, Some(b"a-1500".to_vec()));
    // Level-0 merges were split, the deletions cut at the splits' bounds.
    assert!(db.stats().subcompactions > 0);
    // Once the snapshot goes, a full compaction drops what the deletions covered.
    drop(ro);
    drop(snap);
    db.compact_range(None, None).unwrap();
    check_reads(&db, &m, n);
    db.close().unwrap();
    assert_eq!(table_entries(dir.path(), &opts), m.len() as u64);
    let report = Db::check(dir.path(), &opts).unwrap();
    assert!(report.is_ok(), "{report:?}");
    let db = Db::open(dir.path(), opts).unwrap();
    check_reads(&db, &m, n);
    db.close().unwrap();
}

#[test]
fn deletions_a_snapshot_kept_go_once_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        background_work: false,
        ..small_opts()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let n = 4_000;
    let mut m = load(&db, n, "a");
    db.compact_range(None, None).unwrap();
    let snap = db.snapshot();
    db.delete_range(&WriteOptions::default(), &key(0), &key(3_000))
        .unwrap();
    delete_from_model(&mut m, 0, 3_000);
    db.compact_range(None, None).unwrap();
    db.run_background_work().unwrap();
    // Held by the snapshot: both the deletion and what it covers stay.
    // Entries in the tables, as the manifest records them.
    let held = || -> u64 { table_entries(dir.path(), &opts) };
    assert_eq!(held(), u64::from(n));
    drop(snap);
    // Background work alone (no manual compaction) rewrites the bottom tables holding it.
    db.run_background_work().unwrap();
    assert_eq!(held(), m.len() as u64);
    check_reads(&db, &m, n);
    db.close().unwrap();
}

/// The bottommost rewrite leaves level 0 alone: a flush may install a newer run there while
/// it merges, and its output would go above that run (a read then found the rewritten,
/// older version first: a stress run read a value older than its snapshot allowed).
#[test]
fn deletions_in_level_zero_wait_for_its_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        background_work: false,
        ..small_opts()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    // Two level-0 runs: the keys, then a deletion covering half of them.
    let mut m = load(&db, 200, "a");
    db.flush().unwrap();
    db.delete_range(&WriteOptions::default(), &key(0), &key(100))
        .unwrap();
    delete_from_model(&mut m, 0, 100);
    db.flush().unwrap();
    let before = table_entries(dir.path(), &opts);
    db.run_background_work().unwrap();
    assert_eq!(
        table_entries(dir.path(), &opts),
        before,
        "level 0 was rewritten"
    );
    check_reads(&db, &m, 200);
    db.close().unwrap();
}

#[test]
fn unflushed_deletions_replay_from_the_log_and_survive_repair() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_opts();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let wo = WriteOptions::default();
    let n = 4_000;
    let mut m = load(&db, n, "a");
    db.flush().unwrap();
    db.delete_range(&wo, &key(10), &key(3_000)).unwrap();
    delete_from_model(&mut m, 10, 3_000);
    db.close().unwrap();
    // The deletion was only in the log: replayed at open.
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    check_reads(&db, &m, n);
    db.flush().unwrap();
    db.close().unwrap();
    // A lost manifest: repair rebuilds from the tables, the deletion among them.
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let p = f.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("MANIFEST")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    Db::repair(dir.path(), opts.clone()).unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check_reads(&db, &m, n);
    db.close().unwrap();
}

#[test]
fn the_point_cache_never_serves_a_deleted_key() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        read_cache: ReadCachePolicy::AcKey(AcKeyParams::default()),
        ..small_opts()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let wo = WriteOptions::default();
    let n = 3_000;
    let mut m = load(&db, n, "a");
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Read twice so the keys sit in the KV and KP caches.
    for _ in 0..2 {
        for i in 0..n {
            assert!(db.get(&key(i)).unwrap().is_some());
        }
    }
    db.delete_range(&wo, &key(500), &key(2_500)).unwrap();
    delete_from_model(&mut m, 500, 2_500);
    check_reads(&db, &m, n);
    db.flush().unwrap();
    check_reads(&db, &m, n);
    db.compact_range(None, None).unwrap();
    check_reads(&db, &m, n);
    // Keys written again under a deletion still in the tables are served by the cache.
    let snap = db.snapshot(); // keeps the deletion from being compacted away
    db.delete_range(&wo, &key(0), &key(n)).unwrap();
    db.flush().unwrap();
    m.clear();
    for i in 0..100 {
        db.put(&wo, &key(i), b"again").unwrap();
        m.insert(key(i), b"again".to_vec());
    }
    db.flush().unwrap();
    check_reads(&db, &m, n);
    let hits = |db: &Db| {
        let s = db.stats().read_cache;
        s.kv_hits + s.kp_hits
    };
    let before = hits(&db);
    for i in 0..100 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(b"again".to_vec()));
    }
    assert!(hits(&db) > before, "no point-cache hit under the deletion");
    check_reads(&db, &m, n);
    drop(snap);
    db.close().unwrap();
}

#[test]
fn separated_values_under_a_deletion_become_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        value_threshold: Some(16),
        ..small_opts()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let wo = WriteOptions::default();
    let n = 3_000;
    let mut m = Model::new();
    for i in 0..n {
        let v = vec![b'v'; 100 + (i % 7) as usize];
        db.put(&wo, &key(i), &v).unwrap();
        m.insert(key(i), v);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.delete_range(&wo, &key(0), &key(2_000)).unwrap();
    delete_from_model(&mut m, 0, 2_000);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    check_reads(&db, &m, n);
    db.close().unwrap();
    // The tables reference only the values left.
    assert_eq!(table_entries(dir.path(), &opts), m.len() as u64);
}

#[test]
fn deletions_over_nothing_and_of_everything() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_opts();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let wo = WriteOptions::default();
    // Before any data, and empty ranges.
    db.delete_range(&wo, b"", b"zzzz").unwrap();
    db.delete_range(&wo, b"m", b"m").unwrap();
    db.flush().unwrap();
    let m = load(&db, 1_000, "a");
    check_reads(&db, &m, 1_000);
    // Everything, then compacted away.
    db.delete_range(&wo, b"", b"\xff").unwrap();
    db.flush().unwrap();
    check_reads(&db, &Model::new(), 1_000);
    db.compact_range(None, None).unwrap();
    check_reads(&db, &Model::new(), 1_000);
    db.close().unwrap();
    assert_eq!(table_entries(dir.path(), &opts), 0);
}

/// Random puts, deletes and wide range deletions against a model, with flushes,
/// compactions, snapshots and reopens, under each preset whose parts touch the read or
/// compaction path (learned indexes, the point cache, value logs, tiering, the learned
/// preset).
#[test]
fn random_range_deletions_match_a_model_under_every_read_path() {
    use rand::{Rng, SeedableRng};
    for (seed, preset) in [
        "default",
        "bourbon-always",
        "ac-key",
        "ac-key-sep",
        "wisckey",
        "tiering",
        "learned",
    ]
    .into_iter()
    .enumerate()
    {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed as u64 + 11);
        let dir = tempfile::tempdir().unwrap();
        let base = cairn::presets::by_name(preset).unwrap();
        let opts = Options {
            write_buffer_size: 16 << 10,
            target_file_size: 8 << 10,
            level1_bytes: 32 << 10,
            max_subcompactions: 3,
            ..base
        };
        let mut db = Db::open(dir.path(), opts.clone()).unwrap();
        let wo = WriteOptions::default();
        let n = 2_000u32;
        let mut m = Model::new();
        let mut snaps: Vec<(cairn::Snapshot, Model)> = Vec::new();
        for step in 0..4_000u32 {
            match rng.random_range(0..100) {
                0..=69 => {
                    let i = rng.random_range(0..n);
                    let v = format!("{preset}-{step}").into_bytes();
                    db.put(&wo, &key(i), &v).unwrap();
                    m.insert(key(i), v);
                }
                70..=79 => {
                    let i = rng.random_range(0..n);
                    db.delete(&wo, &key(i)).unwrap();
                    m.remove(&key(i));
                }
                80..=84 => {
                    let a = rng.random_range(0..n);
                    let b = (a + rng.random_range(0..n / 2)).min(n);
                    db.delete_range(&wo, &key(a), &key(b)).unwrap();
                    delete_from_model(&mut m, a, b);
                }
                85..=89 => db.flush().unwrap(),
                90 => db.compact_range(None, None).unwrap(),
                91..=93 => {
                    if snaps.len() < 3 {
                        snaps.push((db.snapshot(), m.clone()));
                    } else {
                        snaps.remove(rng.random_range(0..snaps.len()));
                    }
                }
                94 => {
                    snaps.clear();
                    db.close().unwrap();
                    db = Db::open(dir.path(), opts.clone()).unwrap();
                }
                _ => {
                    for _ in 0..20 {
                        let i = rng.random_range(0..n);
                        let got = db.get(&key(i)).unwrap();
                        assert_eq!(got.as_ref(), m.get(&key(i)), "{preset} step {step} key {i}");
                    }
                }
            }
            if step % 500 == 499 {
                assert_eq!(contents(&db, None), m, "{preset} step {step}");
                for (s, sm) in &snaps {
                    assert_eq!(&contents(&db, Some(s)), sm, "{preset} step {step} snapshot");
                }
            }
        }
        snaps.clear();
        db.compact_range(None, None).unwrap();
        check_reads(&db, &m, n);
        db.close().unwrap();
        let report = Db::check(dir.path(), &opts).unwrap();
        assert!(report.is_ok(), "{preset}: {report:?}");
    }
}

#[test]
fn a_table_holding_range_deletions_is_not_ingested() {
    use cairn::range_del::{RangeDels, RangeTombstone};
    use cairn::storage::StorageEnv;
    use cairn::table::{TableBuildOptions, TableBuilder};
    use cairn::types::{make_internal_key, ValueKind};
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), small_opts()).unwrap();
    let env = StorageEnv::new(dir.path(), &[], 0.0).unwrap();
    let path = dir.path().join("forged.sst");
    let f = env.create(&path, FileKind::Table, 0, None).unwrap();
    let mut b = TableBuilder::new(f, TableBuildOptions::default());
    b.set_column_family(cairn::CfId::DEFAULT, "default");
    b.add(&make_internal_key(&key(5), 0, ValueKind::Value), b"v")
        .unwrap();
    b.add_range_dels(&RangeDels::new([RangeTombstone {
        start: key(0),
        end: key(3),
        seq: 0,
    }]));
    b.finish().unwrap();
    let r = db.ingest_external_file(&[&path]);
    assert!(matches!(r, Err(cairn::Error::InvalidArgument(_))), "{r:?}");
    db.close().unwrap();
}
