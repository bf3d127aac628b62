//! Bourbon's plan: the learned index against fence pointers (`cairn:wisckey`, the same
//! engine with key-value separation), one compare per point, each engine `--repeat` times
//! with the order alternating, the median run in the tables.
//! 1. datasets (synthetic: linear, seg1, normal, seg10, clustered; `file:PATH` for a key
//!    file) and real key sets (`scripts/real-keys.sh`), uniform reads: throughput,
//!    segments, the sampled table-search time on each path and its index part, and the
//!    lookup breakdown (mean ns per get in memtables, filters, index or model, data block,
//!    value-log read, the rest);
//! 2. request distributions, read-only, on seg1;
//! 3. YCSB A-F on the default keys;
//! 4. write-heavy mixes with learning never / always / by cost-benefit: throughput, p99,
//!    learning CPU and the process's CPU in the measured phase.
//!
//! The budget is Bourbon's (LevelDB's) setting: an 8 MiB block cache, tables and value logs
//! read through memory maps (the data in the page cache), tables of `--table-size` and a
//! level 1 of `--level1` bytes, so millions of records make a tree of 4+ levels.

use super::plan::{result, stat, strings, Common, Plan};
use crate::engines::{ClockKind, Device};
use crate::report::json::RunResult;
use anyhow::{Context, Result};
use clap::Args;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct BourbonArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, default_value_t = 2_000_000)]
    pub records: u64,
    /// Ops of each read-only run.
    #[arg(long, default_value_t = 1_000_000)]
    pub ops: u64,
    /// Ops of each YCSB and write-mix run.
    #[arg(long, default_value_t = 300_000)]
    pub wops: u64,
    /// Runs per engine (median shown) [default: 3 on the wall clock, 1 on the virtual one,
    /// where a rerun repeats exactly].
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Ops of each run's stream run unmeasured first (the analyzer has learned by then).
    #[arg(long)]
    pub warmup: Option<u64>,
    #[arg(long, default_value = "2M")]
    pub table_size: String,
    #[arg(long, default_value = "512K")]
    pub level1: String,
    /// Every run's budget flags [default: a 4 MiB memtable, an 8 MiB block cache, memory
    /// maps, 10 bloom bits, --table-size tables, --level1 level 1].
    #[arg(long, allow_hyphen_values = true)]
    pub budget: Option<String>,
    /// Parts to run: datasets realkeys dists ycsb mixes.
    #[arg(long, default_value = "datasets realkeys dists ycsb mixes")]
    pub sections: String,
    #[arg(long, default_value = "linear seg1 normal seg10 clustered")]
    pub datasets: String,
    /// Where `scripts/real-keys.sh` writes the real key sets.
    #[arg(long, default_value = "bench-data/keys")]
    pub keys: PathBuf,
    #[arg(long, default_value = "cities flights words")]
    pub real: String,
    #[arg(
        long,
        default_value = "sequential zipfian hotspot exponential uniform latest"
    )]
    pub dists: String,
    #[arg(long, default_value = "read=0.5,update=0.5 read=0.1,update=0.9")]
    pub mixes: String,
    #[arg(long, default_value = "a b c d e f")]
    pub ycsb: String,
    /// The fence-pointer baseline (`cairn:baseline`: values inline).
    #[arg(long, default_value = "cairn:wisckey")]
    pub base: String,
}

/// The settled settings and the plan they run on.
struct Bourbon<'a> {
    a: &'a BourbonArgs,
    plan: Plan,
    base: String,
    repeat: u32,
    budget: String,
}

pub fn run(a: &BourbonArgs) -> Result<()> {
    let plan = Plan::new(
        "bourbon",
        &a.common,
        ClockKind::Wall,
        Device::None,
        Device::Nvme,
    )?;
    let base = plan.runnable("--base", &a.base)?;
    let repeat = a.repeat.unwrap_or(if plan.is_virtual() { 1 } else { 3 });
    let budget = a.budget.clone().unwrap_or_else(|| {
        format!(
            "--write-buffer-size 4M --cache-bytes 8M --mmap-reads --bloom-bits 10 \
             --target-file-size {} --level1-bytes {}",
            a.table_size, a.level1
        )
    });
    let b = Bourbon {
        a,
        plan,
        base,
        repeat,
        budget,
    };
    let mut md = b.header();
    let has = |s: &str| a.sections.split_whitespace().any(|x| x == s);
    if has("datasets") {
        let sets: Vec<String> = a.datasets.split_whitespace().map(str::to_string).collect();
        md += &b.datasets("Datasets", &sets)?;
    }
    if has("realkeys") {
        md += &b.real_keys()?;
    }
    if has("dists") {
        md += &b.dists()?;
    }
    if has("ycsb") {
        md += &b.ycsb()?;
    }
    if has("mixes") {
        md += &b.mixes()?;
    }
    b.plan.finish(md)
}

