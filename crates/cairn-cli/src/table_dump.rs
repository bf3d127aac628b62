//! `cairn dump-table`: one table file, through the engine's own reader (so every block
//! shown has passed its checksum), like RocksDB's `sst_dump`.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use cairn::iter::InternalIterator;
use cairn::storage::{FileKind, StorageEnv};
use cairn::table::Table;
use cairn::types::{parse_internal_key, ValueKind};
use cairn::vlog::ValuePointer;
use serde::Serialize;

use crate::codec::Encoding;
use crate::fmt;
use crate::EncodingArgs;

#[derive(Serialize)]
struct Dump {
    file: String,
    file_no: u64,
    size: u64,
    properties: Props,
    index: Vec<IndexOut>,
    filter: Option<FilterOut>,
    learned_model: ModelOut,
    /// The range-deletion block, fragmented: `[start, end)` and the sequence numbers of
    /// the deletions covering it, newest first.
    range_deletions: Vec<RangeDelOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<Vec<EntryOut>>,
}

#[derive(Serialize)]
struct RangeDelOut {
    start: String,
    end: String,
    seqs: Vec<u64>,
}

#[derive(Serialize)]
struct Props {
    entries: u64,
    deletions: u64,
    data_blocks: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
    smallest: Option<KeyOut>,
    largest: Option<KeyOut>,
    min_seq: u64,
    max_seq: u64,
    column_family: Option<(u32, String)>,
}

/// An internal key split into its parts.
#[derive(Serialize)]
struct KeyOut {
    key: String,
    seq: u64,
    kind: &'static str,
}

#[derive(Serialize)]
struct IndexOut {
    block: usize,
    offset: u64,
    size: u64,
    first_ordinal: u64,
    entries: u64,
    last_key: Option<KeyOut>,
}

#[derive(Serialize)]
struct FilterOut {
    kind: &'static str,
    bytes: usize,
    probes: u32,
    bits_per_key: f64,
}

#[derive(Serialize)]
struct ModelOut {
    file: String,
    present: bool,
    segments: Option<usize>,
    delta: Option<u32>,
    bytes_in_memory: Option<usize>,
    error: Option<String>,
}

#[derive(Serialize)]
struct EntryOut {
    key: String,
    seq: u64,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pointer: Option<PointerOut>,
}

#[derive(Serialize)]
struct PointerOut {
    vlog: u64,
    offset: u64,
    len: u32,
}

fn kind_name(kind: u8) -> &'static str {
    match kind {
        k if k == ValueKind::Value as u8 => "value",
        k if k == ValueKind::Deletion as u8 => "delete",
        k if k == ValueKind::ValuePointer as u8 => "pointer",
        0xff => "range bound",
        _ => "unknown",
    }
}

fn key_out(ikey: &[u8], enc: Encoding) -> Option<KeyOut> {
    let p = parse_internal_key(ikey)?;
    Some(KeyOut {
        key: enc.encode(p.user_key),
        seq: p.seq,
        kind: kind_name(p.kind),
    })
}

pub fn run(
    path: &Path,
    entries: bool,
    limit: Option<u64>,
    json: bool,
    enc: &EncodingArgs,
) -> Result<ExitCode> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or_else(|| Path::new("."));
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    anyhow::ensure!(meta.is_file(), "{} is not a file", path.display());
    // The number in the name keys nothing here (no cache); 0 for a renamed file.
    let file_no: u64 = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let env = StorageEnv::new(dir, &[], 0.0)?;
    let file = env.open_read(path, FileKind::Table, 0, None, false)?;
    let table = Arc::new(
        Table::open(file, cairn::FileNo::new(file_no), None)
            .with_context(|| format!("{} is not a readable cairn table", path.display()))?,
    );
    let (kenc, venc) = (enc.key(), enc.value());
    let p = table.properties();
    let index = table.index()?;
    let filter = table.filter()?;
    let dump = Dump {
        file: path.display().to_string(),
        file_no,
        size: table.file_size(),
        properties: Props {
            entries: p.num_entries,
            deletions: p.num_deletions,
            data_blocks: p.num_data_blocks,
            raw_key_bytes: p.raw_key_bytes,
            raw_value_bytes: p.raw_value_bytes,
            smallest: key_out(&p.smallest, kenc),
            largest: key_out(&p.largest, kenc),
            min_seq: p.min_seq,
            max_seq: p.max_seq,
            column_family: p
                .column_family
                .as_ref()
                .map(|(id, name)| (id.get(), name.clone())),
        },
        index: (0..index.num_blocks())
            .map(|i| {
                let e = index.block(i);
                IndexOut {
                    block: i,
                    offset: e.handle.offset,
                    size: e.handle.size,
                    first_ordinal: e.first_ordinal,
                    entries: index.block_entries(i),
                    last_key: key_out(&e.last_key, kenc),
                }
            })
            .collect(),
        filter: filter.map(|f| FilterOut {
            kind: "bloom",
            bytes: f.size(),
            probes: f.num_probes(),
            bits_per_key: if p.num_entries == 0 {
                0.0
            } else {
                (f.size() * 8) as f64 / p.num_entries as f64
            },
        }),
        learned_model: model(path, &table),
        range_deletions: table
            .range_dels()
            .map(|d| {
                d.fragments()
                    .iter()
                    .map(|f| RangeDelOut {
                        start: kenc.encode(&f.start),
                        end: kenc.encode(&f.end),
                        seqs: f.seqs.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        entries: if entries {
            Some(read_entries(&table, limit, kenc, venc)?)
        } else {
            None
        },
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&dump)?);
    } else {
        print_text(&dump);
    }
    Ok(ExitCode::SUCCESS)
}

/// The Bourbon model saved beside the table (`NNNNNN.plr`), decoded and checked against
/// the table as the engine would before using it.
fn model(path: &Path, table: &Table) -> ModelOut {
    let file = path.with_extension("plr");
    let mut m = ModelOut {
        file: file.display().to_string(),
        present: file.is_file(),
        segments: None,
        delta: None,
        bytes_in_memory: None,
        error: None,
    };
    if !m.present {
        return m;
    }
    let name = m.file.clone();
    match std::fs::read(&file)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            cairn::table::model_file::decode(
                &b,
                table.properties().num_entries,
                table.file_size(),
                &name,
            )
            .map_err(|e| e.to_string())
        }) {
        Ok(l) => {
            m.segments = Some(l.num_segments());
            m.delta = Some(l.plr().delta());
            m.bytes_in_memory = Some(l.memory());
        }
        Err(e) => m.error = Some(e),
    }
    m
}

