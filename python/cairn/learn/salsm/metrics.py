"""The paper's metrics: c-index (eq. 5), cold_fir (eq. 6), Kaplan-Meier (eq. 7) and its plot;
beside them Uno's IPCW concordance and the gains over a reference model in the paper's units."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def concordance_index(
    y: np.ndarray, delta: np.ndarray, score: np.ndarray, tied_tol: float = 1e-8, weights: np.ndarray | None = None
) -> float:
    """Harrell's c-index, eq. 5 with one score per sample (higher = later event).

    A pair (i, j) is comparable when i's event is observed and j outlives it: ``y_j > y_i``,
    or ``y_j == y_i`` with j censored. It is concordant when ``score_j > score_i``; scores
    within ``tied_tol`` count one half (as scikit-survival does). Eq. 5 evaluates
    ``S(y_j | X_j)`` and ``S(y_i | X_i)`` at two times; a single score per sample is the
    usual reading (the one scikit-survival's ``concordance_index_censored`` uses).

    ``weights``: each pair counts its event sample's weight (Uno's C, :func:`uno_c`).

    O(n log n): samples are visited by decreasing ``y`` while a Fenwick tree over score
    ranks counts the ones already passed (the longer-lived).
    """
    y = np.asarray(y, dtype=float)
    delta = np.asarray(delta, dtype=bool)
    score = np.asarray(score, dtype=float)
    if not (y.shape == delta.shape == score.shape):
        raise ValueError("y, delta and score must have the same length")
    wl = (np.ones(y.shape[0]) if weights is None else np.asarray(weights, dtype=float)).tolist()
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
    ws = [wl[i] for i in by_time.tolist()]
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
            num += ws[e] * ((inserted - le) + 0.5 * (le - lt))
            den += ws[e] * inserted
        for e in range(k, j):
            r = rs[e]
            while r <= m:
                tree[r] += 1
                r += r & -r
            inserted += 1
        i = j
    return num / den if den else float("nan")


def censoring_survival(y_train: np.ndarray, delta_train: np.ndarray, t: np.ndarray) -> np.ndarray:
    """G(t): Kaplan-Meier of the censoring times of the training samples (an event at a
    time leaves the risk set before the censorings at that time), right-continuous.
    Beyond the last training time G keeps its last value."""
    y, d = np.asarray(y_train, float), np.asarray(delta_train, bool)
    times, inv = np.unique(y, return_inverse=True)
    n_ev = np.bincount(inv, weights=d.astype(float), minlength=times.size)
    n_cens = np.bincount(inv, weights=(~d).astype(float), minlength=times.size)
    at_risk = y.size - np.r_[0, np.cumsum(n_ev + n_cens)[:-1]] - n_ev
    step = 1.0 - np.divide(n_cens, at_risk, out=np.zeros(times.size), where=n_cens > 0)
    g = np.cumprod(step)
    k = np.searchsorted(times, np.asarray(t, float), side="right") - 1
    return np.where(k >= 0, g[np.maximum(k, 0)], 1.0)


def uno_c(
    y_train: np.ndarray,
    delta_train: np.ndarray,
    y: np.ndarray,
    delta: np.ndarray,
    score: np.ndarray,
    horizon: float,
    tied_tol: float = 1e-8,
) -> float:
    """Uno's C: concordance with each event before ``horizon`` weighted by 1 / G(y)^2
    (censoring estimated on the training samples), events at or after it weight 0; the
    ``score`` is survival-like as in :func:`concordance_index`. NaN when G is 0 at an
    event time or no pair is comparable."""
    y, delta = np.asarray(y, float), np.asarray(delta, bool)
    use = delta & (y < horizon)
    g = censoring_survival(y_train, delta_train, y[use])
    if (g <= 0).any():
        return float("nan")
    w = np.zeros(y.shape[0])
    w[use] = 1.0 / g**2
    return concordance_index(y, delta, score, tied_tol, weights=w)


def gains(c: float | None, ref: float | None) -> tuple[float | None, float | None]:
    """``(c / ref - 1, (c - ref) / (1 - ref))``: the relative gain over a reference
    concordance (the paper's "+8.9%") and the share of its discordant pairs removed."""
    ok = c is not None and ref is not None and np.isfinite(c) and np.isfinite(ref)
    if not ok:
        return None, None
    rel = c / ref - 1.0 if ref > 0 else None
    removed = (c - ref) / (1.0 - ref) if ref < 1 else None
    return rel, removed


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
