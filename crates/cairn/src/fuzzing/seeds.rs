//! Seeds of every fuzz target: small valid inputs made with the engine's own encoders.

use super::*;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::version::{AddedFile, CfAdded, CompactPointer, DeletedFile, LevelPolicy, SealedRun};

/// A LightGBM text model over Leaper's 18 features: a stump on `r1` (categorical when
/// `categorical`) and a constant tree.
pub(super) fn stump_text(leaf: f64, categorical: bool) -> String {
    let (num_cat, dt, threshold, cats) = if categorical {
        (1, 1, "0", "cat_boundaries=0 1\ncat_threshold=10\n")
    } else {
        (0, 2, "0.5", "")
    };
    format!(
        "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
         max_feature_idx=17\nobjective=binary sigmoid:1\nfeature_names={}\n\
         feature_infos={}\ntree_sizes=1 1\n\n\
         Tree=0\nnum_leaves=2\nnum_cat={num_cat}\nsplit_feature=0\nsplit_gain=1\n\
         threshold={threshold}\ndecision_type={dt}\nleft_child=-1\nright_child=-2\n\
         leaf_value=-2 {leaf}\n{cats}is_linear=0\nshrinkage=1\n\n\
         Tree=1\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\n\
         left_child=\nright_child=\nleaf_value=0.5\nis_linear=0\nshrinkage=0.05\n\n\
         end of trees\n\nfeature_importances:\nr1=1\n",
        FEATURE_NAMES.join(" "),
        ["none"; 18].join(" ")
    )
}

pub(super) fn leaper_meta(k: u32) -> LeaperMeta {
    LeaperMeta {
        version: 1,
        range_width: 40,
        fine_range_width: 10,
        key_offset: 0,
        slot_ms: 1000,
        k,
        threshold: 0.5,
        history_slots: 6,
        gamma: 3,
        features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
        precursors: [(7, vec![3, 9, 1]), (12, vec![7])].into_iter().collect(),
        trained_unix_ms: 1_700_000_000_000,
        trace_rows: 1234,
        report: serde_json::json!({"auc": [0.9, 0.8]}),
    }
}

pub(super) fn sample_edit() -> VersionEdit {
    VersionEdit {
        format_version: Some(1),
        log_number: Some(FileNo::new(7)),
        next_file_no: Some(FileNo::new(99)),
        last_seq: Some(1 << 40),
        next_run_id: Some(3),
        cf_added: vec![CfAdded {
            id: CfId::new(1),
            name: "users".into(),
        }],
        cf_dropped: vec![CfId::new(4)],
        deleted: vec![DeletedFile {
            cf: CfId::DEFAULT,
            level: 1,
            file_no: FileNo::new(12),
        }],
        added: vec![AddedFile {
            cf: CfId::DEFAULT,
            level: 2,
            run: 5,
            file: FileDesc {
                file_no: FileNo::new(13),
                tier: 1,
                size: 4096,
                smallest: make_internal_key(b"a", 1, ValueKind::Value),
                largest: make_internal_key(b"z", 9, ValueKind::Value),
                num_entries: 10,
                min_seq: 1,
                max_seq: 9,
                vlog_refs: vec![(FileNo::new(3), 1000), (FileNo::new(8), 20)],
                range_dels: 3,
            },
        }],
        sealed: vec![SealedRun {
            cf: CfId::DEFAULT,
            level: 2,
            run: 4,
        }],
        policies: vec![LevelPolicy {
            cf: CfId::DEFAULT,
            level: 2,
            state: PolicyState {
                k: 3,
                pending_k: Some(1),
                draining: true,
            },
        }],
        compact_pointers: vec![CompactPointer {
            cf: CfId::DEFAULT,
            level: 1,
            key: b"m".to_vec(),
        }],
    }
}

pub(super) fn sample_batch() -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(b"alpha", b"one").expect("small key");
    b.put_cf(CfId::new(3), b"beta", &[7u8; 40])
        .expect("small key");
    b.delete(b"gamma").expect("small key");
    b.delete_range(b"d", b"f").expect("ordered range");
    b
}

/// Log bytes holding `records`, written by the engine's log writer.
pub(super) fn log_bytes(records: &[Vec<u8>]) -> Vec<u8> {
    let s = new_scratch();
    let path = s.dir.join("000001.log");
    let f = s
        .env
        .create(&path, FileKind::Wal, 0, None)
        .expect("create scratch log");
    let mut w = LogWriter::new(f);
    for r in records {
        w.add_record(r).expect("append to scratch log");
    }
    w.flush().expect("flush scratch log");
    std::fs::read(&path).expect("read scratch log")
}

