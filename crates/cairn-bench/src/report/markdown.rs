//! The markdown comparison: a table of absolute numbers and one of ratios to the first engine.

use super::json::RunResult;
use std::fmt::Write;

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / (1024.0 * 1024.0))
}

/// `64 MiB`, `512 KiB`, `100 B`.
fn size(b: usize) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

fn per_op(bytes: u64, ops: u64) -> String {
    if ops == 0 {
        "-".into()
    } else {
        format!("{:.1}", bytes as f64 / ops as f64)
    }
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// `x / base`, or "-" when undefined.
fn ratio(x: f64, base: f64) -> String {
    if base > 0.0 && x.is_finite() {
        format!("{:.2}x", x / base)
    } else {
        "-".into()
    }
}

/// The main table printed by `compare`; ratios are against `results[0]`. With repeated
/// runs, ops/s is the median run's and `range` spans all runs; fills add the throughput to
/// the end of the background work they caused.
pub fn table(results: &[RunResult]) -> String {
    let repeated = results.iter().any(|r| r.repeats.is_some());
    let fill = results.iter().any(|r| r.settled_ops_per_sec.is_some());
    let mut s = String::from("| engine | ops/s | vs first |");
    let mut rule = String::from("|---|---:|---:|");
    if repeated {
        s.push_str(" runs | range ops/s |");
        rule.push_str("---:|---:|");
    }
    if fill {
        s.push_str(" ops/s to settled | vs first |");
        rule.push_str("---:|---:|");
    }
    s.push_str(
        " p50 us | p95 us | p99 us | p99.9 us | CPU us/op | stall s | read B/op | write B/op | write amp | disk MiB | cache hit | peak RSS MiB |\n",
    );
    rule.push_str("---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    s.push_str(&rule);
    let base = results.first().map_or(0.0, |r| r.ops_per_sec);
    let settled_base = results
        .first()
        .and_then(|r| r.settled_ops_per_sec)
        .unwrap_or(0.0);
    // RocksDB timed without statistics and no counters pass: nothing to show.
    let counted = |r: &RunResult| !r.counters_source.starts_with("none: statistics off");
    for r in results {
        let _ = write!(
            s,
            "| {} | {:.0} | {} |",
            r.engine,
            r.ops_per_sec,
            ratio(r.ops_per_sec, base)
        );
        if repeated {
            match &r.repeats {
                Some(rep) => {
                    let (lo, hi) = rep.range();
                    let _ = write!(s, " {} | {lo:.0}-{hi:.0} |", rep.ops_per_sec.len());
                }
                None => s.push_str(" 1 | - |"),
            }
        }
        if fill {
            let x = r.settled_ops_per_sec;
            let _ = write!(
                s,
                " {} | {} |",
                opt(x, 0),
                x.map_or("-".into(), |x| ratio(x, settled_base))
            );
        }
        let dash = || "-".to_string();
        let _ = writeln!(
            s,
            " {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.2} | {} | {} | {} | {} | {} | {} |",
            r.latency_us.p50,
            r.latency_us.p95,
            r.latency_us.p99,
            r.latency_us.p999,
            opt(r.cpu_ms_per_op().map(|x| x * 1e3), 1),
            r.stall_seconds,
            if counted(r) {
                per_op(r.storage.read_bytes, r.ops)
            } else {
                dash()
            },
            if counted(r) {
                per_op(r.storage.write_bytes, r.ops)
            } else {
                dash()
            },
            opt(r.write_amplification, 2),
            mib(r.disk_bytes),
            r.cache
                .hit_ratio
                .map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
            mib(r.peak_rss_bytes),
        );
    }
    s
}

/// Ratios of each engine to the first, for the metrics that compare across machines.
pub fn ratio_table(results: &[RunResult]) -> String {
    let Some(b) = results.first() else {
        return String::new();
    };
    let mut s = format!(
        "| engine / {} | throughput | p50 | p99 | p99.9 | storage read bytes | storage write bytes | write amp | disk size | peak RSS |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        b.engine
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.engine,
            ratio(r.ops_per_sec, b.ops_per_sec),
            ratio(r.latency_us.p50, b.latency_us.p50),
            ratio(r.latency_us.p99, b.latency_us.p99),
            ratio(r.latency_us.p999, b.latency_us.p999),
            ratio(r.storage.read_bytes as f64, b.storage.read_bytes as f64),
            ratio(r.storage.write_bytes as f64, b.storage.write_bytes as f64),
            ratio(
                r.write_amplification.unwrap_or(f64::NAN),
                b.write_amplification.unwrap_or(0.0)
            ),
            ratio(r.disk_bytes as f64, b.disk_bytes as f64),
            ratio(r.peak_rss_bytes as f64, b.peak_rss_bytes as f64),
        );
    }
    s
}

fn per_op_table(results: &[RunResult]) -> String {
    let mut s = String::from(
        "| engine | op | count | mean us | p50 us | p95 us | p99 us | p99.9 us | max us |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        for (op, l) in &r.per_op_latency_us {
            let _ = writeln!(
                s,
                "| {} | {op} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                r.engine, l.count, l.mean, l.p50, l.p95, l.p99, l.p999, l.max
            );
        }
    }
    s
}

