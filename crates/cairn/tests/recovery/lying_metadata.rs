//! Metadata that checksums but lies: a manifest whose records are intact but whose content
//! is impossible (keys out of order, sizes past the file, sequence numbers backwards,
//! missing tiers, run limits of zero) gives an error at open or at read, never a panic and
//! never a wrong answer.

use std::path::Path;

use cairn::log::{LogReader, LogWriter};
use cairn::storage::{FileKind, StorageEnv};
use cairn::version::AddedFile;
use cairn::version::VersionEdit;
use cairn::{Db, Options, WriteOptions};

fn opts() -> Options {
    Options {
        background_work: false,
        ..Options::small()
    }
}

/// A database with two tables in it; returns the manifest's records.
fn build(dir: &Path) -> Vec<VersionEdit> {
    let db = Db::open(dir, opts()).unwrap();
    let wo = WriteOptions::default();
    for round in 0..2u8 {
        for i in 0..300u32 {
            db.put(&wo, format!("k{i:05}").as_bytes(), &[b'a' + round; 50])
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.close().unwrap();
    // A reopen starts a new manifest whose first record describes both tables.
    Db::open(dir, opts()).unwrap().close().unwrap();
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let data = std::fs::read(dir.join(current.trim())).unwrap();
    let mut r = LogReader::new(data, "manifest", false);
    let mut edits = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        edits.push(VersionEdit::decode(&rec).unwrap());
    }
    edits
}

/// Writes `edits` as a new manifest with valid checksums and points CURRENT at it.
fn rewrite(dir: &Path, edits: &[VersionEdit]) {
    let env = StorageEnv::new(dir, &[], 0.0).unwrap();
    let path = dir.join("MANIFEST-999999");
    let mut w = LogWriter::new(env.create(&path, FileKind::Manifest, 0, None).unwrap());
    for e in edits {
        w.add_record(&e.encode()).unwrap();
    }
    w.sync().unwrap();
    std::fs::write(dir.join("CURRENT"), "MANIFEST-999999\n").unwrap();
}

/// Opens and reads everything; must end in an error somewhere, or in the right answers.
fn open_and_read(dir: &Path) -> Result<(), cairn::Error> {
    let db = Db::open(dir, opts())?;
    for i in 0..300u32 {
        let v = db.get(format!("k{i:05}").as_bytes())?;
        assert!(
            v.is_none() || v == Some(vec![b'b'; 50]) || v == Some(vec![b'a'; 50]),
            "a lying manifest gave a value that was never written"
        );
    }
    for item in db.scan::<&[u8], _>(..)? {
        item?;
    }
    db.compact_range(None, None)?;
    db.close()
}

type Lie = (&'static str, fn(&mut VersionEdit));

#[test]
fn impossible_manifest_content_is_an_error_not_a_panic() {
    let lies: Vec<Lie> = vec![
        ("smallest key after largest", |e| {
            let d = &mut e.added[0].file;
            std::mem::swap(&mut d.smallest, &mut d.largest);
        }),
        ("size past the end of the file", |e| {
            e.added[0].file.size *= 1000;
        }),
        ("size that overflows", |e| e.added[0].file.size = u64::MAX),
        ("size of zero", |e| e.added[0].file.size = 0),
        ("min_seq above max_seq", |e| {
            let d = &mut e.added[0].file;
            d.min_seq = d.max_seq + 10;
        }),
        ("a tier that does not exist", |e| e.added[0].file.tier = 7),
        ("run limit of zero", |e| e.policies[1].state.k = 0),
        ("run limit beyond reason", |e| {
            e.policies[1].state.k = u32::MAX
        }),
        ("a file number used twice", |e| {
            let mut d = e.added[0].file.clone();
            d.smallest = b"zzzz\x00\x00\x00\x00\x00\x00\x00\x01".to_vec();
            d.largest = b"zzzz\x00\x00\x00\x00\x00\x00\x00\x01".to_vec();
            e.added.push(AddedFile {
                cf: cairn::CfId::DEFAULT,
                level: 1,
                run: 999_999,
                file: d,
            });
        }),
        ("overlapping files in one run", |e| {
            let mut a = e.added[0].clone();
            a.file.file_no = e.added[1].file.file_no;
            e.added[1] = a;
        }),
        ("last sequence number behind the tables", |e| {
            e.last_seq = Some(1)
        }),
        ("a file from a column family never created", |e| {
            e.added[0].cf = cairn::CfId::new(42)
        }),
        ("a key too short to be an internal key", |e| {
            e.added[0].file.smallest = b"k".to_vec();
        }),
    ];
    let mut errors = 0;
    for (name, lie) in lies {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let mut edits = build(&dir);
        let snap = edits
            .iter_mut()
            .find(|e| e.added.len() >= 2 && e.policies.len() >= 2)
            .expect("a snapshot record with both tables");
        lie(snap);
        rewrite(&dir, &edits);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| open_and_read(&dir)));
        match r {
            Ok(Err(_)) => errors += 1,
            Ok(Ok(())) => {} // harmless lie (e.g. a sequence number the WAL raises again)
            Err(_) => panic!("{name}: panicked"),
        }
    }
    assert!(errors >= 8, "most lies must be caught: {errors}");
}
