//! Bourbon's background learner at the database level: the wait, the three modes, and
//! answers that never change while models are installed under concurrent readers.

use std::time::{Duration, Instant};

use cairn::{Db, DbStats, IndexPolicy, LearnMode, Options, WriteOptions};

const N: u32 = 20_000;

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i * 3).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}").into_bytes()
}

fn options(mode: LearnMode, wait_ms: u32, background: bool) -> Options {
    let mut o = Options {
        index: IndexPolicy::Learned {
            delta: 8,
            mode,
            wait_ms,
        },
        target_file_size: 64 << 10,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    o.background_work = background;
    o
}

/// A database holding keys 0..N in several tables below level 0.
fn load(dir: &std::path::Path, o: Options) -> Db {
    let db = Db::open(dir, o).unwrap();
    let wo = WriteOptions::default();
    for i in 0..N {
        db.put(&wo, &key(i), &value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db
}

/// Reads `keys` and one absent key next to each, checking answers.
fn read(db: &Db, keys: impl Iterator<Item = u32>) {
    for i in keys {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
        let absent = format!("key{:08}", i * 3 + 1).into_bytes();
        assert_eq!(db.get(&absent).unwrap(), None);
    }
}

fn wait_for(db: &Db, what: impl Fn(&DbStats) -> bool) -> DbStats {
    let t0 = Instant::now();
    loop {
        let s = db.stats();
        if what(&s) || t0.elapsed() > Duration::from_secs(20) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn background_learner_installs_models_under_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = load(dir.path(), options(LearnMode::Always, 20, true));
    let before = db.stats();
    assert_eq!(before.learned_tables, 0, "nothing is learned at open");
    // Readers run while models are installed.
    std::thread::scope(|s| {
        for t in 0..2 {
            let db = &db;
            s.spawn(move || {
                for round in 0..3 {
                    read(db, (t..N).step_by(7 + round));
                }
            });
        }
    });
    let s = wait_for(&db, |s| s.learned_tables > 0);
    assert!(s.learned_tables > 0, "{s:?}");
    assert!(s.learned_segments >= s.learned_tables);
    assert!(s.learned_entries > 0);
    assert!(s.learn_cpu_nanos > 0);
    read(&db, 0..N);
    let s = db.stats();
    assert!(s.learned_lookups > 0, "{s:?}");
    let sampled: u64 = s.levels.iter().map(|l| l.model_path_samples).sum();
    assert!(sampled > 0, "model-path lookups are timed");
    db.close().unwrap();
}

#[test]
fn wait_defers_learning() {
    let dir = tempfile::tempdir().unwrap();
    let db = load(dir.path(), options(LearnMode::Always, 600_000, true));
    read(&db, 0..N);
    std::thread::sleep(Duration::from_millis(100));
    read(&db, 0..N);
    let s = db.stats();
    assert_eq!(s.learned_tables, 0);
    assert_eq!(s.learned_lookups, 0);
    db.close().unwrap();
}

#[test]
fn never_learns_and_always_learns_every_read_table() {
    for (mode, learned) in [(LearnMode::Never, false), (LearnMode::Always, true)] {
        let dir = tempfile::tempdir().unwrap();
        let db = load(dir.path(), options(mode, 0, false));
        read(&db, 0..N);
        db.run_background_work().unwrap();
        let files: usize = db
            .level_info(&db.default_cf())
            .unwrap()
            .iter()
            .flat_map(|l| l.runs.iter().map(|r| r.files))
            .sum();
        let s = db.stats();
        let want = if learned { files as u64 } else { 0 };
        assert_eq!(s.learned_tables, want, "{mode:?}");
        let sampled: u64 = s.levels.iter().map(|l| l.fence_path_samples).sum();
        assert!(sampled > 0, "{mode:?}: fence-path lookups are timed");
        let path: u64 = s.levels.iter().map(|l| l.fence_path_ns).sum();
        let index: u64 = s.levels.iter().map(|l| l.fence_index_ns).sum();
        assert!(index > 0 && index < path, "index part {index} of {path} ns");
        read(&db, 0..N);
        let s = db.stats();
        assert_eq!(s.learned_lookups > 0, learned, "{mode:?}");
        // `key000000NN`: the 8 bytes after the tables' common prefix tell keys apart, so
        // the models answer (almost) every lookup themselves.
        assert!(
            s.learned_fallbacks * 20 <= s.learned_lookups,
            "{mode:?}: {} fallbacks for {} model answers",
            s.learned_fallbacks,
            s.learned_lookups
        );
    }
}

/// Under the analyzer, a table read a lot is learned, a table read once is not. With no
/// lifetime history the expected remaining life equals the age, so the benefit is
/// lookups * (fence time - model time) whatever the clock says.
#[test]
fn cba_learns_busy_tables_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = load(dir.path(), options(LearnMode::Cba, 0, false));
    let files: usize = db
        .level_info(&db.default_cf())
        .unwrap()
        .iter()
        .flat_map(|l| l.runs.iter().map(|r| r.files))
        .sum();
    assert!(files >= 3, "test needs several tables, got {files}");
    // Open every table once (one lookup each), then hammer the first keys.
    read(&db, (0..N).step_by(500));
    for _ in 0..30 {
        read(&db, 0..200);
    }
    db.run_background_work().unwrap();
    let s = db.stats();
    assert!(s.learned_tables >= 1, "{s:?}");
    assert!(
        (s.learned_tables as usize) < files,
        "idle tables learned too: {} of {files}",
        s.learned_tables
    );
    read(&db, 0..200);
    assert!(db.stats().learned_lookups > 0);
}

/// A scan-only workload (no get at all) still gets its busy tables learned: seeks count as
/// lookups and time the paths, and the learned tables then position the seeks.
#[test]
fn cba_learns_tables_that_only_scans_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = load(dir.path(), options(LearnMode::Cba, 0, false));
    let scan = |from: u32| {
        let mut it = db
            .iter(&cairn::ReadOptions::default(), &db.default_cf())
            .unwrap();
        it.seek(&key(from));
        for i in from..(from + 5).min(N) {
            assert!(it.valid());
            assert_eq!(it.key(), &key(i)[..]);
            it.next();
        }
    };
    // Enough seeks that their saving outweighs the prior learning cost (100 ns per entry)
    // even when an optimised build's fence path is fast.
    for round in 0..200 {
        for from in (round % 7..300).step_by(7) {
            scan(from);
        }
    }
    db.run_background_work().unwrap();
    let s = db.stats();
    assert_eq!(s.gets, 0);
    assert!(s.learned_tables >= 1, "{s:?}");
    for from in 0..300 {
        scan(from);
    }
    assert!(db.stats().learned_seeks > 0);
}

fn model_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "plr"))
        .collect();
    v.sort();
    v
}

