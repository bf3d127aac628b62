//! RusKey's compaction-policy tuners in a database: missions are counted, K_i moves with
//! the workload's mix, answers never change, the learned state survives a reopen and a
//! damaged checkpoint only restarts the learning.

use std::collections::BTreeMap;
#[cfg(feature = "ruskey")]
use std::path::Path;
#[cfg(feature = "ruskey")]
use std::sync::Arc;

use cairn::policy::{LerpParams, Propagation, TunerOptions, TunerPolicy};
use cairn::{Db, Options, WriteOptions};

use crate::support::key6 as key;

fn small(policy: TunerPolicy, background: bool) -> Options {
    Options {
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_bytes: 16 << 10,
        size_ratio: 4,
        num_levels: 5,
        l0_compaction_trigger: 2,
        block_size: 512,
        background_work: background,
        tuner: TunerOptions {
            policy,
            mission_ops: 100,
            checkpoint_every: 4,
            ..Default::default()
        },
        ..Options::small()
    }
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
}

/// K of the levels below level 0 that hold data.
fn ks_with_data(db: &Db) -> Vec<u32> {
    db.level_info(&db.default_cf())
        .unwrap()
        .iter()
        .skip(1)
        .filter(|l| !l.runs.is_empty())
        .map(|l| l.k)
        .collect()
}

#[cfg(feature = "ruskey")]
fn ks(db: &Db) -> Vec<u32> {
    db.level_info(&db.default_cf())
        .unwrap()
        .iter()
        .skip(1)
        .map(|l| l.k)
        .collect()
}

#[test]
fn greedy_tuner_follows_the_mix() {
    let dir = tempfile::tempdir().unwrap();
    let policy = TunerPolicy::Greedy {
        h_bottom: 0.33,
        h_top: 0.67,
    };
    let db = Db::open(dir.path(), small(policy, false)).unwrap();
    let mut model = BTreeMap::new();
    let wo = WriteOptions::default();
    // Write-heavy missions: every level with data goes lazier, up to T.
    for i in 0..6000u32 {
        let k = key(i * 7919 % 3000);
        let v = format!("v{i:08}").repeat(4).into_bytes();
        db.put(&wo, &k, &v).unwrap();
        model.insert(k, v);
        if i % 100 == 99 {
            db.run_background_work().unwrap();
        }
    }
    let after_writes = ks_with_data(&db);
    let t = db.stats().tuner;
    assert_eq!(t.policy, "greedy");
    assert!(t.missions >= 50, "{t:?}");
    assert!(t.changes > 0, "{t:?}");
    // Each K the tuner set is in the event log.
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains(" ruskey_set_k level="), "{log}");
    assert!(!after_writes.is_empty());
    assert!(
        after_writes.iter().all(|&k| k > 1),
        "levels not lazier after writes: {after_writes:?}"
    );
    check(&db, &model);
    // Read-heavy missions: back toward leveling.
    for round in 0..20u32 {
        for i in 0..100u32 {
            let k = key((round * 100 + i) * 31 % 3000);
            assert_eq!(db.get(&k).unwrap().as_ref(), model.get(&k));
        }
        db.run_background_work().unwrap();
    }
    let after_reads = ks_with_data(&db);
    assert!(
        after_reads.iter().all(|&k| k == 1),
        "levels not leveled after reads: {after_reads:?}"
    );
    check(&db, &model);
}

fn lerp(propagation: Propagation) -> TunerPolicy {
    TunerPolicy::Lerp(LerpParams {
        propagation,
        ..Default::default()
    })
}

/// Writers, readers and background work with Lerp deciding after every mission.
#[cfg(feature = "ruskey")]
fn run_mixed(db: &Arc<Db>, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, rounds: u32) {
    let wo = WriteOptions::default();
    for round in 0..rounds {
        let reader = {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..300u32 {
                    let _ = db.get(&key(i * 13 % 2000)).unwrap();
                }
            })
        };
        for i in 0..300u32 {
            let k = key((round * 300 + i) * 7 % 2000);
            let v = format!("r{round}i{i}").into_bytes();
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
        reader.join().unwrap();
    }
}

#[cfg(feature = "ruskey")]
fn flip_byte(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    let at = at.min(b.len() - 1);
    b[at] ^= 0x5a;
    std::fs::write(path, b).unwrap();
}

