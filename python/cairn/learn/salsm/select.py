"""Algorithm 3's selection of cold keys, and its equal-budget variant.

* :func:`select_alpha`: a record is cold when its predicted time to the next tau-event
  exceeds ``alpha`` (each model's reading of that test: :mod:`.models`). The migrated
  share then follows from the workload, as in the paper (an elastic hot tier).
* :func:`select_budget`: the ``budget`` share of records with the highest coldness
  scores, so that methods are compared at the same migrated share (§4.2.2 gives every
  baseline the same number of archived records as SA-LSM).
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


def select_budget(scores: np.ndarray, budget: float) -> Selection:
    """The ``round(budget * n)`` coldest records; equal scores are taken in index order."""
    if not (0.0 <= budget <= 1.0):
        raise ValueError(f"budget must be in [0, 1], got {budget}")
    scores = np.asarray(scores, dtype=float)
    k = int(round(budget * scores.shape[0]))
    cold = np.zeros(scores.shape[0], dtype=bool)
    cold[np.argsort(-scores, kind="stable")[:k]] = True
    return Selection(cold)