/// Models are saved beside their tables and loaded at the next open instead of being
/// relearned; damaged model files are ignored (the tables relearned) and never change an
/// answer; a deleted table's model goes with it.
#[test]
fn models_persist_and_damaged_ones_are_relearned() {
    let dir = tempfile::tempdir().unwrap();
    let o = || options(LearnMode::Always, 0, false);
    let db = load(dir.path(), o());
    read(&db, 0..N);
    db.run_background_work().unwrap();
    let learned = db.stats().learned_tables;
    assert!(learned > 0);
    db.close().unwrap();
    let files = model_files(dir.path());
    assert_eq!(files.len() as u64, learned);

    let db = Db::open(dir.path(), o()).unwrap();
    read(&db, 0..N);
    let s = db.stats();
    assert_eq!(s.learned_models_loaded, learned, "{s:?}");
    assert_eq!(s.learned_tables, 0, "nothing relearned");
    assert!(s.learned_lookups > 0);
    assert!(s.io.kind(cairn::storage::FileKind::Model).read_bytes > 0);
    db.close().unwrap();

    // Damage every model: flip a byte in the middle, or cut the file short.
    for (i, f) in files.iter().enumerate() {
        let mut b = std::fs::read(f).unwrap();
        if i % 2 == 0 {
            let m = b.len() / 2;
            b[m] ^= 0x40;
        } else {
            b.truncate(b.len() - 3);
        }
        std::fs::write(f, b).unwrap();
    }
    let db = Db::open(dir.path(), o()).unwrap();
    read(&db, 0..N);
    let s = db.stats();
    assert_eq!(s.learned_models_loaded, 0);
    assert_eq!(s.learned_models_rejected, learned);
    assert_eq!(s.learned_lookups, 0, "no damaged model was used");
    db.run_background_work().unwrap();
    assert_eq!(db.stats().learned_tables, learned, "relearned");
    read(&db, 0..N);
    // Overwrite everything and compact: the old tables and their models go.
    let wo = WriteOptions::default();
    for i in 0..N {
        db.put(&wo, &key(i), &value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.run_background_work().unwrap();
    let live: Vec<_> = model_files(dir.path());
    assert!(
        live.iter().all(|p| !files.contains(p)),
        "models of deleted tables remain: {live:?}"
    );
    db.close().unwrap();
}
