//! End-to-end: the real binary runs every workload on a tiny data set and writes JSON,
//! the timeline CSV, report.md and PNG plots.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cairn-bench");

const WORKLOADS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readseq",
    "seekrandom",
    "readwhilewriting",
    "ycsb-a",
    "ycsb-b",
    "ycsb-c",
    "ycsb-d",
    "ycsb-e",
    "ycsb-f",
    "mix",
    "phased",
    "ruskey-sessions",
    "ac-key-two-phase",
    "ac-key-default",
];

fn engines() -> Vec<&'static str> {
    let mut e = vec!["btree", "cairn", "fjall"];
    if cfg!(feature = "rocksdb") {
        e.push("rocksdb");
    }
    e
}

fn assert_png(p: &Path) {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(
        b.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        p.display()
    );
    assert!(b.len() > 5000, "{} is suspiciously small", p.display());
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn every_workload_runs_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in engines() {
        // CPU time is counted in clock ticks: a run of a few milliseconds (the btree's
        // fills) may read 0, so the check is over all of an engine's runs.
        let mut user_s = 0.0;
        for w in WORKLOADS {
            let out = tmp.path().join(format!("{engine}-{w}"));
            let j = tmp.path().join(format!("{engine}-{w}.json"));
            let status = Command::new(BIN)
                .args(["run", "--engine", engine, "--workload", w])
                .args(["--records", "2000", "--ops", "3000", "--timeline-ms", "20"])
                .args(["--write-buffer-size", "64K", "--cache-bytes", "256K"])
                .args(["--mix", "read=0.4,scan=0.1,update=0.3,insert=0.1,rmw=0.1"])
                .args([
                    "--phases",
                    "read=0.9,update=0.1:1000;scan=0.5,insert=0.5:500",
                ])
                .arg("--db-dir")
                .arg(tmp.path())
                .arg("--json")
                .arg(&j)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                status.status.success(),
                "{engine} {w}: {}",
                String::from_utf8_lossy(&status.stderr)
            );
            let v = json(&j);
            assert_eq!(v["engine"], engine);
            assert_eq!(v["workload"], *w);
            let ops = v["ops"].as_u64().unwrap();
            let want = match *w {
                "fillseq" | "fillrandom" => 2000,
                "phased" => 1500,
                _ => 3000,
            };
            assert_eq!(ops, want, "{engine} {w}");
            assert!(v["ops_per_sec"].as_f64().unwrap() > 0.0);
            for k in ["p50", "p95", "p99", "p999"] {
                assert!(
                    v["latency_us"][k].as_f64().unwrap() > 0.0,
                    "{engine} {w} {k}"
                );
            }
            let phase_ops: Vec<u64> = v["phases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["ops"].as_u64().unwrap())
                .collect();
            let want_phases: Vec<u64> = match *w {
                "phased" => vec![1000, 500],
                "ruskey-sessions" => vec![600; 5],
                "ac-key-two-phase" => vec![1500, 1500],
                _ => vec![want],
            };
            assert_eq!(phase_ops, want_phases, "{engine} {w}");
            // Single-threaded, every chosen key exists (loaded or already inserted).
            assert_eq!(v["reads_missing"], 0, "{engine} {w}");
            let csv = std::fs::read_to_string(j.with_extension("timeline.csv")).unwrap();
            assert!(csv.starts_with("second,ops,qps,p95_us"), "{csv}");
            assert!(csv.lines().count() >= 2, "{engine} {w}: empty timeline");
            // Read-cache gauges: cairn fills the component sizes, btree leaves them empty.
            let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
            let col = header
                .iter()
                .position(|h| *h == "block_cache_bytes")
                .expect("block_cache_bytes column");
            let gauges: Vec<&str> = csv
                .lines()
                .skip(1)
                .map(|l| l.split(',').nth(col).unwrap())
                .collect();
            assert_eq!(
                gauges.iter().all(|g| !g.is_empty()),
                engine == "cairn",
                "{engine} {w}: {gauges:?}"
            );
            assert_eq!(
                v["read_cache"].is_object(),
                engine == "cairn",
                "{engine} {w}"
            );
            let u = v["cpu"]["user_s"].as_f64().unwrap();
            assert!(u >= 0.0, "{engine} {w}: {u}");
            user_s += u;
            let report = std::fs::read_to_string(out.join("report.md")).unwrap();
            assert!(report.contains(&format!("| {engine} |")));
            for png in ["throughput.png", "latency_cdf.png", "timeline.png"] {
                assert_png(&out.join(png));
            }
            assert!(out.join(format!("{engine}.json")).exists());
        }
        assert!(user_s > 0.0, "{engine}: no CPU time measured in any run");
    }
    // Engine data directories are removed unless --keep-db.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("cairn-bench-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn compare_runs_children_and_reports_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let mut list = engines();
    list.push("btree"); // a repeat: run-to-run noise, gets its own files
    let out = Command::new(BIN)
        .args([
            "compare",
            "--engines",
            &list.join(","),
            "--workload",
            "ycsb-b",
        ])
        .args(["--records", "3000", "--ops", "3000", "--timeline-ms", "20"])
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("| engine | ops/s | vs first |"), "{table}");
    assert!(table.contains("| 1.00x |"), "{table}");
    assert_eq!(table.lines().count(), 2 + list.len());
    assert!(tmp.path().join("btree.json").exists());
    assert!(tmp.path().join("btree-2.json").exists());
    assert!(tmp.path().join("btree-2.timeline.csv").exists());
    let report = std::fs::read_to_string(tmp.path().join("report.md")).unwrap();
    assert!(report.contains("Ratios to the first engine"));
    assert!(report.contains("![throughput.png](throughput.png)"));
    // Identical op stream: every engine found the same reads (RocksDB's untimed counters
    // pass included).
    let found: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| json(&e.path())["reads_found"].as_u64().unwrap())
        .collect();
    let rocks = usize::from(cfg!(feature = "rocksdb"));
    assert_eq!(found.len(), list.len() + rocks);
    assert!(found.windows(2).all(|w| w[0] == w[1]), "{found:?}");
    if rocks == 1 {
        // Timed without statistics, its counters taken from the separate pass.
        let r = json(&tmp.path().join("rocksdb.json"));
        let c = json(&tmp.path().join("rocksdb.counters.json"));
        assert!(c["cache"]["hits"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(r["cache"], c["cache"]);
        assert!(r["counters_source"].as_str().unwrap().contains("separate"));
        assert!(!r["config"]["rocksdb_statistics"].as_bool().unwrap());
    }
}

#[test]
fn repeats_alternate_the_order_and_report_the_median() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "compare",
            "--engines",
            "btree,cairn",
            "--workload",
            "fillrandom",
        ])
        .args([
            "--records",
            "4000",
            "--repeat",
            "3",
            "--write-buffer-size",
            "64K",
        ])
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("| runs | range ops/s |"), "{table}");
    assert!(table.contains("| ops/s to settled |"), "{table}");
    for (engine, order) in [("btree", [0, 1, 0]), ("cairn", [1, 0, 1])] {
        let r = json(&tmp.path().join(format!("{engine}.json")));
        let rep = &r["repeats"];
        let rates: Vec<f64> = rep["ops_per_sec"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(rates.len(), 3, "{r}");
        let mut sorted = rates.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(r["ops_per_sec"].as_f64().unwrap(), sorted[1], "{rates:?}");
        let pos: Vec<u64> = rep["position"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(pos, order);
        for i in 1..=3 {
            assert!(tmp.path().join(format!("{engine}.run{i}.json")).exists());
        }
        // Fills are also timed to the end of the background work they caused.
        let settled = r["settled_seconds"].as_f64().unwrap();
        assert!(settled >= r["seconds"].as_f64().unwrap(), "{r}");
    }
    // cairn's 4000 records in 64 KiB memtables flushed: its write amplification counts
    // the flushes it waited for.
    let c = json(&tmp.path().join("cairn.json"));
    assert!(c["flush_bytes_written"].as_u64().unwrap() > 0, "{c}");
}

#[test]
fn sweep_runs_figures_and_writes_summaries() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["sweep", "--figures", "fig11,fig12"])
        .args(["--engines", "cairn:baseline,btree", "--reference", "btree"])
        .args(["--records", "2000", "--ops", "900", "--timeline-ms", "20"])
        .args(["--write-buffer-size", "64K", "--cache-bytes", "64K"])
        .args(["--device", "ssd", "--settle"])
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    assert!(summary.contains("device profile ssd"), "{summary}");
    assert!(summary.contains("## Fig. 11"), "{summary}");
    assert!(summary.contains("| ac-key-default | "), "{summary}");
    assert!(summary.contains("(1.00x)"), "{summary}");
    assert!(summary.contains("CPU user s"), "{summary}");
    assert!(summary.contains("| scans-then-points | "), "{summary}");
    assert!(tmp.path().join("fig11.md").exists());
    assert_png(&tmp.path().join("fig12_cache_sizes.png"));
    let point = tmp.path().join("fig12").join("scans-then-points");
    let r = json(&point.join("cairn-baseline.json"));
    assert_eq!(r["phases"].as_array().unwrap().len(), 2);
    assert_eq!(r["config"]["device"], "ssd");
    // Only the engines that exist: an unknown preset stops the sweep before it runs.
    let out = Command::new(BIN)
        .args(["sweep", "--figures", "fixed", "--engines", "btree"])
        .args(["--records", "10", "--ops", "10"])
        .arg("--out")
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert!(err.contains("no preset"), "{err}");
        assert!(!tmp.path().join("x").join("fixed").exists());
    }
}

