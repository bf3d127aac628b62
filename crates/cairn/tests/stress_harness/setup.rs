//! Options of each preset scaled down so that a short cycle flushes and compacts, what
//! some presets need besides (a Leaper model, SA-LSM's tier directories, RusKey's short
//! missions), and the per-cycle choices drawn from the cycle's seed.

use std::path::Path;

use cairn::access::ManualClock;
use cairn::policy::{PrefetchPolicy, TunerPolicy};
use cairn::{DeviceProfile, IndexPolicy, LearnMode, Options};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::faults::FaultPlan;

/// The presets of a full run.
const ALL_PRESETS: &[&str] = &[
    "default", "wisckey", "bourbon", "ac-key", "leaper", "ruskey", "sa-lsm", "tiering",
];

/// The presets this build can open: RusKey's needs cairn's `ruskey` feature.
pub fn available_presets() -> Vec<String> {
    ALL_PRESETS
        .iter()
        .filter(|p| cfg!(feature = "ruskey") || **p != "ruskey")
        .map(|p| p.to_string())
        .collect()
}

/// Where a directory's Leaper model lives (a copy of the test data's bundle).
pub fn leaper_model(root: &Path) -> std::path::PathBuf {
    root.join("leaper.bundle")
}

/// Copies what a preset needs into the directory's temporary root.
pub fn prepare_root(preset: &str, root: &Path) {
    if preset == "leaper" {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leaper/synth.bundle");
        std::fs::copy(src, leaper_model(root)).expect("copy the Leaper model bundle");
    }
}

/// A preset's options for one directory, with sizes from the directory's seed. They stay
/// the same across the directory's cycles (the shape of the tree is durable).
pub fn dir_options(preset: &str, root: &Path, dir_seed: u64) -> Options {
    let mut rng = SmallRng::seed_from_u64(dir_seed ^ 0x0b75);
    let mut o = cairn::presets::by_name(preset).unwrap_or_else(|| panic!("no preset {preset}"));
    o.write_buffer_size = [8 << 10, 16 << 10, 32 << 10][rng.random_range(0..3)];
    o.target_file_size = [4 << 10, 8 << 10, 16 << 10][rng.random_range(0..3)];
    o.level1_bytes = [32 << 10, 64 << 10][rng.random_range(0..2)];
    o.block_size = [256, 512, 1024][rng.random_range(0..3)];
    o.block_cache_bytes = 256 << 10;
    o.size_ratio = 4;
    o.num_levels = 5;
    o.l0_compaction_trigger = 2;
    o.l0_slowdown_trigger = 8;
    o.l0_stop_trigger = 12;
    // Tiering's K = T at every level, fitted to the smaller T and fewer levels.
    o.level_runs = o
        .level_runs
        .iter()
        .map(|&k| k.min(o.size_ratio))
        .take(o.num_levels - 1)
        .collect();
    if o.value_threshold.is_some() {
        o.vlog_gc_space_amp = Some(if rng.random_bool(0.5) { 1.2 } else { 1.5 });
    }
    fit_preset(preset, root, &mut o, &mut rng);
    o
}

/// What a preset needs to do its own work within a cycle.
fn fit_preset(preset: &str, root: &Path, o: &mut Options, rng: &mut SmallRng) {
    match preset {
        // Tables learned within milliseconds, half the directories every table.
        "bourbon" => {
            let mode = if rng.random_bool(0.5) {
                LearnMode::Always
            } else {
                LearnMode::Cba
            };
            o.index = IndexPolicy::Learned {
                delta: 8,
                mode,
                wait_ms: 5,
            };
            o.mmap_reads = rng.random_bool(0.5);
        }
        // The model the learner wrote for the test data; slots of milliseconds.
        "leaper" => {
            if let Some(a) = o.access.as_mut() {
                a.slot_ms = 5;
            }
            if let PrefetchPolicy::Leaper(p) = &mut o.prefetch {
                p.model = Some(leaper_model(root));
            }
        }
        // Missions of a few hundred operations, checkpoints every other one.
        "ruskey" => {
            assert!(matches!(o.tuner.policy, TunerPolicy::Lerp(_)));
            o.tuner.mission_ops = 300;
            o.tuner.checkpoint_every = 2;
        }
        // The two tiers in the database directory, without simulated device latency.
        "sa-lsm" => {
            for t in &mut o.tiers {
                t.profile = DeviceProfile::None;
            }
        }
        _ => {}
    }
}

