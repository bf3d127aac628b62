//! `cairn dump-wal`: the records of one write-ahead log file, decoded (RocksDB's
//! `ldb dump_wal`): each write batch with its first sequence number, then its operations.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use cairn::batch::BatchOpKind;
use cairn::log::{LogReader, TailState};
use cairn::WriteBatch;

use crate::EncodingArgs;

/// Prints the records of `file`, at most `limit` batches. A damaged record ends the dump
/// with an error (exit 1) after the records before it.
pub fn run(file: &Path, limit: Option<u64>, enc: &EncodingArgs) -> Result<ExitCode> {
    let data = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let name = file.display().to_string();
    let mut reader = LogReader::new(data, name.clone(), false);
    let (mut batches, mut ops) = (0u64, 0u64);
    while limit.is_none_or(|l| batches < l) {
        let Some(rec) = reader.next_record().with_context(|| format!("in {name}"))? else {
            break;
        };
        let (first, batch) = WriteBatch::decode(&rec).with_context(|| format!("in {name}"))?;
        println!("batch seq={first} ops={}", batch.len());
        for (seq, op) in (first..).zip(batch.iter()) {
            let key = enc.key().encode(op.key);
            match op.kind {
                BatchOpKind::Put => {
                    println!(
                        "  {seq} cf={} PUT {key} ==> {}",
                        op.cf,
                        enc.value().encode(op.value)
                    )
                }
                BatchOpKind::Delete => println!("  {seq} cf={} DELETE {key}", op.cf),
                BatchOpKind::DeleteRange => println!(
                    "  {seq} cf={} DELETE_RANGE [{key}, {})",
                    op.cf,
                    enc.key().encode(op.value)
                ),
            }
            ops += 1;
        }
        batches += 1;
    }
    let tail = match reader.tail() {
        TailState::Truncated { dropped_bytes, .. } => {
            format!("; a torn last record of {dropped_bytes} bytes (a write cut short)")
        }
        _ => String::new(),
    };
    eprintln!("{batches} batches, {ops} operations{tail}");
    Ok(ExitCode::SUCCESS)
}
