//! Corruption tests: flip bytes in every kind of file (tables, WAL, manifest, CURRENT) and
//! check that the database answers with an error or with exactly the right data — never a
//! wrong value, a silently missing key, and never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use cairn::log::LogReader;
use cairn::table::{Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use cairn::{Db, Error, Options, WalRecovery, WriteBatch, WriteOptions};

use crate::support::{copy_dir, files_where, flip, key6 as key, Model};

const NUM_KEYS: u32 = 700;

fn val(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat((i % 17) as usize)).into_bytes()
}

fn opts() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 12 << 10,
        block_size: 1024,
        level1_bytes: 32 << 10,
        background_work: false,
        ..Options::small()
    }
}

/// A database with several tables on more than one level (flushed and compacted), a
/// manifest whose last edit is a flush, and unflushed writes in the WAL. Returns the
/// expected contents.
fn build_base(dir: &Path) -> Model {
    build_base_with(dir, opts())
}

fn build_base_with(dir: &Path, o: Options) -> Model {
    let wo = WriteOptions::default();
    let mut model = Model::new();
    let db = Db::open(dir, o).unwrap();
    for i in 0..NUM_KEYS {
        db.put(&wo, &key(i), &val(i, 0)).unwrap();
        model.insert(key(i), val(i, 0));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..NUM_KEYS).step_by(3) {
        db.put(&wo, &key(i), &val(i, 1)).unwrap();
        model.insert(key(i), val(i, 1));
    }
    for i in (0..NUM_KEYS).step_by(7) {
        db.delete(&wo, &key(i)).unwrap();
        model.remove(&key(i));
    }
    db.flush().unwrap();
    // Unflushed: only in the WAL.
    let mut b = WriteBatch::new();
    for i in (1..NUM_KEYS).step_by(11) {
        b.put(&key(i), &val(i, 2)).unwrap();
        model.insert(key(i), val(i, 2));
    }
    db.write(&wo, b).unwrap();
    db.delete(&wo, &key(5)).unwrap();
    model.remove(&key(5));
    let levels: Vec<usize> = db
        .stats()
        .levels
        .iter()
        .map(|l| l.files)
        .collect::<Vec<_>>();
    assert!(
        levels.iter().filter(|&&n| n > 0).count() >= 2,
        "want tables on several levels: {levels:?}"
    );
    db.close().unwrap();
    model
}

/// Opens `dir` and reads everything. Every answer must be an error or right; a scan may
/// stop at an error but may not skip or invent keys. Returns whether any error was seen.
fn check(dir: &Path, model: &Model, o: Options, what: &str) -> bool {
    let r = catch_unwind(AssertUnwindSafe(|| check_inner(dir, model, o)));
    match r {
        Ok(Ok(saw_error)) => saw_error,
        Ok(Err(msg)) => panic!("{what}: {msg}"),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what}: panicked: {msg}")
        }
    }
}

fn check_inner(dir: &Path, model: &Model, o: Options) -> Result<bool, String> {
    let db = match Db::open(dir, o) {
        Ok(db) => db,
        Err(_) => return Ok(true),
    };
    let mut saw_error = false;
    for i in 0..NUM_KEYS + 10 {
        match db.get(&key(i)) {
            Err(_) => saw_error = true,
            Ok(v) => {
                if v.as_ref() != model.get(&key(i)) {
                    return Err(format!(
                        "wrong answer for {}: got {:?}, want {:?}",
                        i,
                        v.map(|v| String::from_utf8_lossy(&v).into_owned()),
                        model
                            .get(&key(i))
                            .map(|v| String::from_utf8_lossy(v).into_owned())
                    ));
                }
            }
        }
    }
    let mut want = model.iter();
    match db.scan::<&[u8], _>(..) {
        Err(_) => saw_error = true,
        Ok(scan) => {
            let mut ended_by_error = false;
            for item in scan {
                match item {
                    Err(_) => {
                        ended_by_error = true;
                        break;
                    }
                    Ok((k, v)) => {
                        let w = want.next();
                        if w != Some((&k, &v)) {
                            return Err(format!(
                                "scan returned {:?} where {:?} was expected",
                                String::from_utf8_lossy(&k),
                                w.map(|w| String::from_utf8_lossy(w.0).into_owned())
                            ));
                        }
                    }
                }
            }
            if ended_by_error {
                saw_error = true;
            } else if let Some(w) = want.next() {
                return Err(format!(
                    "scan ended without error but missed {:?}",
                    String::from_utf8_lossy(w.0)
                ));
            }
        }
    }
    drop(db);
    Ok(saw_error)
}