#[test]
#[cfg(feature = "ruskey")]
fn lerp_tunes_in_the_background_and_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small(lerp(Propagation::None), true);
    let mut model = BTreeMap::new();
    {
        let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
        run_mixed(&db, &mut model, 12);
        db.flush().unwrap();
        check(&db, &model);
        // The thread catches up with the last missions.
        let t0 = std::time::Instant::now();
        while db.stats().tuner.missions < 20 && t0.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let t = db.stats().tuner;
        assert_eq!(t.policy, "ruskey-none");
        assert!(t.missions >= 20, "{t:?}");
        assert_eq!(t.errors, 0, "{t:?}");
        assert!(t.train_cpu_ns > 0, "{t:?}");
        assert!(!t.resumed);
        Arc::try_unwrap(db)
            .ok()
            .expect("one owner")
            .close()
            .unwrap();
    }
    let checkpoint = dir.path().join("TUNER");
    assert!(checkpoint.exists(), "no checkpoint at close");
    {
        let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
        assert!(db.stats().tuner.resumed, "checkpoint not resumed");
        check(&db, &model);
        run_mixed(&db, &mut model, 2);
        check(&db, &model);
    }
    // A damaged checkpoint is logged and ignored: the database opens, answers stay.
    for at in [3, 30, 4000] {
        flip_byte(&checkpoint, at);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        assert!(
            !db.stats().tuner.resumed,
            "damaged checkpoint (byte {at}) used"
        );
        check(&db, &model);
        db.close().unwrap(); // writes a fresh, whole checkpoint
        assert!(
            Db::open(dir.path(), opts.clone())
                .unwrap()
                .stats()
                .tuner
                .resumed
        );
    }
    // A checkpoint of another propagation mode is not used either.
    let other = small(lerp(Propagation::Monkey), false);
    let db = Db::open(dir.path(), other).unwrap();
    assert!(!db.stats().tuner.resumed);
    check(&db, &model);
}

#[test]
#[cfg(feature = "ruskey")]
fn lerp_changes_k_and_propagates_down() {
    let dir = tempfile::tempdir().unwrap();
    // Copy level 1's K down after every mission, so that the check below does not hang
    // on how long the agent holds a K (the lib tests cover the waiting).
    let policy = TunerPolicy::Lerp(LerpParams {
        propagation: Propagation::Uniform,
        converge_after: 0,
        ..Default::default()
    });
    let db = Db::open(dir.path(), small(policy, false)).unwrap();
    let mut model = BTreeMap::new();
    let wo = WriteOptions::default();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..8000u32 {
        let k = key(i * 7919 % 4000);
        let v = format!("v{i:08}").into_bytes();
        db.put(&wo, &k, &v).unwrap();
        model.insert(k, v);
        if i % 100 == 99 {
            db.run_background_work().unwrap();
            seen.insert(ks(&db));
        }
    }
    let t = db.stats().tuner;
    assert!(t.missions >= 70, "{t:?}");
    assert!(t.changes > 0, "{t:?}");
    // Exploration moved K_1 through several values, and at some point every level
    // carried level 1's K (uniform propagation).
    let k1s: std::collections::BTreeSet<u32> = seen.iter().map(|v| v[0]).collect();
    assert!(k1s.len() >= 2, "K_1 never moved: {seen:?}");
    assert!(
        seen.iter()
            .any(|v| v[0] > 1 && v.iter().all(|&k| k == v[0])),
        "never propagated: {seen:?}"
    );
    check(&db, &model);
}

#[test]
fn bad_tuner_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bad = small(
        TunerPolicy::Greedy {
            h_bottom: 0.8,
            h_top: 0.2,
        },
        false,
    );
    assert!(matches!(
        Db::open(dir.path(), bad),
        Err(cairn::Error::InvalidArgument(_))
    ));
    let mut bad = small(lerp(Propagation::Uniform), false);
    bad.tuner.mission_ops = 0;
    assert!(matches!(
        Db::open(dir.path(), bad),
        Err(cairn::Error::InvalidArgument(_))
    ));
}

/// Pretraining waits for the first mission and gives the simulator the entry size the
/// writes measured (RusKey's bench writes 1 KiB entries; the simulator's default is 116).
#[test]
#[cfg(feature = "ruskey")]
fn pretraining_takes_the_measured_entry_size() {
    let dir = tempfile::tempdir().unwrap();
    let policy = TunerPolicy::Lerp(LerpParams {
        pretrain_missions: 30,
        ..Default::default()
    });
    let mut opts = small(policy, false);
    opts.tuner.checkpoint = false;
    let db = Db::open(dir.path(), opts).unwrap();
    let wo = WriteOptions::default();
    let value = vec![7u8; 991];
    let mut model = BTreeMap::new();
    for i in 0..250u32 {
        let k = key(i);
        db.put(&wo, &k, &value).unwrap();
        model.insert(k, value.clone());
    }
    db.run_background_work().unwrap();
    let t = db.stats().tuner;
    assert_eq!(t.pretrained_missions, 30, "{t:?}");
    let want = (key(0).len() + value.len()) as f64;
    assert!((t.pretrain_entry_bytes - want).abs() < 1e-9, "{t:?}");
    check(&db, &model);
}
