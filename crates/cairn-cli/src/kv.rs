//! `get`, `put`, `delete`, `delete-range`, `compact`, `scan` and `ingest`.

use std::io::{BufWriter, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use cairn::{ReadOptions, WriteOptions};

use crate::open::{cf, open, open_read_only};
use crate::{KvArgs, OpenArgs};

pub fn get(a: &KvArgs, key: &str) -> Result<ExitCode> {
    let key = a.enc.key().decode(key).context("bad key")?;
    let db = open_read_only(&a.db, &a.open)?;
    let cf = cf(&db, &a.cf)?;
    let value = db.get_cf(&cf, &key)?;
    db.close()?;
    match value {
        Some(v) => {
            println!("{}", a.enc.value().encode(&v));
            Ok(ExitCode::SUCCESS)
        }
        None => {
            // As `ldb get`: a missing key is a failure a script can test for.
            eprintln!("NotFound: {}", a.enc.key().encode(&key));
            Ok(ExitCode::from(1))
        }
    }
}

pub fn put(a: &KvArgs, key: &str, value: &str, sync: bool, create: bool) -> Result<ExitCode> {
    let key = a.enc.key().decode(key).context("bad key")?;
    let value = a.enc.value().decode(value).context("bad value")?;
    let db = open(&a.db, &a.open, create)?;
    let cf = cf(&db, &a.cf)?;
    db.put_cf(
        &cf,
        &WriteOptions {
            sync,
            query_column: None,
            disable_wal: false,
        },
        &key,
        &value,
    )?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

pub fn delete(a: &KvArgs, key: &str, sync: bool) -> Result<ExitCode> {
    let key = a.enc.key().decode(key).context("bad key")?;
    let db = open(&a.db, &a.open, false)?;
    let cf = cf(&db, &a.cf)?;
    db.delete_cf(
        &cf,
        &WriteOptions {
            sync,
            query_column: None,
            disable_wal: false,
        },
        &key,
    )?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

pub fn delete_range(a: &KvArgs, from: &str, to: &str, sync: bool) -> Result<ExitCode> {
    let from = a.enc.key().decode(from).context("bad FROM key")?;
    let to = a.enc.key().decode(to).context("bad TO key")?;
    let db = open(&a.db, &a.open, false)?;
    let cf = cf(&db, &a.cf)?;
    let mut b = cairn::WriteBatch::new();
    b.delete_range_cf(cf.id(), &from, &to)?;
    db.write(
        &WriteOptions {
            sync,
            ..WriteOptions::default()
        },
        b,
    )?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// `cairn ingest DB FILE...`: loads SstFileWriter tables into a column family.
pub fn ingest(db: &Path, files: &[PathBuf], cf_name: &str, o: &OpenArgs) -> Result<ExitCode> {
    let d = open(db, o, false)?;
    let family = cf(&d, cf_name)?;
    let t = std::time::Instant::now();
    d.ingest_external_file_cf(&family, files)
        .context("cannot ingest")?;
    let took = t.elapsed();
    d.close()?;
    println!(
        "ingested {} file(s) into {} ({:.3} s)",
        files.len(),
        db.display(),
        took.as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn compact(a: &KvArgs, from: Option<&str>, to: Option<&str>) -> Result<ExitCode> {
    let key = |k: Option<&str>| k.map(|k| a.enc.key().decode(k)).transpose();
    let (from, to) = (key(from).context("bad key")?, key(to).context("bad key")?);
    let db = open(&a.db, &a.open, false)?;
    let cf = cf(&db, &a.cf)?;
    let t = std::time::Instant::now();
    db.compact_range_cf(&cf, from.as_deref(), to.as_deref())?;
    let took = t.elapsed();
    db.close()?;
    println!("compacted in {:.3} s", took.as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

pub struct ScanArgs {
    pub from: Option<String>,
    pub to: Option<String>,
    pub reverse: bool,
    pub limit: Option<u64>,
    pub out: Option<PathBuf>,
}

pub fn scan(a: &KvArgs, s: &ScanArgs) -> Result<ExitCode> {
    let bound = |k: &Option<String>, end: bool| -> Result<Bound<Vec<u8>>> {
        Ok(match k {
            None => Bound::Unbounded,
            Some(k) => {
                let k = a.enc.key().decode(k).context("bad key")?;
                if end {
                    Bound::Excluded(k)
                } else {
                    Bound::Included(k)
                }
            }
        })
    };
    let range = (bound(&s.from, false)?, bound(&s.to, true)?);
    let db = open_read_only(&a.db, &a.open)?;
    let cf = cf(&db, &a.cf)?;
    let (mut out, bar): (Box<dyn Write>, _) = match &s.out {
        Some(p) => {
            let f = std::fs::File::create(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            // The total is unknown before the scan ends: a spinner with a count.
            let bar = indicatif::ProgressBar::new_spinner().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {pos} pairs, {per_sec}")
                    .expect("static template"),
            );
            (Box::new(BufWriter::new(f)), Some(bar))
        }
        None => (Box::new(BufWriter::new(std::io::stdout().lock())), None),
    };
    let mut n = 0u64;
    for item in db.scan_opt(&ReadOptions::default(), &cf, range, s.reverse)? {
        if s.limit.is_some_and(|l| n >= l) {
            break;
        }
        let (k, v) = item?;
        let line = format!(
            "{} ==> {}\n",
            a.enc.key().encode(&k),
            a.enc.value().encode(&v)
        );
        if let Err(e) = out.write_all(line.as_bytes()) {
            // `cairn scan | head` closes the pipe: that ends the scan, it is no error.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                break;
            }
            return Err(e).context("write failed");
        }
        n += 1;
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(e).context("write failed")
        }
        _ => {}
    }
    drop(out);
    if let Some(b) = bar {
        b.finish_and_clear();
        eprintln!(
            "{n} pairs written to {}",
            s.out
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string())
        );
    }
    db.close()?;
    Ok(ExitCode::SUCCESS)
}
