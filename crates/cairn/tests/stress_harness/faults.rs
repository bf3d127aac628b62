//! The fault plan of a cycle, chosen from its seed: none, or one or two faults on the
//! WAL, the manifest, tables, value logs, `CURRENT` or any file, one-shot or persistent
//! (a disk that stays broken for the rest of the cycle).

use cairn::storage::{FaultError, FaultInjector, FaultOp};
use rand::rngs::SmallRng;
use rand::Rng;

/// Which files a fault hits.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Files whose name ends with this.
    Suffix(&'static str),
    /// The manifest `CURRENT` names when the fault is planned.
    Manifest,
    /// Any file or directory.
    Any,
}

#[derive(Clone, Debug)]
pub struct Fault {
    pub op: FaultOp,
    pub target: Target,
    /// The fault hits the nth matching operation from when it is planned.
    pub nth: u64,
    pub err: FaultError,
    /// Every matching operation from the nth on fails.
    pub persistent: bool,
}

#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    pub faults: Vec<Fault>,
}

/// Matching operations a persistent fault fails (the injector scans its plan on every
/// operation, so a disk that stays broken for the rest of a cycle is a long finite run).
const PERSISTENT_OPS: u64 = 1_500;
/// The same for faults on any file, which every operation counts.
const PERSISTENT_ANY_OPS: u64 = 400;

impl FaultPlan {
    /// A plan for one cycle; `vlog`: the preset writes value logs.
    pub fn choose(rng: &mut SmallRng, vlog: bool) -> FaultPlan {
        let n = match rng.random_range(0..10) {
            0..=2 => 0,
            3..=7 => 1,
            _ => 2,
        };
        FaultPlan {
            faults: (0..n).map(|_| one_fault(rng, vlog)).collect(),
        }
    }

    /// Plans the faults on the injector; `manifest` is the name `CURRENT` holds now.
    pub fn apply(&self, inj: &FaultInjector, manifest: &str) {
        for f in &self.faults {
            let count = match (f.persistent, &f.target) {
                (false, _) => 1,
                (true, Target::Any) => PERSISTENT_ANY_OPS,
                (true, _) => PERSISTENT_OPS,
            };
            for k in 0..count {
                match &f.target {
                    Target::Suffix(s) => inj.fail_nth_on(f.op, s, f.nth + k, f.err),
                    Target::Manifest => inj.fail_nth_on(f.op, manifest, f.nth + k, f.err),
                    Target::Any => inj.fail_nth(f.op, f.nth + k, f.err),
                }
            }
        }
    }

    pub fn describe(&self) -> String {
        if self.faults.is_empty() {
            return "none".into();
        }
        self.faults
            .iter()
            .map(|f| {
                format!(
                    "{}{:?} on {:?} #{} {:?}",
                    if f.persistent { "persistent " } else { "" },
                    f.op,
                    f.target,
                    f.nth,
                    f.err
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn one_fault(rng: &mut SmallRng, vlog: bool) -> Fault {
    use FaultOp::*;
    let mut targets = vec![
        Target::Suffix(".log"),
        Target::Manifest,
        Target::Suffix(".sst"),
        Target::Suffix(".sst"),
        Target::Suffix("CURRENT"),
        Target::Any,
    ];
    if vlog {
        targets.push(Target::Suffix(".vlog"));
    }
    let target = targets[rng.random_range(0..targets.len())].clone();
    // The operations that reach files of the target while the database runs.
    let ops: &[FaultOp] = match target {
        Target::Suffix(".log") => &[Write, Write, Sync, Create],
        Target::Manifest => &[Write, Sync],
        Target::Suffix("CURRENT") => &[Rename],
        Target::Any => &[DirSync, Rename, Create, Write, Sync, Read],
        _ => &[Write, Sync, Create, Read],
    };
    let op = ops[rng.random_range(0..ops.len())];
    let errs: &[FaultError] = match op {
        Write => &[
            FaultError::Io,
            FaultError::NoSpace,
            FaultError::TornWrite,
            FaultError::IoPersisted,
        ],
        Sync | DirSync => &[FaultError::Io, FaultError::IoPersisted],
        Read => &[FaultError::Io],
        _ => &[FaultError::Io, FaultError::NoSpace],
    };
    Fault {
        op,
        target,
        nth: rng.random_range(1..60),
        err: errs[rng.random_range(0..errs.len())],
        persistent: rng.random_ratio(1, 4),
    }
}
