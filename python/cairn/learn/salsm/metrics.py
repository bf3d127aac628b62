"""The paper's metrics: c-index (eq. 5), cold_fir (eq. 6), Kaplan-Meier (eq. 7) and its plot."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def concordance_index(y: np.ndarray, delta: np.ndarray, score: np.ndarray, tied_tol: float = 1e-8) -> float:
    """Harrell's c-index, eq. 5 with one score per sample (higher = later event).

    A pair (i, j) is comparable when i's event is observed and j outlives it: ``y_j > y_i``,
    or ``y_j == y_i`` with j censored. It is concordant when ``score_j > score_i``; scores
    within ``tied_tol`` count one half (as scikit-survival does). Eq. 5 evaluates
    ``S(y_j | X_j)`` and ``S(y_i | X_i)`` at two times; a single score per sample is the
    usual reading (the one scikit-survival's ``concordance_index_censored`` uses).

    O(n log n): samples are visited by decreasing ``y`` while a Fenwick tree over score
    ranks counts the ones already passed (the longer-lived).
    """
    y = np.asarray(y, dtype=float)
    delta = np.asarray(delta, dtype=bool)
    score = np.asarray(score, dtype=float)
    if not (y.shape == delta.shape == score.shape):
        raise ValueError("y, delta and score must have the same length")
    n = y.shape[0]
    if n == 0:
        return float("nan")
    # Score ranks, merging values closer than tied_tol.
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    new = np.r_[True, np.diff(s) > tied_tol]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.cumsum(new)  # 1-based
    m = int(rank.max())

    tree = [0] * (m + 1)
    by_time = np.lexsort((delta, -y))  # decreasing y; within a tie, censored first
    ys, ds, rs = y[by_time].tolist(), delta[by_time].tolist(), rank[by_time].tolist()
    inserted = 0
    num = 0.0
    den = 0
    i = 0
    while i < n:
        j = i
        while j < n and ys[j] == ys[i]:
            j += 1
        # Censored samples tied with this time outlive the events at it: add them first.
        k = i
        while k < j and not ds[k]:
            r = rs[k]
            while r <= m:
                tree[r] += 1
                r += r & -r
            inserted += 1
            k += 1
        for e in range(k, j):
            r = rs[e]
            le = 0  # inserted with rank <= r
            q = r
            while q > 0:
                le += tree[q]
                q -= q & -q
            lt = 0  # inserted with rank < r
            q = r - 1
            while q > 0:
                lt += tree[q]
                q -= q & -q
            num += (inserted - le) + 0.5 * (le - lt)
            den += inserted
        for e in range(k, j):
            r = rs[e]
            while r <= m:
                tree[r] += 1
                r += r & -r
            inserted += 1
        i = j
    return num / den if den else float("nan")


def confusion(pred_cold: np.ndarray, event: np.ndarray) -> dict[str, int]:
    """Positive = predicted cold; a prediction is false when a tau-event happens in the horizon."""
    pred_cold, event = np.asarray(pred_cold, bool), np.asarray(event, bool)
    return {
        "tp": int((pred_cold & ~event).sum()),
        "fp": int((pred_cold & event).sum()),
        "tn": int((~pred_cold & event).sum()),
        "fn": int((~pred_cold & ~event).sum()),
    }


def cold_fir(pred_cold: np.ndarray, event: np.ndarray) -> float:
    """Eq. 6: FP / (FP + TP), the share of migrated records that were in fact hot (NaN if none migrated)."""
    c = confusion(pred_cold, event)
    total = c["fp"] + c["tp"]
    return c["fp"] / total if total else float("nan")


def kaplan_meier(y: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 7: the product-limit estimate at each distinct event time.

    Returns ``(t, s)`` with ``s[k]`` the survival just after ``t[k]`` (events at ``t[k]``
    included); eq. 7's ``prod over t_i < t`` is the same steps read from the left. At risk
    at ``t`` are the samples with ``y >= t`` (censored at ``t`` still count).
    """
    y = np.asarray(y, dtype=float)
    delta = np.asarray(delta, dtype=bool)
    t, d = np.unique(y[delta], return_counts=True)
    ys = np.sort(y)
    at_risk = ys.shape[0] - np.searchsorted(ys, t, side="left")
    return t, np.cumprod(1.0 - d / at_risk)


def plot_km(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], path: str, title: str = "") -> bool:
    """Kaplan-Meier step curves (Fig. 11 style) as a PNG; False when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for label, (t, s) in curves.items():
        ax.step(np.r_[0.0, t], np.r_[1.0, s], where="post", label=label)
    ax.set_xlabel("days since pivot")
    ax.set_ylabel("survival probability (no tau-event)")
    ax.set_ylim(0.0, 1.02)
    if title:
        ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