impl Bourbon<'_> {
    fn header(&self) -> String {
        let a = self.a;
        let mut s = format!(
            "# Bourbon on cairn\n\nrecords={}, read ops={}, write-mix ops={}, repeats={} \
             (median run), budget: {}\n",
            a.records, a.ops, a.wops, self.repeat, self.budget
        );
        if self.plan.is_virtual() {
            let _ = write!(
                s,
                "\nClock: virtual, device {} (--clock virtual --threads 1; reads by pread, no \
                 memory maps): ops/s and latencies are simulated device time plus priced CPU;\n\
                 the sampled ns columns (search ns, lookup breakdown) and CPU columns are still \
                 measured on the wall clock.\n",
                self.plan.device_name()
            );
        }
        s
    }

    /// One compare of `engines` (the baseline first) into `dir`.
    fn run(&self, dir: &Path, engines: &str, records: u64, args: &[String]) -> Result<()> {
        let mut v = vec![
            "--engines".to_string(),
            engines.to_string(),
            "--records".into(),
            records.to_string(),
            "--repeat".into(),
            self.repeat.to_string(),
        ];
        v.extend(self.budget.split_whitespace().map(str::to_string));
        if let Some(w) = self.a.warmup {
            v.extend(["--warmup-ops".into(), w.to_string()]);
        }
        v.extend(args.iter().cloned());
        self.plan.compare(dir, &v)
    }

    fn learned(&self) -> [String; 4] {
        [
            self.base.clone(),
            "cairn:bourbon".into(),
            "cairn:bourbon-always".into(),
            "cairn:bourbon-always-blocks".into(),
        ]
    }

    /// The read-only datasets table and its lookup breakdown. A dataset is a name or
    /// `file:PATH`: a key file loads all its keys (at most --records), with the key size
    /// its longest key needs.
    fn datasets(&self, title: &str, sets: &[String]) -> Result<String> {
        let mut s = format!(
            "\n## {title} (uniform random reads)\n\n| dataset | records | baseline ops/s | \
             bourbon ops/s | ratio | bourbon-always ops/s | ratio | always, whole blocks | \
             ratio | learned tables: cba (always) | #seg | %seg | fence search ns (index \
             part) | model search ns (index part) |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        );
        let engines = self.learned();
        let mut dirs = Vec::new();
        for d in sets {
            let name = dataset_name(d);
            let (records, key_flags) = match d.strip_prefix("file:") {
                Some(path) => key_file_shape(Path::new(path), self.a.records)?,
                None => (self.a.records, vec![]),
            };
            eprintln!("== dataset {name} ==");
            let dir = self.plan.out.join(format!("dataset-{name}"));
            let mut args = vec![
                "--workload".to_string(),
                "readrandom".into(),
                "--ops".into(),
                self.a.ops.to_string(),
                "--dataset".into(),
                d.clone(),
            ];
            args.extend(key_flags);
            self.run(&dir, &engines.join(","), records, &args)?;
            let rs = engines
                .iter()
                .map(|e| result(&dir, e))
                .collect::<Result<Vec<_>>>()?;
            s += &dataset_row(&name, records, &rs);
            dirs.push((name, rs));
        }
        s += "\n### Lookup breakdown (mean ns per get, one get in 64 timed; the runs above)\n\n\
              | dataset | engine | memtables | filters | index/model | data block | value read \
              | other | total | levels with tables |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for (name, rs) in &dirs {
            for (e, r) in engines.iter().zip(rs) {
                s += &breakdown_row(name, e, r);
            }
        }
        Ok(s)
    }

    fn real_keys(&self) -> Result<String> {
        let keys = &self.a.keys;
        let status = std::process::Command::new("bash")
            .arg("scripts/real-keys.sh")
            .arg(keys)
            .stdout(std::process::Stdio::inherit())
            .status()
            .context("running scripts/real-keys.sh (run from the repository's root)")?;
        anyhow::ensure!(status.success(), "scripts/real-keys.sh failed: {status}");
        let sets: Vec<String> = self
            .a
            .real
            .split_whitespace()
            .map(|k| format!("file:{}", keys.join(format!("{k}.keys")).display()))
            .collect();
        let title = format!("Real key sets (sources: {}/SOURCES.md)", keys.display());
        self.datasets(&title, &sets)
    }

    fn dists(&self) -> Result<String> {
        let mut s = String::from(
            "\n## Request distributions (read-only, seg1)\n\n\
             | distribution | baseline ops/s | bourbon ops/s | ratio |\n|---|---:|---:|---:|\n",
        );
        for q in self.a.dists.split_whitespace() {
            eprintln!("== distribution {q} ==");
            let dir = self.plan.out.join(format!("dist-{q}"));
            let args = [
                "--workload",
                "readrandom",
                "--dataset",
                "seg1",
                "--distribution",
                q,
                "--ops",
            ];
            let mut args = strings(&args);
            args.push(self.a.ops.to_string());
            let engines = format!("{},cairn:bourbon", self.base);
            self.run(&dir, &engines, self.a.records, &args)?;
            let (b, l) = (result(&dir, &self.base)?, result(&dir, "cairn:bourbon")?);
            let _ = writeln!(
                s,
                "| {q} | {:.0} | {:.0} | {:.2}x |",
                b.ops_per_sec,
                l.ops_per_sec,
                l.ops_per_sec / b.ops_per_sec
            );
        }
        Ok(s)
    }

    fn ycsb(&self) -> Result<String> {
        let mut s = String::from(
            "\n## YCSB (default keys)\n\n| workload | baseline ops/s | bourbon ops/s | ratio | \
             bourbon-always ops/s | ratio | baseline p99 us | bourbon p99 us | learned tables, \
             always | learned gets (fallbacks), always | learned seeks (fallbacks), always |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        let engines = &self.learned()[..3];
        for y in self.a.ycsb.split_whitespace() {
            eprintln!("== ycsb-{y} ==");
            let dir = self.plan.out.join(format!("ycsb-{y}"));
            let args = vec![
                "--workload".to_string(),
                format!("ycsb-{y}"),
                "--ops".into(),
                self.a.wops.to_string(),
            ];
            self.run(&dir, &engines.join(","), self.a.records, &args)?;
            let rs = engines
                .iter()
                .map(|e| result(&dir, e))
                .collect::<Result<Vec<_>>>()?;
            s += &ycsb_row(y, &rs[0], &rs[1], &rs[2]);
        }
        Ok(s)
    }

    fn mixes(&self) -> Result<String> {
        let mut s = String::from(
            "\n## Write-heavy mixes (seg1, uniform): learning never / always / cba\n\n\
             | mix | engine | ops/s | vs baseline | p99 us | tables learned | learning CPU ms | \
             process CPU s |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
        );
        let engines = [
            self.base.as_str(),
            "cairn:bourbon-never",
            "cairn:bourbon-always",
            "cairn:bourbon",
        ];
        for m in self.a.mixes.split_whitespace() {
            eprintln!("== mix {m} ==");
            let dir = self
                .plan
                .out
                .join(format!("mix-{}", m.replace(',', "-").replace('=', "_")));
            let args = [
                "--workload",
                "mix",
                "--mix",
                m,
                "--distribution",
                "uniform",
                "--dataset",
                "seg1",
                "--ops",
            ];
            let mut args = strings(&args);
            args.push(self.a.wops.to_string());
            self.run(&dir, &engines.join(","), self.a.records, &args)?;
            let base = result(&dir, engines[0])?.ops_per_sec;
            for e in engines {
                s += &mix_row(m, e, &result(&dir, e)?, base);
            }
        }
        Ok(s)
    }
}

