//! The Rust LightGBM evaluator (`learned::gbdt`) against LightGBM itself: each fixture in
//! `tests/data/gbdt/` is a model LightGBM 4.x saved and a CSV of test rows with LightGBM's
//! own raw scores and predictions (written by `make_fixtures.py` there).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use cairn::learned::leaper_model::FEATURE_NAMES;
use cairn::learned::{GbdtModel, LeaperMeta, LeaperModel, Objective};

const FIXTURES: [&str; 4] = [
    "binary_nan",
    "binary_categorical",
    "regression_zero",
    "binary_constant",
];

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gbdt")
}

fn model_text(name: &str) -> String {
    std::fs::read_to_string(data_dir().join(format!("{name}.txt"))).unwrap()
}

/// Rows of (18 features, LightGBM raw score, LightGBM prediction).
fn rows(name: &str) -> Vec<(Vec<f64>, f64, f64)> {
    let csv = std::fs::read_to_string(data_dir().join(format!("{name}.csv"))).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[..18], FEATURE_NAMES);
    assert_eq!(header[18..], ["raw", "pred"]);
    lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|s| s.parse().unwrap()).collect();
            assert_eq!(v.len(), 20, "{l}");
            (v[..18].to_vec(), v[18], v[19])
        })
        .collect()
}

#[test]
fn matches_lightgbm() {
    for name in FIXTURES {
        let model = GbdtModel::parse(&model_text(name)).unwrap();
        assert_eq!(model.num_features(), 18, "{name}");
        assert_eq!(model.feature_names(), FEATURE_NAMES, "{name}");
        let rows = rows(name);
        assert!(rows.len() >= 20, "{name}");
        let (mut max_raw, mut max_pred) = (0f64, 0f64);
        for (i, (x, raw, pred)) in rows.iter().enumerate() {
            let r = model.predict_raw(x);
            let p = model.predict(x);
            assert!((r - raw).abs() <= 1e-6, "{name} row {i}: raw {r} vs {raw}");
            assert!(
                (p - pred).abs() <= 1e-6,
                "{name} row {i}: pred {p} vs {pred}"
            );
            max_raw = max_raw.max((r - raw).abs());
            max_pred = max_pred.max((p - pred).abs());
        }
        println!(
            "{name}: {} trees, {} rows, max |diff| raw {max_raw:e}, pred {max_pred:e}",
            model.num_trees(),
            rows.len()
        );
    }
}

#[test]
fn fixture_shapes() {
    // What the fixtures are meant to cover (see make_fixtures.py).
    let m = GbdtModel::parse(&model_text("binary_nan")).unwrap();
    assert_eq!(m.num_trees(), 60);
    assert_eq!(m.objective(), Objective::Sigmoid(1.0));
    let m = GbdtModel::parse(&model_text("binary_categorical")).unwrap();
    assert_eq!(m.objective(), Objective::Sigmoid(0.7));
    assert!(model_text("binary_categorical").contains("cat_threshold="));
    let m = GbdtModel::parse(&model_text("regression_zero")).unwrap();
    assert_eq!(m.objective(), Objective::Identity);
    let text = model_text("regression_zero");
    assert!(text.contains("decision_type=") && (text.contains(" 4 ") || text.contains(" 6 ")));
    let m = GbdtModel::parse(&model_text("binary_constant")).unwrap();
    assert_eq!(m.num_trees(), 1);
    assert!(model_text("binary_constant").contains("num_leaves=1\n"));
}