/// How a cycle ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Close,
    Drop,
    PowerLoss,
    Kill,
}

/// Knobs of a run that shape its cycles.
#[derive(Clone, Debug)]
pub struct Knobs {
    /// Milliseconds a concurrent cycle runs.
    pub run_ms: (u64, u64),
    /// Steps a deterministic cycle takes.
    pub steps: (u64, u64),
    /// Every cycle deterministic (no background threads, no kills): a whole directory,
    /// and so any failure in it, replays exactly.
    pub deterministic: bool,
}

/// Everything a cycle does, drawn from its seed.
#[derive(Clone, Debug)]
pub struct Spec {
    pub seed: u64,
    /// One thread interleaves every actor by the seed: with background work off, the
    /// cycle replays exactly.
    pub det: bool,
    pub bg: bool,
    pub max_bg: usize,
    pub max_sub: usize,
    pub end: End,
    pub faults: FaultPlan,
    pub run_ms: u64,
    pub steps: u64,
    /// Power loss: mutating operations after the cut is planned before the power goes.
    pub cut_after: u64,
    /// Power loss in a concurrent cycle: share of the run after which the cut is planned.
    pub cut_at: f64,
    /// A deterministic cycle's clock for time-driven policies, a millisecond per step.
    pub clock: ManualClock,
}

impl Spec {
    pub fn new(seed: u64, knobs: &Knobs, kill: bool, vlog: bool) -> Spec {
        let mut rng = SmallRng::seed_from_u64(seed);
        let bg = rng.random_ratio(7, 10) && !knobs.deterministic;
        let det = (!bg && !kill && rng.random_ratio(2, 3)) || knobs.deterministic;
        let end = if kill && !knobs.deterministic {
            End::Kill
        } else {
            [End::Close, End::Drop, End::PowerLoss, End::PowerLoss][rng.random_range(0..4)]
        };
        Spec {
            seed,
            det,
            bg,
            max_bg: rng.random_range(1..=3),
            max_sub: rng.random_range(1..=2),
            end,
            faults: FaultPlan::choose(&mut rng, vlog),
            run_ms: rng.random_range(knobs.run_ms.0..=knobs.run_ms.1),
            steps: rng.random_range(knobs.steps.0..=knobs.steps.1),
            cut_after: rng.random_range(0..400),
            cut_at: rng.random_range(0.3..1.0),
            clock: ManualClock::new(1 << 40),
        }
    }

    /// The directory's options with this cycle's threads (and `faults`). A deterministic
    /// cycle runs time-driven policies on its step clock and learns every table without
    /// waiting, so that wall-clock time changes nothing.
    pub fn options(
        &self,
        dir: &Options,
        faults: Option<std::sync::Arc<cairn::storage::FaultInjector>>,
    ) -> Options {
        let mut o = Options {
            background_work: self.bg,
            max_background_compactions: self.max_bg,
            max_subcompactions: self.max_sub,
            faults,
            ..dir.clone()
        };
        if self.det {
            // The cost-benefit analyzer weighs measured times: learn every table instead.
            if let IndexPolicy::Learned { wait_ms, mode, .. } = &mut o.index {
                *wait_ms = 0;
                *mode = LearnMode::Always;
            }
            let clock = std::sync::Arc::new(self.clock.clone());
            if let Some(a) = o.access.as_mut() {
                a.clock = clock.clone();
            }
            if let Some(r) = o.records.as_mut() {
                r.clock = clock.clone();
            }
            o.placement.clock = clock;
        }
        o
    }

    pub fn describe(&self) -> String {
        format!(
            "{} bg={} jobs={} subcompactions={} end={:?} faults=[{}]",
            if self.det {
                format!("deterministic {} steps", self.steps)
            } else {
                format!("concurrent {} ms", self.run_ms)
            },
            self.bg,
            self.max_bg,
            self.max_sub,
            self.end,
            self.faults.describe()
        )
    }
}
