//! Training Leaper's model on the warm-up part of the stream: the engine exports its
//! access trace, the Python learner (`python -m cairn.learn.leaper train`, in `python/`)
//! fits k models, and the engine loads the bundle before the measured part starts.

use crate::engines::Engine;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How the harness trains (carried to child processes in the run request).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaperSettings {
    /// Python interpreter; None: $CAIRN_PYTHON, else target/pyenv/bin/python (the venv
    /// scripts/test.sh makes), else python3.
    #[serde(default)]
    pub python: Option<String>,
    /// Directory holding the `cairn` Python package; None: `python/` of the repository.
    #[serde(default)]
    pub pythonpath: Option<PathBuf>,
    /// Models (future slots) to train; None: eq. 2 from the warm-up's jobs,
    /// k = ceil(max(T1 + T2) / slot) + 1, with T2 = the invalidation window.
    #[serde(default)]
    pub k: Option<usize>,
    /// Cap on eq. 2's k (each model costs training time).
    #[serde(default = "default_max_k")]
    pub max_k: usize,
    /// LightGBM threads (0: LightGBM's default).
    #[serde(default)]
    pub threads: usize,
    /// Train at all; false measures a Leaper engine without a model (its fallback).
    #[serde(default = "yes")]
    pub train: bool,
    /// Extra arguments for `python -m cairn.learn.leaper train` (e.g. `--max-multiplier 8`).
    #[serde(default)]
    pub learner_args: Vec<String>,
    /// Retrain every this many measured ops on the trace so far (the access clock stands
    /// still meanwhile), keeping the first training's k; None: train once, after the
    /// warm-up.
    #[serde(default)]
    pub retrain_ops: Option<u64>,
}

fn default_max_k() -> usize {
    8
}

fn yes() -> bool {
    true
}

impl Default for LeaperSettings {
    fn default() -> Self {
        LeaperSettings {
            python: None,
            pythonpath: None,
            k: None,
            max_k: default_max_k(),
            threads: 0,
            train: true,
            learner_args: Vec::new(),
            retrain_ops: None,
        }
    }
}

/// What training did (the run JSON's `leaper` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LeaperTraining {
    /// Warm-up ops the trace covers (besides the load).
    pub warmup_ops: u64,
    pub slot_ms: u64,
    pub trace_rows: usize,
    pub trace_bytes: u64,
    /// T1 + T2 of the warm-up's jobs that eq. 2 took k from (seconds).
    pub job_secs: Vec<f64>,
    pub k: usize,
    /// Wall time of the learner (the engine's access clock stood still meanwhile).
    pub train_seconds: f64,
    pub bundle_bytes: u64,
    /// The learner's offline scores on the trace's last slots, horizon 1.
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub auc: Option<f64>,
    /// The Incremental-Warmup proxy's scores on the same samples.
    pub iw_precision: Option<f64>,
    pub iw_recall: Option<f64>,
    /// Share of test samples whose range is read in the next slot (1.0: nothing is cold,
    /// the prediction is trivial).
    #[serde(default)]
    pub positive_rate: Option<f64>,
    /// A*, the key-range width Algorithm 1 chose (key numbers), and the learner's threshold.
    #[serde(default)]
    pub range_width: Option<u64>,
    #[serde(default)]
    pub threshold: Option<f64>,
    /// The engine accepted the bundle.
    pub loaded: bool,
    /// Why there is no model (the run went on without one).
    #[serde(default)]
    pub error: Option<String>,
    /// The last lines the learner printed.
    pub learner_output: String,
    /// Retrainings in the measured phase (`retrain_ops`): each one's learner seconds, and
    /// whether its bundle was loaded (a failed one keeps the model in use).
    #[serde(default)]
    pub retrains: Vec<Retrain>,
}

/// One retraining in the measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Retrain {
    /// Measured ops before it.
    pub at_op: u64,
    pub train_seconds: f64,
    pub trace_rows: usize,
    pub loaded: bool,
    #[serde(default)]
    pub error: Option<String>,
}

impl Retrain {
    /// What a [`train`] call at `at_op` did (an error keeps the model in use).
    pub fn from_result(at_op: u64, r: Result<Option<LeaperTraining>>) -> Self {
        match r {
            Ok(Some(t)) => Retrain {
                at_op,
                train_seconds: t.train_seconds,
                trace_rows: t.trace_rows,
                loaded: t.loaded,
                error: None,
            },
            Ok(None) => Retrain {
                at_op,
                ..Default::default()
            },
            Err(e) => Retrain {
                at_op,
                error: Some(format!("{e:#}")),
                ..Default::default()
            },
        }
    }
}

fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The interpreter to run the learner with.
pub fn python(settings: &LeaperSettings) -> String {
    if let Some(p) = &settings.python {
        return p.clone();
    }
    if let Ok(p) = std::env::var("CAIRN_PYTHON") {
        if !p.is_empty() {
            return p;
        }
    }
    for root in [PathBuf::from("."), repo_dir()] {
        let venv = root.join("target/pyenv/bin/python");
        if venv.exists() {
            return venv.to_string_lossy().into_owned();
        }
    }
    "python3".into()
}