/// The regions of a table file: (name, start, end).
fn table_regions(data: &[u8]) -> Vec<(&'static str, usize, usize)> {
    let footer = Footer::decode(&data[data.len() - FOOTER_LEN..], "t").unwrap();
    let mut v = Vec::new();
    let end = |h: cairn::table::BlockHandle| (h.offset + h.size) as usize + BLOCK_TRAILER_LEN;
    let mut first_meta = data.len() - FOOTER_LEN;
    for (name, h) in [
        ("index", footer.index),
        ("filter", footer.filter),
        ("properties", footer.properties),
    ] {
        if h.size > 0 {
            v.push((name, h.offset as usize, end(h)));
            first_meta = first_meta.min(h.offset as usize);
        }
    }
    v.push(("data", 0, first_meta));
    v.push(("footer", data.len() - FOOTER_LEN, data.len()));
    v
}

#[test]
fn table_corruption_is_detected_in_every_region() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let model = build_base(&base);
    let dir = tmp.path().join("work");
    copy_dir(&base, &dir);
    // Open once so the WAL is replayed into a level-0 table: every key is in a table.
    drop(Db::open(&dir, opts()).unwrap());
    assert!(!check(&dir, &model, opts(), "intact"), "intact database");
    let tables = files_where(&dir, |n| n.ends_with(".sst"));
    assert!(
        tables.len() >= 3,
        "want several tables, got {}",
        tables.len()
    );
    let mut cases = 0;
    let mut detected = 0;
    let mut regions_seen = std::collections::BTreeSet::new();
    for t in &tables {
        let data = std::fs::read(t).unwrap();
        for (region, start, end) in table_regions(&data) {
            regions_seen.insert(region);
            // Every byte of small regions (the footer); about 24 positions elsewhere, and
            // the first and last bytes (trailers) of each region.
            let stride = if region == "footer" {
                1
            } else {
                ((end - start) / 24).max(1)
            };
            let mut positions: Vec<usize> = (start..end).step_by(stride).collect();
            positions.extend([end - 1, end.saturating_sub(BLOCK_TRAILER_LEN)]);
            positions.retain(|&p| p >= start && p < end);
            positions.dedup();
            for pos in positions {
                let mask = 1u8 << (pos % 8);
                flip(t, pos, mask);
                let what = format!(
                    "{} {region} byte {pos} of {} flipped",
                    t.file_name().unwrap().to_string_lossy(),
                    data.len()
                );
                cases += 1;
                detected += check(&dir, &model, opts(), &what) as usize;
                flip(t, pos, mask);
            }
        }
    }
    assert!(regions_seen.contains("filter") && regions_seen.contains("index"));
    // A single flipped bit in a checksummed file must be noticed whenever it is read; all
    // keys are read, so every case must report an error.
    assert_eq!(detected, cases, "flips that went unnoticed");
    assert!(
        !check(&dir, &model, opts(), "restored"),
        "restored database"
    );
}

/// Key-value separation: a flipped bit anywhere in a value-log file gives an error or the
/// right answer, never a wrong value; flips in records that reads reach are all noticed.
#[test]
fn value_log_corruption_never_gives_wrong_answers() {
    let o = || Options {
        value_threshold: Some(12),
        ..opts()
    };
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let model = build_base_with(&base, o());
    let dir = tmp.path().join("work");
    copy_dir(&base, &dir);
    drop(Db::open(&dir, o()).unwrap());
    assert!(!check(&dir, &model, o(), "intact"), "intact database");
    let vlogs = files_where(&dir, |n| n.ends_with(".vlog"));
    assert!(!vlogs.is_empty(), "nothing was separated");
    let (mut cases, mut detected) = (0, 0);
    for f in &vlogs {
        let len = std::fs::metadata(f).unwrap().len() as usize;
        let mut positions: Vec<usize> = (0..12).collect(); // the header
        positions.extend((12..len).step_by((len / 40).max(1)));
        for pos in positions {
            let mask = 1u8 << (pos % 8);
            flip(f, pos, mask);
            let what = format!(
                "{} byte {pos} of {len} flipped",
                f.file_name().unwrap().to_string_lossy()
            );
            cases += 1;
            detected += check(&dir, &model, o(), &what) as usize;
            flip(f, pos, mask);
        }
    }
    // Records of overwritten or deleted values are never read: their damage is harmless.
    assert!(detected * 2 > cases, "{detected} of {cases} flips noticed");
    assert!(!check(&dir, &model, o(), "restored"), "restored database");
}

