"""Training: from traces to k LightGBM models, a threshold and an offline report.

The pipeline (paper §4 and §6.1):

1. eq. 1 estimates per fine cell (:mod:`.counts`), Algorithm 1 picks A* = m * A0
   (:mod:`.ranges`), the counts are aggregated to A*;
2. Algorithm 2 finds precursors at A* (:mod:`.precursors`);
3. the 18 features and k labels for every sample (:mod:`.features`) whose labels start
   at the first slot with reads (a trace that opens with a bulk load has none before);
4. a chronological split of the sample slots: train, then validation, then test (the
   paper trains on three days and tests on the fourth). Samples whose label slots would
   cross into the next part are dropped from the earlier part, so no label of a training
   row lies in the validation or test period;
5. one LightGBM binary model per horizon i = 1..k (multi-step prediction, eq. 2), with
   the paper's parameters (§4.3: num_leaves 31, learning_rate 0.05, bagging_fraction 0.8,
   feature_fraction 0.9), a fixed seed, at most ``rounds`` rounds with early stopping on
   the validation part;
6. the decision threshold: for each horizon, the F1-best threshold keeping validation
   recall >= ``recall_target`` (:func:`.metrics.choose_threshold`); the bundle holds one
   threshold for all k models, so the smallest of them is used, which keeps every
   horizon's validation recall at or above the target;
7. the report (:mod:`.report`) on the test part.

The models shipped are exactly the ones evaluated (no refit on the test slots), each
truncated to its best iteration and reloaded from the same text the bundle stores.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import lightgbm as lgb
import numpy as np

from . import report as report_mod
from .counts import Counts, coarsen, from_traces
from .features import (
    FEATURE_NAMES,
    HISTORY_SLOTS,
    Samples,
    build_samples,
    first_read_slot,
    from_first_read,
    hot_reads_for_share,
    uncovered_positive_share,
)
from .metrics import choose_threshold
from .precursors import DEFAULT_EPSILON, DEFAULT_GAMMA, find_precursors
from .ranges import DEFAULT_ALPHA, Selection, key_range_selection
from .trace import Trace

LGB_PARAMS = {
    "objective": "binary",
    "metric": "binary_logloss",
    "num_leaves": 31,
    "learning_rate": 0.05,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "feature_fraction": 0.9,
    "deterministic": True,
    "force_row_wise": True,
    "verbosity": -1,
}


@dataclass
class TrainConfig:
    k: int = 3
    alpha: float = DEFAULT_ALPHA
    gamma: int = DEFAULT_GAMMA
    epsilon: float = DEFAULT_EPSILON
    test_share: float = 0.3
    val_share: float = 0.2  # of the slots before the test part
    recall_target: float = 0.95
    rounds: int = 200
    early_stopping: int = 20
    seed: int = 0
    threads: int = 0  # 0: LightGBM's default
    iw_window: int = HISTORY_SLOTS
    multiplier: int | None = None  # set to skip Algorithm 1
    max_multiplier: int | None = None
    hot_reads: float = 1.0  # a label is "reads in the slot >= hot_reads"
    hot_share: float | None = None  # set: hot_reads from the trace, at most this share hot

    def validate(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if not 1 <= self.gamma <= 3:
            raise ValueError(f"gamma must be 1..3 (the bundle has 3 precursor features), got {self.gamma}")
        if not 0.0 < self.test_share < 1.0:
            raise ValueError(f"test share must be in (0, 1), got {self.test_share}")
        if not 0.0 < self.val_share < 1.0:
            raise ValueError(f"validation share must be in (0, 1), got {self.val_share}")
        if not 0.0 < self.recall_target <= 1.0:
            raise ValueError(f"recall target must be in (0, 1], got {self.recall_target}")
        if not self.hot_reads >= 1.0:
            raise ValueError(f"hot reads must be >= 1, got {self.hot_reads}")
        if self.hot_share is not None and not 0.0 < self.hot_share <= 1.0:
            raise ValueError(f"hot share must be in (0, 1], got {self.hot_share}")
        if not 1 <= self.iw_window <= HISTORY_SLOTS:
            raise ValueError(f"IW window must be 1..{HISTORY_SLOTS}, got {self.iw_window}")


def steps_for(durations_s: Sequence[float], slot_ms: int, extra: int = 1) -> int:
    """Eq. 2: ``k = ceil(max(T1 + T2) / t) + C`` for compaction-plus-recovery durations in seconds."""
    if not durations_s:
        raise ValueError("no compaction duration given")
    t = slot_ms / 1000.0
    return int(math.ceil(max(durations_s) / t - 1e-9)) + int(extra)


@dataclass
class Prepared:
    """Everything before model fitting: counts at A*, Algorithm 1's choice, precursors, samples."""

    fine: Counts
    counts: Counts
    selection: Selection
    precursors: dict[int, list[int]]
    samples: Samples
    hot_reads: float = 1.0


