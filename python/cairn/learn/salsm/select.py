"""Algorithm 3's selection of cold keys, and its equal-budget variant.

* :func:`select_alpha`: a record is cold when its predicted time to the next tau-event
  exceeds ``alpha`` (each model's reading of that test: :mod:`.models`). The migrated
  share then follows from the workload, as in the paper (an elastic hot tier).
* :func:`select_budget` / :func:`select_count`: the records with the highest coldness
  scores, so that methods are compared at the same migrated share (§4.2.2 gives every
  baseline the same number of archived records as SA-LSM: evaluate takes that count
  from SA-LSM's :func:`select_alpha`).

Scores equal after a model's own tie-break (RSF's area under its survival curve, the
heuristics' recency) are ordered by a seeded random permutation: key order would hand a
tie to whatever the key encoding sorts first, a bias that has nothing to do with heat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .models import ColdModel


@dataclass
class Selection:
    cold: np.ndarray  # mask over the records scored

    @property
    def n_cold(self) -> int:
        return int(self.cold.sum())

    @property
    def migrated_share(self) -> float:
        return float(self.cold.mean()) if self.cold.size else 0.0


def select_alpha(model: ColdModel, x: np.ndarray, alpha: float) -> Selection:
    """Algorithm 3: cold = predicted time to event > ``alpha`` (days)."""
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0 days, got {alpha}")
    return Selection(np.asarray(model.cold_at(x, alpha), dtype=bool))


def coldest_first(scores: np.ndarray, seed: int = 0) -> np.ndarray:
    """Record indices by decreasing score; equal scores in a seeded random order."""
    scores = np.asarray(scores, dtype=float)
    perm = np.random.default_rng(seed).permutation(scores.shape[0])
    return np.lexsort((perm, -scores))


def select_count(scores: np.ndarray, k: int, seed: int = 0) -> Selection:
    """The ``k`` coldest records (highest scores)."""
    scores = np.asarray(scores, dtype=float)
    if not (0 <= k <= scores.shape[0]):
        raise ValueError(f"cannot migrate {k} of {scores.shape[0]} records")
    cold = np.zeros(scores.shape[0], dtype=bool)
    cold[coldest_first(scores, seed)[:k]] = True
    return Selection(cold)


def select_budget(scores: np.ndarray, budget: float, seed: int = 0) -> Selection:
    """The ``round(budget * n)`` coldest records."""
    if not (0.0 <= budget <= 1.0):
        raise ValueError(f"budget must be in [0, 1], got {budget}")
    scores = np.asarray(scores, dtype=float)
    return select_count(scores, int(round(budget * scores.shape[0])), seed)
