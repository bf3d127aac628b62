"""The sweeps of the paper's Figs. 13-14: rsf against gbdt-naive (the paper's GBDT) as
the labelling window or rsf's share of the training samples varies.

* ``label-window``: features from the first ``feature_days`` of the trace (pivots by
  Alg. 1 there), labels over the next W days for each value W; a longer window leaves
  fewer samples censored. Both models classify or rank within ``min(horizon, W)``.
* ``sample-share``: both on the whole window's samples; gbdt-naive fit on all training
  samples (capped by ``max_samples``), rsf on a seeded share of those same samples.

Records are split 80/20 by key as in evaluate; c-index and Uno's C on the held-out side.
"""

from __future__ import annotations

import numpy as np

from .awpi import check_awpi
from .features import Samples, build_features
from .labels import sample_pivots, tau_labels
from .metrics import concordance_index, gains, uno_c
from .models import make_model
from .settings import Settings, cap_samples, cut_view, share_of, store_view, train_split, window_samples
from .trace import RecordTrace

SWEEP_KINDS = ("label-window", "sample-share")


def sweep(trace: RecordTrace, kind: str, values: list[float], s: Settings, feature_days: float = 20.0) -> dict:
    """One row per value (see the module docstring); the report as a dict."""
    awpi = check_awpi(trace, s.force)
    if kind not in SWEEP_KINDS:
        raise ValueError(f"unknown sweep {kind!r}; choose from {', '.join(SWEEP_KINDS)}")
    if not values:
        raise ValueError("--values: give at least one value")
    if s.tau_auto:
        raise ValueError("--tau-days auto is for train and evaluate; give the sweep a number")
    is_train = train_split(trace.keys, s.seed)
    if kind == "label-window":
        rows = _label_windows(trace, values, s, feature_days, is_train)
    else:
        rows = _sample_shares(trace, values, s, is_train)
    return {
        "kind": kind,
        "values": list(values),
        "feature_days": feature_days if kind == "label-window" else None,
        "tau_days": s.tau_days,
        "event_kinds": s.event_kinds,
        "horizon_days": s.horizon_days,
        "pivots": s.n_pivots,
        "seed": s.seed,
        "awpi": awpi,
        "rows": rows,
    }


def _scored(method: str, fit: Samples, train: Samples, test: Samples, s: Settings, horizon: float) -> dict:
    """``method`` fit on ``fit``; c-index and Uno's C (censoring from ``train``) on ``test``."""
    out: dict = {"train_samples": len(fit), "c_index": None, "uno_c": None}
    model = make_model(method, horizon=horizon, seed=s.seed, n_jobs=s.n_jobs)
    try:
        model.fit(fit.x, fit.y, fit.delta)
    except ValueError as e:
        return {**out, "error": str(e)}
    score = model.score(test.x)
    out["c_index"] = concordance_index(test.y, test.delta, score)
    out["uno_c"] = uno_c(train.y, train.delta, test.y, test.delta, score, horizon)
    return out


def _row(value: float, rsf: dict, gbdt: dict, censored: float) -> dict:
    rel, removed = gains(rsf["c_index"], gbdt["c_index"])
    u_rel, u_removed = gains(rsf["uno_c"], gbdt["uno_c"])
    return {
        "value": value,
        "censored_share": censored,
        "rsf": rsf,
        "gbdt-naive": gbdt,
        "c_index_gain_vs_gbdt_naive": rel,
        "discordant_removed_vs_gbdt_naive": removed,
        "uno_c_gain_vs_gbdt_naive": u_rel,
        "uno_discordant_removed_vs_gbdt_naive": u_removed,
    }


def _label_windows(trace: RecordTrace, values, s: Settings, feature_days: float, is_train: np.ndarray) -> list:
    day = trace.day_ms
    t_f = trace.start_ms + feature_days * day
    span = (trace.end_ms - trace.start_ms) / day
    for w in values:
        if w <= 0 or t_f + w * day > trace.end_ms:
            raise ValueError(
                f"label window {w:g} d: needs {feature_days:g} + {w:g} days of trace (and W > 0), it holds {span:.1f}"
            )
    # Pivots and features from what the store held at t_f; labels from every later time.
    cut, kept = cut_view(trace, t_f, s)
    rec, piv = sample_pivots(cut, s.n_pivots, np.random.default_rng(s.seed))
    if rec.size == 0:
        raise ValueError(f"no record is accessed in the first {feature_days:g} days")
    x = build_features(cut, rec, piv)
    rec = kept[rec]
    on = is_train[rec]
    rows = []
    for w in values:
        y, d = tau_labels(trace, rec, piv, s.tau_days * day, t_end=t_f + w * day, events=s.event_kinds)
        samples = Samples(x, y / day, d, rec, piv)
        train, test = samples.take(on), samples.take(~on)
        fit, h = cap_samples(train, s), min(s.horizon_days, float(w))
        rsf, gbdt = (_scored(m, fit, train, test, s, h) for m in ("rsf", "gbdt-naive"))
        rows.append({**_row(w, rsf, gbdt, samples.censored_share), "horizon_days": h})
    return rows


def _sample_shares(trace: RecordTrace, values, s: Settings, is_train: np.ndarray) -> list:
    for v in values:
        if not (0.0 < v <= 1.0):
            raise ValueError(f"sample shares must be in (0, 1], got {v:g}")
    samples = window_samples(store_view(trace, s), s)
    on = is_train[samples.rec]
    train, test = samples.take(on), samples.take(~on)
    fit = cap_samples(train, s)
    gbdt = _scored("gbdt-naive", fit, train, test, s, s.horizon_days)
    rows = []
    for v in values:
        part = share_of(fit, v, s.seed + 2)
        rows.append(_row(v, _scored("rsf", part, train, test, s, s.horizon_days), gbdt, part.censored_share))
    return rows
