//! `cairn-bench paper <name>` end to end on tiny settings (the papers that need no Python
//! learner): the runs happen, the summary lands in OUT/summary.md with its provenance,
//! and `--publish` keeps one generated section in the results page.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cairn-bench");

fn paper(args: &[&str]) -> String {
    let out = Command::new(BIN).arg("paper").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "paper {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn bourbon_runs_its_sections_and_publishes_into_one_generated_section() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bourbon");
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::write(
        results.join("bourbon.md"),
        "# Bourbon: results\n\nReading.\n",
    )
    .unwrap();
    let args = [
        "bourbon",
        "--clock",
        "virtual",
        "--records",
        "3000",
        "--ops",
        "300",
        "--wops",
        "300",
        "--sections",
        "datasets dists",
        "--datasets",
        "seg1",
        "--dists",
        "zipfian",
        "--out",
        out.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
        "--publish",
    ];
    let stdout = paper(&args);
    let summary = read(&tmp.path().join("bourbon-virtual-nvme/summary.md"));
    assert!(stdout.contains(&summary));
    assert!(summary.starts_with("# Bourbon on cairn\n\n- command: `cairn-bench paper bourbon"));
    assert!(summary.contains("| seg1 | 3000 |"), "{summary}");
    assert!(summary.contains("| zipfian |"), "{summary}");
    assert!(
        summary.contains("| seg1 | cairn:wisckey |"),
        "breakdown rows: {summary}"
    );
    paper(&args);
    let page = read(&results.join("bourbon.md"));
    assert!(page.starts_with("# Bourbon: results\n\nReading.\n"));
    assert_eq!(
        page.matches("paper bourbon --publish`: begin").count(),
        1,
        "{page}"
    );
    assert!(page.contains("## Bourbon on cairn"));
}

#[test]
fn ac_key_runs_a_figure_through_the_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ac-key");
    paper(&[
        "ac-key",
        "--clock",
        "virtual",
        "--records",
        "3000",
        "--ops",
        "300",
        "--figures",
        "fig8",
        "--engines",
        "cairn:ac-key,cairn:block",
        "--out",
        out.to_str().unwrap(),
    ]);
    let summary = read(&tmp.path().join("ac-key-virtual-ssd/summary.md"));
    assert!(summary.starts_with("# AC-Key experiments (cairn-bench sweep)\n\n- command: "));
    assert!(
        summary.contains("cairn:ac-key") && summary.contains("Fig. 8"),
        "{summary}"
    );
}

#[test]
fn ruskey_runs_the_transitions_part() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ruskey");
    paper(&[
        "ruskey",
        "--clock",
        "virtual",
        "--quick",
        "--records",
        "3000",
        "--mission-ops",
        "100",
        "--transition-missions",
        "6",
        "--parts",
        "transitions",
        "--transition-engines",
        "cairn:transition-greedy,rocksdb",
        "--out",
        out.to_str().unwrap(),
    ]);
    let summary = read(&tmp.path().join("ruskey-virtual-nvme/summary.md"));
    assert!(summary.contains("## Fig. 10: transitions"), "{summary}");
    assert!(summary.contains("_Part transitions: "), "{summary}");
    assert!(tmp
        .path()
        .join("ruskey-virtual-nvme/transitions/cairn-transition-greedy.json")
        .exists());
}

#[test]
fn leaper_runs_its_workloads_and_a_sweep_at_the_synthetic_runs_window() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("leaper");
    // Baselines only: no learner, so no Python.
    paper(&[
        "leaper",
        "--clock",
        "virtual",
        "--quick",
        "--records",
        "3000",
        "--ops",
        "1500",
        "--warmup-secs",
        "1",
        "--workloads",
        "synthetic",
        "--engines",
        "cairn:lru,cairn:warmup",
        "--sweeps",
        "skew",
        "--zipfs",
        "0",
        "--fig10",
        "false",
        "--out",
        out.to_str().unwrap(),
    ]);
    let summary = read(&tmp.path().join("leaper-virtual-ssd/summary.md"));
    assert!(summary.contains("### Table 2 workloads"), "{summary}");
    assert!(
        summary.contains("| synthetic | cairn:warmup |"),
        "{summary}"
    );
    assert!(
        summary.contains("| 0 | cairn:lru |"),
        "the sweep's point: {summary}"
    );
    assert!(
        summary.contains("skipped on the virtual clock"),
        "{summary}"
    );
    assert!(tmp
        .path()
        .join("leaper-virtual-ssd/skew/0/cairn-lru.json")
        .exists());
}
