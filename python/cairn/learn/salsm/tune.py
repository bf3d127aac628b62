"""tau by cross-validation on the training window (``--tau-days auto``).

The training records are split 80/20 once more (evaluate's held-out records are never
looked at). The window is cut at ``T_cut' = end - horizon``; for each candidate tau an
RSF is fit on the inner-training records' samples of the cut window (labels censored at
``T_cut'``) and ranks the inner-validation records from their features at ``T_cut'``.
Its score is the mean cold_fir over migrated shares 0.1 .. 0.9 against the read truth (a
read in ``(T_cut', end]``). That truth does not depend on tau, so the candidates are
compared on one scale; a tau-event truth would move with the candidate it judges.
Features and pivots do not depend on tau either: they are built once and only the
labels change.
"""

from __future__ import annotations

import numpy as np

from .features import Samples, build_features
from .labels import reads_between, sample_pivots, tau_labels
from .metrics import cold_fir
from .models import make_model
from .select import select_budget
from .settings import Settings, cap_samples, cut_view, train_split
from .trace import RecordTrace

CV_SHARES = tuple(round(0.1 * i, 1) for i in range(1, 10))


def choose_tau(trace: RecordTrace, records: np.ndarray, s: Settings) -> dict:
    """The candidate tau with the lowest mean cold_fir, learning only from ``records`` of
    ``trace`` (whose ``end_ms`` is the end of the training window); the report of all."""
    day = trace.day_ms
    t_cut = trace.end_ms - s.horizon_days * day
    if t_cut <= trace.start_ms:
        raise ValueError("--tau-days auto: the training window is not longer than the horizon")
    records = np.asarray(records, dtype=np.int64)
    inner = train_split([trace.keys[i] for i in records], s.seed + 1)
    cut, kept = cut_view(trace, t_cut, s)
    pos = np.full(trace.n_records, -1, dtype=np.int64)
    pos[kept] = np.arange(kept.size)
    fit_rec, val_rec = pos[records[inner]], pos[records[~inner]]
    fit_rec, val_rec = fit_rec[fit_rec >= 0], val_rec[val_rec >= 0]
    if fit_rec.size == 0 or val_rec.size == 0:
        raise ValueError("--tau-days auto: too few training records alive at T_cut' to split 80/20")
    rec, piv = sample_pivots(cut, s.n_pivots, np.random.default_rng(s.seed), records=fit_rec)
    x = build_features(cut, rec, piv)
    x_val = build_features(cut, val_rec, np.full(val_rec.size, float(t_cut)))
    hot = reads_between(trace, kept[val_rec], t_cut, trace.end_ms) > 0
    rows = [_candidate(tau, cut, (x, rec, piv), x_val, hot, s) for tau in s.tau_candidates]
    firs = np.array([np.nan if r["cold_fir_mean"] is None else r["cold_fir_mean"] for r in rows])
    if np.isnan(firs).all():
        raise ValueError("--tau-days auto: no candidate tau could be fit: " + "; ".join(r["error"] for r in rows))
    return {
        "chosen": float(s.tau_candidates[int(np.nanargmin(firs))]),
        "criterion": "mean cold_fir over migrated shares 0.1..0.9 at T_cut' (read truth)",
        "t_cut_ms": int(t_cut),
        "fit_records": int(fit_rec.size),
        "validation_records": int(val_rec.size),
        "samples": int(rec.size),
        "hot_share": float(hot.mean()),
        "candidates": rows,
    }


def _candidate(tau: float, cut: RecordTrace, base: tuple, x_val: np.ndarray, hot: np.ndarray, s: Settings) -> dict:
    """One candidate's fit and score; ``base`` is the (features, records, pivots) of the
    fit samples, labelled here."""
    x, rec, piv = base
    y, d = tau_labels(cut, rec, piv, tau * cut.day_ms, events=s.event_kinds)
    samples = cap_samples(Samples(x, y / cut.day_ms, d, rec, piv), s)
    row: dict = {"tau_days": float(tau), "censored_share": samples.censored_share}
    try:
        model = make_model("rsf", horizon=s.horizon_days, seed=s.seed, n_jobs=s.n_jobs)
        model.fit(samples.x, samples.y, samples.delta)
    except ValueError as e:
        return {**row, "cold_fir_mean": None, "cold_fir": None, "error": str(e)}
    score = model.score(x_val)
    firs = [cold_fir(select_budget(score, b, s.seed).cold, hot) for b in CV_SHARES]
    return {**row, "cold_fir_mean": float(np.nanmean(firs)), "cold_fir": dict(zip(map(str, CV_SHARES), firs))}
