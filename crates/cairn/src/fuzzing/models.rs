//! Fuzz targets for model files: Bourbon's `.plr`, Leaper's bundle and its LightGBM text
//! models.

use super::*;
use crate::ids::CfId;
use crate::ids::FileNo;

/// An entry: internal key and value.
pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// A table built once per process, with a cache, for the learned-index targets.
pub(super) struct PlrFixture {
    pub(super) table: Arc<Table>,
    pub(super) entries: Vec<Entry>,
    pub(super) file_size: u64,
    /// Lookup keys and the fence pointers' answer (first entry >= the key).
    pub(super) lookups: Vec<(Vec<u8>, Option<Entry>)>,
}

/// Entries of the fixture table, in internal order: 8-byte big-endian numbers with
/// growing gaps, short keys, a run of keys sharing their first 8 bytes (they collide in
/// the model), versions and tombstones.
pub(super) fn fixture_entries() -> Vec<Entry> {
    let mut users: Vec<Vec<u8>> = (0..400u64)
        .map(|i| (i * i * 13 + i).to_be_bytes().to_vec())
        .collect();
    users.extend((0..40u32).map(|i| [&b"collide!"[..], &i.to_be_bytes()].concat()));
    users.extend((1..20u8).map(|i| vec![i]));
    users.push(b"\xff\xff\xff\xff\xff\xff\xff\xffz".to_vec());
    users.sort();
    users.dedup();
    let mut out = Vec::new();
    for (i, u) in users.iter().enumerate() {
        let versions = if i % 7 == 0 { 3 } else { 1 };
        for v in (0..versions).rev() {
            let seq = (i * 3 + v + 1) as u64;
            let kind = if i % 11 == 5 && v == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let value = match kind {
                ValueKind::Deletion => Vec::new(),
                _ => format!("value-{i}-{v}").into_bytes(),
            };
            out.push((make_internal_key(u, seq, kind), value));
        }
    }
    out
}

/// Builds a table of `entries` in a fresh scratch directory and returns its bytes.
pub(super) fn build_table(entries: &[Entry], opts: TableBuildOptions) -> Vec<u8> {
    build_table_with(entries, opts, None)
}

/// A table of `entries`, holding the range deletions `dels` too when given.
pub(super) fn build_table_with(
    entries: &[Entry],
    opts: TableBuildOptions,
    dels: Option<&crate::range_del::RangeDels>,
) -> Vec<u8> {
    let s = new_scratch();
    let path = s.dir.join("000001.sst");
    let f = s
        .env
        .create(&path, FileKind::Table, 0, Some(0))
        .expect("create fixture table");
    let mut b = TableBuilder::new(f, opts);
    for (k, v) in entries {
        b.add(k, v).expect("fixture entries are in order");
    }
    if let Some(d) = dels {
        b.set_column_family(CfId::DEFAULT, "default");
        b.add_range_dels(d);
    }
    b.finish().expect("finish fixture table");
    std::fs::read(&path).expect("read fixture table")
}

/// Range deletions over the fixture's keys, overlapping one another.
pub(super) fn sample_range_dels(small: &[Entry]) -> crate::range_del::RangeDels {
    let k = |i: usize| crate::types::user_key(&small[i % small.len()].0).to_vec();
    crate::range_del::RangeDels::new([
        crate::range_del::RangeTombstone {
            start: k(2),
            end: k(9),
            seq: 70,
        },
        crate::range_del::RangeTombstone {
            start: k(5),
            end: k(20),
            seq: 30,
        },
        crate::range_del::RangeTombstone {
            start: k(30),
            end: vec![0xff; 3],
            seq: 90,
        },
    ])
}

pub(super) fn plr_fixture() -> &'static PlrFixture {
    static FIXTURE: OnceLock<PlrFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let entries = fixture_entries();
        let bytes = build_table(
            &entries,
            TableBuildOptions {
                block_size: 256,
                bloom_bits_per_key: 10.0,
                fixed_width_entries: false,
                cache_local_filter: true,
                compression: Compression::None,
            },
        );
        let file = scratch_files(&bytes, 1).pop().expect("one file");
        let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(4 << 20, 1));
        let table =
            Arc::new(Table::open(file, FileNo::new(1), Some(cache)).expect("open fixture table"));
        let answer = |k: &[u8]| {
            let i = entries.partition_point(|(e, _)| cmp_internal(e, k).is_lt());
            entries.get(i).cloned()
        };
        let mut lookups = Vec::new();
        for (i, (k, _)) in entries.iter().enumerate().step_by(9) {
            let u = crate::types::user_key(k);
            let seq = match i % 3 {
                0 => MAX_SEQ,
                1 => (i * 3) as u64,
                _ => 0,
            };
            for l in [
                make_lookup_key(u, seq),
                make_lookup_key(&[u, &[0]].concat(), MAX_SEQ),
            ] {
                lookups.push((l.clone(), answer(&l)));
            }
        }
        for u in [
            &b""[..],
            &[0xff; 12][..],
            b"collide!",
            b"collide!\0\0\0\x07\0",
        ] {
            let l = make_lookup_key(u, MAX_SEQ);
            lookups.push((l.clone(), answer(&l)));
        }
        PlrFixture {
            file_size: bytes.len() as u64,
            table,
            entries,
            lookups,
        }
    })
}

