"""Leaper's Algorithm 2: the precursors of each key range.

A precursor of range ``r`` is a range whose accesses tend to come just before ``r``'s
(the collector's transfer matrix ``T[r][p]`` counts how often ``p`` was among the gamma
accesses preceding one to ``r`` in a client thread). Of ``r``'s candidates, taken in order
of decreasing transfer count (ties: smaller range id first, for determinism), the first
gamma whose read-arrival-rate vector has cosine similarity > epsilon with ``r``'s are kept.
(The paper's pseudo-code writes the inner test as a ``while count < gamma`` loop; it means
"stop once gamma are kept", which is what is done here.)

Rate vectors are the estimated reads per slot over all slots of the counts given, the
same slots the transfer matrix was gathered over (the trace's transfers carry no time).
A range with no reads has a zero vector, so its similarity is taken as 0 and it is never
a precursor.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .counts import Counts

DEFAULT_GAMMA = 3
DEFAULT_EPSILON = 0.5
_CHUNK = 200_000


class RateVectors:
    """Read-arrival-rate vectors of all ranges (sparse rows: range, columns: slot)."""

    def __init__(self, counts: Counts):
        read = counts.reads > 0
        self.ids = np.unique(counts.range[read])
        rows = np.searchsorted(self.ids, counts.range[read])
        lo, _ = counts.slot_bounds()
        cols = counts.slot[read] - lo
        n_slots = int(cols.max()) + 1 if cols.shape[0] else 1
        vals = counts.reads[read]
        self.mat = sparse.csr_matrix((vals, (rows, cols)), shape=(self.ids.shape[0], n_slots))
        self.norms = np.sqrt(np.bincount(rows, weights=vals * vals, minlength=self.ids.shape[0]))

    def _index(self, r: np.ndarray) -> np.ndarray:
        if self.ids.shape[0] == 0:
            return np.full(r.shape[0], -1)
        pos = np.minimum(np.searchsorted(self.ids, r), self.ids.shape[0] - 1)
        return np.where(self.ids[pos] == r, pos, -1)

    def cosine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cosine similarity of the vectors of ranges ``a[i]`` and ``b[i]`` (0 for a zero vector)."""
        a = np.asarray(a, dtype=np.uint64)
        b = np.asarray(b, dtype=np.uint64)
        ia, ib = self._index(a), self._index(b)
        out = np.zeros(a.shape[0])
        ok = np.flatnonzero((ia >= 0) & (ib >= 0))
        for start in range(0, ok.shape[0], _CHUNK):
            sel = ok[start : start + _CHUNK]
            dots = np.asarray(self.mat[ia[sel]].multiply(self.mat[ib[sel]]).sum(axis=1)).ravel()
            out[sel] = dots / (self.norms[ia[sel]] * self.norms[ib[sel]])
        return out


def cosine_similarities(counts: Counts, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of the read-rate vectors of ranges ``a[i]`` and ``b[i]``."""
    return RateVectors(counts).cosine(a, b)


def find_precursors(
    counts: Counts, gamma: int = DEFAULT_GAMMA, epsilon: float = DEFAULT_EPSILON
) -> dict[int, list[int]]:
    """Algorithm 2 on ``counts`` (already at the chosen width): ``{range: [p1, .., p_gamma]}``.

    Ranges with no qualifying candidate are left out of the result. Similarities are
    computed lazily, a window of candidates per range at a time, and only for ranges that
    still lack gamma precursors: the answer is the same as testing every candidate in
    order, at a fraction of the cost when ranges have many candidates.
    """
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    to, fr, cnt = counts.tr_to, counts.tr_from, counts.tr_count
    keep = (to != fr) & (cnt > 0)
    to, fr, cnt = to[keep], fr[keep], cnt[keep]
    if gamma == 0 or to.shape[0] == 0:
        return {}
    order = np.lexsort((fr, -cnt, to))
    to, fr = to[order], fr[order]
    n = to.shape[0]
    is_start = np.ones(n, dtype=bool)
    is_start[1:] = to[1:] != to[:-1]
    starts = np.flatnonzero(is_start)
    sizes = np.diff(np.append(starts, n))
    group = np.repeat(np.arange(starts.shape[0]), sizes)
    rank = np.arange(n) - starts[group]

    vectors = RateVectors(counts)
    ok = np.zeros(n, dtype=bool)
    accepted = np.zeros(starts.shape[0], dtype=np.int64)
    lo, hi = 0, 4 * gamma
    active = np.ones(starts.shape[0], dtype=bool)
    while active.any():
        sel = np.flatnonzero(active[group] & (rank >= lo) & (rank < hi))
        if sel.shape[0] == 0:
            break
        ok[sel] = vectors.cosine(to[sel], fr[sel]) > epsilon
        accepted += np.bincount(group[sel], weights=ok[sel], minlength=starts.shape[0]).astype(np.int64)
        active &= (accepted < gamma) & (sizes > hi)
        lo, hi = hi, 2 * hi

    to, fr, grp = to[ok], fr[ok], group[ok]
    if to.shape[0] == 0:
        return {}
    first = np.ones(to.shape[0], dtype=bool)
    first[1:] = grp[1:] != grp[:-1]
    s2 = np.flatnonzero(first)
    rank_ok = np.arange(to.shape[0]) - np.repeat(s2, np.diff(np.append(s2, to.shape[0])))
    kept = rank_ok < gamma
    out: dict[int, list[int]] = {}
    for t, f in zip(to[kept].tolist(), fr[kept].tolist()):
        out.setdefault(int(t), []).append(int(f))
    return out