/// A dataset's name in tables and directories (a key file's stem).
fn dataset_name(d: &str) -> String {
    match d.strip_prefix("file:") {
        Some(p) => {
            let name = Path::new(p)
                .file_name()
                .map_or(p.into(), |n| n.to_string_lossy());
            name.strip_suffix(".keys").unwrap_or(&name).to_string()
        }
        None => d.to_string(),
    }
}

/// A key file's records (its keys, at most `max`) and the key-size flag it needs: byte
/// keys (a line that is not a decimal integer) need their longest key plus the 8 bytes
/// inserted keys number; integers are 8 bytes, padded to the default 16.
fn key_file_shape(path: &Path, max: u64) -> Result<(u64, Vec<String>)> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let lines: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let records = (lines.len() as u64).min(max);
    let bytes = lines.iter().any(|l| !l.iter().all(u8::is_ascii_digit));
    let flags = if bytes {
        let longest = lines.iter().map(|l| l.len()).max().unwrap_or(0);
        vec!["--key-size".to_string(), (longest + 8).max(16).to_string()]
    } else {
        vec![]
    };
    Ok((records, flags))
}

fn ratio(x: f64, base: f64) -> f64 {
    if base > 0.0 {
        x / base
    } else {
        0.0
    }
}

/// A figure rounded to `places` decimals, written without trailing zeros.
fn rounded(x: f64, places: i32) -> String {
    let m = 10f64.powi(places);
    format!("{}", (x * m).round() / m)
}

