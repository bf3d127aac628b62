"""The service's two jobs: ``train`` (a cold-key set from one trace) and ``evaluate``
(c-index and cold_fir of every method on one trace, side by side).

``train`` learns from every record over the whole window ``[start_ms, end_ms]`` and
predicts at ``end_ms`` for every record, its features drawn from its whole history.

``evaluate`` splits the records 80/20 by a seeded hash of the key (a record's samples all
fall on one side) and measures

* the c-index (eq. 5) on the held-out records' pivot samples, models fit on the training
  records' samples;
* cold_fir (eq. 6) at equal budgets, the way the engine would meet it: the trace is cut
  at ``T_cut = end_ms - horizon`` (what the query store would have exported then), models
  are trained on the training records of the cut trace only (labels censored at
  ``T_cut``: no leakage), held-out records alive at ``T_cut`` are ranked from their
  features at ``T_cut``, and a migrated record is a false positive when it is read in
  ``(T_cut, end_ms]`` (what costs a cold-tier read; ``cold_fir_tau`` counts a tau-event
  there instead, the label the models learn).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np

from .awpi import check_awpi
from .coldset import ColdSet
from .features import Samples, build_features, make_samples
from .labels import EVENT_KINDS, reads_between, tau_labels
from .metrics import cold_fir, concordance_index, confusion, kaplan_meier
from .models import make_model
from .select import select_alpha, select_budget
from .trace import RecordTrace


@dataclass
class Settings:
    tau_days: float = 1.0
    n_pivots: int = 10
    horizon_days: float = 30.0
    seed: int = 0
    n_jobs: int = 2
    force: bool = False
    # Cap on the samples a model is fit on (a uniform subset; 0: all). RSF's cost grows
    # with samples x trees, and the paper's Fig. 14 shows it ahead of GBDT on a tenth of
    # GBDT's samples; 50k keeps a fit within about a minute on 2 cores.
    max_samples: int = 50_000
    # Accesses that make tau-events: "reads" (what costs on the cold tier) or "all".
    event_kinds: str = "reads"

    def __post_init__(self) -> None:
        if self.event_kinds not in EVENT_KINDS:
            raise ValueError(f"event kinds must be one of {', '.join(EVENT_KINDS)}, got {self.event_kinds!r}")


def cap_samples(samples: Samples, s: Settings) -> Samples:
    """A seeded uniform subset of at most ``s.max_samples`` samples."""
    n = len(samples)
    if s.max_samples <= 0 or n <= s.max_samples:
        return samples
    rng = np.random.default_rng(s.seed + 1)
    keep = np.zeros(n, dtype=bool)
    keep[rng.choice(n, size=s.max_samples, replace=False)] = True
    return samples.take(keep)


def train_split(keys: list[bytes], seed: int, train_share: float = 0.8) -> np.ndarray:
    """True for the records on the training side: a keyed BLAKE2b hash of the key, so the
    split is stable across runs and independent of record order."""
    salt = seed.to_bytes(8, "little", signed=True)
    h = np.fromiter(
        (int.from_bytes(hashlib.blake2b(k, digest_size=8, key=salt).digest(), "little") for k in keys),
        dtype=np.uint64,
        count=len(keys),
    )
    return h < np.uint64(int(train_share * 2**64))


def _samples(trace: RecordTrace, s: Settings, t_end: float | None = None, records=None) -> Samples:
    rng = np.random.default_rng(s.seed)
    tau_ms = s.tau_days * trace.day_ms
    return make_samples(trace, s.n_pivots, tau_ms, rng, t_end=t_end, records=records, events=s.event_kinds)


def train(
    trace: RecordTrace, method: str, s: Settings, budget: float | None = None, alpha_days: float | None = None
) -> tuple[ColdSet, dict]:
    """Train ``method`` on the whole trace, select cold keys at ``end_ms`` (Algorithm 3 with
    ``alpha_days``, or the ``budget`` share of coldest records)."""
    if (budget is None) == (alpha_days is None):
        raise ValueError("give exactly one of a budget or an alpha")
    awpi = check_awpi(trace, s.force)
    if trace.n_records == 0:
        raise ValueError("the trace holds no records")
    horizon = alpha_days if alpha_days is not None else s.horizon_days
    model = make_model(method, horizon=horizon, seed=s.seed, n_jobs=s.n_jobs)
    t0 = time.perf_counter()
    samples = cap_samples(_samples(trace, s), s) if model.needs_fit else None
    if samples is not None:
        model.fit(samples.x, samples.y, samples.delta)
    t1 = time.perf_counter()
    x = build_features(trace, np.arange(trace.n_records), np.full(trace.n_records, float(trace.end_ms)))
    if alpha_days is not None:
        sel = select_alpha(model, x, alpha_days)
        alpha_ms = alpha_days * trace.day_ms
    else:
        sel = select_budget(model.score(x), budget)
        alpha_ms = s.horizon_days * trace.day_ms  # the budget's ranking looks this far ahead
    t2 = time.perf_counter()
    keys = [trace.keys[i] for i in np.flatnonzero(sel.cold)]
    cs = ColdSet(cf_id=trace.cf_id, trace_end_ms=trace.end_ms, alpha=float(alpha_ms), method=method, keys=keys)
    report = {
        "method": method,
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
        "event_kinds": s.event_kinds,
        "pivots": s.n_pivots,
        "samples": len(samples) if samples is not None else 0,
        "censored_share": samples.censored_share if samples is not None else None,
        "trace_start_ms": trace.start_ms,
        "trace_end_ms": trace.end_ms,
        "awpi": awpi,
        "train_seconds": t1 - t0,
        "predict_seconds": t2 - t1,
    }
    return cs, report


def evaluate(trace: RecordTrace, methods: list[str], budgets: list[float], s: Settings) -> dict:
    """The side-by-side evaluation described in the module docstring; KM curves included."""
    awpi = check_awpi(trace, s.force)
    for b in budgets:
        if not (0.0 < b <= 1.0):
            raise ValueError(f"budgets must be in (0, 1], got {b}")
    tau_ms = s.tau_days * trace.day_ms
    horizon_ms = s.horizon_days * trace.day_ms
    t_cut = trace.end_ms - horizon_ms
    if t_cut <= trace.start_ms:
        raise ValueError(
            f"the window ({(trace.end_ms - trace.start_ms) / trace.day_ms:.1f} days) is not longer than the "
            f"horizon ({s.horizon_days} days): nothing to train on before T_cut"
        )
    is_train = train_split(trace.keys, s.seed)
    if is_train.all() or not is_train.any():
        raise ValueError(f"{trace.n_records} records are too few to split 80/20")

    # c-index on pivot samples of the whole window.
    samples = _samples(trace, s)
    on_train = is_train[samples.rec]
    tr_s, te_s = samples.take(on_train), samples.take(~on_train)

    # cold_fir: the trace as exported at T_cut, truth from the whole trace.
    cut, kept = trace.cut(int(t_cut))
    cut_train = np.flatnonzero(is_train[kept])
    cut_test = np.flatnonzero(~is_train[kept])
    cut_s = _samples(cut, s, records=cut_train)
    x_cut = build_features(cut, cut_test, np.full(cut_test.size, float(t_cut)))
    hot = reads_between(trace, kept[cut_test], t_cut, t_cut + horizon_ms) > 0
    y_true, d_true = tau_labels(
        trace, kept[cut_test], np.full(cut_test.size, float(t_cut)), tau_ms, events=s.event_kinds
    )
    hot_tau = d_true & (y_true <= horizon_ms)

    rows = {}
    for m in [*methods, "random"]:
        t0 = time.perf_counter()
        try:
            rows[m] = _evaluate_one(m, s, tr_s, te_s, cut_s, x_cut, (hot, hot_tau), budgets)
        except ValueError as e:  # e.g. GBDT with one label only: report it, go on with the others
            rows[m] = {"error": str(e), "c_index": None, "cold_fir": {f"{b:g}": {"cold_fir": None} for b in budgets}}
        rows[m]["seconds"] = time.perf_counter() - t0

    km_t, km_s = kaplan_meier(tr_s.y, tr_s.delta)
    return {
        "records": trace.n_records,
        "train_records": int(is_train.sum()),
        "test_records": int((~is_train).sum()),
        "samples": {"train": len(tr_s), "test": len(te_s), "censored_share": samples.censored_share},
        "tau_days": s.tau_days,
        "event_kinds": s.event_kinds,
        "pivots": s.n_pivots,
        "horizon_days": s.horizon_days,
        "seed": s.seed,
        "awpi": awpi,
        "cut": {
            "t_cut_ms": int(t_cut),
            "train_samples": len(cut_s),
            "test_records": int(cut_test.size),
            "hot_share": float(hot.mean()) if hot.size else None,
            "tau_hot_share": float(hot_tau.mean()) if hot.size else None,
        },
        "budgets": budgets,
        "methods": rows,
        "km": {"t_days": km_t.tolist(), "survival": km_s.tolist()},
    }


def _evaluate_one(
    m: str, s: Settings, tr_s: Samples, te_s: Samples, cut_s: Samples, x_cut: np.ndarray, truth, budgets
) -> dict:
    hot, hot_tau = truth
    row: dict = {}
    model = make_model(m, horizon=s.horizon_days, seed=s.seed, n_jobs=s.n_jobs)
    tr_s, cut_s = cap_samples(tr_s, s), cap_samples(cut_s, s)
    if model.needs_fit:
        model.fit(tr_s.x, tr_s.y, tr_s.delta)
    row["c_index"] = concordance_index(te_s.y, te_s.delta, model.score(te_s.x))
    model = make_model(m, horizon=s.horizon_days, seed=s.seed, n_jobs=s.n_jobs)
    if model.needs_fit:
        model.fit(cut_s.x, cut_s.y, cut_s.delta)
    score = model.score(x_cut)
    row["cold_fir"] = {}
    for b in budgets:
        sel = select_budget(score, b)
        row["cold_fir"][f"{b:g}"] = {
            "cold_fir": cold_fir(sel.cold, hot),
            "cold_fir_tau": cold_fir(sel.cold, hot_tau),
            "migrated_share": sel.migrated_share,
            **confusion(sel.cold, hot),
        }
    return row


def format_table(rep: dict) -> str:
    """The evaluation as a text table: c-index and cold_fir per budget, one row per method."""
    budgets = [f"{b:g}" for b in rep["budgets"]]
    head = f"{'method':8s} {'c-index':>8s} " + " ".join(f"{'fir@' + b:>9s}" for b in budgets) + f" {'secs':>7s}"
    lines = [
        f"{rep['records']} records ({rep['train_records']} train / {rep['test_records']} test), "
        f"{rep['samples']['train']} + {rep['samples']['test']} samples, "
        f"censored {rep['samples']['censored_share']:.1%}, "
        f"tau {rep['tau_days']:g} d over {rep['event_kinds']}, horizon {rep['horizon_days']:g} d; "
        f"read share at T_cut {_fmt(rep['cut']['hot_share'])} (a random pick's cold_fir)",
        head,
        "-" * len(head),
    ]
    for m, row in rep["methods"].items():
        firs = " ".join(f"{_fmt(row['cold_fir'][b]['cold_fir']):>9s}" for b in budgets)
        err = f"  ({row['error']})" if "error" in row else ""
        lines.append(f"{m:8s} {_fmt(row['c_index']):>8s} {firs} {row['seconds']:7.1f}{err}")
    return "\n".join(lines)


def _fmt(v) -> str:
    return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.3f}"