/// Small valid inputs for `target`, made with the engine's encoders (the replay test
/// mutates them, and `fuzz/corpus` starts from them). Empty for an unknown target.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let entries = fixture_entries();
    let small: Vec<_> = entries.iter().step_by(7).take(60).cloned().collect();
    match target {
        "block" => block_seeds(&small),
        "index_block" => index_block_seeds(&small),
        "bloom" => {
            let mut b = BloomBuilder::new(10.0, false);
            let mut local = BloomBuilder::new(10.0, true);
            for (k, _) in &small {
                b.add(crate::types::user_key(k));
                local.add(crate::types::user_key(k));
            }
            vec![
                b.finish(),
                local.finish(),
                BloomBuilder::new(3.0, false).finish(),
            ]
        }
        "table" => vec![
            build_table(&small, seed_table_opts(128, 10.0)),
            build_table(&small[..5], seed_table_opts(4096, 0.0)),
            build_table(&[], seed_table_opts(4096, 10.0)),
            build_table(
                &small,
                TableBuildOptions {
                    compression: Compression::Lz4,
                    ..seed_table_opts(512, 10.0)
                },
            ),
            build_table(
                &small,
                TableBuildOptions {
                    compression: Compression::ZSTD,
                    ..seed_table_opts(512, 10.0)
                },
            ),
            build_table_with(
                &small,
                seed_table_opts(512, 10.0),
                Some(&sample_range_dels(&small)),
            ),
            build_table_with(
                &[],
                seed_table_opts(512, 10.0),
                Some(&sample_range_dels(&small)),
            ),
        ],
        "compressed_block" => compressed_block_seeds(&small),
        "range_del_block" => vec![
            sample_range_dels(&small).encode(),
            crate::range_del::RangeDels::default().encode(),
        ],
        "log_reader" => {
            let records = vec![
                sample_batch().encode(42),
                sample_edit().encode(),
                Vec::new(),
            ];
            let mut spanning = records.clone();
            spanning.push(vec![0x5a; BLOCK_SIZE + 100]);
            vec![log_bytes(&records), log_bytes(&spanning)]
        }
        "write_batch" => vec![
            sample_batch().encode(42),
            WriteBatch::new().encode(0),
            sample_batch().encode(MAX_SEQ - 3),
        ],
        "version_edit" => vec![
            sample_edit().encode(),
            VersionEdit {
                format_version: Some(1),
                next_file_no: Some(FileNo::new(2)),
                cf_added: vec![CfAdded {
                    id: CfId::DEFAULT,
                    name: "default".into(),
                }],
                ..Default::default()
            }
            .encode(),
        ],
        "vlog_record" => {
            let mut file = vlog_format::header().to_vec();
            for (k, v) in small.iter().take(4) {
                file.extend_from_slice(&vlog_format::encode_record(k, v));
            }
            vec![
                vlog_format::encode_record(b"key", b"some value"),
                vlog_format::encode_record(b"", &[9; 300]),
                file,
            ]
        }
        "value_pointer" => vec![
            ValuePointer {
                file_no: FileNo::new(7),
                offset: 12345,
                len: 300,
            }
            .encode(),
            ValuePointer {
                file_no: FileNo::new(u64::MAX),
                offset: 12,
                len: u32::MAX,
            }
            .encode(),
        ],
        "table_properties" => table_properties_seeds(&small),
        "plr_model" => {
            let fx = plr_fixture();
            let users: Vec<&[u8]> = fx
                .entries
                .iter()
                .map(|(k, _)| crate::types::user_key(k))
                .collect();
            [1, 4, 32]
                .into_iter()
                .map(|delta| model_file::encode(&LearnedIndex::train(&users, delta), fx.file_size))
                .collect()
        }
        "leaper_bundle" => vec![
            LeaperModel::encode(&leaper_meta(1), &[stump_text(1.0, false)]),
            LeaperModel::encode(
                &leaper_meta(2),
                &[stump_text(3.0, true), stump_text(-1.0, false)],
            ),
        ],
        "gbdt_text" => vec![stump_text(1.0, false), stump_text(2.0, true)]
            .into_iter()
            .map(String::into_bytes)
            .collect(),
        "access_trace" => access_trace_seeds(),
        "record_trace" => record_trace_seeds(),
        "cold_set" => {
            use crate::learned::ColdSet;
            let keys = (0..6).map(|i| format!("user{i:04}").into_bytes()).collect();
            vec![
                ColdSet::new(CfId::DEFAULT, 5000, 2.5e6, "rsf", keys).encode(),
                ColdSet::new(CfId::new(3), 0, 0.0, "lru", Vec::new()).encode(),
            ]
        }
        _ => Vec::new(),
    }
}

/// The build options of the seed tables.
pub(super) fn seed_table_opts(block_size: usize, bloom_bits_per_key: f64) -> TableBuildOptions {
    TableBuildOptions {
        block_size,
        bloom_bits_per_key,
        fixed_width_entries: false,
        cache_local_filter: true,
        compression: Compression::None,
    }
}

