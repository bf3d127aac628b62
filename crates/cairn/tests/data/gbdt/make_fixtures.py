#!/usr/bin/env python3
"""Generates the LightGBM fixtures that crates/cairn/tests/learned/gbdt.rs checks the Rust
evaluator (crates/cairn/src/learned/gbdt.rs) against.

For each model NAME this writes NAME.txt (LightGBM's own text format, exactly what
`Booster.model_to_string()` returns) and NAME.csv (one row per test point: the 18 feature
values, LightGBM's raw score and LightGBM's transformed prediction, every float written
with repr(), which round-trips exactly). The data imitate Leaper's features (sparse access
counts, time of day, precursor counts) and include NaN, zeros, values just around zero and
values equal to split thresholds, so that every branch of LightGBM's decision rules is
exercised.

It also writes python_bundle.model: a model bundle (docs/design/formats/leaper.md) made by the
Python learner's own writer (python/cairn/learn/leaper/bundle.py) from two of these
models, so that the Rust reader and writer are checked against it byte for byte.

Usage (from the repository root; needs `pip install 'lightgbm>=4,<5' numpy scipy crc32c`):
    python3 crates/cairn/tests/data/gbdt/make_fixtures.py
Training is deterministic (fixed seeds, one thread), but the committed fixtures, not a
re-run, are what the tests use. They were made with LightGBM 4.7.0 and numpy 2.4.
"""

import csv
import os
import sys

import lightgbm as lgb
import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))
N_FEATURES = 18
NAMES = (
    [f"r{i}" for i in range(1, 7)]
    + [f"w{i}" for i in range(1, 7)]
    + ["hour", "minute", "second"]
    + [f"p{i}" for i in range(1, 4)]
)


def make_data(rng, n, nan_frac):
    """Leaper-like features: counts that are mostly zero, time of day, precursor reads."""
    x = np.zeros((n, N_FEATURES))
    activity = rng.gamma(0.5, 4.0, size=n)
    for j in range(6):  # r1..r6
        x[:, j] = rng.poisson(activity * (1.0 - 0.1 * j)) * (rng.random(n) < 0.6)
    for j in range(6, 12):  # w1..w6
        x[:, j] = rng.poisson(activity * 0.3) * (rng.random(n) < 0.4)
    x[:, 12] = rng.integers(0, 24, n)  # hour
    x[:, 13] = rng.integers(0, 60, n)  # minute
    x[:, 14] = rng.integers(0, 60, n)  # second
    for j in range(15, 18):  # p1..p3
        x[:, j] = rng.poisson(activity * 0.8) * (rng.random(n) < 0.5)
    # Fractional noise on a few columns, so thresholds are not all at integers + 0.5.
    x[:, 0] += rng.normal(0.0, 0.3, n) * (x[:, 0] > 0)
    x[:, 15] += rng.normal(0.0, 0.3, n)
    if nan_frac > 0:
        for j in (0, 1, 6, 15):
            x[rng.random(n) < nan_frac, j] = np.nan
    logit = (
        0.8 * np.nan_to_num(x[:, 0], nan=0.5)
        + 0.4 * x[:, 1]
        - 0.3 * np.nan_to_num(x[:, 6])
        + 0.5 * np.nan_to_num(x[:, 15])
        + 0.7 * np.sin(x[:, 12] / 24.0 * 2 * np.pi)
        + 0.02 * (x[:, 13] % 7)
        - 1.5
    )
    y_bin = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    y_reg = logit + rng.normal(0.0, 0.5, n)
    return x, y_bin, y_reg


def thresholds(booster):
    """(feature, threshold) of every numerical split of the model."""
    out = []

    def walk(node):
        if "split_index" not in node:
            return
        if node["decision_type"] == "<=":
            out.append((node["split_feature"], float(node["threshold"])))
        walk(node["left_child"])
        walk(node["right_child"])

    for tree in booster.dump_model()["tree_info"]:
        walk(tree["tree_structure"])
    return out


def test_rows(rng, booster, n, categorical):
    x, _, _ = make_data(rng, n - 60, nan_frac=0.1)
    rows = [list(r) for r in x]
    base = x[:20]
    # Values exactly at split thresholds (`<=` goes left) and just above them.
    th = thresholds(booster)
    for i in range(30):
        r = list(base[i % len(base)])
        f, t = th[rng.integers(len(th))]
        r[f] = t if i % 2 == 0 else float(np.nextafter(t, np.inf))
        rows.append(r)
    # Around zero: zero-as-missing uses |x| <= kZeroThreshold, the float 1e-35f
    # (1.0000000180025095e-35 as a double, also a common split threshold), so include values
    # between 1e-35 and it; -0.0; infinities; all-NaN; all-zero.
    kz = float(np.float32(1e-35))
    specials = [0.0, -0.0, 1e-36, -1e-36, 1e-34, -1e-34, 1e-300, np.inf, -np.inf, np.nan,
                kz, -kz, 1.000000005e-35, -1.000000005e-35]
    for i in range(26):
        r = list(base[i % len(base)])
        for f in rng.choice(N_FEATURES, 4, replace=False):
            r[f] = specials[rng.integers(len(specials))]
        rows.append(r)
    rows.append([np.nan] * N_FEATURES)
    rows.append([0.0] * N_FEATURES)
    rows.append([1e-36] * N_FEATURES)
    rows.append([np.inf] * N_FEATURES)
    if categorical:
        # Categories never seen, negative, fractional (truncated toward zero) and huge.
        for k, v in enumerate([-1.0, -0.5, 0.7, 23.9, 24.0, 31.0, 32.0, 59.0, 1e10, -1e10]):
            rows[k][12] = v
            rows[k + 10][13] = v
    return np.array(rows[:n])


