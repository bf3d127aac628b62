//! Bulk loading: `SstFileWriter` and `Db::ingest_external_file`, against a model, with
//! snapshots, reopens, AC-Key's point cache and writers running beside the ingest.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn::{Db, Error, Options, ReadCachePolicy, SstFileWriter, WriteOptions};

use crate::support::{contents, key8, Model};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        level1_bytes: 256 << 10,
        num_levels: 4,
        background_work: false,
        ..Options::small()
    }
}

/// Writes `entries` (sorted; `None` deletes) to a new file at `path`.
fn write_sst(path: &Path, entries: &[(Vec<u8>, Option<Vec<u8>>)]) -> PathBuf {
    let mut w = SstFileWriter::create(path, &Options::default()).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    let info = w.finish().unwrap();
    assert_eq!(info.num_entries, entries.len() as u64);
    assert_eq!(info.smallest, entries[0].0);
    info.path
}

#[test]
fn the_writer_refuses_unsorted_keys_and_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.sst");
    let mut w = SstFileWriter::create(&path, &Options::default()).unwrap();
    w.put(b"b", b"1").unwrap();
    assert!(matches!(w.put(b"a", b"2"), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.delete(b"b"), Err(Error::InvalidArgument(_))));
    drop(w);
    assert!(!path.exists(), "an unfinished file is removed");
    let w = SstFileWriter::create(&path, &Options::default()).unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
    assert!(!path.exists());
    write_sst(&path, &[(b"k".to_vec(), Some(b"v".to_vec()))]);
    assert!(
        SstFileWriter::create(&path, &Options::default()).is_err(),
        "exists"
    );
}

/// Existing keys in the memtable and in every level, a snapshot, then an ingest of puts
/// over old keys, new keys and deletes: the database reads as the model, before and
/// after a reopen and a full compaction; the snapshot keeps the old state.
#[test]
fn ingested_files_replace_what_the_database_held() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let wo = WriteOptions::default();
    let mut model = Model::new();
    for round in 0..3u32 {
        for i in (round..6000).step_by(3) {
            let v = format!("old-{round}-{i}").into_bytes();
            db.put(&wo, &key8(i), &v).unwrap();
            model.insert(key8(i), v);
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
    }
    for i in 6000..6100 {
        db.put(&wo, &key8(i), b"in the memtable").unwrap();
        model.insert(key8(i), b"in the memtable".to_vec());
    }
    let snap = db.snapshot();
    let before = model.clone();
    // Two files: one over old keys (puts and deletes), one over new and memtable keys.
    let first: Vec<_> = (1000..3000u32)
        .map(|i| {
            (
                key8(i),
                (i % 4 != 0).then(|| format!("new-{i}").into_bytes()),
            )
        })
        .collect();
    let second: Vec<_> = (6050..9000u32)
        .map(|i| (key8(i), Some(format!("new-{i}").into_bytes())))
        .collect();
    for (k, v) in first.iter().chain(&second) {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
    let files = [
        write_sst(&dir.path().join("second.sst"), &second),
        write_sst(&dir.path().join("first.sst"), &first),
    ];
    db.ingest_external_file(&files).unwrap();
    assert!(files.iter().all(|f| f.exists()), "the caller's files stay");
    assert_eq!(contents(&db, None), model);
    assert_eq!(
        contents(&db, Some(&snap)),
        before,
        "a snapshot keeps its state"
    );
    drop(snap);
    // A write after the ingest is newer than it.
    db.put(&wo, &key8(2001), b"after").unwrap();
    model.insert(key8(2001), b"after".to_vec());
    assert_eq!(db.get(&key8(2001)).unwrap().as_deref(), Some(&b"after"[..]));
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(contents(&db, None), model, "after a reopen");
    db.compact_range(None, None).unwrap();
    assert_eq!(contents(&db, None), model, "after a full compaction");
}

/// Into an empty tree the files go to the last level; over data in level 0, to level 0.
#[test]
fn files_go_to_the_deepest_level_nothing_above_overlaps() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let rows: Vec<_> = (0..500u32)
        .map(|i| (key8(i), Some(b"v".to_vec())))
        .collect();
    db.ingest_external_file(&[write_sst(&dir.path().join("a.sst"), &rows)])
        .unwrap();
    let files_at = |db: &Db| -> Vec<usize> {
        db.level_info(&db.default_cf())
            .unwrap()
            .iter()
            .map(|l| l.runs.iter().map(|r| r.files).sum())
            .collect()
    };
    assert_eq!(files_at(&db), vec![0, 0, 0, 1]);
    db.put(&WriteOptions::default(), &key8(10), b"x").unwrap();
    db.flush().unwrap();
    assert_eq!(files_at(&db), vec![1, 0, 0, 1]);
    db.ingest_external_file(&[write_sst(&dir.path().join("b.sst"), &rows)])
        .unwrap();
    assert_eq!(
        files_at(&db)[0],
        2,
        "over level 0's data: a new level-0 run"
    );
    assert_eq!(db.get(&key8(10)).unwrap().as_deref(), Some(&b"v"[..]));
    // Disjoint from everything: the last level again, beside the first file.
    let far: Vec<_> = (9000..9100u32)
        .map(|i| (key8(i), Some(b"w".to_vec())))
        .collect();
    db.ingest_external_file(&[write_sst(&dir.path().join("c.sst"), &far)])
        .unwrap();
    assert_eq!(files_at(&db)[3], 2);
}