def prepare(traces: Sequence[Trace], config: TrainConfig) -> Prepared:
    fine = from_traces(traces)
    if config.multiplier is not None:
        selection = Selection(config.multiplier)
    else:
        selection = key_range_selection(fine, config.alpha, max_multiplier=config.max_multiplier)
    counts = coarsen(fine, selection.multiplier)
    precursors = find_precursors(counts, config.gamma, config.epsilon)
    hot_reads = config.hot_reads
    if config.hot_share is not None:
        # Chosen on labels before the test part (as chronological_split will place it for
        # the k-model samples, which end k - 1 slots earlier), so no test label is seen.
        s1 = from_first_read(counts, build_samples(counts, precursors, 1))
        if len(s1):
            lo, last_k = int(s1.slot.min()), int(s1.slot.max()) - (config.k - 1)
            test_start = lo + int(round((last_k - lo + 1) * (1.0 - config.test_share)))
            s1 = s1.subset(s1.slot + 1 < test_start)
        hot_reads = max(hot_reads, hot_reads_for_share(counts, s1, config.hot_share))
    samples = from_first_read(counts, build_samples(counts, precursors, config.k, min_reads=hot_reads))
    return Prepared(fine, counts, selection, precursors, samples, hot_reads)


@dataclass
class Split:
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    val_start: int
    test_start: int
    first_slot: int
    last_slot: int

    def as_dict(self, k: int) -> dict:
        return {
            "train_slots": [self.first_slot, self.val_start - 1 - k],
            "val_slots": [self.val_start, self.test_start - 1 - k],
            "test_slots": [self.test_start, self.last_slot],
            "samples": {
                "train": int(self.train.sum()),
                "val": int(self.val.sum()),
                "test": int(self.test.sum()),
            },
        }


def chronological_split(samples: Samples, test_share: float, val_share: float) -> Split:
    """Train / validation / test by slot, in that order; see the module docstring."""
    if len(samples) == 0:
        raise ValueError("no samples: the trace has too few slots or no accesses")
    k = samples.k
    first, last = int(samples.slot.min()), int(samples.slot.max())
    n = last - first + 1
    test_start = first + int(round(n * (1.0 - test_share)))
    val_start = first + int(round((test_start - first) * (1.0 - val_share)))
    s = samples.slot
    split = Split(
        train=s + k < val_start,
        val=(s >= val_start) & (s + k < test_start),
        test=s >= test_start,
        val_start=val_start,
        test_start=test_start,
        first_slot=first,
        last_slot=last,
    )
    for name in ("train", "val", "test"):
        if not getattr(split, name).any():
            raise ValueError(f"the {name} part is empty ({n} sample slots, k = {k}): give a longer trace")
    return split


