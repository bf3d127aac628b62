"""Leaper's Algorithm 1: key-range selection.

Counting at a fine width A0 keeps the most information but costs the collector and the
model one counter per small range. Algorithm 1 widens ranges while little access
information is lost, measured on the binary access matrix M (one row per slot, one column
per key range, 1 where the range was read in the slot).

How the paper's formula is read here
------------------------------------
Definition 1 (the text) calls an expansion from width L to L' efficient iff
``Z(L') / Z(L) >= alpha``, with Z the *proportion* of zeros in M. The pseudo-code
doubles A while ``2 * Z(2A) > alpha * Z(A)`` and then binary-searches the largest A* in
[A, 2A] with ``A* * Z(A*) > alpha * A * Z(A)``, and its line 2 defines Z as the *number*
of zeros. The two agree exactly when Z in the pseudo-code is that count: M at width L
has ``N * T / L`` cells, so ``L * Zcount(L) = N * T * Zprop(L)``, and both conditions
become ``Zprop(L') > alpha * Zprop(L)``; the factors 2 and A* are only the change of
matrix size. Reading Z as a proportion *and* keeping the factors would instead compare
against alpha / 2 (and against an ever looser bound in the binary search), which
contradicts Definition 1. So this module follows Definition 1 on proportions, with the
pseudo-code's strict ``>`` and its two phases:

1. ``m = 1``; while ``Zprop(2m A0) > alpha * Zprop(m A0)``: ``m = 2m``.
2. Binary search the largest integer ``m*`` in ``[m, 2m)`` with
   ``Zprop(m* A0) > alpha * Zprop(m A0)`` (``m`` itself always qualifies when
   ``Zprop > 0``; ``2m`` does not, or phase 1 would have gone on). Like the paper this
   assumes the condition is monotone on that interval; widths that are not powers of two
   regroup the fine ranges on a different grid, so it is a good approximation, not a law.

Each step compares with the width just before it (the pseudo-code's A moves), not with A0.

The matrix: rows are the slots from the first to the last slot of the trace (empty slots
included, they are part of the observed time); columns are the ranges of width ``m A0``
covering the observed key span (smallest to largest fine range holding any count, read
or write), which plays the paper's "total key range T". Phase 1 also stops when one range
covers the whole span (further doubling cannot change M) or at ``max_multiplier``; a
trace without reads keeps the fine width.

The zero proportion is computed from the sparse cells only: the number of ones at width
``m A0`` is the number of distinct ``(slot, fine // m)`` pairs, which, because the cells
are sorted by (slot, range) and ``fine // m`` is monotone in ``fine``, is one linear pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .counts import Counts

DEFAULT_ALPHA = 0.6


@dataclass
class AccessMatrix:
    """The 1-cells of M at the fine width, sorted by (slot, range), and M's extent."""

    slot: np.ndarray
    range: np.ndarray
    n_slots: int
    range_lo: int
    range_hi: int

    @classmethod
    def from_counts(cls, counts: Counts, span: tuple[int, int] | None = None) -> AccessMatrix:
        read = counts.reads > 0
        lo_slot, hi_slot = counts.slot_bounds()
        if span is None:
            span = (int(counts.range.min()), int(counts.range.max())) if counts.n_cells else (0, 0)
        return cls(
            slot=counts.slot[read],
            range=counts.range[read].astype(np.uint64),
            n_slots=max(hi_slot - lo_slot + 1, 0),
            range_lo=int(span[0]),
            range_hi=int(span[1]),
        )

    def n_columns(self, m: int) -> int:
        return self.range_hi // m - self.range_lo // m + 1

    def ones(self, m: int) -> int:
        """Number of 1-cells of M at ``m`` times the fine width."""
        n = self.slot.shape[0]
        if n == 0:
            return 0
        c = self.range // np.uint64(m)
        new = (self.slot[1:] != self.slot[:-1]) | (c[1:] != c[:-1])
        return 1 + int(np.count_nonzero(new))

    def zero_proportion(self, m: int) -> float:
        """Z(m A0): the share of M's cells that are 0 at ``m`` times the fine width."""
        cells = self.n_slots * self.n_columns(m)
        if cells == 0:
            return 0.0
        return 1.0 - self.ones(m) / cells


@dataclass
class Selection:
    """Result of Algorithm 1: the multiplier m (A* = m * A0) and the Z values it looked at."""

    multiplier: int
    zero_proportion: dict[int, float] = field(default_factory=dict)


def key_range_selection(
    counts: Counts,
    alpha: float = DEFAULT_ALPHA,
    span: tuple[int, int] | None = None,
    max_multiplier: int | None = None,
) -> Selection:
    """Algorithm 1 on fine counts; see the module docstring for the reading of the paper."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    mat = AccessMatrix.from_counts(counts, span)
    seen: dict[int, float] = {}

    def z(m: int) -> float:
        if m not in seen:
            seen[m] = mat.zero_proportion(m)
        return seen[m]

    def capped(m: int) -> bool:
        return max_multiplier is not None and m > max_multiplier

    m = 1
    if mat.slot.shape[0] == 0:  # nothing was read: no information to lose or keep
        return Selection(m, seen)
    while mat.n_columns(m) > 1 and not capped(2 * m) and z(2 * m) > alpha * z(m):
        m *= 2
    if mat.n_columns(m) == 1 or z(m) == 0.0:
        return Selection(m, seen)
    target = alpha * z(m)
    lo, hi = m, 2 * m
    if max_multiplier is not None:
        hi = min(hi, max_multiplier + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if z(mid) > target:
            lo = mid
        else:
            hi = mid
    return Selection(lo, seen)


def select_multiplier(
    counts: Counts,
    alpha: float = DEFAULT_ALPHA,
    span: tuple[int, int] | None = None,
    max_multiplier: int | None = None,
) -> int:
    """Algorithm 1: the multiplier m such that A* = m * A0 (see :func:`key_range_selection`)."""
    return key_range_selection(counts, alpha, span, max_multiplier).multiplier
