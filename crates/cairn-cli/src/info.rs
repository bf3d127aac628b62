//! `cairn info`: the manifest's view (read without opening the database), the files on
//! disk by kind, the learned parts present, the cache policy of the options given, and the
//! statistics saved at the last close (`STATS.json`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use cairn::{Db, ManifestInfo, Options};
use serde::Serialize;

use crate::fmt;
use crate::OpenArgs;

/// The file kinds a cairn directory holds, with a description for the text output.
const KINDS: &[(&str, &str)] = &[
    ("table", "tables (*.sst)"),
    ("vlog", "value logs (*.vlog)"),
    ("wal", "write-ahead logs (*.log)"),
    ("manifest", "manifests (MANIFEST-*)"),
    ("options", "options files (OPTIONS-*)"),
    ("current", "CURRENT"),
    ("lock", "LOCK"),
    ("model", "Bourbon learned models (*.plr)"),
    ("tuner", "RusKey tuner checkpoint (TUNER)"),
    ("query-store", "SA-LSM query stores (QUERYSTORE-*.rtr)"),
    ("stats", "statistics of the last close (STATS.json)"),
    ("temp", "temporary files (*.tmp)"),
    ("lost", "files repair set aside (lost/)"),
    ("other", "other files"),
];

fn kind_of(name: &str) -> &'static str {
    use cairn::filenames::*;
    match name {
        CURRENT => "current",
        LOCK => "lock",
        TUNER => "tuner",
        STATS => "stats",
        n if n.ends_with(TMP_SUFFIX) => "temp",
        n if n.ends_with(TABLE_SUFFIX) => "table",
        n if n.ends_with(VLOG_SUFFIX) => "vlog",
        n if n.ends_with(WAL_SUFFIX) => "wal",
        n if n.ends_with(MODEL_SUFFIX) => "model",
        n if n.starts_with(MANIFEST_PREFIX) => "manifest",
        n if n.starts_with(OPTIONS_PREFIX) => "options",
        n if is_query_store(n) => "query-store",
        _ => "other",
    }
}

#[derive(Serialize)]
struct Info {
    path: PathBuf,
    manifest: String,
    last_seq: u64,
    log_number: u64,
    next_file_no: u64,
    column_families: Vec<CfOut>,
    files: Vec<KindOut>,
    learned: Learned,
    options: OptionsOut,
    stats: StatsOut,
}

#[derive(Serialize)]
struct CfOut {
    id: u32,
    name: String,
    tables: usize,
    bytes: u64,
    levels: Vec<LevelOut>,
}

#[derive(Serialize)]
struct LevelOut {
    level: usize,
    capacity: u64,
    k: u32,
    pending_k: Option<u32>,
    draining: bool,
    runs: Vec<RunOut>,
}

#[derive(Serialize)]
struct RunOut {
    id: u64,
    files: usize,
    bytes: u64,
    sealed: bool,
}

#[derive(Serialize)]
struct KindOut {
    kind: &'static str,
    count: usize,
    bytes: u64,
}

#[derive(Serialize)]
struct Learned {
    /// Tables with a saved Bourbon model beside them, of all tables.
    bourbon_models: usize,
    tables: usize,
    /// The Leaper model bundle the options name, if any, and whether it exists.
    leaper_model: Option<PathBuf>,
    leaper_model_present: bool,
    ruskey_checkpoint: bool,
    query_stores: Vec<String>,
    /// Cold-key sets are loaded at run time and never stored in the directory.
    cold_set: &'static str,
}

#[derive(Serialize)]
struct OptionsOut {
    preset: String,
    read_cache: String,
    block_cache_bytes: usize,
    prefetch: &'static str,
    index: String,
    tuner: String,
    value_threshold: Option<usize>,
}

#[derive(Serialize)]
struct StatsOut {
    present: bool,
    file: PathBuf,
    modified: Option<String>,
    modified_unix: Option<u64>,
    /// The `DbStats` snapshot, as the engine wrote it.
    value: Option<serde_json::Value>,
    error: Option<String>,
}

pub fn run(path: &Path, args: &OpenArgs, json: bool) -> Result<ExitCode> {
    let opts = crate::open::options(path, args)?;
    let m = Db::inspect(path, &opts)
        .with_context(|| format!("cannot read database {}", path.display()))?;
    let info = collect(path, args, &opts, m)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print_text(&info);
    }
    Ok(ExitCode::SUCCESS)
}

