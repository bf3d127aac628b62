"""Leaper's eq. 1: the true access count behind a sampled one.

The collector always counts the first access to a (range, slot) cell and each later one
with probability P, so a cell with S >= 1 sampled accesses stands for
``N = (S - 1) / P + 1`` accesses; a cell with S = 0 had none.
"""

from __future__ import annotations

import numpy as np


def estimate_count(sampled: int, p: float) -> float:
    """Eq. 1 for one cell: ``(S - 1) / P + 1`` for ``S >= 1``, else 0."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"sampling probability must be in (0, 1], got {p}")
    if sampled < 1:
        return 0.0
    return (sampled - 1) / p + 1.0


def estimate_counts(sampled: np.ndarray, p: float) -> np.ndarray:
    """Eq. 1 applied element-wise; returns float64."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"sampling probability must be in (0, 1], got {p}")
    s = np.asarray(sampled, dtype=np.float64)
    return np.where(s >= 1.0, (s - 1.0) / p + 1.0, 0.0)
