//! `Db::check`: a clean database passes, each kind of damage is found and names its file,
//! orphans are warnings, and the check changes nothing on disk.

use std::collections::BTreeMap;
use std::path::Path;

use cairn::{Db, Error, Options, WriteOptions};

use crate::support::{files_where, flip};

fn opts() -> Options {
    Options {
        write_buffer_size: 32 << 10,
        target_file_size: 8 << 10,
        block_size: 1024,
        level1_bytes: 32 << 10,
        background_work: false,
        // Long values go to value logs, short ones stay in the tables.
        value_threshold: Some(64),
        ..Options::small()
    }
}

fn val(i: u32) -> Vec<u8> {
    let len = if i.is_multiple_of(2) { 10 } else { 100 };
    format!("{i:08}").repeat(len / 8 + 1).into_bytes()
}

/// Tables on two levels, value logs, and unflushed writes in the WAL.
fn build(dir: &Path) {
    let wo = WriteOptions::default();
    let db = Db::open(dir, opts()).unwrap();
    for i in 0..600u32 {
        db.put(&wo, format!("key{i:06}").as_bytes(), &val(i))
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..600u32).step_by(5) {
        db.put(&wo, format!("key{i:06}").as_bytes(), &val(i + 1))
            .unwrap();
    }
    db.flush().unwrap();
    for i in 0..20u32 {
        db.put(&wo, format!("wal{i:03}").as_bytes(), b"unflushed")
            .unwrap();
    }
    db.close().unwrap();
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn problem_files(r: &cairn::CheckReport) -> Vec<String> {
    r.problems.iter().map(|p| p.file.clone()).collect()
}

#[test]
fn a_clean_database_passes_and_is_not_changed() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let before = snapshot(dir.path());
    let mut calls = 0;
    let r = Db::check_with_progress(dir.path(), &opts(), &mut |_, done, total| {
        assert!(done < total);
        calls += 1;
    })
    .unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(r.tables >= 2, "{r:?}");
    assert!(r.value_logs >= 1, "{r:?}");
    assert!(r.wals >= 1 && r.wal_records >= 20, "{r:?}");
    assert!(r.entries >= 600);
    assert_eq!(calls, r.tables + r.value_logs + r.wals);
    assert_eq!(
        r.column_families,
        vec![(cairn::CfId::DEFAULT, "default".to_string())]
    );
    assert_eq!(before, snapshot(dir.path()), "check changed the directory");
}

#[test]
fn close_writes_stats_json() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let b = std::fs::read(dir.path().join("STATS.json")).expect("STATS.json written at close");
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert!(v["writes"].as_u64().unwrap() >= 620, "{v}");
    assert!(v["levels"].is_array());
    // A database with STATS.json and no CURRENT is still recognised as a database whose
    // manifest pointer was lost (not as a foreign directory).
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    match Db::open(dir.path(), opts()) {
        Err(e @ Error::Corruption { .. }) => assert!(e.to_string().contains("CURRENT")),
        Err(e) => panic!("expected a corruption error about CURRENT, got {e}"),
        Ok(_) => panic!("opened without CURRENT"),
    }
}

#[test]
fn a_flipped_table_byte_is_found() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let t = files_where(dir.path(), |n| n.ends_with(".sst"))[0].clone();
    flip(&t, 100, 0x20);
    let r = Db::check(dir.path(), &opts()).unwrap();
    assert!(!r.is_ok());
    assert!(
        problem_files(&r).contains(&t.display().to_string()),
        "{:?}",
        r.problems
    );
}

#[test]
fn a_flipped_value_log_byte_is_found() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let v = files_where(dir.path(), |n| n.ends_with(".vlog"))[0].clone();
    flip(&v, 40, 0x20);
    let r = Db::check(dir.path(), &opts()).unwrap();
    assert_eq!(problem_files(&r), vec![v.display().to_string()], "{r:?}");
}

#[test]
fn a_flipped_manifest_byte_is_found() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let m = files_where(dir.path(), |_| true)
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    flip(&m, 20, 0x20);
    let r = Db::check(dir.path(), &opts()).unwrap();
    assert!(!r.is_ok());
    assert!(r.manifest.is_none());
    let name = m.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        r.problems.iter().any(|p| p.file.contains(&name)),
        "{:?}",
        r.problems
    );
    // Without a manifest the tables are still read.
    assert!(r.tables >= 2);
}

#[test]
fn a_missing_current_and_a_missing_table_are_found() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let t = files_where(dir.path(), |n| n.ends_with(".sst"))[0].clone();
    std::fs::remove_file(&t).unwrap();
    let r = Db::check(dir.path(), &opts()).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.file == t.display().to_string() && p.detail.contains("missing")),
        "{:?}",
        r.problems
    );
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    let r = Db::check(dir.path(), &opts()).unwrap();
    assert!(r.problems[0].file.ends_with("CURRENT"), "{:?}", r.problems);
}

#[test]
fn orphans_are_warnings_not_problems() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let t = files_where(dir.path(), |n| n.ends_with(".sst"))[0].clone();
    std::fs::copy(&t, dir.path().join("999999.sst")).unwrap();
    let r = Db::check(dir.path(), &opts()).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(r.warnings[0].file.ends_with("999999.sst"));
}

#[test]
fn errors_are_for_what_is_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(matches!(
        Db::check(&missing, &opts()),
        Err(Error::NotFound(_))
    ));
    build(dir.path());
    let db = Db::open(dir.path(), opts()).unwrap();
    assert!(matches!(
        Db::check(dir.path(), &opts()),
        Err(Error::Locked(_))
    ));
    drop(db);
    let info = Db::inspect(dir.path(), &opts()).unwrap();
    assert_eq!(info.column_families[0].name, "default");
    assert!(!info.column_families[0].tables.is_empty());
    assert!(!info.value_logs.is_empty());
}
