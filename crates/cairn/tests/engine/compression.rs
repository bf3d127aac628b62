//! Block compression in a database: each level's tables stored as its setting says (the
//! default leaves levels 0 and 1 raw, compresses deeper ones with LZ4 and the bottommost
//! with Zstandard), tables of different settings read back side by side, and compressed
//! data takes less space.

use std::path::Path;

use cairn::storage::{FileKind, StorageEnv};
use cairn::table::Table;
use cairn::{Compression, Db, Options, WriteOptions};

use crate::support::{contents, key8, Model};

/// A value that compresses to about half: 40 bytes of the key's digits, written twice.
fn value(i: u32, round: u32) -> Vec<u8> {
    let half: Vec<u8> = format!("{i:08}-{round:04}-")
        .bytes()
        .cycle()
        .take(40)
        .map(|b| b ^ (i as u8).wrapping_mul(31))
        .collect();
    [half.clone(), half].concat()
}

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        level1_bytes: 128 << 10,
        size_ratio: 4,
        num_levels: 4,
        background_work: false,
        ..Options::small()
    }
}

/// The codec of every data block of the table at `path` (0: stored raw).
fn block_codecs(path: &Path) -> Vec<u8> {
    let env = StorageEnv::new(path.parent().unwrap(), &[], 0.0).unwrap();
    let file = env
        .open_read(path, FileKind::Table, 0, Some(0), false)
        .unwrap();
    let t = Table::open(file, cairn::FileNo::new(1), None).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let index = t.index().unwrap();
    (0..index.num_blocks())
        .map(|i| {
            let h = index.block(i).handle;
            bytes[(h.offset + h.size) as usize] >> 4
        })
        .collect()
}

/// Writes `n` keys (each `rounds` times) and returns the model.
fn fill(db: &Db, n: u32, rounds: u32) -> Model {
    let mut model = Model::new();
    let wo = WriteOptions::default();
    for round in 0..rounds {
        for i in 0..n {
            let k = key8(i.wrapping_mul(2_654_435_761) % n);
            let v = value(i, round);
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
    }
    model
}

fn table_bytes(dir: &Path, opts: &Options) -> u64 {
    let info = Db::inspect(dir, opts).unwrap();
    info.column_families[0].tables.iter().map(|t| t.size).sum()
}

#[test]
fn each_level_is_stored_as_its_setting_says() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let model = fill(&db, 6000, 4);
    // A last flush that stays in level 0.
    db.put(&WriteOptions::default(), b"late", b"raw in level 0")
        .unwrap();
    db.flush().unwrap();
    assert_eq!(contents(&db, None).len(), model.len() + 1);
    db.close().unwrap();

    let info = Db::inspect(dir.path(), &opts).unwrap();
    let tables = &info.column_families[0].tables;
    let deepest = tables.iter().map(|t| t.level).max().unwrap();
    assert!(
        deepest >= 2,
        "want data below level 1, deepest is {deepest}"
    );
    let mut seen = std::collections::BTreeSet::new();
    for t in tables {
        let want = opts.compression_for_level(t.level, deepest);
        let codecs = block_codecs(&t.path);
        let packed = codecs.iter().filter(|&&c| c != 0).count();
        match want {
            // Nothing at a raw level is compressed.
            Compression::None => assert_eq!(packed, 0, "level {} {codecs:?}", t.level),
            // The values shrink by half: every block of a compressed level is.
            _ => assert_eq!(packed, codecs.len(), "level {} {codecs:?}", t.level),
        }
        seen.insert(want.name());
    }
    assert!(seen.contains("none") && seen.contains("zstd"), "{seen:?}");
}

#[test]
fn tables_of_different_settings_read_back_together() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    // The same database reopened under each setting in turn: every table written under
    // one setting must read back under the next.
    let settings = [
        Compression::Lz4,
        Compression::None,
        Compression::ZSTD,
        Compression::Zstd { level: 19 },
        Compression::Lz4,
    ];
    for (round, c) in settings.into_iter().enumerate() {
        let opts = options().with_compression(c);
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(contents(&db, None), model, "after reopening as {c:?}");
        let wo = WriteOptions::default();
        for i in 0..3000u32 {
            let k = key8((i * 7 + round as u32 * 1000) % 9000);
            let v = value(i, round as u32);
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
        db.run_background_work().unwrap();
        assert_eq!(contents(&db, None), model, "written as {c:?}");
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(contents(&db, None), model, "after a full compaction");
}

#[test]
fn compressed_data_takes_less_space() {
    let mut sizes = Vec::new();
    for c in [Compression::None, Compression::Lz4, Compression::ZSTD] {
        let dir = tempfile::tempdir().unwrap();
        let opts = options().with_compression(c);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let model = fill(&db, 5000, 1);
        db.compact_range(None, None).unwrap();
        assert_eq!(contents(&db, None), model);
        db.close().unwrap();
        sizes.push(table_bytes(dir.path(), &opts));
    }
    let [raw, lz4, zstd] = sizes[..] else {
        unreachable!()
    };
    // Values are half redundant and keys share prefixes: both codecs save well over 1/8.
    assert!(lz4 * 8 < raw * 7, "lz4 {lz4} bytes, raw {raw}");
    assert!(zstd * 8 < raw * 7, "zstd {zstd} bytes, raw {raw}");
}
