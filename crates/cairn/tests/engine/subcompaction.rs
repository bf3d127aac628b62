//! Subcompactions: a level-0 merge cut into key ranges merged on threads of their own must
//! write what one merge writes (every key's newest version per snapshot, tombstones kept
//! where older data lies below), in files that do not overlap.

use std::sync::Arc;

use cairn::storage::{FaultError, FaultInjector, FaultOp};
use cairn::{Compression, Db, Options, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::support::{contents, key6 as key, Model};

/// Random puts and deletes over 20k keys with a snapshot taken midway; returns the
/// database, the model at the end and the model at the snapshot.
fn run(subcompactions: usize, dir: &std::path::Path) -> (Db, cairn::Snapshot, Model, Model) {
    let opts = Options {
        write_buffer_size: 128 << 10,
        target_file_size: 64 << 10,
        level1_bytes: 512 << 10,
        l0_compaction_trigger: 4,
        max_subcompactions: subcompactions,
        read_triggered_compaction: false,
        ..Options::small()
    };
    let db = Db::open(dir, opts).unwrap();
    let wo = WriteOptions::default();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut model = Model::new();
    let mut at_snapshot = None;
    let mut snapshot = None;
    for op in 0..60_000u32 {
        let k = key(rng.random_range(0..20_000));
        if rng.random_bool(0.15) {
            db.delete(&wo, &k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("v{op}-{}", "x".repeat(rng.random_range(10..60))).into_bytes();
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
        if op == 30_000 {
            snapshot = Some(db.snapshot());
            at_snapshot = Some(model.clone());
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    (db, snapshot.unwrap(), model, at_snapshot.unwrap())
}

#[test]
fn split_merges_keep_every_version_a_reader_can_see() {
    let dir = tempfile::tempdir().unwrap();
    let (db, snap, model, at_snap) = run(4, &dir.path().join("split"));
    let s = db.stats();
    assert!(
        s.subcompactions >= 2,
        "no level-0 merge was split: {} ranges",
        s.subcompactions
    );
    assert!(contents(&db, None) == model, "latest view differs");
    assert!(
        contents(&db, Some(&snap)) == at_snap,
        "snapshot view differs"
    );
    for (k, v) in model.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    // One thread writes the same data.
    let (one, snap1, _, _) = run(1, &dir.path().join("one"));
    assert_eq!(one.stats().subcompactions, 0);
    assert!(contents(&one, None) == contents(&db, None));
    assert!(contents(&one, Some(&snap1)) == contents(&db, Some(&snap)));
    drop(snap);
    drop(snap1);
    // The files of each run are disjoint and sorted, every table reads whole, and it
    // reopens.
    drop(db);
    let report = Db::check(dir.path().join("split"), &Options::small()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let db = Db::open(dir.path().join("split"), Options::small()).unwrap();
    assert!(contents(&db, None) == model, "after reopen");
    // Split merges into the last level write its old values at number 0 too.
    drop(db);
    let zeroed = crate::bottom_seqs::renumbered(&dir.path().join("split"));
    assert!(zeroed > 0, "no value in the last level was renumbered");
}

fn tables_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        })
        .count()
}

#[test]
fn a_failed_range_stops_the_others_and_leaves_no_tables_behind() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new());
    let opts = Options {
        write_buffer_size: 128 << 10,
        target_file_size: 64 << 10,
        // Only the manual compaction below merges level 0.
        l0_compaction_trigger: 64,
        l0_slowdown_trigger: 64,
        l0_stop_trigger: 64,
        max_subcompactions: 4,
        read_triggered_compaction: false,
        faults: Some(faults.clone()),
        ..Options::small()
    }
    .with_compression(Compression::None);
    let db = Db::open(dir.path(), opts).unwrap();
    let wo = WriteOptions::default();
    let mut rng = SmallRng::seed_from_u64(11);
    let mut model = Model::new();
    for op in 0..20_000u32 {
        let k = key(rng.random_range(0..10_000));
        let v = format!("v{op}-{}", "y".repeat(40)).into_bytes();
        db.put(&wo, &k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    let before = tables_in(dir.path());
    assert!(before >= 4, "{before} tables");
    // The sync of a late table fails, after some ranges have finished.
    faults.fail_nth_on(FaultOp::Sync, ".sst", 8, FaultError::Io);
    assert!(db.compact_range(None, None).is_err());
    assert_eq!(
        db.stats().subcompactions,
        0,
        "a failed merge counts nothing"
    );
    assert_eq!(
        tables_in(dir.path()),
        before,
        "every range's outputs are removed"
    );
    assert!(contents(&db, None) == model);
    // The next try succeeds, split.
    db.compact_range(None, None).unwrap();
    assert!(db.stats().subcompactions >= 2);
    assert!(contents(&db, None) == model);
}
