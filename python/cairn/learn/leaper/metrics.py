"""Precision, recall, AUC and the choice of the decision threshold (numpy only).

AUC is the Mann-Whitney statistic with tied scores sharing their average rank, so a
binary rule (scores 0/1) gets ``(TPR + TNR) / 2``, the area under its one-point ROC curve.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass
class Scores:
    precision: float
    recall: float
    auc: float
    positives: int
    predicted: int
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for labels ``y``; NaN when one class is missing."""
    y = np.asarray(y, dtype=bool)
    score = np.asarray(score, dtype=np.float64)
    n_pos = int(np.count_nonzero(y))
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inv, cnt = np.unique(score, return_inverse=True, return_counts=True)
    ends = np.cumsum(cnt)
    avg_rank = (ends - cnt) + (cnt + 1) / 2.0
    rank_sum = float(avg_rank[inv.ravel()][y].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def scores(y: np.ndarray, hot: np.ndarray, score: np.ndarray | None = None) -> Scores:
    """Precision and recall of the decision ``hot``; AUC of ``score`` (default: ``hot``)."""
    y = np.asarray(y, dtype=bool)
    hot = np.asarray(hot, dtype=bool)
    tp = int(np.count_nonzero(y & hot))
    predicted = int(np.count_nonzero(hot))
    positives = int(np.count_nonzero(y))
    return Scores(
        precision=tp / predicted if predicted else 0.0,
        recall=tp / positives if positives else float("nan"),
        auc=auc(y, hot if score is None else score),
        positives=positives,
        predicted=predicted,
        n=int(y.shape[0]),
    )


def choose_threshold(y: np.ndarray, prob: np.ndarray, min_recall: float = 0.95) -> float:
    """The probability threshold with the best F1 among those keeping recall >= ``min_recall``.

    Recall matters most to Leaper (a missed hot range is a cache miss after compaction),
    precision second (a wrong prefetch costs cache space), so the threshold must keep the
    recall target and, within it, F1 picks the best precision/recall balance; ties go to
    the higher threshold (fewer prefetches). Candidates are the predicted probabilities
    themselves ("hot" means ``prob >= threshold``). Without positives it returns 0.5.
    """
    y = np.asarray(y, dtype=bool)
    prob = np.asarray(prob, dtype=np.float64)
    n_pos = int(np.count_nonzero(y))
    if n_pos == 0:
        return 0.5
    order = np.argsort(-prob, kind="stable")
    p_sorted, y_sorted = prob[order], y[order]
    # Last index of each run of equal probabilities: thresholding at that value
    # includes the whole run.
    last = np.flatnonzero(np.append(p_sorted[1:] != p_sorted[:-1], True))
    tp = np.cumsum(y_sorted)[last]
    predicted = last + 1
    recall = tp / n_pos
    precision = tp / predicted
    f1 = np.where(tp > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-300), 0.0)
    ok = recall >= min_recall
    if not ok.any():  # cannot happen (the lowest threshold has recall 1), kept for safety
        return float(p_sorted[-1])
    best = int(np.argmax(np.where(ok, f1, -1.0)))
    return float(p_sorted[last[best]])
