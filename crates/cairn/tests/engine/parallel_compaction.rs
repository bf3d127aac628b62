//! Parallel compaction jobs (`Options::max_background_compactions`): jobs run at once only
//! on disjoint level spans, the limit holds, and the data is what one job at a time writes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cairn::{CfId, CompactionInfo, Db, EventListener, Options, WriteOptions};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::support::{contents, key6 as key, Model};

/// Records the level spans of the compactions running now; fails the test (from the
/// compaction thread, through `overlaps`) if two running ones share a level.
#[derive(Default)]
struct Spans {
    running: Mutex<Vec<(CfId, usize, usize, &'static str)>>,
    peak: AtomicUsize,
    overlaps: Mutex<Vec<String>>,
    /// Slows each job down so that jobs due at the same time do meet.
    hold: Duration,
}

fn span(i: &CompactionInfo) -> (CfId, usize, usize) {
    (i.cf, i.input_level, i.output_level)
}

impl EventListener for Spans {
    fn on_compaction_begin(&self, i: &CompactionInfo) {
        let (cf, a, b) = span(i);
        let mut running = self.running.lock();
        let manual = |r: &str| r == "manual";
        if (manual(i.reason) && !running.is_empty()) || running.iter().any(|r| manual(r.3)) {
            self.overlaps
                .lock()
                .push(format!("{} began beside {running:?}", i.reason));
        }
        for &(c, x, y, _) in running.iter() {
            if c == cf && a <= y && x <= b {
                self.overlaps.lock().push(format!(
                    "levels {a}..={b} ({}) began while {x}..={y} ran",
                    i.reason
                ));
            }
        }
        running.push((cf, a, b, i.reason));
        self.peak.fetch_max(running.len(), Ordering::Relaxed);
        drop(running);
        std::thread::sleep(self.hold);
    }
    fn on_compaction_end(&self, i: &CompactionInfo) {
        let mut running = self.running.lock();
        if let Some(p) = running
            .iter()
            .position(|&(c, a, b, _)| (c, a, b) == span(i))
        {
            running.swap_remove(p);
        }
    }
}

fn options(jobs: usize, spans: Arc<Spans>) -> Options {
    Options {
        write_buffer_size: 32 << 10,
        max_write_buffers: 3,
        block_size: 1024,
        size_ratio: 3,
        // Capacities 32, 96, 288 KiB: the ~0.5 MB of live data always reaches level 4.
        // At 64 KiB, level 3's 576 KiB was just above what the data fills once the last
        // level's numbers are zeroed, and the tree stopped at 3 levels in 1 run of 5.
        level1_bytes: 32 << 10,
        num_levels: 6,
        l0_compaction_trigger: 2,
        target_file_size: 16 << 10,
        max_background_compactions: jobs,
        read_triggered_compaction: false,
        listeners: vec![spans],
        ..Options::small()
    }
}

/// Random puts and deletes over 20k keys; returns the database and the model.
fn run(jobs: usize, spans: Arc<Spans>, dir: &std::path::Path) -> (Db, Model) {
    let db = Db::open(dir, options(jobs, spans)).unwrap();
    let wo = WriteOptions::default();
    let mut rng = SmallRng::seed_from_u64(5);
    let mut model = Model::new();
    for op in 0..60_000u32 {
        let k = key(rng.random_range(0..20_000));
        if rng.random_bool(0.1) {
            db.delete(&wo, &k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("v{op}-{}", "x".repeat(rng.random_range(10..80))).into_bytes();
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
    }
    db.flush().unwrap();
    (db, model)
}

/// Waits until no compaction runs and none is due (the picker finds nothing).
fn settle(db: &Db) {
    for _ in 0..2000 {
        let s = db.stats();
        if s.compactions_running == 0 && s.flushes_running == 0 && !db.compaction_pending() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("compactions did not settle");
}

#[test]
fn jobs_on_disjoint_levels_run_at_once_and_write_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let spans = Arc::new(Spans {
        hold: Duration::from_millis(15),
        ..Default::default()
    });
    let (db, model) = run(3, spans.clone(), &dir.path().join("three"));
    settle(&db);
    let overlaps = spans.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "jobs shared levels: {overlaps:?}");
    let peak = spans.peak.load(Ordering::Relaxed);
    assert!(
        peak >= 2,
        "no two compactions ever ran at once (peak {peak})"
    );
    assert!(
        peak <= 3,
        "more jobs than max_background_compactions: {peak}"
    );
    assert!(db.stats().compaction_jobs_peak >= 2);
    let levels = db
        .level_info(&db.default_cf())
        .unwrap()
        .iter()
        .filter(|l| !l.runs.is_empty())
        .count();
    assert!(levels >= 4, "the test needs a deep tree: {levels} levels");
    assert!(
        contents(&db, None) == model,
        "latest view differs from the model"
    );
    for (k, v) in model.iter().step_by(89) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }

    // One job at a time never has two running, and ends with the same contents.
    let one = Arc::new(Spans {
        hold: Duration::from_millis(1),
        ..Default::default()
    });
    let (db1, _) = run(1, one.clone(), &dir.path().join("one"));
    settle(&db1);
    assert_eq!(one.peak.load(Ordering::Relaxed), 1);
    assert_eq!(db1.stats().compaction_jobs_peak, 1);
    assert!(contents(&db1, None) == contents(&db, None));

    // The tree checks out and reopens with the same data.
    drop(db);
    let report = Db::check(dir.path().join("three"), &Options::small()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let db = Db::open(dir.path().join("three"), Options::small()).unwrap();
    assert!(contents(&db, None) == model, "after reopen");
    // The last level's jobs ran beside others and still wrote its values at number 0.
    drop(db);
    let zeroed = crate::bottom_seqs::renumbered(&dir.path().join("three"));
    assert!(zeroed > 0, "no value in the last level was renumbered");
}

#[test]
fn manual_compaction_runs_alone_beside_parallel_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let spans = Arc::new(Spans {
        hold: Duration::from_millis(2),
        ..Default::default()
    });
    let db = Arc::new(Db::open(dir.path(), options(3, spans.clone())).unwrap());
    let wo = WriteOptions::default();
    let mut model = Model::new();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let compactor = {
        let db = db.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                db.compact_range(None, None).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut rng = SmallRng::seed_from_u64(9);
    for op in 0..30_000u32 {
        let k = key(rng.random_range(0..10_000));
        let v = format!("w{op}-{}", "y".repeat(rng.random_range(10..60))).into_bytes();
        db.put(&wo, &k, &v).unwrap();
        model.insert(k, v);
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = compactor.join().unwrap();
    assert!(rounds >= 1);
    db.flush().unwrap();
    settle(&db);
    let overlaps = spans.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "jobs shared levels: {overlaps:?}");
    assert!(contents(&db, None) == model);
}
