//! Replicated writes on a 3-node loopback cluster: cairn's store against RocksDB's (the
//! same Raft logic behind the engine seam), one client and many, repeated with the order
//! alternated; prints a markdown table (medians and ranges) with the command, commit and
//! machine at the top.
//!
//!     cairn-raft-bench --engines cairn,rocksdb --clients 1,16 --ops 20000 --repeat 3

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn_raft::client::KvClient;
use clap::Parser;
use hdrhistogram::Histogram;

#[derive(Parser)]
#[command(about = "Replicated writes: cairn's Raft store against RocksDB's on one cluster shape")]
struct Args {
    /// Engines to compare (cairn; rocksdb needs the node binary built with feature `rocksdb`).
    #[arg(long, default_value = "cairn,rocksdb", value_delimiter = ',')]
    engines: Vec<String>,
    /// Concurrent clients, one point each.
    #[arg(long, default_value = "1,16", value_delimiter = ',')]
    clients: Vec<usize>,
    /// Acknowledged writes per run.
    #[arg(long, default_value_t = 20_000)]
    ops: usize,
    /// Value bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Runs per engine and point (the order alternates between repeats).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// The node binary (default: cairn-raft-kv beside this one).
    #[arg(long)]
    node_bin: Option<PathBuf>,
    /// First port (nodes take three consecutive ones).
    #[arg(long, default_value_t = 23001)]
    base_port: u16,
}

/// One run's result.
struct Run {
    ops_per_s: f64,
    p50_us: u64,
    p99_us: u64,
}

struct Cluster {
    nodes: Vec<Child>,
    addrs: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in &mut self.nodes {
            c.kill().ok();
            c.wait().ok();
        }
    }
}

async fn start(bin: &PathBuf, engine: &str, base_port: u16) -> Result<Cluster, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let addrs: Vec<String> = (0..3)
        .map(|i| format!("127.0.0.1:{}", base_port + i))
        .collect();
    let mut nodes = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let child = Command::new(bin)
            .args([
                "--id",
                &(i + 1).to_string(),
                "--addr",
                addr,
                "--engine",
                engine,
            ])
            .arg("--dir")
            .arg(dir.path().join(format!("node{}", i + 1)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bin.display()))?;
        nodes.push(child);
    }
    let cluster = Cluster {
        nodes,
        addrs: addrs.clone(),
        _dir: dir,
    };
    let client = KvClient::new(addrs.clone());
    let members: BTreeMap<u64, String> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| (i as u64 + 1, a.clone()))
        .collect();
    let t = Instant::now();
    while client.init(&addrs[0], &members).await.is_err() {
        if t.elapsed() > Duration::from_secs(20) {
            return Err(format!("{engine}: the cluster did not start"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The first acknowledged write says a leader is elected and serving.
    client
        .put("warm", "up")
        .await
        .map_err(|e| format!("{engine}: {e}"))?;
    Ok(cluster)
}

async fn load(addrs: &[String], clients: usize, ops: usize, value: &str) -> Result<Run, String> {
    let per = ops / clients.max(1);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (addrs, value) = (addrs.to_vec(), value.to_string());
        tasks.push(tokio::spawn(async move {
            let client = KvClient::new(addrs);
            let mut h = Histogram::<u64>::new(3).expect("histogram");
            for i in 0..per {
                let t = Instant::now();
                client
                    .put(&format!("c{c:02}-{i:08}"), &value)
                    .await
                    .map_err(|e| e.to_string())?;
                h.record(t.elapsed().as_micros() as u64).ok();
            }
            Ok::<_, String>(h)
        }));
    }
    let mut all = Histogram::<u64>::new(3).expect("histogram");
    for t in tasks {
        let h = t.await.map_err(|e| e.to_string())??;
        all.add(&h).ok();
    }
    let secs = started.elapsed().as_secs_f64();
    Ok(Run {
        ops_per_s: (per * clients) as f64 / secs,
        p50_us: all.value_at_quantile(0.5),
        p99_us: all.value_at_quantile(0.99),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn range(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.0}-{hi:.0}")
}

fn git(args: &[&str]) -> String {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", std::env::consts::ARCH)
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let a = Args::parse();
    let bin = a.node_bin.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .map(|p| p.with_file_name("cairn-raft-kv"))
            .unwrap_or_default()
    });
    let value = "v".repeat(a.value_size);
    // (clients, engine) -> runs
    let mut runs: BTreeMap<(usize, String), Vec<Run>> = BTreeMap::new();
    for r in 0..a.repeat {
        for &clients in &a.clients {
            let mut order = a.engines.clone();
            if r % 2 == 1 {
                order.reverse();
            }
            for engine in &order {
                let cluster = start(&bin, engine, a.base_port).await?;
                let run = load(&cluster.addrs, clients, a.ops, &value).await?;
                eprintln!(
                    "{engine}, {clients} clients, run {}: {:.0} writes/s, p99 {} us",
                    r + 1,
                    run.ops_per_s,
                    run.p99_us
                );
                drop(cluster);
                runs.entry((clients, engine.clone())).or_default().push(run);
            }
        }
    }
    let dirty = if git(&["status", "--porcelain", "--", "crates"]).is_empty() {
        ""
    } else {
        "+dirty"
    };
    println!("### Replicated writes: cairn's store against RocksDB's\n");
    println!(
        "- command: `cairn-raft-bench --engines {} --clients {} --ops {} --value-size {} --repeat {}`",
        a.engines.join(","),
        a.clients.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
        a.ops,
        a.value_size,
        a.repeat
    );
    println!(
        "- commit: `{}{dirty}`",
        git(&["rev-parse", "--short", "HEAD"])
    );
    println!("- machine: {}", machine());
    println!("- cluster: 3 node processes on loopback; each write acknowledged once committed (appends synced on a majority) and applied on the leader\n");
    // Ratios against the last engine named (RocksDB's store by default).
    let base_engine = a.engines.last().cloned().unwrap_or_default();
    println!("| clients | engine | writes/s (median) | range | p50 us | p99 us (median) | writes/s vs {base_engine} | p99 vs {base_engine} |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for &clients in &a.clients {
        let base = runs.get(&(clients, base_engine.clone())).map(|r| {
            (
                median(r.iter().map(|x| x.ops_per_s).collect()),
                median(r.iter().map(|x| x.p99_us as f64).collect()),
            )
        });
        for engine in &a.engines {
            let Some(r) = runs.get(&(clients, engine.clone())) else {
                continue;
            };
            let tput: Vec<f64> = r.iter().map(|x| x.ops_per_s).collect();
            let m = median(tput.clone());
            let p50 = median(r.iter().map(|x| x.p50_us as f64).collect());
            let p99 = median(r.iter().map(|x| x.p99_us as f64).collect());
            let (ratio, p99_ratio) = base.map_or(("-".into(), "-".into()), |(b, b99)| {
                (format!("{:.2}x", m / b), format!("{:.2}x", p99 / b99))
            });
            println!(
                "| {clients} | {engine} | {m:.0} | {} | {p50:.0} | {p99:.0} | {ratio} | {p99_ratio} |",
                range(&tput)
            );
        }
    }
    Ok(())
}