/// Offsets of the records of a log holding only single-fragment records.
fn record_offsets(data: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut pos = 0;
    while pos + 7 <= data.len() {
        let room = 32 * 1024 - pos % (32 * 1024);
        if room < 7 {
            pos += room;
            continue;
        }
        let len = u16::from_le_bytes([data[pos + 4], data[pos + 5]]) as usize;
        assert_eq!(data[pos + 6], 1, "only FULL fragments expected");
        v.push((pos, pos + 7 + len));
        pos += 7 + len;
    }
    assert_eq!(pos, data.len());
    v
}

const WAL_RECORDS: u32 = 30;

/// A database whose WAL holds WAL_RECORDS records, one key each, and nothing else.
fn build_wal_base(dir: &Path) -> (PathBuf, Vec<(usize, usize)>) {
    let db = Db::open(dir, opts()).unwrap();
    for i in 0..WAL_RECORDS {
        db.put(
            &WriteOptions {
                sync: true,
                query_column: None,
                disable_wal: false,
            },
            &key(i),
            &val(i, 0),
        )
        .unwrap();
    }
    db.close().unwrap();
    let wals = files_where(dir, |n| n.ends_with(".log"));
    assert_eq!(wals.len(), 1);
    let data = std::fs::read(&wals[0]).unwrap();
    let recs = record_offsets(&data);
    assert_eq!(recs.len(), WAL_RECORDS as usize);
    (wals[0].clone(), recs)
}

fn wal_model(skip: Option<u32>, upto: u32) -> Model {
    (0..upto)
        .filter(|&i| Some(i) != skip)
        .map(|i| (key(i), val(i, 0)))
        .collect()
}

#[test]
fn wal_mid_log_corruption_strict_fails_skip_corrupt_skips() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let (wal, recs) = build_wal_base(&base);
    let wal_name = wal.file_name().unwrap().to_str().unwrap().to_string();
    let dir = tmp.path().join("work");
    let victim = WAL_RECORDS / 2;
    let (start, end) = recs[victim as usize];
    // Every header byte (crc, length, type) and payload bytes spread over the record.
    let mut positions: Vec<usize> = (start..start + 7).collect();
    positions.extend((start + 7..end).step_by(5));
    positions.push(end - 1);
    for (n, &pos) in positions.iter().enumerate() {
        for mask in [0x01u8, 0x80, 0xff] {
            let what = format!("WAL byte {pos} (record {victim}: {start}..{end}) ^ {mask:#x}");
            copy_dir(&base, &dir);
            flip(&dir.join(&wal_name), pos, mask);
            let strict = Options {
                wal_recovery: WalRecovery::Strict,
                ..opts()
            };
            match Db::open(&dir, strict) {
                Err(Error::Corruption { file, .. }) => {
                    assert!(file.contains(&wal_name), "{what}: error names {file}")
                }
                Err(e) => panic!("{what}: strict open failed with {e}, not corruption"),
                Ok(_) => panic!("{what}: strict open succeeded"),
            }
            let skip = Options {
                wal_recovery: WalRecovery::SkipCorrupt,
                ..opts()
            };
            let db = Db::open(&dir, skip).unwrap_or_else(|e| panic!("{what}: skip open: {e}"));
            assert!(
                db.stats().wal_skipped_records >= 1,
                "{what}: nothing skipped"
            );
            drop(db);
            // The skipped record is gone and every other one is there, also after a
            // second (strict) recovery of the recovered database.
            let model = wal_model(Some(victim), WAL_RECORDS);
            assert!(!check(&dir, &model, opts(), &what), "{what}: read error");
            if n == 0 && mask == 0x01 {
                let db = Db::open(&dir, opts()).unwrap();
                db.put(&WriteOptions::default(), b"after", b"x").unwrap();
                drop(db);
                let mut m = model.clone();
                m.insert(b"after".to_vec(), b"x".to_vec());
                assert!(!check(&dir, &m, opts(), &what));
            }
        }
    }
}

