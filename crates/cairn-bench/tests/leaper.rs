//! Leaper's workloads and metrics: the op mixes match Table 2's shares, the warm-up part
//! precedes the measured stream, and a tiny run writes the `invalidation` section, the
//! background jobs and the timeline columns the windows are computed from.

use cairn_bench::workload::mix::OpKind;
use cairn_bench::workload::{KeyCounter, Op, Plan, WorkloadName, WorkloadSpec};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cairn-bench");

fn spec(w: WorkloadName, ops: u64, warmup: u64) -> WorkloadSpec {
    WorkloadSpec {
        workload: w,
        records: 10_000,
        ops,
        warmup_ops: warmup,
        zipf_theta: w.default_theta(),
        ..Default::default()
    }
}

fn ops_of(s: &WorkloadSpec) -> Vec<Op> {
    let plan = Plan::build(s).unwrap();
    let keys = KeyCounter::new(s.records);
    plan.stream(s.seed, 0, 1, s.value_size, &keys).collect()
}

fn shares(ops: &[Op]) -> [f64; 4] {
    let n = ops.len() as f64;
    let c = |k| ops.iter().filter(|o| o.kind == k).count() as f64 / n;
    [
        c(OpKind::Read),
        c(OpKind::Scan),
        c(OpKind::Update),
        c(OpKind::Insert),
    ]
}

fn assert_shares(got: [f64; 4], want: [f64; 4], what: &str) {
    // 5 sigma of a binomial proportion at n = 100k is under 0.007.
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 0.007, "{what}: op {i}: {g} vs {w}");
    }
}

#[test]
fn op_mixes_match_table_2() {
    let table: [(WorkloadName, [f64; 4]); 3] = [
        (WorkloadName::LeaperSynthetic, [0.75, 0.0, 0.20, 0.05]),
        (WorkloadName::LeaperEcommerce, [0.75, 0.10, 0.10, 0.05]),
        (WorkloadName::LeaperIm, [0.40, 0.0, 0.35, 0.25]),
    ];
    for (w, want) in table {
        let ops = ops_of(&spec(w, 100_000, 20_000));
        assert_eq!(ops.len(), 120_000, "{w:?}: warm-up + measured");
        assert_shares(shares(&ops[..20_000]), want, &format!("{w:?} warm-up"));
        assert_shares(shares(&ops[20_000..]), want, &format!("{w:?}"));
        // Inserts claim fresh keys; everything else reads or writes existing ones.
        let mut next = 10_000;
        for o in &ops {
            if o.kind == OpKind::Insert {
                assert_eq!(o.key, next);
                next += 1;
            } else {
                assert!(o.key < next, "{w:?}: {o:?}");
            }
        }
    }
    assert_eq!(WorkloadName::LeaperSynthetic.default_theta(), 0.5);
    assert_eq!(WorkloadName::LeaperEcommerce.default_theta(), 0.3);
    assert_eq!(WorkloadName::LeaperIm.default_theta(), 0.9);
}

#[test]
fn sweeps_override_the_read_share_and_range_ratio() {
    let mut s = spec(WorkloadName::LeaperSynthetic, 100_000, 0);
    s.range_ratio = Some(0.2);
    assert_shares(shares(&ops_of(&s)), [0.60, 0.15, 0.20, 0.05], "range 20%");
    let mut s = spec(WorkloadName::LeaperSynthetic, 100_000, 0);
    s.read_share = Some(0.9);
    assert_shares(shares(&ops_of(&s)), [0.90, 0.0, 0.08, 0.02], "reads 90%");
}

