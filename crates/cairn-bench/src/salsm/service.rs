//! SA-LSM's external service, run as a subprocess (its CPU never runs on the engine's
//! threads; the simulated clock stands still meanwhile): `python -m cairn.learn.salsm
//! train` turns an exported record trace into a cold-key set, `evaluate` scores every
//! method on held-out records (Table 3's c-index, Fig. 12's cold_fir). The interpreter is
//! found as for Leaper's learner ($CAIRN_PYTHON, target/pyenv/bin/python, python3) and
//! PYTHONPATH gets the repository's `python/`.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What `train` reported (the run JSON's `placement.service`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainReport {
    pub method: String,
    pub budget: f64,
    pub horizon_days: f64,
    /// Wall time of the subprocess (the clock stood still).
    pub wall_seconds: f64,
    /// The service's own figures, when its report has them.
    pub train_seconds: Option<f64>,
    pub records: Option<u64>,
    pub cold_keys: Option<u64>,
    pub migrated_share: Option<f64>,
    pub censored_share: Option<f64>,
    /// The report as written.
    pub report: Option<Value>,
    /// The last lines the service printed.
    pub output: String,
}

fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The interpreter (as for Leaper's learner).
pub fn python(explicit: Option<&str>) -> String {
    crate::leaper::train::python(&crate::leaper::LeaperSettings {
        python: explicit.map(str::to_string),
        ..Default::default()
    })
}

/// The directory holding the `cairn` package with the service, if found.
pub fn pythonpath() -> Option<PathBuf> {
    [PathBuf::from("python"), repo_dir().join("python")]
        .into_iter()
        .find(|p| p.join("cairn/learn/salsm").is_dir())
}

fn command(py: &str) -> Result<Command> {
    let mut cmd = Command::new(py);
    cmd.args(["-m", "cairn.learn.salsm"]);
    if let Some(pp) = pythonpath() {
        let mut paths = vec![pp];
        if let Some(old) = std::env::var_os("PYTHONPATH") {
            paths.extend(std::env::split_paths(&old));
        }
        cmd.env("PYTHONPATH", std::env::join_paths(paths)?);
    }
    Ok(cmd)
}

fn tail(s: &str, lines: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

fn run(mut cmd: Command, what: &str, py: &str) -> Result<(String, f64)> {
    let started = Instant::now();
    let out = cmd.output().with_context(|| {
        format!("starting SA-LSM's service ({what}) with `{py}` (set --python or $CAIRN_PYTHON)")
    })?;
    let secs = started.elapsed().as_secs_f64();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        bail!(
            "SA-LSM's service failed ({what}, {}):\n{}",
            out.status,
            tail(&text, 20)
        );
    }
    Ok((text, secs))
}

/// A number under any of `keys`, at the top level or one level down.
pub fn find_num(v: &Value, keys: &[&str]) -> Option<f64> {
    let direct = |o: &Value| keys.iter().find_map(|k| o.get(*k).and_then(Value::as_f64));
    direct(v).or_else(|| v.as_object()?.values().find_map(direct))
}

/// `train`: writes the cold-key set `out` for `method` at `budget`.
#[allow(clippy::too_many_arguments)]
pub fn train(
    python_path: Option<&str>,
    trace: &Path,
    method: &str,
    budget: f64,
    horizon_days: f64,
    out: &Path,
    report: &Path,
    extra: &[String],
) -> Result<TrainReport> {
    let py = python(python_path);
    let mut cmd = command(&py)?;
    cmd.arg("train")
        .arg("--trace")
        .arg(trace)
        .args(["--method", method])
        .arg("--out")
        .arg(out)
        .arg("--report")
        .arg(report)
        .args(["--budget", &format!("{budget:.6}")])
        .args(["--horizon-days", &format!("{horizon_days}")])
        .arg("--force")
        .args(extra);
    let (text, secs) = run(cmd, &format!("train --method {method}"), &py)?;
    let v: Option<Value> = std::fs::read_to_string(report)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok());
    let get = |keys: &[&str]| v.as_ref().and_then(|v| find_num(v, keys));
    Ok(TrainReport {
        method: method.to_string(),
        budget,
        horizon_days,
        wall_seconds: secs,
        train_seconds: get(&["train_seconds", "train_s", "seconds", "fit_seconds"]),
        records: get(&["records", "n_records"]).map(|x| x as u64),
        cold_keys: get(&["cold_keys", "n_cold", "cold"]).map(|x| x as u64),
        migrated_share: get(&["migrated_share", "cold_share"]),
        censored_share: get(&["censored_share", "censored", "censored_fraction"]),
        report: v,
        output: tail(&text, 15),
    })
}