#[test]
fn bad_files_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.put(&WriteOptions::default(), b"keep", b"me").unwrap();
    let rows = |lo: u32, hi: u32| -> Vec<_> {
        (lo..hi).map(|i| (key8(i), Some(vec![b'v'; 50]))).collect()
    };
    let a = write_sst(&dir.path().join("a.sst"), &rows(0, 100));
    let b = write_sst(&dir.path().join("b.sst"), &rows(50, 150));
    let err = db.ingest_external_file(&[a.clone(), b]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    // A table of the database itself: its entries are not at sequence number 0.
    db.flush().unwrap();
    let own = cairn::Db::inspect(dir.path(), &options())
        .unwrap()
        .column_families[0]
        .tables[0]
        .path
        .clone();
    let err = db.ingest_external_file(&[own]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    // A damaged file: a corruption error naming it.
    let mut bytes = std::fs::read(&a).unwrap();
    bytes[100] ^= 0x40;
    let bad = dir.path().join("bad.sst");
    std::fs::write(&bad, &bytes).unwrap();
    let err = db.ingest_external_file(&[bad]).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(db.ingest_external_file::<PathBuf>(&[]).is_err());
    assert!(db
        .ingest_external_file(&[dir.path().join("missing.sst")])
        .is_err());
    let mut want = Model::new();
    want.insert(b"keep".to_vec(), b"me".to_vec());
    assert_eq!(contents(&db, None), want);
}

/// AC-Key's point cache holds the old value of an ingested key: the ingest must drop it
/// (without that, the cached old value was returned).
#[test]
fn ingest_drops_stale_point_cache_entries() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        read_cache: ReadCachePolicy::PureKv,
        ..options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..200u32 {
        db.put(&WriteOptions::default(), &key8(i), b"old").unwrap();
    }
    db.flush().unwrap();
    for _ in 0..3 {
        assert_eq!(db.get(&key8(7)).unwrap().as_deref(), Some(&b"old"[..]));
    }
    let rows: Vec<_> = (0..200u32)
        .map(|i| (key8(i), Some(b"new".to_vec())))
        .collect();
    db.ingest_external_file(&[write_sst(&dir.path().join("a.sst"), &rows)])
        .unwrap();
    assert_eq!(db.get(&key8(7)).unwrap().as_deref(), Some(&b"new"[..]));
}

/// Writers outside the ingested range go on beside ingests; every acknowledged write and
/// every ingested key is there afterwards.
#[test]
fn writers_beside_ingests() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        background_work: true,
        ..options()
    };
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..20_000u32 {
                db.put(&WriteOptions::default(), &key8(100_000 + i), b"w")
                    .unwrap();
            }
        })
    };
    let mut ingested = Vec::new();
    for f in 0..8u32 {
        let rows: Vec<_> = (f * 1000..f * 1000 + 500)
            .map(|i| (key8(i), Some(format!("i{i}").into_bytes())))
            .collect();
        ingested.extend(rows.iter().map(|(k, v)| (k.clone(), v.clone().unwrap())));
        let path = dir.path().join(format!("f{f}.sst"));
        db.ingest_external_file(&[write_sst(&path, &rows)]).unwrap();
    }
    writer.join().unwrap();
    let got = contents(&db, None);
    assert_eq!(got.len(), 20_000 + ingested.len());
    for (k, v) in ingested {
        assert_eq!(got.get(&k), Some(&v));
    }
}

/// One log serves every column family: a family's writes stay in a log while another
/// family's memtable still needs it. An ingest must leave no such log behind, or the
/// reopen replays the older version of an ingested key above the ingested table (it did,
/// when the ingest flushed only its own family).
#[test]
fn a_reopen_replays_no_older_version_above_an_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let other = db.create_cf("other").unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, &key8(5), b"old").unwrap();
    db.put_cf(&other, &wo, b"x", b"1").unwrap();
    let rows: Vec<_> = (0..10u32)
        .map(|i| (key8(i), Some(b"new".to_vec())))
        .collect();
    db.ingest_external_file(&[write_sst(&dir.path().join("a.sst"), &rows)])
        .unwrap();
    assert_eq!(db.get(&key8(5)).unwrap().as_deref(), Some(&b"new"[..]));
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get(&key8(5)).unwrap().as_deref(), Some(&b"new"[..]));
    let other = db.cf("other").unwrap();
    assert_eq!(db.get_cf(&other, b"x").unwrap().as_deref(), Some(&b"1"[..]));
}
