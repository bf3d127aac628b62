//! Per-family options: one family runs Bourbon's learned index with its values separated,
//! another AC-Key's point cache, in one database; the options file keeps them across
//! opens.

use cairn::{
    AcKeyParams, CfOptions, ColumnFamily, Compression, Db, IndexPolicy, Options, ReadCachePolicy,
    WriteOptions,
};

use crate::support::key8 as key;

fn db_opts() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        level1_bytes: 128 << 10,
        read_cache: ReadCachePolicy::AcKey(AcKeyParams::default()),
        background_work: false,
        ..Options::default()
    }
}

fn learned_family(base: &Options) -> CfOptions {
    CfOptions {
        index: IndexPolicy::learn_all(8),
        value_threshold: Some(0),
        compression: Compression::None,
        point_cache: false,
        ..CfOptions::from(base)
    }
}

const N: u32 = 2_000;

fn fill(db: &Db, cf: &ColumnFamily) {
    let wo = WriteOptions::default();
    for i in 0..N {
        db.put_cf(cf, &wo, &key(i), format!("{}-{i}", cf.name()).as_bytes())
            .unwrap();
    }
}

/// Reads every key of `cf` twice; returns the learned lookups and point-cache hits the
/// second pass made (the first fills the caches).
fn read_twice(db: &Db, cf: &ColumnFamily) -> (u64, u64) {
    let counts = |db: &Db| {
        let s = db.stats();
        let learned: u64 = s.levels.iter().map(|l| l.learned_lookups).sum();
        (learned, s.read_cache.kv_hits + s.read_cache.kp_hits)
    };
    let ro = cairn::ReadOptions::default();
    let mut before = (0, 0);
    for pass in 0..2 {
        before = if pass == 1 { counts(db) } else { before };
        for i in 0..N {
            let v = db.get_opt(&ro, cf, &key(i)).unwrap();
            assert_eq!(v, Some(format!("{}-{i}", cf.name()).into_bytes()));
        }
    }
    let after = counts(db);
    (after.0 - before.0, after.1 - before.1)
}

/// Reads `cf` once (its tables open, and go to the learner if the family is learned),
/// then runs the learner's pass.
fn open_then_learn(db: &Db, cf: &ColumnFamily) {
    for i in 0..N {
        db.get_opt(&cairn::ReadOptions::default(), cf, &key(i))
            .unwrap();
    }
    db.run_background_work().unwrap();
}

#[test]
fn families_run_their_own_learned_parts_and_keep_them_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let opts = db_opts();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let models = db.create_cf_with("models", &learned_family(&opts)).unwrap();
    let cached = db.create_cf("cached").unwrap();
    fill(&db, &models);
    fill(&db, &cached);
    db.flush().unwrap();
    db.compact_range_cf(&models, None, None).unwrap();
    db.compact_range_cf(&cached, None, None).unwrap();
    db.run_background_work().unwrap();
    let check = |db: &Db, models: &ColumnFamily, cached: &ColumnFamily| {
        open_then_learn(db, models);
        let (learned, hits) = read_twice(db, models);
        assert!(learned > 0, "the learned family's tables are learned");
        assert_eq!(hits, 0, "the learned family keeps out of the point cache");
        let (learned, hits) = read_twice(db, cached);
        assert_eq!(learned, 0, "the other family keeps fence pointers");
        assert!(hits > 0, "the other family's reads hit the point cache");
    };
    check(&db, &models, &cached);
    db.close().unwrap();
    // Values of the learned family only went to a value log.
    let info = Db::inspect(dir.path(), &opts).unwrap();
    assert!(!info.value_logs.is_empty());

    // Saved: a later open that names no family gives each its own options back.
    let saved = Options::load_latest(dir.path()).unwrap();
    assert_eq!(
        saved.column_families.get("models"),
        Some(&learned_family(&opts))
    );
    assert!(!saved.column_families.contains_key("cached"));
    let db = Db::open(dir.path(), db_opts()).unwrap();
    let (models, cached) = (db.cf("models").unwrap(), db.cf("cached").unwrap());
    check(&db, &models, &cached);

    // Dropping a family forgets its options.
    db.drop_cf(&models).unwrap();
    let saved = Options::load_latest(dir.path()).unwrap();
    assert!(saved.column_families.is_empty());
    db.close().unwrap();
}

#[test]
fn bad_family_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = db_opts();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let bad = CfOptions {
        block_size: 0,
        ..CfOptions::from(&opts)
    };
    let r = db.create_cf_with("bad", &bad);
    assert!(matches!(r, Err(cairn::Error::InvalidArgument(_))), "{r:?}");
    assert!(db.cf("bad").is_none());
    // Learned families share one learner: a second with other parameters is refused.
    db.create_cf_with("models", &learned_family(&opts)).unwrap();
    let other = CfOptions {
        index: IndexPolicy::BOURBON,
        ..CfOptions::from(&opts)
    };
    let r = db.create_cf_with("other", &other);
    assert!(matches!(r, Err(cairn::Error::InvalidArgument(_))), "{r:?}");
    assert!(db.cf("other").is_none());
    let saved = Options::load_latest(dir.path()).unwrap();
    assert!(
        !saved.column_families.contains_key("other") && !saved.column_families.contains_key("bad")
    );
    db.close().unwrap();
    // In the options given to an open too.
    let mut o = db_opts();
    o.column_families.insert("bad".into(), bad);
    assert!(matches!(
        Db::open(dir.path(), o),
        Err(cairn::Error::InvalidArgument(_))
    ));
}

#[test]
fn a_family_named_in_the_options_at_open_is_created_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = db_opts();
    opts.column_families
        .insert("models".into(), learned_family(&opts));
    let db = Db::open(dir.path(), opts).unwrap();
    let models = db.create_cf("models").unwrap();
    fill(&db, &models);
    db.flush().unwrap();
    db.compact_range_cf(&models, None, None).unwrap();
    open_then_learn(&db, &models);
    let (learned, hits) = read_twice(&db, &models);
    assert!(learned > 0 && hits == 0, "learned {learned}, hits {hits}");
    db.close().unwrap();
}