fn collect(path: &Path, args: &OpenArgs, opts: &Options, m: ManifestInfo) -> Result<Info> {
    let files = list_files(path, opts)?;
    let mut kinds: Vec<KindOut> = KINDS
        .iter()
        .map(|(k, _)| KindOut {
            kind: k,
            count: 0,
            bytes: 0,
        })
        .collect();
    for (kind, _, size) in &files {
        if let Some(k) = kinds.iter_mut().find(|k| k.kind == *kind) {
            k.count += 1;
            k.bytes += size;
        }
    }
    kinds.retain(|k| k.count > 0);
    let has = |p: &Path| files.iter().any(|(_, f, _)| f == p);
    let tables: Vec<&cairn::TableFileInfo> =
        m.column_families.iter().flat_map(|c| &c.tables).collect();
    let bourbon_models = tables
        .iter()
        .filter(|t| has(&t.path.with_extension("plr")))
        .count();
    let leaper_model = match &opts.prefetch {
        cairn::policy::PrefetchPolicy::Leaper(p) => p.model.clone(),
        _ => None,
    };
    let learned = Learned {
        bourbon_models,
        tables: tables.len(),
        leaper_model_present: leaper_model.as_ref().is_some_and(|p| p.is_file()),
        leaper_model,
        ruskey_checkpoint: has(&path.join("TUNER")),
        query_stores: files
            .iter()
            .filter(|(k, _, _)| *k == "query-store")
            .map(|(_, p, _)| p.display().to_string())
            .collect(),
        cold_set: "not stored in the database (loaded at run time with Db::load_cold_set)",
    };
    let column_families = m
        .column_families
        .into_iter()
        .map(|c| CfOut {
            id: c.id.get(),
            name: c.name,
            tables: c.tables.len(),
            bytes: c.tables.iter().map(|t| t.size).sum(),
            levels: c
                .levels
                .into_iter()
                .map(|l| LevelOut {
                    level: l.level,
                    capacity: l.capacity,
                    k: l.k,
                    pending_k: l.pending_k,
                    draining: l.draining,
                    runs: l
                        .runs
                        .into_iter()
                        .map(|r| RunOut {
                            id: r.id,
                            files: r.files,
                            bytes: r.bytes,
                            sealed: r.sealed,
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    Ok(Info {
        path: path.to_path_buf(),
        manifest: m.manifest,
        last_seq: m.last_seq,
        log_number: m.log_number.get(),
        next_file_no: m.next_file_no.get(),
        column_families,
        files: kinds,
        learned,
        options: OptionsOut {
            preset: args.preset.clone().unwrap_or_else(|| "default".into()),
            read_cache: opts.read_cache.name(),
            block_cache_bytes: opts.block_cache_bytes,
            prefetch: opts.prefetch.name(),
            index: format!("{:?}", opts.index),
            tuner: format!("{:?}", opts.tuner.policy),
            value_threshold: opts.value_threshold,
        },
        stats: read_stats(path),
    })
}

/// (kind, path, size) of every file in the directory, its tier directories and `lost/`.
fn list_files(path: &Path, opts: &Options) -> Result<Vec<(&'static str, PathBuf, u64)>> {
    let mut dirs = vec![path.to_path_buf()];
    dirs.extend(opts.tiers.iter().map(|t| path.join(&t.dir)));
    dirs.sort();
    dirs.dedup();
    let mut out = Vec::new();
    for dir in &dirs {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue; // a tier directory not created yet
        };
        for e in rd.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            let name = e.file_name().to_string_lossy().into_owned();
            if meta.is_dir() {
                if name == "lost" {
                    for f in std::fs::read_dir(e.path())
                        .with_context(|| format!("cannot list {}", e.path().display()))?
                        .flatten()
                    {
                        let size = f.metadata().map_or(0, |m| m.len());
                        out.push(("lost", f.path(), size));
                    }
                }
                continue;
            }
            out.push((kind_of(&name), e.path(), meta.len()));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

fn read_stats(path: &Path) -> StatsOut {
    let file = path.join("STATS.json");
    let mut s = StatsOut {
        present: false,
        file: file.clone(),
        modified: None,
        modified_unix: None,
        value: None,
        error: None,
    };
    let Ok(meta) = std::fs::metadata(&file) else {
        return s;
    };
    s.present = true;
    if let Ok(t) = meta.modified() {
        s.modified = Some(fmt::time(t));
        s.modified_unix = Some(fmt::unix_secs(t));
    }
    match std::fs::read(&file)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(v) => s.value = Some(v),
        Err(e) => s.error = Some(e),
    }
    s
}

fn print_text(i: &Info) {
    println!("database   {}", i.path.display());
    println!(
        "manifest   {} (last sequence number {}, logs from {:06}.log replayed at open, next file {})",
        i.manifest, i.last_seq, i.log_number, i.next_file_no
    );
    for cf in &i.column_families {
        println!();
        println!(
            "column family {:?} (id {}): {} tables, {}",
            cf.name,
            cf.id,
            cf.tables,
            fmt::bytes(cf.bytes)
        );
        println!("  level  capacity      K  pending K  runs (id: files, bytes, sealed)");
        for l in &cf.levels {
            let cap = if l.level == 0 {
                "-".to_string()
            } else {
                fmt::bytes(l.capacity)
            };
            let pending = l.pending_k.map_or("-".to_string(), |k| k.to_string());
            let runs = if l.runs.is_empty() {
                "(empty)".to_string()
            } else {
                l.runs
                    .iter()
                    .map(|r| {
                        format!(
                            "#{}: {} files, {}{}",
                            r.id,
                            r.files,
                            fmt::bytes(r.bytes),
                            if r.sealed { ", sealed" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            println!(
                "  {:>5}  {:>10}  {:>3}  {:>9}  {}{}",
                l.level,
                cap,
                l.k,
                pending,
                runs,
                if l.draining { " (draining)" } else { "" }
            );
        }
    }
    println!();
    println!("files on disk");
    for k in &i.files {
        let desc = KINDS
            .iter()
            .find(|(n, _)| *n == k.kind)
            .map_or(k.kind, |(_, d)| *d);
        println!("  {:>5}  {:>10}  {desc}", k.count, fmt::bytes(k.bytes));
    }
    let l = &i.learned;
    println!();
    println!("learned parts");
    println!(
        "  Bourbon models      {} of {} tables have a saved model",
        l.bourbon_models, l.tables
    );
    println!(
        "  Leaper model        {}",
        match &l.leaper_model {
            None => "none in the options (given at open or with Db::load_leaper_model)".into(),
            Some(p) => format!(
                "{} ({})",
                p.display(),
                if l.leaper_model_present {
                    "present"
                } else {
                    "MISSING"
                }
            ),
        }
    );
    println!(
        "  RusKey checkpoint   {}",
        if l.ruskey_checkpoint {
            "TUNER present"
        } else {
            "none"
        }
    );
    println!(
        "  SA-LSM query stores {}",
        if l.query_stores.is_empty() {
            "none".to_string()
        } else {
            l.query_stores.len().to_string()
        }
    );
    println!("  cold-key set        {}", l.cold_set);
    let o = &i.options;
    println!();
    println!("options used to read (preset {})", o.preset);
    println!(
        "  read cache {} ({}), prefetch {}, index {}, tuner {}, value threshold {}",
        o.read_cache,
        fmt::bytes(o.block_cache_bytes as u64),
        o.prefetch,
        o.index,
        o.tuner,
        o.value_threshold
            .map_or("none (values inline)".to_string(), |t| format!("{t} bytes"))
    );
    println!();
    print_stats(&i.stats);
}

fn print_stats(s: &StatsOut) {
    if !s.present {
        println!(
            "statistics: none saved ({} is absent: the database has not been closed by a \
             cairn version that writes it)",
            s.file.display()
        );
        return;
    }
    println!(
        "statistics of the last session (STATS.json, written at close {})",
        s.modified.as_deref().unwrap_or("at an unknown time")
    );
    let Some(v) = &s.value else {
        println!(
            "  unreadable: {}",
            s.error.as_deref().unwrap_or("unknown error")
        );
        return;
    };
    let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let lat = |k: &str, q: &str| {
        v.get(k)
            .and_then(|l| l.get(q))
            .and_then(|x| x.as_f64())
            .unwrap_or(0.0)
    };
    println!(
        "  writes {} ({} written), gets {} (memtable hits {}), iterators {}",
        n("writes"),
        fmt::bytes(n("user_bytes_written")),
        n("gets"),
        n("memtable_hits"),
        n("iterators")
    );
    println!(
        "  flushes {}, compactions {} (trivial moves {}, read-triggered {}), stalls {} us",
        n("flushes"),
        n("compactions"),
        n("trivial_moves"),
        n("read_triggered_compactions"),
        n("stall_micros")
    );
    println!(
        "  block cache hits {}, misses {}",
        n("block_cache_hits"),
        n("block_cache_misses")
    );
    println!(
        "  get latency p50 {:.1} us, p99 {:.1} us; write latency p50 {:.1} us, p99 {:.1} us",
        lat("get_latency", "p50"),
        lat("get_latency", "p99"),
        lat("write_latency", "p50"),
        lat("write_latency", "p99")
    );
    println!("  (all counters: cairn info --json, under \"stats\")");
}

/// `cairn metrics DB`: the statistics in `STATS.json` as Prometheus text.
pub fn metrics(path: &Path, label: Option<&str>) -> Result<ExitCode> {
    let file = path.join("STATS.json");
    let bytes = std::fs::read(&file)
        .with_context(|| format!("cannot read {} (written at close, or with stats_dump_period_ms while the database runs)", file.display()))?;
    let stats: cairn::DbStats = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a statistics file", file.display()))?;
    print!("{}", stats.prometheus_text(label));
    Ok(ExitCode::SUCCESS)
}