/// The directory to put on PYTHONPATH (the source tree's `python/`), if found.
pub fn pythonpath(settings: &LeaperSettings) -> Option<PathBuf> {
    if let Some(p) = &settings.pythonpath {
        return Some(p.clone());
    }
    [PathBuf::from("python"), repo_dir().join("python")]
        .into_iter()
        .find(|p| p.join("cairn/learn/leaper").is_dir())
}

/// Eq. 2: models enough to cover the longest job plus the recovery window.
pub fn steps_for(job_secs: &[f64], window_ms: u64, slot_ms: u64, max_k: usize) -> usize {
    let t2 = window_ms as f64 / 1000.0;
    let longest = job_secs.iter().copied().fold(0.0, f64::max) + t2;
    let slot = slot_ms.max(1) as f64 / 1000.0;
    let k = (longest / slot - 1e-9).ceil() as usize + 1;
    k.clamp(1, max_k.max(1))
}

fn tail(s: &str, lines: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

/// Exports the engine's trace into `work`, trains, and loads the bundle. None when the
/// engine collects no access statistics. `job_secs` are the warm-up's job durations (T1).
pub fn train(
    engine: &dyn Engine,
    work: &Path,
    settings: &LeaperSettings,
    slot_ms: u64,
    window_ms: u64,
    job_secs: &[f64],
) -> Result<Option<LeaperTraining>> {
    std::fs::create_dir_all(work)?;
    let trace = work.join("access.ltr");
    let Some(rows) = engine.export_access_trace(&trace)? else {
        return Ok(None);
    };
    let mut t = LeaperTraining {
        slot_ms,
        trace_rows: rows,
        trace_bytes: std::fs::metadata(&trace).map_or(0, |m| m.len()),
        job_secs: job_secs
            .iter()
            .map(|s| s + window_ms as f64 / 1000.0)
            .collect(),
        k: settings
            .k
            .unwrap_or_else(|| steps_for(job_secs, window_ms, slot_ms, settings.max_k)),
        ..Default::default()
    };
    if !settings.train {
        return Ok(Some(t));
    }
    let bundle = work.join("leaper.model");
    let report = work.join("report.json");
    let py = python(settings);
    // Too short a trace for k models leaves a part of the learner's split empty: halve k.
    let out = loop {
        let mut cmd = std::process::Command::new(&py);
        cmd.args(["-m", "cairn.learn.leaper", "train", "--trace"])
            .arg(&trace)
            .arg("--out")
            .arg(&bundle)
            .args(["--k", &t.k.to_string()])
            .args(["--threads", &settings.threads.to_string()])
            .arg("--report-json")
            .arg(&report)
            .args(&settings.learner_args);
        if let Some(pp) = pythonpath(settings) {
            let mut paths = vec![pp];
            if let Some(old) = std::env::var_os("PYTHONPATH") {
                paths.extend(std::env::split_paths(&old));
            }
            cmd.env("PYTHONPATH", std::env::join_paths(paths)?);
        }
        let started = Instant::now();
        let out = cmd.output().with_context(|| {
            format!("starting the Leaper learner with `{py}` (set --python or $CAIRN_PYTHON)")
        })?;
        t.train_seconds += started.elapsed().as_secs_f64();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        t.learner_output = tail(&text, 25);
        if !out.status.success() && text.contains("part is empty") && t.k > 1 {
            t.k /= 2;
            continue;
        }
        break out;
    };
    if !out.status.success() {
        bail!(
            "the Leaper learner failed ({}; {rows} trace rows, k = {}):\n{}",
            out.status,
            t.k,
            tail(&t.learner_output, 15)
        );
    }
    t.bundle_bytes = std::fs::metadata(&bundle).map_or(0, |m| m.len());
    if let Ok(s) = std::fs::read_to_string(&report) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&s) {
            let h = &v["horizons"][0];
            t.precision = h["leaper"]["precision"].as_f64();
            t.recall = h["leaper"]["recall"].as_f64();
            t.auc = h["leaper"]["auc"].as_f64();
            t.iw_precision = h["iw_proxy"]["precision"].as_f64();
            t.iw_recall = h["iw_proxy"]["recall"].as_f64();
            t.positive_rate = h["positive_rate"].as_f64();
            t.range_width = v["range_width"].as_u64();
            t.threshold = v["threshold"].as_f64();
        }
    }
    engine.load_leaper_model(&bundle)?;
    t.loaded = true;
    Ok(Some(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_2_covers_the_longest_job_and_the_window() {
        // 2.5 s job + 2 s window over 1 s slots: 5 slots, + C = 1.
        assert_eq!(steps_for(&[1.0, 2.5], 2000, 1000, 20), 6);
        assert_eq!(steps_for(&[], 1000, 1000, 20), 2);
        assert_eq!(steps_for(&[100.0], 1000, 1000, 8), 8);
        assert_eq!(steps_for(&[], 0, 1000, 8), 1);
    }
}