#[test]
fn unavailable_engines_fail_clearly_before_running() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "compare",
            "--engines",
            "btree,cairn:nosuchpreset",
            "--workload",
            "readrandom",
        ])
        .args(["--records", "10", "--ops", "10"])
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no preset"), "{err}");
    assert!(
        !tmp.path().join("btree.json").exists(),
        "ran btree before failing"
    );
    let out = Command::new(BIN)
        .args(["run", "--engine", "nosuch", "--workload", "ycsb-a"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn help_documents_the_flags() {
    for sub in ["run", "compare"] {
        let out = Command::new(BIN).args([sub, "--help"]).output().unwrap();
        let h = String::from_utf8(out.stdout).unwrap();
        for flag in [
            "--workload",
            "--records",
            "--ops",
            "--seed",
            "--mix",
            "--zipf",
            "--distribution",
            "--dataset",
            "--phases",
            "--value-size-dist",
            "--scan-length",
            "--write-buffer-size",
            "--cache-bytes",
            "--bloom-bits",
            "--direct-io",
            "--sync",
            "--out",
        ] {
            assert!(h.contains(flag), "{sub} --help lacks {flag}");
        }
    }
}

#[test]
fn ruskey_sessions_record_missions_and_summarize() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sessions");
    let status = Command::new(BIN)
        .args(["compare", "--engines", "cairn:default,cairn:tiering"])
        .args(["--workload", "ruskey-sessions", "--distribution", "uniform"])
        .args(["--records", "3000", "--ops", "3000", "--mission-ops", "250"])
        .args(["--write-buffer-size", "64K", "--level1-bytes", "128K"])
        .args(["--size-ratio", "4", "--value-size", "200", "--settle"])
        .arg("--db-dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let v = json(&out.join("cairn-tiering.json"));
    assert_eq!(v["mission_ops"], 250);
    let missions = v["missions"].as_array().unwrap();
    // 5 sessions of 600 ops: 250 + 250 + 100 each.
    assert_eq!(missions.len(), 15);
    let ops: Vec<u64> = missions
        .iter()
        .map(|m| m["ops"].as_u64().unwrap())
        .collect();
    assert_eq!(&ops[..3], &[250, 250, 100]);
    assert_eq!(missions[14]["phase"], 4);
    // cairn:tiering's K = T follows --size-ratio 4 at every level with data.
    let ks = missions[14]["ks"].as_array().unwrap();
    assert!(!ks.is_empty() && ks.iter().all(|k| k == 4), "{ks:?}");
    let d = json(&out.join("cairn-default.json"));
    assert!(d["missions"][0]["ks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k == 1));
    for p in d["phases"].as_array().unwrap() {
        assert!(p["mean_us"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["converged_ops"], 300, "{p}");
        assert!(p["converged_mean_us"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_png(&out.join("ruskey_missions.png"));
    let s = Command::new(BIN)
        .args(["ruskey-summary", "--ruskey", "cairn:tiering", "--dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(s.status.success(), "{s:?}");
    let md = std::fs::read_to_string(out.join("ruskey-summary.md")).unwrap();
    assert_eq!(md, String::from_utf8(s.stdout).unwrap());
    for want in [
        "### Table 3: rank per session",
        "1 Read-H (90% lookups)",
        "| average rank (Table 3) | <= 1.2 |",
        "### Convergence of cairn:tiering",
    ] {
        assert!(md.contains(want), "{want}\n{md}");
    }
    // Without a RusKey method there are tables but no goals.
    let s = Command::new(BIN)
        .args(["ruskey-summary", "--no-plot", "--dir"])
        .arg(&out)
        .arg("--out")
        .arg(tmp.path().join("s.md"))
        .output()
        .unwrap();
    assert!(s.status.success(), "{s:?}");
    assert!(String::from_utf8(s.stdout).unwrap().contains("no goals"));
    // A static single-phase run writes no series unless --mission-ops is given.
    let one = tmp.path().join("one.json");
    let status = Command::new(BIN)
        .args(["run", "--engine", "cairn", "--workload", "ycsb-a"])
        .args(["--records", "1000", "--ops", "1000", "--json"])
        .arg(&one)
        .arg("--db-dir")
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(json(&one).get("missions").is_none());
}

#[test]
fn a_scripted_k_change_takes_each_presets_transition() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("transitions");
    let status = Command::new(BIN)
        .args(["compare", "--engines"])
        .arg("cairn:transition-greedy,cairn:transition-lazy,cairn:transition-flexible")
        .args(["--workload", "mix", "--mix", "read=0.5,update=0.5"])
        .args([
            "--distribution",
            "uniform",
            "--records",
            "3000",
            "--ops",
            "3000",
        ])
        .args(["--mission-ops", "250", "--set-k-at", "6:4"])
        .args(["--write-buffer-size", "64K", "--level1-bytes", "128K"])
        .args(["--size-ratio", "4", "--value-size", "200", "--settle"])
        .arg("--db-dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    for e in ["greedy", "lazy", "flexible"] {
        let v = json(&out.join(format!("cairn-transition-{e}.json")));
        assert_eq!(v["config"]["set_k_at"]["mission"], 6, "{e}");
        let missions = v["missions"].as_array().unwrap();
        assert_eq!(missions.len(), 12, "{e}");
        let set: Vec<usize> = (0..12)
            .filter(|&i| missions[i].get("k_set").is_some())
            .collect();
        assert_eq!(set, vec![5], "{e}: K set once, at the 6th mission's end");
        assert_eq!(missions[5]["k_set"], 4);
        let ks = |i: usize| -> Vec<u64> {
            missions[i]["ks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_u64().unwrap())
                .collect()
        };
        assert!(ks(5).iter().all(|&k| k == 1), "{e}: {:?}", ks(5));
        if e != "lazy" {
            // Greedy and flexible set K at once (greedy then merges the level down).
            assert!(ks(6).iter().all(|&k| k == 4), "{e}: {:?}", ks(6));
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## K change (RusKey's Fig. 10)"), "{md}");
    assert!(md.contains("| cairn:transition-flexible |"), "{md}");
    assert_png(&out.join("transition.png"));
}
