//! End-to-end behaviour of the public API.

use cairn::{Db, Options, ReadOptions, Transition, WriteBatch, WriteOptions};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

#[test]
fn put_get_flush_compact_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    {
        let db = Db::open(dir.path(), Options::small()).unwrap();
        for i in 0..20_000u32 {
            db.put(&wo, &key(i), format!("value{i}").as_bytes())
                .unwrap();
        }
        for i in (0..20_000u32).step_by(3) {
            db.delete(&wo, &key(i)).unwrap();
        }
        db.flush().unwrap();
        for i in 0..20_000u32 {
            let want = (i % 3 != 0).then(|| format!("value{i}").into_bytes());
            assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
        }
        db.compact_range(None, None).unwrap();
        let n = db.scan(key(100)..key(200)).unwrap().count();
        assert_eq!(n, 67);
        let s = db.stats();
        assert!(s.flushes > 0);
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), Options::small()).unwrap();
    for i in 0..20_000u32 {
        let want = (i % 3 != 0).then(|| format!("value{i}").into_bytes());
        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i} after reopen");
    }
    let all: Vec<_> = db
        .scan::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(all.len(), 20_000 - 6667);
    let rev: Vec<_> = db
        .scan_rev::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    let mut fwd = all.clone();
    fwd.reverse();
    assert_eq!(rev, fwd);
}

#[test]
fn snapshots_batches_and_range_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let wo = WriteOptions { sync: true };
    let mut b = WriteBatch::new();
    for i in 0..100u32 {
        b.put(&key(i), b"a").unwrap();
    }
    db.write(&wo, b).unwrap();
    let snap = db.snapshot();
    db.delete_range(&wo, &key(10), &key(20)).unwrap();
    db.put(&wo, &key(5), b"b").unwrap();
    assert_eq!(db.get(&key(15)).unwrap(), None);
    assert_eq!(db.get(&key(20)).unwrap(), Some(b"a".to_vec()));
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    let cf = db.default_cf();
    assert_eq!(db.get_opt(&ro, &cf, &key(15)).unwrap(), Some(b"a".to_vec()));
    assert_eq!(db.get_opt(&ro, &cf, &key(5)).unwrap(), Some(b"a".to_vec()));
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get_opt(&ro, &cf, &key(15)).unwrap(), Some(b"a".to_vec()));
    assert_eq!(db.get(&key(15)).unwrap(), None);
    let n = db
        .scan_opt(&ro, &cf, key(0)..key(100), false)
        .unwrap()
        .count();
    assert_eq!(n, 100);
    assert_eq!(db.scan(key(0)..key(100)).unwrap().count(), 90);
}

#[test]
fn column_families_are_separate_trees() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    {
        let db = Db::open(dir.path(), Options::small()).unwrap();
        let users = db.create_cf("users").unwrap();
        db.put_cf(&users, &wo, b"k", b"users").unwrap();
        db.put(&wo, b"k", b"default").unwrap();
        assert_eq!(db.get_cf(&users, b"k").unwrap(), Some(b"users".to_vec()));
        assert_eq!(db.get(b"k").unwrap(), Some(b"default".to_vec()));
    }
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let users = db.cf("users").unwrap();
    assert_eq!(db.get_cf(&users, b"k").unwrap(), Some(b"users".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), Some(b"default".to_vec()));
}

#[test]
fn set_policy_validates_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let cf = db.default_cf();
    assert!(db.set_policy(&cf, 1, 0, Transition::Flexible).is_err());
    assert!(db.set_policy(&cf, 1, 11, Transition::Flexible).is_err());
    db.set_policy(&cf, 2, 4, Transition::Flexible).unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::small()).unwrap();
    assert_eq!(db.level_info(&db.default_cf()).unwrap()[2].k, 4);
}