#[test]
fn skew_is_clustered_for_synthetic_and_recent_for_im() {
    // Zipf over key index: the lowest 10% of the keys take far more than 10% of reads.
    let ops = ops_of(&spec(WorkloadName::LeaperSynthetic, 100_000, 0));
    let reads: Vec<&Op> = ops.iter().filter(|o| o.kind == OpKind::Read).collect();
    let low = reads.iter().filter(|o| o.key < 1000).count() as f64 / reads.len() as f64;
    assert!(low > 0.25, "{low}");
    let ops = ops_of(&spec(WorkloadName::LeaperIm, 100_000, 0));
    let reads: Vec<&Op> = ops.iter().filter(|o| o.kind == OpKind::Read).collect();
    let new = reads.iter().filter(|o| o.key >= 10_000).count() as f64 / reads.len() as f64;
    assert!(new > 0.5, "IM reads favour new keys: {new}");
}

#[test]
fn ending_the_warm_up_early_gives_the_pinned_stream() {
    // A time-bounded warm-up stops after N ops; a run with --warmup-ops N sees the same
    // measured stream.
    let long = spec(WorkloadName::LeaperEcommerce, 5_000, 50_000);
    let plan = Plan::build(&long).unwrap();
    let keys = KeyCounter::new(long.records);
    let mut g = plan.stream(long.seed, 0, 1, long.value_size, &keys);
    let warm: Vec<Op> = g.by_ref().take(1234).collect();
    g.end_warmup();
    let measured: Vec<Op> = g.collect();
    assert_eq!(measured.len(), 5_000);
    let pinned = ops_of(&spec(WorkloadName::LeaperEcommerce, 5_000, 1234));
    assert_eq!(&pinned[..1234], &warm[..]);
    assert_eq!(&pinned[1234..], &measured[..]);
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A tiny data set whose 64 KiB memtables flush several times a second.
fn tiny(tmp: &Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "--records",
        "3000",
        "--ops",
        "6000",
        "--write-buffer-size",
        "64K",
        "--cache-bytes",
        "128K",
        "--timeline-ms",
        "50",
        "--leaper-slot-ms",
        "50",
        "--db-dir",
    ]
    .map(String::from)
    .to_vec();
    v.push(tmp.display().to_string());
    v
}