def write_fixture(name, booster, x):
    with open(os.path.join(OUT, name + ".txt"), "w", newline="") as f:
        f.write(booster.model_to_string())
    raw = booster.predict(x, raw_score=True)
    pred = booster.predict(x)
    with open(os.path.join(OUT, name + ".csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(NAMES + ["raw", "pred"])
        for row, r, p in zip(x, raw, pred):
            w.writerow([repr(float(v)) for v in row] + [repr(float(r)), repr(float(p))])


def base_params(**kw):
    p = dict(
        num_leaves=31,
        learning_rate=0.05,
        bagging_fraction=0.8,
        bagging_freq=1,
        feature_fraction=0.9,
        min_data_in_leaf=20,
        seed=7,
        deterministic=True,
        force_row_wise=True,
        num_threads=1,
        verbose=-1,
    )
    p.update(kw)
    return p


def main():
    rng = np.random.default_rng(20240611)

    # 1. Binary, NaN in the data (missing type NaN on some splits, None on others).
    x, yb, _ = make_data(rng, 3000, nan_frac=0.1)
    ds = lgb.Dataset(x, yb, feature_name=NAMES, free_raw_data=False)
    m = lgb.train(base_params(objective="binary"), ds, num_boost_round=60)
    write_fixture("binary_nan", m, test_rows(rng, m, 200, categorical=False))

    # 2. Binary with categorical features: hour (< 32 categories, one bitset word) and
    #    minute (60 categories, two words); sigmoid != 1 to check the transform's scale.
    x, yb, _ = make_data(rng, 3000, nan_frac=0.1)
    ds = lgb.Dataset(x, yb, feature_name=NAMES, categorical_feature=[12, 13], free_raw_data=False)
    params = base_params(objective="binary", sigmoid=0.7, num_leaves=15, cat_smooth=1.0,
                         min_data_per_group=10, max_cat_threshold=64)
    m = lgb.train(params, ds, num_boost_round=30)
    write_fixture("binary_categorical", m, test_rows(rng, m, 200, categorical=True))

    # 3. Regression with zero_as_missing (missing type Zero), no NaN in training data.
    x, _, yr = make_data(rng, 3000, nan_frac=0.0)
    ds = lgb.Dataset(x, yr, feature_name=NAMES, free_raw_data=False,
                     params={"zero_as_missing": True})
    m = lgb.train(base_params(objective="regression", zero_as_missing=True, num_leaves=15), ds,
                  num_boost_round=30)
    write_fixture("regression_zero", m, test_rows(rng, m, 200, categorical=False))

    # 4. A model that cannot split (min_data_in_leaf above half the rows): LightGBM keeps
    #    one tree with num_leaves=1 (a constant, empty split arrays) and stops training.
    x, yb, _ = make_data(rng, 200, nan_frac=0.1)
    ds = lgb.Dataset(x, yb, feature_name=NAMES, free_raw_data=False)
    m = lgb.train(base_params(objective="binary", min_data_in_leaf=150), ds, num_boost_round=10)
    assert m.num_trees() == 1
    write_fixture("binary_constant", m, x[:20])

    write_python_bundle()


def write_python_bundle():
    """A bundle written by the learner's encoder (the metadata must match tests/learned/gbdt.rs)."""
    sys.path.insert(0, os.path.join(OUT, "..", "..", "..", "..", "..", "python"))
    from cairn.learn.leaper.bundle import Bundle, encode_bundle, make_metadata

    models = []
    for name in ("binary_constant", "regression_zero"):
        with open(os.path.join(OUT, name + ".txt"), newline="") as f:
            models.append(f.read())
    meta = make_metadata(
        range_width=100,
        fine_range_width=10,
        key_offset=0,
        slot_ms=60000,
        k=len(models),
        threshold=0.3,
        gamma=3,
        precursors={0: [1, 2, 3], 42: [41]},
        trace_rows=3000,
        report={"auc": 0.8, "note": "python"},
        trained_unix_ms=1717000000000,
    )
    with open(os.path.join(OUT, "python_bundle.model"), "wb") as f:
        f.write(encode_bundle(Bundle(meta, models)))


if __name__ == "__main__":
    main()
