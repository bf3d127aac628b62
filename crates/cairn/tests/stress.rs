//! A short db_stress-style run over every preset (the harness is in `stress_harness/`;
//! `examples/db_stress.rs` runs the long ones): writers, readers and chaos with faults,
//! power losses and SIGKILLs, each reopen checked against the expected state. Fixed
//! seeds; a failure prints the command that replays its directory.
//!
//! `CAIRN_STRESS_CYCLES` sets the cycles per preset (default 8), `CAIRN_STRESS_SEED`
//! the seed.

#[path = "stress_harness/mod.rs"]
mod harness;
mod support;

use std::time::Duration;

use support::env_u64;

const TEST_NAME: &str = "stress_every_preset_with_faults";

#[test]
fn stress_every_preset_with_faults() {
    if harness::child_main_if_requested() {
        return;
    }
    let cycles = env_u64("CAIRN_STRESS_CYCLES", 8);
    let cfg = harness::Config {
        seed: env_u64("CAIRN_STRESS_SEED", 1),
        presets: harness::available_presets(),
        cycles,
        cycles_per_dir: 4,
        knobs: harness::Knobs {
            run_ms: (50, 150),
            steps: (300, 900),
            deterministic: false,
        },
        // The last cycle of each directory is a kill.
        kill_every: 4,
        child: Some(harness::ChildCmd {
            exe: std::env::current_exe().unwrap(),
            args: [TEST_NAME, "--exact", "--nocapture", "--test-threads=1"]
                .map(String::from)
                .to_vec(),
        }),
        watchdog: Duration::from_secs(120),
        dir_seed: None,
        verbose: false,
    };
    let report = harness::run(&cfg);
    eprintln!("{}\n{}", report.table(), report.work_table());
    assert!(
        report.clean(),
        "stress failures:\n{}",
        report.failures.join("\n")
    );
    let t = report.total();
    assert_eq!(t.cycles, cycles * cfg.presets.len() as u64);
    assert!(
        t.sum.acked > 0 && t.sum.reopen_checks > 0,
        "the run did nothing"
    );
    if cycles >= 4 {
        assert!(
            t.sum.kills > 0 && t.sum.power_losses > 0,
            "no kill or power loss"
        );
    }
}