/// `evaluate`: every method's c-index on held-out records and cold_fir at each budget,
/// written to `out` (the JSON as the service writes it); returns it.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    python_path: Option<&str>,
    trace: &Path,
    methods: &[String],
    budgets: &[f64],
    horizon_days: f64,
    out: &Path,
    km_plot: Option<&Path>,
    extra: &[String],
) -> Result<(Value, f64)> {
    let py = python(python_path);
    let mut cmd = command(&py)?;
    cmd.arg("evaluate")
        .arg("--trace")
        .arg(trace)
        .args(["--methods", &methods.join(",")])
        .args([
            "--budgets",
            &budgets
                .iter()
                .map(|b| format!("{b:.4}"))
                .collect::<Vec<_>>()
                .join(","),
        ])
        .args(["--horizon-days", &format!("{horizon_days}")])
        .arg("--out")
        .arg(out);
    if let Some(k) = km_plot {
        cmd.arg("--km-plot").arg(k);
    }
    cmd.args(extra);
    let (_, secs) = run(cmd, "evaluate", &py)?;
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(out).with_context(|| format!("reading {}", out.display()))?,
    )
    .with_context(|| format!("parsing {}", out.display()))?;
    Ok((v, secs))
}

/// A method's c-index in an `evaluate` JSON (lenient about its layout: `{"c_index":
/// {"rsf": x}}`, `{"methods": {"rsf": {"c_index": x}}}`, `{"rsf": {"c_index": x}}`, or a
/// list of `{"method": "rsf", "c_index": x}`).
pub fn eval_c_index(v: &Value, method: &str) -> Option<f64> {
    const KEYS: [&str; 4] = ["c_index", "cindex", "c-index", "concordance"];
    for k in KEYS {
        if let Some(x) = v.get(k).and_then(|m| m.get(method)).and_then(Value::as_f64) {
            return Some(x);
        }
    }
    let m = method_entry(v, method)?;
    KEYS.iter()
        .find_map(|k| m.get(*k))
        .and_then(|x| x.as_f64().or_else(|| x.get("test").and_then(Value::as_f64)))
}

fn method_entry<'a>(v: &'a Value, method: &str) -> Option<&'a Value> {
    for container in [v.get("methods"), v.get("results"), Some(v)]
        .into_iter()
        .flatten()
    {
        if let Some(m) = container.get(method).filter(|m| m.is_object()) {
            return Some(m);
        }
        if let Some(a) = container.as_array() {
            if let Some(m) = a
                .iter()
                .find(|e| e.get("method").and_then(Value::as_str) == Some(method))
            {
                return Some(m);
            }
        }
    }
    None
}

/// A method's cold_fir at `budget` (closest listed budget within 0.005): `{"cold_fir":
/// {"rsf": {"0.3": x}}}`, a method entry with `cold_fir: {"0.3": x}` or
/// `cold_fir: [{"budget": 0.3, "cold_fir": x}]`.
pub fn eval_cold_fir(v: &Value, method: &str, budget: f64) -> Option<f64> {
    let pick = |m: &Value| -> Option<f64> {
        if let Some(o) = m.as_object() {
            return o
                .iter()
                .filter_map(|(k, x)| {
                    let v = x
                        .as_f64()
                        .or_else(|| x.get("cold_fir").and_then(Value::as_f64))?;
                    Some((k.parse::<f64>().ok()?, v))
                })
                .find(|(b, _)| (b - budget).abs() < 0.005)
                .map(|(_, x)| x);
        }
        m.as_array()?.iter().find_map(|e| {
            let b = e.get("budget")?.as_f64()?;
            ((b - budget).abs() < 0.005)
                .then(|| e.get("cold_fir").and_then(Value::as_f64))
                .flatten()
        })
    };
    if let Some(x) = v.get("cold_fir").and_then(|c| c.get(method)).and_then(pick) {
        return Some(x);
    }
    method_entry(v, method)?.get("cold_fir").and_then(pick)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluate_json_is_read_in_any_of_its_layouts() {
        let a: Value = serde_json::json!({"c_index": {"rsf": 0.9}, "cold_fir": {"rsf": {"0.3": 0.1, "0.5": 0.2}}});
        assert_eq!(eval_c_index(&a, "rsf"), Some(0.9));
        assert_eq!(eval_cold_fir(&a, "rsf", 0.5), Some(0.2));
        assert_eq!(eval_cold_fir(&a, "rsf", 0.4), None);
        let b: Value = serde_json::json!({"methods": {"gbdt": {"c_index": 0.7,
            "cold_fir": [{"budget": 0.3, "cold_fir": 0.25}]},
            "rsf": {"c_index": 0.8, "cold_fir": {"0.657": {"cold_fir": 0.125, "tp": 3}}}}});
        assert_eq!(eval_cold_fir(&b, "rsf", 0.657), Some(0.125));
        assert_eq!(eval_c_index(&b, "gbdt"), Some(0.7));
        assert_eq!(eval_cold_fir(&b, "gbdt", 0.3), Some(0.25));
        let c: Value = serde_json::json!([{"method": "lru", "c_index": 0.6}]);
        assert_eq!(eval_c_index(&c, "lru"), Some(0.6));
        assert_eq!(eval_c_index(&c, "rsf"), None);
        let r: Value = serde_json::json!({"method": "rsf", "timing": {"train_seconds": 3.5}});
        assert_eq!(find_num(&r, &["train_seconds"]), Some(3.5));
    }
}
