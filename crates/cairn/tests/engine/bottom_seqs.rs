//! Sequence numbers in the last level: a bottommost compaction writes a kept value older
//! than every snapshot at number 0 (as RocksDB does), keeps the numbers a snapshot still
//! tells apart, and no read, reopen or later write sees a difference.

use std::path::Path;
use std::sync::Arc;

use cairn::iter::InternalIterator;
use cairn::storage::{FileKind, StorageEnv};
use cairn::table::Table;
use cairn::types::parse_internal_key;
use cairn::{Db, Options, ReadOptions, WriteOptions};

use crate::support::key8;

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        background_work: false,
        ..Options::small()
    }
}

/// Entries the last level holds at sequence number 0 (written there renumbered).
pub(crate) fn renumbered(dir: &Path) -> usize {
    entries(dir, &Options::small())
        .iter()
        .filter(|e| e.1 == 0)
        .count()
}

/// Every entry of every table of the database: (user key, sequence number, value).
pub(crate) fn entries(dir: &Path, opts: &Options) -> Vec<(Vec<u8>, u64, Vec<u8>)> {
    let info = Db::inspect(dir, opts).unwrap();
    let mut out = Vec::new();
    for t in &info.column_families[0].tables {
        let env = StorageEnv::new(t.path.parent().unwrap(), &[], 0.0).unwrap();
        let file = env
            .open_read(&t.path, FileKind::Table, 0, Some(0), false)
            .unwrap();
        let table = Arc::new(Table::open(file, t.file_no, None).unwrap());
        let mut it = table.iter();
        it.seek_to_first();
        while it.valid() {
            let p = parse_internal_key(it.key()).unwrap();
            out.push((p.user_key.to_vec(), p.seq, it.value().to_vec()));
            it.next();
        }
        it.status().unwrap();
    }
    out.sort();
    out
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value {i} of round {round}").into_bytes()
}

#[test]
fn bottommost_compaction_writes_old_values_at_sequence_zero() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let wo = WriteOptions::default();
    for i in 0..400 {
        db.put(&wo, &key8(i), &value(i, 1)).unwrap();
    }
    // Two overlapping tables, so that the compaction merges (a lone table moves down
    // as it is, numbers and all).
    db.flush().unwrap();
    let snap = db.snapshot();
    for i in 200..400 {
        db.put(&wo, &key8(i), &value(i, 2)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();

    // Keys 0..200: one version, renumbered. Keys 200..400: the snapshot still tells the
    // two apart, so the newer keeps its number and only the older is renumbered.
    let all = entries(dir.path(), &opts);
    assert_eq!(all.len(), 600);
    for (k, seq, v) in &all {
        let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        match (i < 200, v == &value(i, 1)) {
            (_, true) => assert_eq!(*seq, 0, "key {i}: old version keeps number {seq}"),
            (false, false) => assert!(*seq > 400, "key {i}: new version renumbered {seq}"),
            (true, false) => panic!("key {i}: a version it never had"),
        }
    }
    let at_snap = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    for i in 0..400 {
        let now = if i < 200 { value(i, 1) } else { value(i, 2) };
        assert_eq!(db.get(&key8(i)).unwrap(), Some(now), "key {i}");
        assert_eq!(
            db.get_opt(&at_snap, &db.default_cf(), &key8(i)).unwrap(),
            Some(value(i, 1)),
            "key {i} at the snapshot"
        );
    }

    // Once the snapshot goes, the next merge of that table drops the old versions and
    // renumbers the new ones.
    drop(at_snap);
    drop(snap);
    db.put(&wo, &key8(0), &value(0, 3)).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let all = entries(dir.path(), &opts);
    assert_eq!(all.len(), 400);
    assert!(all.iter().all(|(_, seq, _)| *seq == 0), "{:?}", &all[..3]);
    assert_eq!(db.get(&key8(0)).unwrap(), Some(value(0, 3)));

    // The manifest and the tables agree (a renumbered table keeps its newest number in
    // its properties), and a write after a reopen is newer than every renumbered version.
    drop(db);
    let report = Db::check(dir.path(), &opts).unwrap();
    assert!(report.is_ok(), "{report:?}");
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    db.put(&wo, &key8(7), b"after the reopen").unwrap();
    db.flush().unwrap();
    assert_eq!(
        db.get(&key8(7)).unwrap().as_deref(),
        Some(&b"after the reopen"[..])
    );
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.get(&key8(7)).unwrap().as_deref(),
        Some(&b"after the reopen"[..])
    );
    assert_eq!(db.get(&key8(300)).unwrap(), Some(value(300, 2)));
}

#[test]
fn renumbered_values_stay_under_newer_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let wo = WriteOptions::default();
    for i in 0..300 {
        db.put(&wo, &key8(i), &value(i, 1)).unwrap();
        if i == 150 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(entries(dir.path(), &opts).iter().all(|e| e.1 == 0));
    // A snapshot between the values and the deletions keeps both in the last level.
    let snap = db.snapshot();
    db.delete_range(&wo, &key8(100), &key8(200)).unwrap();
    db.delete(&wo, &key8(250)).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..300 {
        let gone = (100..200).contains(&i) || i == 250;
        let want = (!gone).then(|| value(i, 1));
        assert_eq!(db.get(&key8(i)).unwrap(), want, "key {i}");
        let ro = ReadOptions {
            snapshot: Some(snap.clone()),
            ..Default::default()
        };
        let at_snap = db.get_opt(&ro, &db.default_cf(), &key8(i)).unwrap();
        assert_eq!(at_snap, Some(value(i, 1)), "key {i} at the snapshot");
    }
    drop(snap);
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    for i in [99, 100, 199, 200, 250, 251] {
        let gone = (100..200).contains(&i) || i == 250;
        assert_eq!(db.get(&key8(i)).unwrap().is_none(), gone, "key {i}");
    }
}

/// Column families share the log, and recovery replays a log's operations of a family
/// already flushed too: an older range deletion could come back above a value at 0. With
/// a second family, the last level keeps its numbers.
#[test]
fn several_column_families_keep_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let other = db.create_cf("other").unwrap();
    let wo = WriteOptions::default();
    for i in 0..200 {
        db.put(&wo, &key8(i), &value(i, 1)).unwrap();
        db.put_cf(&other, &wo, &key8(i), &value(i, 1)).unwrap();
        if i == 100 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let all = entries(dir.path(), &opts);
    assert_eq!(all.len(), 200);
    assert!(all.iter().all(|(_, seq, _)| *seq > 0), "{:?}", &all[..3]);
}