/// Runs of the baseline, bourbon, bourbon-always and its whole-block ablation.
fn dataset_row(name: &str, records: u64, rs: &[RunResult]) -> String {
    let (b, l, a, w) = (&rs[0], &rs[1], &rs[2], &rs[3]);
    format!(
        "| {name} | {records} | {:.0} | {:.0} | {:.2}x | {:.0} | {:.2}x | {:.0} | {:.2}x | {} ({}) \
         | {} | {}% | {} ({}) | {} ({}) |\n",
        b.ops_per_sec,
        l.ops_per_sec,
        ratio(l.ops_per_sec, b.ops_per_sec),
        a.ops_per_sec,
        ratio(a.ops_per_sec, b.ops_per_sec),
        w.ops_per_sec,
        ratio(w.ops_per_sec, b.ops_per_sec),
        stat(l, "learned_tables"),
        stat(a, "learned_tables"),
        stat(a, "learned_segments"),
        rounded(stat(a, "learned_pct_segments"), 3),
        stat(b, "fence_path_ns").round(),
        stat(b, "fence_index_ns").round(),
        stat(a, "model_path_ns").round(),
        stat(a, "model_index_ns").round(),
    )
}

fn breakdown_row(name: &str, engine: &str, r: &RunResult) -> String {
    let steps = [
        "step_memtables_ns",
        "step_filters_ns",
        "step_index_ns",
        "step_data_ns",
        "step_value_ns",
        "step_other_ns",
        "step_total_ns",
    ];
    let cells: Vec<String> = steps
        .iter()
        .map(|k| stat(r, k).round().to_string())
        .collect();
    let levels = r
        .engine_stats
        .iter()
        .filter(|(k, v)| k.starts_with("files_L") && **v > 0.0)
        .count();
    format!("| {name} | {engine} | {} | {levels} |\n", cells.join(" | "))
}

fn ycsb_row(y: &str, b: &RunResult, l: &RunResult, a: &RunResult) -> String {
    format!(
        "| ycsb-{y} | {:.0} | {:.0} | {:.2}x | {:.0} | {:.2}x | {} | {} | {}, {} | {} ({}) | {} ({}) |\n",
        b.ops_per_sec,
        l.ops_per_sec,
        ratio(l.ops_per_sec, b.ops_per_sec),
        a.ops_per_sec,
        ratio(a.ops_per_sec, b.ops_per_sec),
        rounded(b.latency_us.p99, 1),
        rounded(l.latency_us.p99, 1),
        stat(l, "learned_tables"),
        stat(a, "learned_tables"),
        stat(a, "learned_lookups"),
        stat(a, "learned_fallbacks"),
        stat(a, "learned_seeks"),
        stat(a, "learned_seek_fallbacks"),
    )
}

fn mix_row(mix: &str, engine: &str, r: &RunResult, base: f64) -> String {
    format!(
        "| {mix} | {engine} | {:.0} | {:.2}x | {} | {} | {} | {} |\n",
        r.ops_per_sec,
        ratio(r.ops_per_sec, base),
        rounded(r.latency_us.p99, 1),
        stat(r, "learned_tables"),
        stat(r, "learn_cpu_ms").round(),
        rounded(r.cpu.user_s + r.cpu.sys_s, 2),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_give_their_count_and_the_key_size_their_longest_key_needs() {
        let dir = tempfile::tempdir().unwrap();
        let ints = dir.path().join("ints.keys");
        std::fs::write(&ints, "1\n22\n333\n\n").unwrap();
        assert_eq!(key_file_shape(&ints, 100).unwrap(), (3, vec![]));
        assert_eq!(key_file_shape(&ints, 2).unwrap().0, 2);
        let words = dir.path().join("words.keys");
        std::fs::write(&words, "a\nabcdefghijklmnopqrst\n").unwrap();
        let (n, flags) = key_file_shape(&words, 100).unwrap();
        assert_eq!(
            (n, flags),
            (2, vec!["--key-size".to_string(), "28".to_string()])
        );
        assert_eq!(dataset_name(&format!("file:{}", words.display())), "words");
        assert_eq!(dataset_name("seg1"), "seg1");
    }

    #[test]
    fn figures_print_as_the_tables_expect() {
        assert_eq!(rounded(0.52349, 3), "0.523");
        assert_eq!(rounded(12.0, 1), "12");
        assert_eq!(ratio(3.0, 0.0), 0.0);
    }
}
