//! The harness on cairn's virtual device clock: a rerun with one seed writes the same
//! JSON but for wall-time fields, what cannot run there is refused, and a finished run
//! reprices under another device.

use std::path::Path;
use std::process::Command;

use cairn_bench::report::json::{json_differences, strip_wall_fields};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cairn-bench");

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn run_ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(p: &Path) -> Value {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    strip_wall_fields(&mut v);
    v
}

fn virtual_args<'a>(engine: &'a str, workload: &'a str, json: &'a str) -> Vec<&'a str> {
    with_threads(engine, workload, json, "1")
}

fn with_threads<'a>(
    engine: &'a str,
    workload: &'a str,
    json: &'a str,
    threads: &'a str,
) -> Vec<&'a str> {
    vec![
        "run",
        "--engine",
        engine,
        "--workload",
        workload,
        "--records",
        "4000",
        "--ops",
        "4000",
        "--write-buffer-size",
        "64K",
        "--mission-ops",
        "500",
        "--bg-every-ops",
        "100",
        "--timeline-ms",
        "20",
        "--cache-bytes",
        "64K",
        "--threads",
        threads,
        "--clock",
        "virtual",
        "--device",
        "nvme",
        "--json",
        json,
    ]
}

#[test]
fn a_rerun_with_one_seed_writes_the_same_json_but_wall_fields() {
    let tmp = tempfile::tempdir().unwrap();
    for (engine, workload) in [
        ("cairn", "ycsb-a"),
        ("cairn:ruskey", "ruskey-sessions"),
        ("cairn:leaper", "leaper-synthetic"),
        ("cairn:bourbon-always", "readrandom"),
    ] {
        let paths: Vec<_> = (0..2)
            .map(|i| tmp.path().join(format!("{engine}-{workload}-{i}.json")))
            .collect();
        for p in &paths {
            run_ok(&virtual_args(engine, workload, p.to_str().unwrap()));
        }
        let (a, b) = (json(&paths[0]), json(&paths[1]));
        assert_eq!(a["clock"], "virtual");
        let diffs = json_differences(&a, &b);
        assert!(diffs.is_empty(), "{engine} on {workload}: {diffs:?}");
        assert!(a["virtual_clock"]["measured"]["now_ns"].as_u64().unwrap() > 0);
        assert!(!a["virtual_clock"]["windows"].as_array().unwrap().is_empty());
    }
    // SA-LSM's replay: the tiers keep their devices (ssd hot, hdd cold).
    let paths: Vec<_> = (0..2)
        .map(|i| tmp.path().join(format!("awpi-{i}.json")))
        .collect();
    for p in &paths {
        run_ok(&[
            "run",
            "--engine",
            "cairn:age-tier",
            "--workload",
            "awpi-order",
            "--awpi-scale",
            "0.02",
            "--clock",
            "virtual",
            "--device",
            "nvme",
            "--threads",
            "1",
            "--json",
            p.to_str().unwrap(),
        ]);
    }
    let (a, b) = (json(&paths[0]), json(&paths[1]));
    let diffs = json_differences(&a, &b);
    assert!(diffs.is_empty(), "the SA-LSM replay: {diffs:?}");
    let devices: Vec<&str> = a["virtual_clock"]["measured"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["model"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["ssd", "hdd"]);
}

#[test]
fn what_cannot_run_on_the_virtual_clock_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let j = tmp.path().join("x.json");
    let j = j.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 4] = [
        (
            virtual_args("btree", "ycsb-a", j),
            "cannot run on the virtual clock",
        ),
        (with_threads("cairn", "ycsb-a", j, "2"), "--threads 1"),
        (
            virtual_args("cairn", "readwhilewriting", j),
            "readwhilewriting",
        ),
        (
            virtual_args("cairn", "ycsb-a", j)
                .into_iter()
                .map(|a| if a == "nvme" { "none" } else { a })
                .collect(),
            "needs a device model",
        ),
    ];
    for (args, want) in cases {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_virtual_run_reprices_under_another_device() {
    let tmp = tempfile::tempdir().unwrap();
    let j = tmp.path().join("run.json");
    run_ok(&virtual_args("cairn", "ycsb-c", j.to_str().unwrap()));
    let out_json = tmp.path().join("hdd.json");
    let table = run_ok(&[
        "reprice",
        j.to_str().unwrap(),
        "--device",
        "hdd",
        "--json",
        out_json.to_str().unwrap(),
    ]);
    assert!(table.contains("| measured phase |"), "{table}");
    let rows: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let first = &rows[0];
    let (s, r) = (
        first["seconds"].as_f64().unwrap(),
        first["repriced_seconds"].as_f64().unwrap(),
    );
    assert!(r > 5.0 * s, "a disk is much slower than nvme: {s} -> {r}");
    assert!(
        rows.as_array().unwrap().len() > 2,
        "windows and missions reprice too"
    );
    // The same model gives the run's own times back.
    let same = tmp.path().join("same.json");
    run_ok(&[
        "reprice",
        j.to_str().unwrap(),
        "--device",
        "nvme",
        "--json",
        same.to_str().unwrap(),
    ]);
    let rows: Value = serde_json::from_str(&std::fs::read_to_string(&same).unwrap()).unwrap();
    for row in rows.as_array().unwrap() {
        let (s, r) = (
            row["seconds"].as_f64().unwrap(),
            row["repriced_seconds"].as_f64().unwrap(),
        );
        // Each I/O was priced to the nanosecond; repricing sums them unrounded.
        assert!((s - r).abs() <= 1e-4 * s.max(1e-3), "{row}");
    }
    // A wall-clock run keeps no counts to reprice.
    let w = tmp.path().join("wall.json");
    run_ok(&[
        "run",
        "--engine",
        "cairn",
        "--workload",
        "ycsb-c",
        "--records",
        "1000",
        "--ops",
        "1000",
        "--json",
        w.to_str().unwrap(),
    ]);
    let o = run(&["reprice", w.to_str().unwrap(), "--device", "hdd"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("wall clock"));
}
