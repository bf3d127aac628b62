//! Bulk loading N sorted keys: through `put` (then a flush, so the data is in tables as an
//! ingest leaves it) against `SstFileWriter` + `Db::ingest_external_file`, each into a
//! fresh database with default options. Prints a markdown table (median of the runs).
//!
//!     cargo run --release -p cairn --example ingest_vs_put -- [N] [RUNS]

use std::time::Instant;

use cairn::{Db, Options, SstFileWriter, WriteOptions};

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.to_be_bytes());
    k
}

fn value(i: u64) -> Vec<u8> {
    let half = format!("{i:025}").into_bytes();
    [
        half.as_slice(),
        half.as_slice(),
        half.as_slice(),
        half.as_slice(),
    ]
    .concat()
}

/// Seconds to put every key, and to flush them after.
fn by_put(n: u64) -> cairn::Result<(f64, f64)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::open(dir.path(), Options::default())?;
    let t = Instant::now();
    let wo = WriteOptions::default();
    for i in 0..n {
        db.put(&wo, &key(i), &value(i))?;
    }
    let put = t.elapsed().as_secs_f64();
    db.flush()?;
    let total = t.elapsed().as_secs_f64();
    db.close()?;
    Ok((put, total))
}

/// Seconds to write the file, and to ingest it.
fn by_ingest(n: u64) -> cairn::Result<(f64, f64)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::open(dir.path().join("db"), Options::default())?;
    let t = Instant::now();
    let path = dir.path().join("load.sst");
    let mut w = SstFileWriter::create(&path, &Options::default())?;
    for i in 0..n {
        w.put(&key(i), &value(i))?;
    }
    w.finish()?;
    let write = t.elapsed().as_secs_f64();
    db.ingest_external_file(&[&path])?;
    let total = t.elapsed().as_secs_f64();
    assert_eq!(db.get(&key(n / 2))?, Some(value(n / 2)));
    db.close()?;
    Ok((write, total))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> cairn::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let (mut put, mut put_flush, mut write, mut ingest) = (vec![], vec![], vec![], vec![]);
    for r in 0..runs {
        // Order alternated run to run.
        let (p, i) = if r % 2 == 0 {
            let p = by_put(n)?;
            (p, by_ingest(n)?)
        } else {
            let i = by_ingest(n)?;
            (by_put(n)?, i)
        };
        put.push(p.0);
        put_flush.push(p.1);
        write.push(i.0);
        ingest.push(i.1);
    }
    let (pf, it) = (median(put_flush), median(ingest));
    println!("| {n} sorted keys, 16 B keys, 100 B values, median of {runs} | seconds |");
    println!("|---|---:|");
    println!("| put | {:.3} |", median(put));
    println!("| put, then flush | {pf:.3} |");
    println!("| SstFileWriter | {:.3} |", median(write));
    println!("| SstFileWriter, then ingest | {it:.3} |");
    println!("| ingest against put + flush | {:.2}x faster |", pf / it);
    Ok(())
}