#[test]
fn bundle_round_trip_with_lightgbm_models() {
    let texts: Vec<String> = ["binary_nan", "binary_categorical", "binary_constant"]
        .iter()
        .map(|n| model_text(n))
        .collect();
    let meta = LeaperMeta {
        version: 1,
        range_width: 100,
        fine_range_width: 10,
        key_offset: 0,
        slot_ms: 60_000,
        k: texts.len() as u32,
        threshold: 0.3,
        history_slots: 6,
        gamma: 3,
        features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
        precursors: BTreeMap::from([(0, vec![1, 2, 3]), (42, vec![41])]),
        trained_unix_ms: 1_717_000_000_000,
        trace_rows: 3000,
        report: serde_json::json!({"auc": 0.8}),
    };
    let bytes = LeaperModel::encode(&meta, &texts);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leaper.model");
    std::fs::write(&path, &bytes).unwrap();
    let bundle = LeaperModel::load(&path).unwrap();
    assert_eq!(bundle.meta(), &meta);
    assert_eq!(bundle.precursors(42), [41]);
    assert!(bundle.precursors(1).is_empty());
    assert_eq!(bundle.models().len(), 3);
    for (i, name) in ["binary_nan", "binary_categorical", "binary_constant"]
        .iter()
        .enumerate()
    {
        for (x, raw, _) in rows(name) {
            let r = bundle.models()[i].predict_raw(&x);
            assert!((r - raw).abs() <= 1e-6, "{name}: {r} vs {raw}");
        }
    }
    // A flipped byte in the middle of a model is caught by the checksum.
    let mut bad = bytes.clone();
    bad[bytes.len() / 2] ^= 1;
    let e = LeaperModel::parse(&bad, "flipped").unwrap_err();
    assert!(
        e.is_corruption() && e.to_string().contains("checksum"),
        "{e}"
    );
}

#[test]
fn bundle_written_by_the_python_learner() {
    // make_fixtures.py wrote this with python/cairn/learn/leaper/bundle.py.
    let path = data_dir().join("python_bundle.model");
    let bytes = std::fs::read(&path).unwrap();
    let bundle = LeaperModel::load(&path).unwrap();
    let meta = bundle.meta();
    assert_eq!(
        (meta.range_width, meta.fine_range_width, meta.slot_ms),
        (100, 10, 60_000)
    );
    assert_eq!((meta.k, meta.gamma, meta.threshold), (2, 3, 0.3));
    assert_eq!(
        meta.report,
        serde_json::json!({"auc": 0.8, "note": "python"})
    );
    assert_eq!(bundle.precursors(0), [1, 2, 3]);
    assert_eq!(bundle.precursors(42), [41]);
    for (i, name) in ["binary_constant", "regression_zero"].iter().enumerate() {
        for (x, raw, _) in rows(name) {
            assert!(
                (bundle.models()[i].predict_raw(&x) - raw).abs() <= 1e-6,
                "{name}"
            );
        }
    }
    // The Rust writer produces the same bytes from the same content.
    let texts = [model_text("binary_constant"), model_text("regression_zero")];
    assert!(
        LeaperModel::encode(meta, &texts) == bytes,
        "encodings differ"
    );
}

/// Prediction speed (500 rows, best of 200 runs); run with
/// `cargo test --release -p cairn --test learned -- --ignored --nocapture gbdt::`.
#[test]
#[ignore]
fn prediction_speed() {
    for name in ["binary_nan", "binary_categorical", "regression_zero"] {
        let text = model_text(name);
        let t = Instant::now();
        let model = GbdtModel::parse(&text).unwrap();
        let parse = t.elapsed();
        let rows: Vec<Vec<f64>> = rows(name).into_iter().map(|r| r.0).collect();
        let batch: Vec<&[f64]> = rows
            .iter()
            .cycle()
            .take(500)
            .map(|r| r.as_slice())
            .collect();
        let mut best = f64::INFINITY;
        let mut sink = 0.0;
        for _ in 0..200 {
            let t = Instant::now();
            for x in &batch {
                sink += model.predict(x);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{name}: {} trees, 500 rows in {:.0} us ({:.0} ns/row); parse {:.2} ms ({sink:.1})",
            model.num_trees(),
            best * 1e6,
            best * 1e9 / 500.0,
            parse.as_secs_f64() * 1e3,
        );
    }
}