#[test]
fn wal_torn_tail_recovers_a_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let (wal, recs) = build_wal_base(&base);
    let wal_name = wal.file_name().unwrap().to_str().unwrap().to_string();
    let dir = tmp.path().join("work");
    let (start, end) = *recs.last().unwrap();
    for cut in start..=end {
        copy_dir(&base, &dir);
        let p = dir.join(&wal_name);
        let data = std::fs::read(&p).unwrap();
        std::fs::write(&p, &data[..cut]).unwrap();
        let what = format!("WAL cut at {cut} (last record {start}..{end})");
        let db = Db::open(&dir, opts()).unwrap_or_else(|e| panic!("{what}: open: {e}"));
        let torn = cut > start && cut < end;
        assert_eq!(
            db.stats().wal_truncated_bytes > 0,
            torn,
            "{what}: truncated bytes"
        );
        drop(db);
        let upto = if cut == end {
            WAL_RECORDS
        } else {
            WAL_RECORDS - 1
        };
        assert!(
            !check(&dir, &wal_model(None, upto), opts(), &what),
            "{what}"
        );
    }
    // A damaged (not cut) last record: the WAL cannot tell it from a torn write, so the
    // record is dropped or reported; the rest must be intact.
    for pos in (start..end).step_by(3) {
        copy_dir(&base, &dir);
        flip(&dir.join(&wal_name), pos, 0x10);
        let what = format!("WAL last record byte {pos} flipped");
        check(&dir, &wal_model(None, WAL_RECORDS - 1), opts(), &what);
    }
}

#[test]
fn manifest_and_current_corruption_never_give_wrong_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let model = build_base(&base);
    let dir = tmp.path().join("work");
    let manifests = files_where(&base, |n| n.starts_with("MANIFEST-"));
    assert_eq!(manifests.len(), 1);
    let mname = manifests[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let mdata = std::fs::read(&manifests[0]).unwrap();
    let mut reader = LogReader::new(mdata.clone(), mname.clone(), false);
    let mut records = 0;
    while reader.next_record().unwrap().is_some() {
        records += 1;
    }
    assert!(records >= 3, "want a manifest with several edits");
    let stride = (mdata.len() / 200).max(1);
    let mut positions: Vec<usize> = (0..mdata.len()).step_by(stride).collect();
    // Dense over the last record, whose loss would drop the last flush.
    positions.extend(mdata.len().saturating_sub(64)..mdata.len());
    positions.sort_unstable();
    positions.dedup();
    let mut errors = 0;
    for &pos in &positions {
        copy_dir(&base, &dir);
        flip(&dir.join(&mname), pos, 1 << (pos % 8));
        let what = format!("{mname} byte {pos} of {} flipped", mdata.len());
        if let Err(e) = Db::open(&dir, opts()) {
            assert!(
                e.is_corruption(),
                "{what}: open failed with {e}, not corruption"
            );
        }
        errors += check(&dir, &model, opts(), &what) as usize;
    }
    // A flipped bit in a checksummed record is always noticed (none falls into padding).
    assert_eq!(
        errors,
        positions.len(),
        "manifest flips that went unnoticed"
    );
    // CURRENT: every byte flipped, every truncation, a missing manifest.
    let cur = std::fs::read(base.join("CURRENT")).unwrap();
    for pos in 0..cur.len() {
        for mask in [0x01u8, 0x20, 0xff] {
            copy_dir(&base, &dir);
            flip(&dir.join("CURRENT"), pos, mask);
            let what = format!("CURRENT byte {pos} ^ {mask:#x}");
            assert!(check(&dir, &model, opts(), &what), "{what}: no error");
        }
    }
    for cut in 0..cur.len() {
        copy_dir(&base, &dir);
        std::fs::write(dir.join("CURRENT"), &cur[..cut]).unwrap();
        let what = format!("CURRENT cut to {cut} bytes");
        assert!(check(&dir, &model, opts(), &what), "{what}: no error");
    }
    copy_dir(&base, &dir);
    std::fs::remove_file(dir.join(&mname)).unwrap();
    match Db::open(&dir, opts()) {
        Err(e) => assert!(!e.is_no_space(), "{e}"),
        Ok(_) => panic!("opened without its manifest"),
    }
}