fn phase_table(results: &[RunResult]) -> String {
    let mut s = String::from(
        "| engine | phase | mix | ops | seconds | ops/s | mean us | read / write mean us | last half: mean us, ops/s | p50 us | p99 us |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let f = |x: Option<f64>, d: usize| x.map_or("-".into(), |v| format!("{v:.d$}"));
    for r in results {
        for p in &r.phases {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.2} | {:.0} | {:.2} | {} / {} | {}, {} | {:.1} | {:.1} |",
                r.engine,
                p.index,
                p.mix,
                p.ops,
                p.seconds,
                p.ops_per_sec,
                p.mean_us,
                f(p.read_mean_us, 2),
                f(p.write_mean_us, 2),
                f(p.converged_mean_us, 2),
                f(p.converged_ops_per_sec, 0),
                p.latency_us.p50,
                p.latency_us.p99
            );
        }
    }
    s
}

fn counts_table(results: &[RunResult]) -> String {
    let mut s = String::from(
        "| engine | load s | reads found | reads missing | scan entries | bg writes | storage reads (ops / MiB) | storage writes (ops / MiB) | flush MiB | compaction MiB | cache hits / misses | OS read syscalls / MiB | OS write syscalls / MiB | RSS at open MiB |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {:.2} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {} | {} / {} | {} / {} | {} / {} | {} |",
            r.engine,
            r.load.seconds,
            r.reads_found,
            r.reads_missing,
            r.scan_entries,
            r.background_write_ops,
            r.storage.read_ops,
            mib(r.storage.read_bytes),
            r.storage.write_ops,
            mib(r.storage.write_bytes),
            mib(r.flush_bytes_written),
            mib(r.compaction_bytes_written),
            r.cache.hits,
            r.cache.misses,
            r.os_io.syscalls_read,
            mib(r.os_io.chars_read),
            r.os_io.syscalls_write,
            mib(r.os_io.chars_written),
            mib(r.rss_at_open_bytes),
        );
    }
    s
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// Storage reads per op, CPU time and the read cache's components (AC-Key's metrics).
pub fn read_cache_table(results: &[RunResult]) -> String {
    let mut s = String::from(
        "| engine | ops/s | storage reads/op | CPU user s | CPU sys s | CPU ms/op | cache policy | KV / KP / block / ghost MiB at end | KV hits/point read | KP hits/point read | block hit |\n\
         |---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n",
    );
    for r in results {
        let (policy, sizes, kv, kp, block) = match &r.read_cache {
            Some(c) => (
                c.policy.clone(),
                format!(
                    "{} / {} / {} / {}",
                    mib(c.kv_bytes),
                    mib(c.kp_bytes),
                    mib(c.block_bytes),
                    mib(c.ghost_bytes)
                ),
                pct(c.kv_hit_ratio),
                pct(c.kp_hit_ratio),
                pct(c.block_hit_ratio),
            ),
            None => (
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                pct(r.cache.hit_ratio),
            ),
        };
        let _ = writeln!(
            s,
            "| {} | {:.0} | {} | {:.2} | {:.2} | {} | {policy} | {sizes} | {kv} | {kp} | {block} |",
            r.engine,
            r.ops_per_sec,
            opt(r.storage_reads_per_op(), 3),
            r.cpu.user_s,
            r.cpu.sys_s,
            opt(r.cpu_ms_per_op(), 4),
        );
    }
    s
}

/// The run Leaper's goals are measured against: cairn:lru when present, else the first.
pub fn lru_reference(results: &[RunResult]) -> usize {
    results
        .iter()
        .position(|r| r.engine == "cairn:lru")
        .unwrap_or(0)
}

