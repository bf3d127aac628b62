"""The service's two jobs: ``train`` (a cold-key set from one trace) and ``evaluate``
(c-index and cold_fir of every method on one trace, side by side).

``train`` learns from every record over the whole window ``[start_ms, end_ms]`` and
predicts at ``end_ms`` for every record, its features drawn from its whole history.

``evaluate`` splits the records 80/20 by a seeded hash of the key (a record's samples all
fall on one side) and measures

* the c-index (eq. 5, Harrell's) and Uno's C (truncated at the horizon) on the held-out
  records' pivot samples, models fit on the training records' samples, and both as gains
  over ``gbdt-naive`` (the paper's GBDT, always fit as the reference);
* cold_fir (eq. 6) the way the engine would meet it: the trace is cut at ``T_cut =
  end_ms - horizon`` (what the query store would have exported then), models are trained
  on the training records of the cut trace only (labels censored at ``T_cut``: no
  leakage), held-out records alive at ``T_cut`` are ranked from their features at
  ``T_cut``, and a migrated record is a false positive when it is read in ``(T_cut,
  end_ms]`` (what costs a cold-tier read; ``cold_fir_tau`` counts a tau-event there
  instead, the label the models learn). Budgets: the listed shares; the ``alpha`` row,
  where SA-LSM's Algorithm 3 (RSF at ``alpha``) decides how many records are cold and
  every method migrates that many of its coldest; and a ``curve`` over shares 0.05 ..
  0.95. ``random`` is in every table; ``oracle`` when a scores file is given.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .awpi import check_awpi
from .coldset import ColdSet
from .features import Samples, build_features
from .labels import reads_between, tau_labels
from .metrics import cold_fir, concordance_index, confusion, gains, kaplan_meier, uno_c
from .models import HEURISTICS, ColdModel, Oracle, canonical, make_model
from .oracle import OracleError, OracleScores
from .select import coldest_first, select_alpha, select_budget, select_count
from .settings import Settings, cap_samples, cut_view, store_view, train_split, window_samples
from .tables import format_table
from .trace import RecordTrace
from .tune import choose_tau

__all__ = ["Settings", "cap_samples", "evaluate", "format_table", "train", "train_split"]

REFERENCE = "gbdt-naive"  # the gains' reference: the paper's GBDT
CURVE_SHARES = tuple(round(0.05 * i, 2) for i in range(1, 20))
GAIN_KEYS = (
    ("c_index", "c_index_gain_vs_gbdt_naive", "discordant_removed_vs_gbdt_naive"),
    ("uno_c", "uno_c_gain_vs_gbdt_naive", "uno_discordant_removed_vs_gbdt_naive"),
)
NO_LABELS = (*HEURISTICS, "random", "oracle")  # methods that learn nothing from tau


def _with_tau(trace: RecordTrace, records: np.ndarray, s: Settings) -> tuple[Settings, dict | None]:
    """``s`` with tau chosen by cross-validation when asked (and the search's report)."""
    if not s.tau_auto:
        return s, None
    cv = choose_tau(trace, records, s)
    return replace(s, tau_days=cv["chosen"], tau_auto=False), cv


def _oracle_model(oracle: OracleScores | None, keys: list[bytes], at_ms: float, day_ms: int, what: str) -> Oracle:
    if oracle is None:
        raise ValueError("the oracle method needs its scores file (--oracle-scores FILE)")
    oracle.check_at(at_ms, day_ms, what)
    return Oracle(oracle.lookup(keys), horizon=oracle.horizon_ms / day_ms)


def _oracle_info(oracle: OracleScores | None) -> dict | None:
    if oracle is None:
        return None
    return {"file": oracle.name, "at_ms": oracle.at_ms, "horizon_ms": oracle.horizon_ms, "keys": len(oracle.keys)}


def train(
    trace: RecordTrace,
    method: str,
    s: Settings,
    budget: float | None = None,
    alpha_days: float | None = None,
    oracle: OracleScores | None = None,
) -> tuple[ColdSet, dict]:
    """Train ``method`` on the whole trace, select cold keys at ``end_ms`` (Algorithm 3 with
    ``alpha_days``, or the ``budget`` share of coldest records). ``oracle``: the scores
    the ``oracle`` method ranks by, for the trace's end."""
    if (budget is None) == (alpha_days is None):
        raise ValueError("give exactly one of a budget or an alpha")
    kind = canonical(method)
    awpi = check_awpi(trace, s.force)
    if trace.n_records == 0:
        raise ValueError("the trace holds no records")
    horizon = alpha_days if alpha_days is not None else s.horizon_days
    trace = store_view(trace, s)
    s, tau_cv = _with_tau(trace, np.arange(trace.n_records), s) if kind not in NO_LABELS else (s, None)
    if kind == "oracle":
        model: ColdModel = _oracle_model(oracle, trace.keys, trace.end_ms, trace.day_ms, "the trace's end")
    else:
        model = make_model(kind, horizon=horizon, seed=s.seed, n_jobs=s.n_jobs)
    t0 = time.perf_counter()
    samples = cap_samples(window_samples(trace, s), s) if model.needs_fit else None
    if samples is not None:
        model.fit(samples.x, samples.y, samples.delta)
    t1 = time.perf_counter()
    x = build_features(trace, np.arange(trace.n_records), np.full(trace.n_records, float(trace.end_ms)))
    if alpha_days is not None:
        sel = select_alpha(model, x, alpha_days)
        alpha_ms = alpha_days * trace.day_ms
    else:
        sel = select_budget(model.score(x), budget, s.seed)
        alpha_ms = s.horizon_days * trace.day_ms  # the budget's ranking looks this far ahead
    t2 = time.perf_counter()
    keys = [trace.keys[i] for i in np.flatnonzero(sel.cold)]
    cs = ColdSet(cf_id=trace.cf_id, trace_end_ms=trace.end_ms, alpha=float(alpha_ms), method=method, keys=keys)
    report = {
        "method": method,
        "model": kind,
        "cf_id": trace.cf_id,
        "records": trace.n_records,
        "sample_rate": trace.sample_rate,
        "cold_keys": len(keys),
        "migrated_share": sel.migrated_share,
        "mode": "alpha" if alpha_days is not None else "budget",
        "budget": budget,
        "alpha_days": alpha_days,
        "alpha_ms": alpha_ms,
        "horizon_days": horizon,
        "tau_days": s.tau_days,
        "tau_cv": tau_cv,
        "event_kinds": s.event_kinds,
        "pivots": s.n_pivots,
        "samples": len(samples) if samples is not None else 0,
        "censored_share": samples.censored_share if samples is not None else None,
        "min_samples_leaf": getattr(model, "min_samples_leaf", None),
        "oracle": _oracle_info(oracle) if kind == "oracle" else None,
        "trace_start_ms": trace.start_ms,
        "trace_end_ms": trace.end_ms,
        "awpi": awpi,
        "train_seconds": t1 - t0,
        "predict_seconds": t2 - t1,
    }
    return cs, report


@dataclass
class Holdout:
    """What evaluate measures on: pivot samples split by record, the cut trace's training
    samples, and the held-out records at ``T_cut`` with their truths."""

    tr_s: Samples
    te_s: Samples
    cut_s: Samples
    x_cut: np.ndarray
    keys: list[bytes]  # held-out records alive at T_cut, the rows of x_cut
    reads: np.ndarray  # their reads in (T_cut, T_cut + horizon]
    hot_tau: np.ndarray  # their tau-event in that horizon
    t_cut: int
    day_ms: int
    censored_share: float

    @property
    def hot(self) -> np.ndarray:
        return self.reads > 0


def _holdout(trace: RecordTrace, s: Settings, is_train: np.ndarray, cut: RecordTrace, kept: np.ndarray) -> Holdout:
    samples = window_samples(store_view(trace, s), s)
    on_train = is_train[samples.rec]
    t_cut = cut.end_ms
    horizon_ms = s.horizon_days * trace.day_ms
    cut_test = np.flatnonzero(~is_train[kept])
    rec = kept[cut_test]
    at = np.full(rec.size, float(t_cut))
    y, d = tau_labels(trace, rec, at, s.tau_days * trace.day_ms, events=s.event_kinds)
    return Holdout(
        tr_s=samples.take(on_train),
        te_s=samples.take(~on_train),
        cut_s=window_samples(cut, s, records=np.flatnonzero(is_train[kept])),
        x_cut=build_features(cut, cut_test, at),
        keys=[trace.keys[i] for i in rec],
        reads=reads_between(trace, rec, t_cut, t_cut + horizon_ms),
        hot_tau=d & (y <= horizon_ms),
        t_cut=int(t_cut),
        day_ms=trace.day_ms,
        censored_share=samples.censored_share,
    )


def _method_list(methods: list[str], oracle: OracleScores | None) -> list[str]:
    """The asked methods (first name of each model kept), the reference, random, oracle."""
    out, seen = [], set()
    for m in [*methods, REFERENCE, "random", *(["oracle"] if oracle is not None else [])]:
        if canonical(m) not in seen:
            seen.add(canonical(m))
            out.append(m)
    if "oracle" in seen and oracle is None:
        raise ValueError("the oracle method needs its scores file (--oracle-scores FILE)")
    return out


def _fit_method(
    m: str, s: Settings, h: Holdout, oracle, alpha_days: float
) -> tuple[dict, np.ndarray | None, ColdModel | None]:
    """A method's c-index row, its scores of the held-out records at T_cut, and that model
    (None, with the reason in the row, when the cut trace cannot train it: gbdt-h needs
    samples observed for a whole horizon, which a window shorter than it lacks)."""
    kind = canonical(m)
    if kind == "oracle":
        model = _oracle_model(oracle, h.keys, h.t_cut, h.day_ms, "T_cut")
        return {"model": kind, "c_index": None, "uno_c": None}, model.score(h.x_cut), model
    model = make_model(kind, horizon=s.horizon_days, seed=s.seed, n_jobs=s.n_jobs, alpha=alpha_days)
    if model.needs_fit:
        tr = cap_samples(h.tr_s, s)
        model.fit(tr.x, tr.y, tr.delta)
    te = h.te_s
    score = model.score(te.x)
    row = {
        "model": kind,
        "c_index": concordance_index(te.y, te.delta, score),
        "uno_c": uno_c(h.tr_s.y, h.tr_s.delta, te.y, te.delta, score, s.horizon_days),
    }
    model = make_model(kind, horizon=s.horizon_days, seed=s.seed, n_jobs=s.n_jobs, alpha=alpha_days)
    if model.needs_fit:
        cs = cap_samples(h.cut_s, s)
        try:
            model.fit(cs.x, cs.y, cs.delta)
        except ValueError as e:
            row["error"] = f"at T_cut: {e}"
            return row, None, None
        row["min_samples_leaf"] = getattr(model, "min_samples_leaf", None)
    return row, model.score(h.x_cut), model


def _placement(cold: np.ndarray, h: Holdout) -> dict:
    """cold_fir of one cold set against both truths, and what it would cost."""
    return {
        "cold_fir": cold_fir(cold, h.hot),
        "cold_fir_tau": cold_fir(cold, h.hot_tau),
        "migrated_share": float(cold.mean()) if cold.size else 0.0,
        "n_cold": int(cold.sum()),
        "cold_reads": int(h.reads[cold].sum()),
        **confusion(cold, h.hot),
    }


def _placements(score: np.ndarray | None, h: Holdout, budgets, n_alpha: int | None, seed: int) -> dict:
    """A method's placements at the listed budgets and at the alpha rule's count."""
    if score is None:
        return {"cold_fir": {f"{b:g}": {"cold_fir": None} for b in budgets}, "alpha": None}
    return {
        "cold_fir": {f"{b:g}": _placement(select_budget(score, b, seed).cold, h) for b in budgets},
        "alpha": None if n_alpha is None else _placement(select_count(score, n_alpha, seed).cold, h),
    }


def _alpha_budget(model: ColdModel | None, h: Holdout, alpha_days: float) -> dict:
    """How many held-out records SA-LSM's Algorithm 3 (RSF at ``alpha``) calls cold."""
    out: dict = {"alpha_days": alpha_days, "decided_by": "rsf"}
    if model is None:
        return {**out, "n_cold": None, "migrated_share": None, "error": "rsf was not evaluated or failed"}
    sel = select_alpha(model, h.x_cut, alpha_days)
    return {**out, "n_cold": sel.n_cold, "migrated_share": sel.migrated_share, "rsf_rule": _placement(sel.cold, h)}


def _curve(scores: dict[str, np.ndarray], h: Holdout, seed: int) -> dict:
    """Per method and migrated share: cold_fir, hot records placed cold, their reads."""
    n = h.hot.size
    ks = [int(round(b * n)) for b in CURVE_SHARES]
    out = {
        "migrated_share": list(CURVE_SHARES),
        "n_cold": ks,
        "records": int(n),
        "hot_records": int(h.hot.sum()),
        "reads": int(h.reads.sum()),
        "methods": {},
    }
    for m, score in scores.items():
        if score is None:
            continue
        order = coldest_first(score, seed)
        hot = np.r_[0, np.cumsum(h.hot[order])]
        reads = np.r_[0, np.cumsum(h.reads[order])]
        out["methods"][m] = {
            "cold_fir": [float(hot[k] / k) if k else None for k in ks],
            "hot_placed_cold": [int(hot[k]) for k in ks],
            "cold_reads": [int(reads[k]) for k in ks],
        }
    return out


def _add_gains(rows: dict[str, dict]) -> None:
    """Each row's c-index and Uno's C against the reference's, in the paper's units."""
    ref = rows.get(REFERENCE, {})
    for row in rows.values():
        for metric, gain_key, removed_key in GAIN_KEYS:
            row[gain_key], row[removed_key] = gains(row.get(metric), ref.get(metric))


def _window_checks(trace: RecordTrace, budgets: list[float], s: Settings, alpha_days: float | None) -> tuple:
    """``(T_cut, alpha_days, is_train)`` once the options and the trace are found usable."""
    for b in budgets:
        if not (0.0 < b <= 1.0):
            raise ValueError(f"budgets must be in (0, 1], got {b}")
    alpha_days = s.horizon_days if alpha_days is None else float(alpha_days)
    if alpha_days <= 0:
        raise ValueError(f"alpha must be > 0 days, got {alpha_days}")
    t_cut = trace.end_ms - s.horizon_days * trace.day_ms
    if t_cut <= trace.start_ms:
        raise ValueError(
            f"the window ({(trace.end_ms - trace.start_ms) / trace.day_ms:.1f} days) is not longer than the "
            f"horizon ({s.horizon_days} days): nothing to train on before T_cut"
        )
    is_train = train_split(trace.keys, s.seed)
    if is_train.all() or not is_train.any():
        raise ValueError(f"{trace.n_records} records are too few to split 80/20")
    return t_cut, alpha_days, is_train


def _fit_all(methods: list[str], s: Settings, h: Holdout, oracle, alpha_days: float) -> tuple[dict, dict, dict]:
    """Rows, held-out scores at T_cut and models per method; a method that cannot be fit
    (e.g. GBDT with one label only) gets an error row and the others go on."""
    rows, scores, models = {}, {}, {}
    for m in methods:
        t0 = time.perf_counter()
        try:
            rows[m], scores[m], models[canonical(m)] = _fit_method(m, s, h, oracle, alpha_days)
        except OracleError:
            raise
        except ValueError as e:
            rows[m] = {"model": canonical(m), "error": str(e), "c_index": None, "uno_c": None}
        rows[m]["seconds"] = time.perf_counter() - t0
    return rows, scores, models


def evaluate(
    trace: RecordTrace,
    methods: list[str],
    budgets: list[float],
    s: Settings,
    alpha_days: float | None = None,
    oracle: OracleScores | None = None,
) -> dict:
    """The side-by-side evaluation described in the module docstring; KM curves included.
    ``alpha_days`` (default: the horizon) sets the alpha row; ``oracle``: scores for T_cut."""
    awpi = check_awpi(trace, s.force)
    methods = _method_list(methods, oracle)
    t_cut, alpha_days, is_train = _window_checks(trace, budgets, s, alpha_days)
    if oracle is not None:  # before any fit: a file for another time is a mistake, not a row
        oracle.check_at(t_cut, trace.day_ms, "T_cut")
    # tau from the training records alone, over the window their c-index samples span;
    # the held-out records are never looked at.
    s, tau_cv = _with_tau(trace, np.flatnonzero(is_train), s)
    cut, kept = cut_view(trace, t_cut, s)
    h = _holdout(trace, s, is_train, cut, kept)
    rows, scores, models = _fit_all(methods, s, h, oracle, alpha_days)
    alpha = _alpha_budget(models.get("rsf"), h, alpha_days)
    for m, row in rows.items():
        row.update(_placements(scores.get(m), h, budgets, alpha["n_cold"], s.seed))
    _add_gains(rows)

    km_t, km_s = kaplan_meier(h.tr_s.y, h.tr_s.delta)
    return {
        "records": trace.n_records,
        "train_records": int(is_train.sum()),
        "test_records": int((~is_train).sum()),
        "samples": {"train": len(h.tr_s), "test": len(h.te_s), "censored_share": h.censored_share},
        "tau_days": s.tau_days,
        "tau_cv": tau_cv,
        "event_kinds": s.event_kinds,
        "pivots": s.n_pivots,
        "horizon_days": s.horizon_days,
        "seed": s.seed,
        "awpi": awpi,
        "cut": {
            "t_cut_ms": h.t_cut,
            "train_samples": len(h.cut_s),
            "test_records": len(h.keys),
            "hot_share": float(h.hot.mean()) if h.keys else None,
            "tau_hot_share": float(h.hot_tau.mean()) if h.keys else None,
            "reads": int(h.reads.sum()),
        },
        "reference": REFERENCE,
        "budgets": budgets,
        "alpha": alpha,
        "methods": rows,
        "curve": _curve(scores, h, s.seed),
        "oracle": _oracle_info(oracle),
        "km": {"t_days": km_t.tolist(), "survival": km_s.tolist()},
    }