#[test]
fn compaction_over_a_corrupt_table_stops_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let model = build_base(&base);
    let prepared = tmp.path().join("prepared");
    copy_dir(&base, &prepared);
    drop(Db::open(&prepared, opts()).unwrap());
    let dir = tmp.path().join("work");
    let tables = files_where(&prepared, |n| n.ends_with(".sst"));
    for (n, t) in tables.iter().enumerate() {
        copy_dir(&prepared, &dir);
        let t = &dir.join(t.file_name().unwrap());
        let data = std::fs::read(t).unwrap();
        let pos = (data.len() / 3 + n * 7) % (data.len() - FOOTER_LEN);
        flip(t, pos, 0x04);
        let what = format!("{} byte {pos} flipped", t.display());
        let r = catch_unwind(AssertUnwindSafe(|| {
            let db = match Db::open(
                &dir,
                Options {
                    background_work: true,
                    ..opts()
                },
            ) {
                Ok(db) => db,
                Err(e) => return assert!(e.is_corruption(), "{what}: open: {e}"),
            };
            // A full compaction reads every table: it must fail, not write a wrong tree.
            match db.compact_range(None, None) {
                Err(e) => assert!(
                    e.is_corruption() || matches!(e, Error::Closed(_)),
                    "{what}: compaction failed with {e}"
                ),
                Ok(()) => panic!("{what}: compaction over a corrupt table succeeded"),
            }
            // A write is refused (the database stopped) or is readable; reads are errors
            // or right.
            if db.put(&WriteOptions::default(), b"new", b"x").is_ok() {
                assert_eq!(db.get(b"new").unwrap().as_deref(), Some(&b"x"[..]));
                db.delete(&WriteOptions::default(), b"new").unwrap();
            }
            for i in 0..NUM_KEYS {
                if let Ok(v) = db.get(&key(i)) {
                    assert_eq!(v.as_ref(), model.get(&key(i)), "{what}: key {i}");
                }
            }
        }));
        if let Err(p) = r {
            std::panic::resume_unwind(p);
        }
        // Repaired, the database holds everything: the failed compaction deleted nothing
        // it still needed.
        if t.exists() {
            flip(t, pos, 0x04);
        }
        assert!(!check(&dir, &model, opts(), &what), "{what}: after repair");
    }
}

#[test]
fn damaged_last_record_of_an_older_wal_is_mid_log_corruption() {
    // Two live WALs: a memtable switch whose flush has not run yet leaves the older one.
    let o = || Options {
        write_buffer_size: 4096,
        background_work: false,
        ..opts()
    };
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let db = Db::open(&base, o()).unwrap();
    let mut i = 0;
    while files_where(&base, |n| n.ends_with(".log")).len() < 2 {
        db.put(
            &WriteOptions {
                sync: true,
                query_column: None,
                disable_wal: false,
            },
            &key(i),
            &val(i, 0),
        )
        .unwrap();
        i += 1;
    }
    for _ in 0..5 {
        db.put(
            &WriteOptions {
                sync: true,
                query_column: None,
                disable_wal: false,
            },
            &key(i),
            &val(i, 0),
        )
        .unwrap();
        i += 1;
    }
    db.close().unwrap();
    assert!(files_where(&base, |n| n.ends_with(".sst")).is_empty());
    let wals = files_where(&base, |n| n.ends_with(".log"));
    assert_eq!(wals.len(), 2);
    let older = wals[0].file_name().unwrap().to_str().unwrap().to_string();
    let data = std::fs::read(&wals[0]).unwrap();
    let (start, end) = *record_offsets(&data).last().unwrap();
    let dir = tmp.path().join("work");
    for pos in [start, start + 4, start + 7, (start + end) / 2, end - 1] {
        copy_dir(&base, &dir);
        flip(&dir.join(&older), pos, 0x02);
        let what = format!("{older} (older WAL) last record byte {pos} flipped");
        match Db::open(&dir, o()) {
            Err(Error::Corruption { file, .. }) => assert!(file.contains(&older), "{what}: {file}"),
            Err(e) => panic!("{what}: strict open failed with {e}"),
            Ok(db) => {
                // Without an error, the later writes may not be there without the earlier.
                drop(db);
                let model = wal_model(None, i);
                check(&dir, &model, o(), &what);
            }
        }
        let skip = Options {
            wal_recovery: WalRecovery::SkipCorrupt,
            ..o()
        };
        let db = Db::open(&dir, skip).unwrap_or_else(|e| panic!("{what}: skip open: {e}"));
        assert!(
            db.stats().wal_skipped_records >= 1,
            "{what}: nothing skipped"
        );
    }
}