fn int(x: Option<u64>) -> String {
    x.map_or("-".into(), |v| v.to_string())
}

/// `x / base - 1` as a signed percentage.
pub fn change(x: Option<f64>, base: Option<f64>) -> String {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 && x.is_finite() => format!("{:+.1}%", (x / b - 1.0) * 100.0),
        _ => "-".into(),
    }
}

/// Leaper's metrics per engine (invalidation misses, the job windows, p95 spikes, warming),
/// changes against cairn:lru (else the first engine).
pub fn invalidation_table(results: &[RunResult]) -> String {
    let Some(base) = results.get(lru_reference(results)) else {
        return String::new();
    };
    let bi = base.invalidation.clone().unwrap_or_default();
    let f = |x: Option<u64>| x.map(|v| v as f64);
    let mut s = format!(
        "| engine | T s | inv. misses (T) | vs {b} | after flush / compaction | by scans | T=1 s | T=60 s | misses in T1+T2 | vs {b} | hit % in / out | QPS in / out | QPS out vs {b} | p95 spike s | {b} spike s | warmed blocks | precision | jobs F/C | model jobs |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        b = base.engine
    );
    for r in results {
        let Some(v) = &r.invalidation else { continue };
        let _ = writeln!(
            s,
            "| {} | {:.1} | {} | {} | {} / {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {:.1} | {:.1} | {} | {} | {}/{} | {} |",
            r.engine,
            v.window_ms as f64 / 1000.0,
            int(v.misses),
            change(f(v.misses), f(bi.misses)),
            int(v.misses_after_flush),
            int(v.misses.zip(v.misses_after_flush).map(|(m, fl)| m.saturating_sub(fl))),
            int(v.misses_by_scans),
            int(v.misses_1s),
            int(v.misses_60s),
            int(v.window_misses),
            change(f(v.window_misses), f(bi.window_misses)),
            pct(v.hit_ratio_in_windows),
            pct(v.hit_ratio_outside),
            opt(v.qps_in_windows, 0),
            opt(v.qps_outside, 0),
            change(v.qps_outside, bi.qps_outside),
            v.p95_spike_seconds,
            bi.p95_spike_seconds,
            int(v.warmed_blocks),
            pct(v.precision),
            v.flushes,
            v.compactions,
            int(v.jobs_with_model),
        );
    }
    let _ = writeln!(
        s,
        "\nT = {} ms ({}). Windows: each flush or compaction from start to end + T ({:.0}% of {}'s \
         measured time). Inv. misses: foreground data-block misses on keys a job invalidated, \
         within T (also T = 1 s and 60 s), as the engine counts them, point reads and scans alike, split by the kind of job that invalidated the block. Misses in T1+T2: every \
         block-cache miss in timeline intervals inside windows. p95 spike s: seconds whose p95 \
         exceeds twice the run's median p95. Precision: warmed blocks later hit / warmed blocks, since the engine opened.",
        bi.window_ms,
        bi.window_source,
        100.0 * bi.window_seconds / (bi.window_seconds + bi.outside_seconds).max(1e-9),
        base.engine,
    );
    if results.iter().any(|r| r.leaper.is_some()) {
        s.push_str(
            "\n| engine | warm-up ops | slot ms | trace rows | A* | k | train s | bundle KiB | positive rate | precision | recall | AUC | IW proxy precision / recall | loaded |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        );
        for r in results {
            let Some(l) = &r.leaper else { continue };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} / {} | {} |",
                r.engine,
                l.warmup_ops,
                l.slot_ms,
                l.trace_rows,
                int(l.range_width),
                l.k,
                l.train_seconds,
                l.bundle_bytes as f64 / 1024.0,
                opt(l.positive_rate, 3),
                opt(l.precision, 3),
                opt(l.recall, 3),
                opt(l.auc, 3),
                opt(l.iw_precision, 3),
                opt(l.iw_recall, 3),
                match (&l.error, l.loaded) {
                    (_, true) => "yes".to_string(),
                    (Some(e), false) =>
                        format!("no: {}", e.lines().last().unwrap_or("").replace('|', "/")),
                    (None, false) => "no (--leaper-no-train)".to_string(),
                },
            );
        }
        s.push_str(
            "\nThe learner's offline scores are on the last slots of the warm-up's own trace \
             (horizon 1), against the Incremental-Warmup proxy on the same samples; positive \
             rate: share of those samples whose range is read in the next slot (near 1, every \
             range is hot and the prediction is trivial). A*: Algorithm 1's range width.\n",
        );
    }
    s
}

