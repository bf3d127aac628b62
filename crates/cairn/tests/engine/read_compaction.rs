//! Read-triggered compaction (LevelDB's seek compaction): seeks that must position in a
//! level-0 file and in another run use up that file's allowance, and level 0 then merges
//! into level 1 below its run trigger.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::compaction::{pick, LevelShape, Task};
use cairn::types::{make_internal_key, ValueKind};
use cairn::version::{AddedFile, CfVersion, FileDesc, FileMeta, VersionEdit};
use cairn::{CfId, Db, Options, WriteOptions};

use crate::support::key6 as key;

fn desc(file_no: u64, lo: &str, hi: &str, size: u64) -> FileDesc {
    FileDesc {
        file_no: cairn::FileNo::new(file_no),
        tier: 0,
        size,
        smallest: make_internal_key(lo.as_bytes(), file_no, ValueKind::Value),
        largest: make_internal_key(hi.as_bytes(), file_no, ValueKind::Value),
        num_entries: 10,
        min_seq: file_no,
        max_seq: file_no,
        vlog_refs: Vec::new(),
        range_dels: 0,
    }
}

/// Three levels (K_0 = 4, leveled below) holding the files of `added`.
fn three_levels(added: Vec<(u32, u32, u64, FileDesc)>) -> (LevelShape, CfVersion) {
    let shape = LevelShape {
        level1_bytes: 1 << 30,
        size_ratio: 10,
        num_levels: 3,
        held: None,
    };
    let added = added
        .into_iter()
        .map(|(cf, level, run, file)| AddedFile {
            cf: CfId::new(cf),
            level,
            run,
            file,
        })
        .collect();
    let edit = VersionEdit {
        added,
        ..Default::default()
    };
    let k = |l: usize| if l == 0 { 4 } else { 1 };
    let v = CfVersion::empty(k, 3)
        .apply(CfId::DEFAULT, &edit, &|d: &FileDesc| {
            Arc::new(FileMeta::new(d.clone(), None))
        })
        .unwrap();
    (shape, v)
}

#[test]
fn picker_merges_level0_once_seeks_outweigh_the_merge() {
    let (shape, v) = three_levels(vec![
        (0, 1, 1, desc(1, "a", "f", 1 << 20)),
        (0, 1, 1, desc(4, "x", "y", 8 << 20)), // beside level 0's range
        (0, 0, 2, desc(2, "b", "m", 4 << 20)),
        (0, 0, 3, desc(3, "c", "e", 2 << 20)),
    ]);
    let pick = || pick(&v, &shape, &|_, _| true);
    assert!(pick().is_none(), "two runs of four");
    let (newest, older) = (
        v.levels[0].runs[0].files[0].clone(),
        v.levels[0].runs[1].files[0].clone(),
    );
    assert_eq!(newest.file_no(), cairn::FileNo::new(3));
    // The merge reads level 0 (6 MiB) and the level-1 file it overlaps (1 MiB, not the
    // 8 MiB one beside it): worth 7 MiB / 16 KiB = 448 seeks, charged to either table.
    for _ in 0..400 {
        newest.charge_read();
    }
    for _ in 0..47 {
        older.charge_read();
    }
    assert!(pick().is_none(), "447 seeks");
    older.charge_read();
    match pick() {
        Some(Task::Merge {
            from: 0,
            to: 1,
            inputs,
            dest_inputs,
            reason: "read-triggered",
            ..
        }) => {
            assert_eq!(inputs.len(), 2, "every level-0 run goes");
            assert_eq!(dest_inputs.len(), 1);
        }
        t => panic!("expected a read-triggered merge of level 0, got {t:?}"),
    }
}

#[test]
fn small_merges_need_at_least_100_seeks() {
    let (shape, v) = three_levels(vec![
        (0, 0, 1, desc(1, "a", "m", 4096)),
        (0, 0, 2, desc(2, "b", "n", 4096)),
    ]);
    let newest = v.levels[0].runs[0].files[0].clone();
    for _ in 0..99 {
        newest.charge_read();
    }
    assert!(pick(&v, &shape, &|_, _| true).is_none());
    newest.charge_read();
    assert!(matches!(
        pick(&v, &shape, &|_, _| true),
        Some(Task::Merge {
            reason: "read-triggered",
            ..
        })
    ));
}

/// Three flushes of overlapping keys (level 0 holds three runs, below its trigger of four),
/// then seeks.
fn three_runs_then_seeks(
    read_triggered: bool,
) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        read_triggered_compaction: read_triggered,
        ..Options::small()
    };
    let db = Db::open(dir.path().join("db"), opts).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        for i in (round..3000).step_by(3) {
            let v = format!("value{round}-{i}").into_bytes();
            db.put(&WriteOptions::default(), &key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    }
    let info = db.level_info(&db.default_cf()).unwrap();
    assert_eq!(info[0].runs.len(), 3, "{info:?}");
    // Level 0 and level 1 hold far less than 1.6 MiB: 100 seeks pay for the merge.
    for s in 0..120u32 {
        let k = key((s * 7919) % 3000);
        let mut it = db.scan(k.as_slice()..).unwrap();
        let (got, _) = it.next().unwrap().unwrap();
        assert_eq!(got, k);
    }
    (db, model, dir)
}

fn level0_runs(db: &Db) -> usize {
    db.level_info(&db.default_cf()).unwrap()[0].runs.len()
}

#[test]
fn seeks_merge_level0_below_its_trigger() {
    let (db, model, _dir) = three_runs_then_seeks(true);
    let deadline = Instant::now() + Duration::from_secs(30);
    while level0_runs(&db) > 0 {
        assert!(
            Instant::now() < deadline,
            "level 0 still holds {} runs",
            level0_runs(&db)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(db.stats().read_triggered_compactions >= 1);
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .scan::<&[u8], _>(..)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(
        got == model,
        "data changed by the read-triggered compaction"
    );
}

#[test]
fn without_read_triggers_level0_waits_for_its_trigger() {
    let (db, _, _dir) = three_runs_then_seeks(false);
    // The compaction thread wakes at least every 500 ms.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(level0_runs(&db), 3);
    assert_eq!(db.stats().read_triggered_compactions, 0);
}