/// The model file with its table-identity fields set to the fixture's and its checksum
/// recomputed.
pub(super) fn pin_model(data: &[u8], num_entries: u64, file_size: u64) -> Vec<u8> {
    let mut b = data.to_vec();
    if b.len() >= 8 + 4 + 8 + 8 + 4 {
        b[12..20].copy_from_slice(&num_entries.to_le_bytes());
        b[20..28].copy_from_slice(&file_size.to_le_bytes());
        let n = b.len() - 4;
        let crc = crc32c::crc32c(&b[..n]);
        b[n..].copy_from_slice(&crc.to_le_bytes());
    }
    b
}

/// A Bourbon model file (`NNNNNN.plr`) for a fixed table: decode it (as is, and with its
/// table fields and checksum fixed up) and look keys up through it; whatever the model
/// says, every answer must be the fence pointers' one.
pub fn plr_model(data: &[u8]) {
    // As a model of whatever table it names (no lookups).
    if let (Some(n), Some(size)) = (u64_le(data, 12), u64_le(data, 20)) {
        if let Some(m) = typed("model file", model_file::decode(data, n, size, NAME)) {
            for k in keys_from(data) {
                let _ = m.window(&make_lookup_key(&k, MAX_SEQ));
            }
        }
    }
    let fx = plr_fixture();
    let n = fx.entries.len() as u64;
    for bytes in [data.to_vec(), pin_model(data, n, fx.file_size)] {
        let Some(m) = typed(
            "model file",
            model_file::decode(&bytes, n, fx.file_size, NAME),
        ) else {
            continue;
        };
        check_learned(fx, &m, data);
    }
}

pub(super) fn check_learned(fx: &PlrFixture, m: &LearnedIndex, data: &[u8]) {
    let mut trace = ReadTrace::default();
    let fence = fx.table.index().expect("opened tables keep their index");
    let mut read = |b, _| fx.table.read_block(b, &mut trace);
    for (k, want) in &fx.lookups {
        match m.lookup(&fence, k, &mut read) {
            Ok(LearnedLookup::Found(got)) => {
                assert_eq!(
                    &got.map(|p| p.to_entry()),
                    want,
                    "learned lookup of {k:?} differs from the fence's"
                );
            }
            Ok(LearnedLookup::Fallback) => {}
            Err(e) => panic!("learned lookup failed on a sound table: {e}"),
        }
    }
    for k in keys_from(data) {
        let l = make_lookup_key(&k, MAX_SEQ);
        let i = fx
            .entries
            .partition_point(|(e, _)| cmp_internal(e, &l).is_lt());
        let want = fx.entries.get(i).cloned();
        if let Ok(LearnedLookup::Found(got)) = m.lookup(&fence, &l, &mut read) {
            assert_eq!(
                got.map(|p| p.to_entry()),
                want,
                "learned lookup of {l:?} differs from the fence's"
            );
        }
        if let Some((lo, hi)) = m.window(&l) {
            assert!(lo <= hi && hi < m.num_entries().max(1));
        }
    }
    let _ = (m.num_segments(), m.memory(), m.lookups(), m.fallbacks());
}

/// The bundle with its CRC32C line replaced (or added).
pub(super) fn reseal_bundle(data: &[u8]) -> Vec<u8> {
    const CRC_LINE: usize = "CRC32C ".len() + 8 + 1;
    let body = match data.len().checked_sub(CRC_LINE) {
        Some(n) if data[n..].starts_with(b"CRC32C ") => &data[..n],
        _ => data,
    };
    let mut b = body.to_vec();
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(format!("CRC32C {crc:08x}\n").as_bytes());
    b
}

/// Feature rows to evaluate a model on: zeros, NaN, infinities, values near LightGBM's
/// zero threshold, negative and category-like values, and values taken from the input.
pub(super) fn rows(n: usize, data: &[u8]) -> Vec<Vec<f64>> {
    let mut rows: Vec<Vec<f64>> = [0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-36, -3.5]
        .iter()
        .map(|&v| vec![v; n])
        .collect();
    rows.push((0..n).map(|i| (i % 40) as f64).collect());
    rows.push(
        (0..n)
            .map(|i| {
                let b = data.get(i % data.len().max(1)).copied().unwrap_or(0);
                f64::from(b) - 64.0
            })
            .collect(),
    );
    rows
}

/// A Leaper model bundle (as is and resealed): parse, read the metadata, evaluate every
/// model on a few rows.
pub fn leaper_bundle(data: &[u8]) {
    for bytes in [data.to_vec(), reseal_bundle(data)] {
        let Some(m) = typed("leaper bundle", LeaperModel::parse(&bytes, NAME)) else {
            continue;
        };
        assert_eq!(m.models().len(), m.meta().k as usize);
        for model in m.models() {
            assert_eq!(model.num_features(), NUM_FEATURES);
            for row in rows(NUM_FEATURES, data) {
                let _ = model.predict(&row);
            }
        }
        let ranges: Vec<u64> = m.meta().precursors.keys().take(8).copied().collect();
        for r in ranges.into_iter().chain([0, u64::MAX]) {
            assert!(m.precursors(r).len() <= m.meta().gamma as usize);
        }
    }
}

/// A LightGBM text model: parse (bytes that are not UTF-8 are read lossily), evaluate on
/// a few rows.
pub fn gbdt_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Some(m) = typed("gbdt model", GbdtModel::parse(&text)) else {
        return;
    };
    assert_eq!(m.feature_names().len(), m.num_features());
    let _ = (m.num_trees(), m.objective());
    for row in rows(m.num_features(), data) {
        let _ = m.predict_raw(&row);
        let _ = m.predict(&row);
    }
}