/// The full `report.md`; `plots` are file names (relative to the report) to embed.
/// Which clock the run's times are on.
fn clock_line(r: &RunResult) -> String {
    match &r.virtual_clock {
        Some(v) => format!(
            "Clock: **virtual**: every time below is simulated, each I/O priced on {} (one \
             queue per device, background work at fixed points every {} requests), CPU priced \
             from counts ({}); a rerun gives the same times.",
            v.run
                .devices
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
            v.run.bg_every_ops,
            v.run.cpu_prices
        ),
        None => "Clock: wall.".to_string(),
    }
}

pub fn report(results: &[RunResult], plots: &[String]) -> String {
    let mut s = String::from("# cairn-bench report\n\n");
    if let Some(r) = results.first() {
        let sp = &r.spec;
        let c = &r.config;
        let _ = writeln!(
            s,
            "Workload **{}**: {} records, {} ops, seed {}, {} threads, dataset {}, \
             distribution {}, zipf theta {}, key {} B, value {:?}, scan length {}{}{}.\n",
            r.workload,
            sp.records,
            sp.ops,
            sp.seed,
            sp.threads,
            sp.dataset,
            sp.distribution
                .map_or("workload default".into(), |d| format!("{d:?}")),
            sp.zipf_theta,
            sp.key_size,
            sp.value_size,
            sp.scan_length,
            sp.mix
                .as_ref()
                .map_or(String::new(), |m| format!(", mix `{m}`")),
            sp.phases
                .as_ref()
                .map_or(String::new(), |p| format!(", phases `{p}`")),
        );
        let _ = writeln!(
            s,
            "Budget: write buffer {}, block cache {}, bloom {} bits/key, compression {}, direct I/O {}, sync {}, device profile {}.\n",
            size(c.write_buffer_size),
            size(c.cache_bytes),
            c.bloom_bits,
            c.compression.name(),
            c.direct_io,
            c.sync,
            c.device.name()
        );
        let _ = writeln!(s, "{}\n", clock_line(r));
        let mut versions: Vec<String> = results
            .iter()
            .filter(|r| !r.engine_version.is_empty())
            .map(|r| format!("{}: {}", r.engine, r.engine_version))
            .collect();
        versions.dedup();
        if !versions.is_empty() {
            let _ = writeln!(s, "Versions: {}.\n", versions.join("; "));
        }
    }
    s.push_str("## Results\n\n");
    s.push_str(&table(results));
    s.push_str("\n## Ratios to the first engine\n\n");
    s.push_str(&ratio_table(results));
    s.push_str("\n## Latency per operation type\n\n");
    s.push_str(&per_op_table(results));
    if results.iter().any(|r| r.phases.len() > 1) {
        s.push_str("\n## Phases\n\n");
        s.push_str(&phase_table(results));
    }
    if let Some(t) = super::transition::section(results) {
        s.push_str("\n## K change (RusKey's Fig. 10)\n\n");
        s.push_str(&t);
    }
    s.push_str("\n## Storage reads, CPU and read cache\n\n");
    s.push_str(&read_cache_table(results));
    s.push_str(
        "\nStorage reads/op counts the reads of point reads and scans when the engine reports \
         them apart (cairn), else every storage read (compactions included). CPU is user + sys \
         time of the process over the measured phase, all threads.\n",
    );
    if results.iter().any(|r| r.spec.workload.is_leaper()) {
        s.push_str("\n## Cache invalidation around flushes and compactions (Leaper)\n\n");
        s.push_str(&invalidation_table(results));
    }
    s.push_str("\n## Counts\n\n");
    s.push_str(&counts_table(results));
    s.push_str(
        "\nNotes: storage I/O and cache numbers are for the measured phase as each engine counts \
         them (RocksDB: statistics tickers, from a separate untimed pass unless it was timed \
         with --rocksdb-statistics; SST write ops are not counted by RocksDB). Write \
         amplification is storage bytes written over the whole run (load included) divided by \
         key+value bytes put. Peak RSS is per process; `compare` runs each engine in its own \
         process unless `--in-process` was given. OS columns are /proc/self/io deltas.\n",
    );
    if !plots.is_empty() {
        s.push_str("\n## Plots\n\n");
        for p in plots {
            let _ = writeln!(s, "![{p}]({p})\n");
        }
    }
    s
}