#[test]
fn every_cairn_run_json_carries_the_invalidation_section() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let out = Command::new(BIN)
        .args([
            "compare",
            "--engines",
            "cairn:lru,cairn:warmup,cairn:leaper,cairn:oracle,btree",
        ])
        .args(["--workload", "leaper-synthetic", "--leaper-no-train"])
        .args(["--warmup-ops", "3000"])
        .args(tiny(tmp.path()))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| inv. misses (T) |"), "{stdout}");
    // T came from cairn:lru's recovery time, measured in a first run.
    assert!(out_dir.join("cairn-lru.calibration.json").exists());
    let mut found = Vec::new();
    for stem in [
        "cairn-lru",
        "cairn-warmup",
        "cairn-leaper",
        "cairn-oracle",
        "btree",
    ] {
        let v = json(&out_dir.join(format!("{stem}.json")));
        let inv = &v["invalidation"];
        for k in ["misses", "window_misses", "warmed_blocks", "precision"] {
            assert!(
                inv.get(k).is_some(),
                "{stem}: invalidation.{k} missing: {inv}"
            );
        }
        assert!(inv["window_ms"].as_u64().unwrap() > 0, "{stem}");
        assert!(
            inv["window_source"].as_str().unwrap().contains("recovery")
                || inv["window_source"].as_str().unwrap().contains("default"),
            "{stem}: {inv}"
        );
        let cairn = stem.starts_with("cairn");
        assert_eq!(inv["misses"].is_u64(), cairn, "{stem}: {inv}");
        assert_eq!(inv["warmed_blocks"].is_u64(), cairn, "{stem}: {inv}");
        assert!(inv["window_misses"].is_u64(), "{stem}");
        assert_eq!(v["warmup_ops"], 3000, "{stem}");
        assert_eq!(v["ops"], 6000, "{stem}");
        if cairn {
            // 64 KiB memtables: flushes ran in the measured part.
            let jobs = v["background_jobs"].as_array().unwrap();
            assert!(
                jobs.iter().any(|j| j["kind"] == "flush"),
                "{stem}: {jobs:?}"
            );
            assert!(inv["flushes"].as_u64().unwrap() > 0, "{stem}");
        }
        // The same measured stream for every engine.
        found.push(v["reads_found"].as_u64().unwrap());
        let csv = std::fs::read_to_string(out_dir.join(format!("{stem}.timeline.csv"))).unwrap();
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with("cache_hits,cache_misses,invalidation_misses"));
    }
    assert!(found.windows(2).all(|w| w[0] == w[1]), "{found:?}");
    let leaper = json(&out_dir.join("cairn-leaper.json"));
    assert_eq!(leaper["leaper"]["loaded"], false);
    assert!(leaper["leaper"]["trace_rows"].as_u64().unwrap() > 0);
    assert!(json(&out_dir.join("cairn-lru.json"))["leaper"].is_null());
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("Cache invalidation around flushes and compactions"));
    assert!(report.contains("![invalidation_timeline.png](invalidation_timeline.png)"));
    let png = std::fs::read(out_dir.join("invalidation_timeline.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    // The summary reads the directory back.
    let out = Command::new(BIN)
        .args(["leaper-summary", "--x-label", "w"])
        .arg(format!("synthetic={}", out_dir.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("| synthetic | cairn:leaper |"), "{s}");
    assert!(s.contains("goals"), "{s}");
}

/// The learner's interpreter, where the Python environment is (scripts/test.sh makes it).
fn learner_python() -> Option<std::path::PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python");
    let ok = py.exists()
        && Command::new(&py)
            .args(["-c", "import lightgbm, numpy, crc32c"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "skipped: no Python environment with LightGBM at {}",
            py.display()
        );
    }
    ok.then_some(py)
}

/// Periodic retraining: every N measured ops the learner trains again and the engine
/// loads the new bundle; with several request threads it is refused.
#[test]
fn leaper_retrains_every_n_measured_ops() {
    let Some(py) = learner_python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let j = tmp.path().join("leaper.json");
    let out = Command::new(BIN)
        .args(["run", "--engine", "cairn:leaper", "--workload", "leaper-im"])
        .args(tiny(tmp.path()))
        .args(["--warmup-secs", "2", "--leaper-max-k", "2"])
        .args(["--leaper-retrain-ops", "2500", "--threads", "1"])
        .arg("--python")
        .arg(&py)
        .arg("--json")
        .arg(&j)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&j);
    let r = v["leaper"]["retrains"].as_array().unwrap();
    let at: Vec<u64> = r.iter().map(|t| t["at_op"].as_u64().unwrap()).collect();
    assert_eq!(at, vec![2500, 5000], "6000 ops, every 2500");
    for t in r {
        assert_eq!(t["loaded"], true, "{t}");
        assert!(t["trace_rows"].as_u64().unwrap() > 0, "{t}");
    }
    let refused = Command::new(BIN)
        .args(["run", "--engine", "cairn:leaper", "--workload", "leaper-im"])
        .args(tiny(tmp.path()))
        .args(["--warmup-secs", "1", "--leaper-max-k", "1"])
        .args(["--leaper-retrain-ops", "2500", "--threads", "2"])
        .arg("--python")
        .arg(&py)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--threads 1"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn leaper_trains_on_the_warm_up_when_python_is_there() {
    let Some(py) = learner_python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let j = tmp.path().join("leaper.json");
    let out = Command::new(BIN)
        .args(["run", "--engine", "cairn:leaper", "--workload", "leaper-im"])
        .args(tiny(tmp.path()))
        .args(["--warmup-secs", "2", "--leaper-max-k", "3"])
        .arg("--python")
        .arg(&py)
        .arg("--json")
        .arg(&j)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&j);
    let l = &v["leaper"];
    assert!(l["trace_rows"].as_u64().unwrap() > 0, "{l}");
    assert!(l["k"].as_u64().unwrap() >= 1, "{l}");
    if l["loaded"] != true {
        panic!("no model: {}", l["error"]);
    }
    assert!(l["bundle_bytes"].as_u64().unwrap() > 0);
    assert!(v["warmup_ops"].as_u64().unwrap() > 0);
}
