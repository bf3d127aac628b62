//! `cairn-bench range-delete`: N keys loaded in order, then deleted by one `delete_range`
//! call over all of them, per engine: the call's time and the bytes it wrote, the bytes the
//! flush and compactions after it wrote, and what point reads of the deleted keys cost
//! afterwards. Prints a markdown table (and writes it to `--out`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use crate::engines::{BenchConfig, Engine, EngineName};
use crate::rng::Rng;
use crate::runner::{settle, Values};

/// Arguments of `range-delete`.
#[derive(Args, Debug)]
pub struct RangeDeleteArgs {
    /// Engines, each measured on a fresh database in turn.
    #[arg(long, value_delimiter = ',', default_value = "rocksdb,cairn")]
    pub engines: Vec<String>,
    /// Keys loaded, then deleted in one call.
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Point reads of deleted keys after the delete, timed.
    #[arg(long, default_value_t = 100_000)]
    pub reads: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Block compression of every engine: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "lz4", value_parser = crate::cli::parse_compression)]
    pub compression: ::cairn::Compression,
    /// Directory for the databases (each removed after) and `range-delete.md`.
    #[arg(long, default_value = "bench-out/range-delete")]
    pub out: PathBuf,
}

/// One engine's measurements.
struct Row {
    engine: String,
    delete_ms: f64,
    delete_bytes: u64,
    after_bytes: u64,
    flush_ms: f64,
    read_us: f64,
    read_bytes_per_op: f64,
}

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.to_be_bytes());
    k
}

/// Loads, deletes and reads on one engine.
fn measure(name: &EngineName, a: &RangeDeleteArgs) -> Result<Row> {
    let dir = a.out.join(name.file_stem());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let cfg = BenchConfig {
        compression: a.compression,
        // RocksDB's byte counters come from its statistics.
        rocksdb_statistics: true,
        ..BenchConfig::default()
    };
    let engine = name.open(&dir, &cfg)?;
    let values = Values::new(7, a.value_size);
    for i in 0..a.records {
        engine.put(&key(i), values.get(i, 0, a.value_size))?;
    }
    engine.flush()?;
    settle(engine.as_ref());
    let before = engine.counters();
    let t = Instant::now();
    engine.delete_range(&key(0), &key(a.records))?;
    let delete_ms = t.elapsed().as_secs_f64() * 1e3;
    let deleted = engine.counters();
    let t = Instant::now();
    engine.flush()?;
    settle(engine.as_ref());
    let flush_ms = t.elapsed().as_secs_f64() * 1e3;
    let flushed = engine.counters();
    let (read_us, read_bytes_per_op) = read_deleted(engine.as_ref(), a)?;
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Row {
        engine: name.to_string(),
        delete_ms,
        delete_bytes: deleted.since(&before).write_bytes,
        after_bytes: flushed.since(&deleted).write_bytes,
        flush_ms,
        read_us,
        read_bytes_per_op,
    })
}

/// Mean microseconds and storage bytes per point read of random deleted keys.
fn read_deleted(engine: &dyn Engine, a: &RangeDeleteArgs) -> Result<(f64, f64)> {
    let mut rng = Rng::new(11);
    let c0 = engine.counters();
    let t = Instant::now();
    for _ in 0..a.reads {
        let i = rng.next_u64() % a.records.max(1);
        if engine.get(&key(i))?.is_some() {
            anyhow::bail!("key {i} is still there after the range delete");
        }
    }
    let n = a.reads.max(1) as f64;
    let us = t.elapsed().as_secs_f64() * 1e6 / n;
    let bytes = engine.counters().since(&c0).read_bytes as f64 / n;
    Ok((us, bytes))
}

/// Runs the experiment on every engine and prints the table.
pub fn range_delete_cmd(a: &RangeDeleteArgs) -> Result<()> {
    let engines = a
        .engines
        .iter()
        .map(|e| EngineName::parse(e))
        .collect::<Result<Vec<_>>>()?;
    for e in &engines {
        e.check_available()?;
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut rows = Vec::new();
    for e in &engines {
        eprintln!("{e}: loading {} keys, then one delete_range ...", a.records);
        rows.push(measure(e, a)?);
    }
    let mut s = format!(
        "{} keys of 16 B with {} B values, in order, then one delete_range over all of them; \
         compression {}; then {} point reads of deleted keys.\n\n\
         | engine | delete_range ms | bytes written by the call | flush + compaction after: ms | their bytes written | get of a deleted key: us | read B/op |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        a.records,
        a.value_size,
        a.compression.name(),
        a.reads
    );
    for r in &rows {
        s.push_str(&format!(
            "| {} | {:.3} | {} | {:.1} | {} | {:.2} | {:.0} |\n",
            r.engine,
            r.delete_ms,
            r.delete_bytes,
            r.flush_ms,
            r.after_bytes,
            r.read_us,
            r.read_bytes_per_op
        ));
    }
    print!("{s}");
    std::fs::write(a.out.join("range-delete.md"), &s)?;
    Ok(())
}