fn read_entries(
    table: &Arc<Table>,
    limit: Option<u64>,
    kenc: Encoding,
    venc: Encoding,
) -> Result<Vec<EntryOut>> {
    let mut out = Vec::new();
    let mut it = table.iter();
    it.seek_to_first();
    while it.valid() && limit.is_none_or(|l| (out.len() as u64) < l) {
        let p = parse_internal_key(it.key())
            .with_context(|| format!("malformed internal key at entry {}", out.len()))?;
        let kind = kind_name(p.kind);
        let (value, pointer) = match p.value_kind() {
            Some(ValueKind::Deletion) => (None, None),
            Some(ValueKind::ValuePointer) => match ValuePointer::decode(it.value()) {
                Ok(vp) => (
                    None,
                    Some(PointerOut {
                        vlog: vp.file_no.get(),
                        offset: vp.offset,
                        len: vp.len,
                    }),
                ),
                // Shown, not fatal: the dump is for looking at damage too.
                Err(_) => (Some(venc.encode(it.value())), None),
            },
            _ => (Some(venc.encode(it.value())), None),
        };
        out.push(EntryOut {
            key: kenc.encode(p.user_key),
            seq: p.seq,
            kind,
            value,
            pointer,
        });
        it.next();
    }
    it.status()
        .with_context(|| format!("reading entry {}", out.len()))?;
    Ok(out)
}

fn print_key(k: &Option<KeyOut>) -> String {
    match k {
        Some(k) => format!("{} @ {} ({})", k.key, k.seq, k.kind),
        None => "(none)".into(),
    }
}

fn print_text(d: &Dump) {
    let p = &d.properties;
    println!(
        "table {} (file number {}, {})",
        d.file,
        d.file_no,
        fmt::bytes(d.size)
    );
    println!("properties");
    println!(
        "  entries {} (deletions {}), data blocks {}",
        p.entries, p.deletions, p.data_blocks
    );
    println!(
        "  raw key bytes {}, raw value bytes {}",
        p.raw_key_bytes, p.raw_value_bytes
    );
    println!("  smallest {}", print_key(&p.smallest));
    println!("  largest  {}", print_key(&p.largest));
    println!("  sequence numbers {}..={}", p.min_seq, p.max_seq);
    match &p.column_family {
        Some((id, name)) => println!("  column family {name:?} (id {id})"),
        None => println!("  column family (not recorded: an older table)"),
    }
    println!("index: {} data blocks (fence pointers)", d.index.len());
    for e in &d.index {
        println!(
            "  #{:<5} offset {:>9}  size {:>6}  entries {:>5} from {:>7}  last {}",
            e.block,
            e.offset,
            e.size,
            e.entries,
            e.first_ordinal,
            print_key(&e.last_key)
        );
    }
    if !d.range_deletions.is_empty() {
        println!("range deletions: {} fragments", d.range_deletions.len());
        for r in &d.range_deletions {
            println!("  [{}, {}) at {:?}", r.start, r.end, r.seqs);
        }
    }
    match &d.filter {
        Some(f) => println!(
            "filter: bloom, {} bytes, {} probes, {:.1} bits per entry",
            f.bytes, f.probes, f.bits_per_key
        ),
        None => println!("filter: none"),
    }
    let m = &d.learned_model;
    match (m.present, &m.error) {
        (false, _) => println!("learned model: none ({} absent)", m.file),
        (true, Some(e)) => println!("learned model: {} unusable: {e}", m.file),
        (true, None) => println!(
            "learned model: {} ({} segments, delta {}, {} in memory)",
            m.file,
            m.segments.unwrap_or(0),
            m.delta.unwrap_or(0),
            fmt::bytes(m.bytes_in_memory.unwrap_or(0) as u64)
        ),
    }
    if let Some(entries) = &d.entries {
        println!("entries ({} shown)", entries.len());
        for e in entries {
            let rhs = match (&e.value, &e.pointer) {
                (_, Some(p)) => format!("-> vlog {} offset {} len {}", p.vlog, p.offset, p.len),
                (Some(v), None) => format!("=> {v}"),
                (None, None) => String::new(),
            };
            println!("  {} @ {} {} {rhs}", e.key, e.seq, e.kind);
        }
    }
}
