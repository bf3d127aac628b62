//! SA-LSM's runs end to end: an AWPI stream on cairn's two tiers, the placement, the
//! measured replay, the run JSON's `placement` section and `salsm-summary`.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cairn-bench");

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn small() -> Vec<&'static str> {
    vec![
        "--records",
        "1500",
        "--write-buffer-size",
        "64K",
        "--salsm-trace-days",
        "8",
        "--salsm-replay-days",
        "2",
        "--salsm-latency-scale",
        "0.01",
        "--timeline-ms",
        "50",
    ]
}

#[test]
fn awpi_runs_end_to_end_on_passive_placement() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("compare/order");
    let o = Command::new(BIN)
        .args([
            "compare",
            "--engines",
            "cairn:passive",
            "--workload",
            "awpi-order",
        ])
        .args(small())
        .arg("--db-dir")
        .arg(tmp.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&out.join("cairn-passive.json"));
    assert_eq!(v["workload"], "awpi-order");
    assert!(v["ops"].as_u64().unwrap() > 100, "{}", v["ops"]);
    assert!(v["latency_us"]["p99"].as_f64().unwrap() > 0.0);
    let p = &v["placement"];
    assert_eq!(p["method"], "passive");
    let b = p["budget"].as_f64().unwrap();
    assert!(b > 0.0 && b < 1.0, "{p}");
    // Level 1 sized for (1 - B) of the data: passive compaction moved data to the cold
    // tier, and some of the replay's reads went there.
    let m = p["migrated_share"].as_f64().unwrap();
    assert!(m > 0.1 && m < 1.0, "{p}");
    assert!(p["cold_fir"].as_f64().is_some(), "{p}");
    assert!(p["cold_bytes"].as_u64().unwrap() > 0, "{p}");
    assert!(p["cold_tier_reads_per_op"].as_f64().unwrap() >= 0.0);
    assert!(
        p["proactive"].is_null(),
        "passive makes no proactive compaction"
    );
    let a = &v["awpi"];
    assert_eq!(a["profile"], "order");
    assert!(a["censored_share"].as_f64().unwrap() > 0.3, "{a}");
    assert!(
        v["reads_missing"].as_u64().unwrap() == 0,
        "every read finds its record"
    );
    // The summary reads the directory back.
    let o = Command::new(BIN)
        .args(["salsm-summary", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(tmp.path().join("salsm-summary.md")).unwrap();
    assert!(md.contains("| order | cairn:passive | 1 |"), "{md}");
    assert!(md.contains("## Goals"), "{md}");
}

#[test]
fn age_tier_moves_the_budget_by_age() {
    let tmp = tempfile::tempdir().unwrap();
    let j = tmp.path().join("age.json");
    let o = Command::new(BIN)
        .args([
            "run",
            "--engine",
            "cairn:age-tier",
            "--workload",
            "awpi-logistics",
        ])
        .args(small())
        .args(["--salsm-budget", "0.5"])
        .arg("--json")
        .arg(&j)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = &json(&j)["placement"];
    assert_eq!(p["budget"].as_f64(), Some(0.5));
    assert!(p["age_days"].as_f64().unwrap() > 0.0, "{p}");
    assert!(p["proactive"]["skipped"].is_null(), "{p}");
    assert!(p["proactive_cpu_ms"].as_f64().unwrap() > 0.0, "{p}");
    // The age rule's share is exact up to records written in the same sample window.
    let m = p["migrated_share"].as_f64().unwrap();
    assert!((m - 0.5).abs() < 0.08, "{p}");
}

/// The service runs only where the Python environment is (scripts/test.sh makes it); LRU
/// trains in about a second.
#[test]
fn sa_lru_places_the_service_cold_set_when_python_is_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let py = root.join("target/pyenv/bin/python");
    let ok = py.exists()
        && root.join("python/cairn/learn/salsm/__main__.py").exists()
        && Command::new(&py)
            .args(["-c", "import numpy, sksurv, lightgbm"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "skipped: no Python environment with the service at {}",
            py.display()
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let j = tmp.path().join("lru.json");
    let o = Command::new(BIN)
        .args(["run", "--engine", "cairn:sa-lru", "--workload", "awpi-pay"])
        .args(small())
        .arg("--python")
        .arg(&py)
        .arg("--json")
        .arg(&j)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = &json(&j)["placement"];
    assert_eq!(p["method"], "lru");
    let s = &p["service"];
    assert!(s["wall_seconds"].as_f64().unwrap() > 0.0, "{s}");
    let b = p["budget"].as_f64().unwrap();
    // The service's cold set is exact: what it names is what moved.
    assert!(
        (p["migrated_share"].as_f64().unwrap() - b).abs() < 0.02,
        "{p}"
    );
    assert_eq!(p["cold_fir"], p["cold_set_fir"], "{p}");
    assert!(p["cold_set_keys"].as_u64().unwrap() > 0);
}

/// The offline trace keeps `--store-times` access times per record, more than the engine's
/// 32, so that `evaluate` can cut it at T_cut and still see a busy record's earlier times
/// (with 32 the store had dropped them by the trace's end: 82% of order's records alive at
/// T_cut had no time before it).
#[test]
fn salsm_trace_keeps_the_asked_number_of_times() {
    let tmp = tempfile::tempdir().unwrap();
    let most = |n: &str| {
        let out = tmp.path().join(format!("trace-{n}"));
        let o = Command::new(BIN)
            .args([
                "salsm-trace",
                "--workload",
                "awpi-order",
                "--store-times",
                n,
                "--records",
                "1500",
                "--salsm-trace-days",
                "8",
            ])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (h, recs) = cairn::access::record_trace::read(&out.join("trace.rtr")).unwrap();
        assert_eq!(
            json(&out.join("awpi.json"))["store_times"],
            n.parse::<u64>().unwrap()
        );
        (
            h.max_times,
            recs.iter().map(|r| r.times.len()).max().unwrap(),
        )
    };
    let (cap, longest) = most("32");
    assert_eq!((cap, longest), (32, 32));
    let (cap, longest) = most("4096");
    assert_eq!(cap, 4096);
    assert!(longest > 32, "the busiest record kept {longest} times");
}