def fit_model(
    x_tr: np.ndarray, y_tr: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, config: TrainConfig
) -> tuple[str, int]:
    """One binary model; returns its LightGBM text (truncated to the best iteration) and that iteration."""
    params = dict(LGB_PARAMS, seed=config.seed, num_threads=config.threads)
    train_set = lgb.Dataset(x_tr, label=y_tr.astype(np.float64), feature_name=FEATURE_NAMES, free_raw_data=True)
    val_set = lgb.Dataset(x_val, label=y_val.astype(np.float64), reference=train_set)
    booster = lgb.train(
        params,
        train_set,
        num_boost_round=config.rounds,
        valid_sets=[val_set],
        callbacks=[lgb.early_stopping(config.early_stopping, verbose=False)],
    )
    best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
    return booster.model_to_string(num_iteration=best), best


def predict(model_texts: Sequence[str], x: np.ndarray) -> list[np.ndarray]:
    """Probabilities of each model (one per horizon) for the rows ``x``."""
    return [np.asarray(lgb.Booster(model_str=text).predict(x), dtype=np.float64) for text in model_texts]


@dataclass
class TrainResult:
    prepared: Prepared
    split: Split
    models: list[str]
    best_iterations: list[int]
    threshold: float
    thresholds: list[float]
    report: dict
    seconds: float = 0.0
    config: TrainConfig = field(default_factory=TrainConfig)


def train(traces: Sequence[Trace], config: TrainConfig | None = None) -> TrainResult:
    """The whole offline analysis; see the module docstring."""
    config = config or TrainConfig()
    config.validate()
    t0 = time.monotonic()
    prep = prepare(traces, config)
    samples = prep.samples
    split = chronological_split(samples, config.test_share, config.val_share)
    tr, va, te = samples.subset(split.train), samples.subset(split.val), samples.subset(split.test)
    models, best_iters, thresholds = [], [], []
    for i in range(config.k):
        text, best = fit_model(tr.x, tr.y[:, i], va.x, va.y[:, i], config)
        models.append(text)
        best_iters.append(best)
    for i, prob in enumerate(predict(models, va.x)):
        thresholds.append(choose_threshold(va.y[:, i], prob, config.recall_target))
    threshold = min(thresholds)
    test_probs = predict(models, te.x)
    rep = report_mod.evaluate(te, test_probs, threshold, config.iw_window, prep.hot_reads)
    rep.update(
        {
            "split": split.as_dict(config.k),
            "range_multiplier": prep.selection.multiplier,
            "range_width": prep.counts.range_width,
            "fine_range_width": prep.fine.range_width,
            "alpha": config.alpha,
            "zero_proportion": {str(m): z for m, z in sorted(prep.selection.zero_proportion.items())},
            "ranges_with_precursors": len(prep.precursors),
            "epsilon": config.epsilon,
            "recall_target": config.recall_target,
            "hot_share": config.hot_share,
            "first_read_slot": first_read_slot(prep.counts),
            "hot_share_reached": float(samples.y[:, 0].mean()) if len(samples) else float("nan"),
            "thresholds_by_horizon": thresholds,
            "best_iterations": best_iters,
            "uncovered_positive_share": uncovered_positive_share(prep.counts, te, 1, prep.hot_reads),
        }
    )
    return TrainResult(
        prepared=prep,
        split=split,
        models=models,
        best_iterations=best_iters,
        threshold=threshold,
        thresholds=thresholds,
        report=rep,
        seconds=time.monotonic() - t0,
        config=config,
    )


def to_bundle(result: TrainResult, trained_unix_ms: int | None = None):
    """The model bundle of a training run (metadata per the spec, the k model texts)."""
    from .bundle import Bundle, make_metadata

    counts = result.prepared.counts
    meta = make_metadata(
        range_width=counts.range_width,
        fine_range_width=counts.fine_range_width,
        key_offset=counts.key_offset,
        slot_ms=counts.slot_ms,
        k=len(result.models),
        threshold=result.threshold,
        gamma=result.config.gamma,
        precursors=result.prepared.precursors,
        trace_rows=counts.trace_rows,
        report=result.report,
        trained_unix_ms=int(time.time() * 1000) if trained_unix_ms is None else trained_unix_ms,
    )
    return Bundle(meta, list(result.models))