/// Blocks: the current layout, one entry, and layout 1 (whole keys, u32 offsets).
pub(super) fn block_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let mut b = BlockBuilder::default();
    for (k, v) in small.iter().take(20) {
        b.add(k, v);
    }
    let mut one = BlockBuilder::default();
    one.add(&small[0].0, b"");
    // Layout 1, as tables written before key prefixes hold: entries with whole
    // keys, u32 offsets, a plain count.
    let mut v1 = Vec::new();
    let mut offsets = Vec::new();
    for (k, v) in small.iter().take(8) {
        offsets.extend_from_slice(&(v1.len() as u32).to_le_bytes());
        put_varint(&mut v1, k.len() as u64);
        put_varint(&mut v1, v.len() as u64);
        v1.extend_from_slice(k);
        v1.extend_from_slice(v);
    }
    v1.extend_from_slice(&offsets);
    v1.extend_from_slice(&8u32.to_le_bytes());
    vec![b.finish(), one.finish(), v1]
}

/// The block seeds compressed by each codec, behind their codec byte.
pub(super) fn compressed_block_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for raw in block_seeds(small) {
        for c in [Compression::Lz4, Compression::ZSTD] {
            if let Some(p) = compress(c, &raw) {
                out.push([&[c.code()][..], &p].concat());
            }
        }
    }
    out
}

/// Index blocks of a small table, with the data end and entry count before them.
pub(super) fn index_block_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let bytes = build_table(small, seed_table_opts(128, 0.0));
    let file = scratch_files(&bytes, 1).pop().expect("one file");
    let t = Table::open(file, FileNo::new(1), None).expect("open seed table");
    let idx = t.index().expect("a pinned index");
    let list: Vec<IndexEntry> = (0..idx.num_blocks())
        .map(|i| idx.block(i).clone())
        .collect();
    let data_end = list
        .last()
        .and_then(|e| e.handle.end_with_trailer())
        .unwrap_or(0);
    let with_prefix = |entries: &[IndexEntry], end: u64, n: u64| {
        let mut out = Vec::new();
        put_varint(&mut out, end);
        put_varint(&mut out, n);
        out.extend_from_slice(&FenceIndex::encode(entries));
        out
    };
    vec![
        with_prefix(&list, data_end, t.properties().num_entries),
        with_prefix(&[], 0, 0),
    ]
}

/// Table properties, without and with a column family.
pub(super) fn table_properties_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let p = TableProperties {
        num_entries: 10,
        num_deletions: 2,
        num_data_blocks: 3,
        raw_key_bytes: 400,
        raw_value_bytes: 1 << 40,
        smallest: small[0].0.clone(),
        largest: small[5].0.clone(),
        min_seq: 4,
        max_seq: 99,
        column_family: None,
        range_dels: None,
    };
    let cf = TableProperties {
        column_family: Some((CfId::new(7), "logs".into())),
        ..p.clone()
    };
    let dels = TableProperties {
        range_dels: Some((2, crate::table::BlockHandle::new(300, 40))),
        ..cf.clone()
    };
    vec![p.encode(), cf.encode(), dels.encode()]
}

/// An access trace with rows and transfers, and an empty one.
pub(super) fn access_trace_seeds() -> Vec<Vec<u8>> {
    use crate::access::{TraceHeader, TraceRow, TransferRow};
    let h = TraceHeader {
        cf_id: CfId::new(3),
        key_offset: 2,
        range_width: 10,
        slot_ms: 1000,
        sample_p: 0.25,
        start_unix_ms: 1_700_000_000_000,
    };
    let rows: Vec<TraceRow> = (0..6)
        .map(|i| TraceRow {
            range: i % 3,
            slot: i / 3,
            reads: i as u32 * 2,
            writes: 1,
        })
        .collect();
    let transfers = vec![TransferRow {
        to: 1,
        from: 0,
        count: 4,
    }];
    vec![
        crate::access::trace::encode(&h, &rows, &transfers),
        crate::access::trace::encode(&h, &[], &[]),
    ]
}

/// A record trace of four records, and an empty one.
pub(super) fn record_trace_seeds() -> Vec<Vec<u8>> {
    use crate::access::record_trace::{
        encode, tag_time, RecordEntry, RecordTraceHeader, FLAG_INSERT_SEEN,
    };
    let h = RecordTraceHeader {
        cf_id: CfId::new(1),
        sample_rate: 1.0,
        day_ms: 1000,
        start_ms: 0,
        end_ms: 5000,
        max_times: 4,
        point_reads: 9,
        writes: 4,
        scans: 1,
    };
    let records: Vec<RecordEntry> = (0..4u64)
        .map(|i| RecordEntry {
            key: format!("user{i:04}").into_bytes(),
            insert_ms: i * 100,
            flags: FLAG_INSERT_SEEN,
            last_update_ms: i * 100 + 50,
            times: vec![
                tag_time(i * 100, true, None),
                tag_time(i * 100 + 50, true, Some(i as u8)),
                tag_time(2000, false, None),
            ],
            days: vec![(0, 0, 2), (2, 1, 0)],
        })
        .collect();
    vec![encode(&h, &records), encode(&h, &[])]
}
