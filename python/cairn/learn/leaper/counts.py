"""Estimated access counts per (key range, slot), at the trace's width or a coarser one.

Everything downstream of the trace works on :class:`Counts`: eq. 1 is applied once, per
fine cell, where the sampling happened (the first access of each fine cell is certain, so
summing per-cell estimates is unbiased, while eq. 1 on a coarse sum of sampled counts
would not be). Coarse counts are then plain sums of the fine estimates; a coarse cell
holds an estimated read count >= 1 exactly when one of its fine cells was read.

Only non-zero cells are stored (sparse), sorted by (slot, range) like the trace, so a
trace of millions of rows costs a few arrays of that length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .estimate import estimate_counts
from .trace import Trace, TraceError


@dataclass
class Counts:
    """Sparse estimated counts, sorted by (slot, range), and the transfer matrix.

    ``range`` ids are in units of ``range_width`` keys (``key_u64 // range_width``);
    ``transfers`` are ``(to, from, count)`` with ``to != from`` at that same width.
    """

    range_width: int
    fine_range_width: int
    key_offset: int
    slot_ms: int
    start_unix_ms: int
    range: np.ndarray  # uint64
    slot: np.ndarray  # int64
    reads: np.ndarray  # float64, eq. 1 estimates
    writes: np.ndarray  # float64
    tr_to: np.ndarray  # uint64
    tr_from: np.ndarray  # uint64
    tr_count: np.ndarray  # int64
    trace_rows: int = 0
    cf_id: int = 0

    @property
    def multiplier(self) -> int:
        """``range_width / fine_range_width`` (1 at the trace's own width)."""
        return self.range_width // self.fine_range_width

    @property
    def n_cells(self) -> int:
        return int(self.range.shape[0])

    def slot_bounds(self) -> tuple[int, int]:
        """First and last slot holding any count (inclusive); (0, -1) when empty."""
        if self.n_cells == 0:
            return 0, -1
        return int(self.slot.min()), int(self.slot.max())


def group_sum(
    slot: np.ndarray, range_: np.ndarray, *values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Merge duplicate (slot, range) pairs, summing ``values``; result sorted by (slot, range)."""
    if slot.shape[0] == 0:
        return slot, range_, list(values)
    order = np.lexsort((range_, slot))
    slot, range_ = slot[order], range_[order]
    start = np.ones(slot.shape[0], dtype=bool)
    start[1:] = (slot[1:] != slot[:-1]) | (range_[1:] != range_[:-1])
    idx = np.flatnonzero(start)
    return slot[idx], range_[idx], [np.add.reduceat(v[order], idx) for v in values]


def _sum_transfers(to: np.ndarray, from_: np.ndarray, count: np.ndarray):
    """Drop self-transfers and merge duplicate (to, from) pairs; sorted by (to, from)."""
    keep = to != from_
    to, from_, (count,) = group_sum(to[keep], from_[keep], count[keep])
    return to, from_, count


def from_traces(traces: Sequence[Trace]) -> Counts:
    """Estimated counts of one or more traces of the same column family, on one timeline.

    Traces must agree on ``cf_id``, ``key_offset``, ``range_width`` and ``slot_ms`` (one
    bundle serves one key layout). They may differ in ``sample_p`` (eq. 1 is applied per
    trace). Their starts must lie on a common slot grid; the earliest start becomes slot 0
    and the others' slots are shifted onto it. Counts of overlapping cells add up, and a
    gap between traces reads as slots without accesses (so feed consecutive traces).
    """
    if not traces:
        raise ValueError("no trace given")
    first = traces[0]
    for t in traces[1:]:
        for attr in ("cf_id", "key_offset", "range_width", "slot_ms"):
            if getattr(t, attr) != getattr(first, attr):
                raise TraceError(
                    f"traces disagree on {attr} ({getattr(first, attr)} vs {getattr(t, attr)}); "
                    "train one bundle per column family and key layout"
                )
    start = min(t.start_unix_ms for t in traces)
    slots, ranges, reads, writes = [], [], [], []
    for t in traces:
        shift, rem = divmod(t.start_unix_ms - start, t.slot_ms)
        if rem:
            raise TraceError(
                f"trace starting at {t.start_unix_ms} ms is not on the slot grid of the one "
                f"starting at {start} ms (slot {t.slot_ms} ms)"
            )
        rows = t.rows[(t.rows["reads"] > 0) | (t.rows["writes"] > 0)]
        slots.append(rows["slot"].astype(np.int64) + shift)
        ranges.append(rows["range"].astype(np.uint64))
        reads.append(estimate_counts(rows["reads"], t.sample_p))
        writes.append(estimate_counts(rows["writes"], t.sample_p))
    slot, range_, (r, w) = group_sum(
        np.concatenate(slots), np.concatenate(ranges), np.concatenate(reads), np.concatenate(writes)
    )
    to = np.concatenate([t.transfers["to"].astype(np.uint64) for t in traces])
    fr = np.concatenate([t.transfers["from"].astype(np.uint64) for t in traces])
    cnt = np.concatenate([t.transfers["count"].astype(np.int64) for t in traces])
    to, fr, cnt = _sum_transfers(to, fr, cnt)
    return Counts(
        range_width=first.range_width,
        fine_range_width=first.range_width,
        key_offset=first.key_offset,
        slot_ms=first.slot_ms,
        start_unix_ms=start,
        range=range_,
        slot=slot,
        reads=r,
        writes=w,
        tr_to=to,
        tr_from=fr,
        tr_count=cnt,
        trace_rows=sum(t.n_rows for t in traces),
        cf_id=first.cf_id,
    )


def coarsen(counts: Counts, m: int) -> Counts:
    """Aggregate ``counts`` to ``m`` times its width: range ``f`` goes to ``f // m``.

    Estimated reads and writes add up; transfers are mapped the same way and summed, and
    those that become self-transfers (both ends in one coarse range) are dropped, as the
    collector never records a transfer from a range to itself.
    """
    if m < 1:
        raise ValueError(f"multiplier must be >= 1, got {m}")
    mm = np.uint64(m)
    slot, range_, (r, w) = group_sum(counts.slot, counts.range // mm, counts.reads, counts.writes)
    to, fr, cnt = _sum_transfers(counts.tr_to // mm, counts.tr_from // mm, counts.tr_count)
    return Counts(
        range_width=counts.range_width * m,
        fine_range_width=counts.fine_range_width,
        key_offset=counts.key_offset,
        slot_ms=counts.slot_ms,
        start_unix_ms=counts.start_unix_ms,
        range=range_,
        slot=slot,
        reads=r,
        writes=w,
        tr_to=to,
        tr_from=fr,
        tr_count=cnt,
        trace_rows=counts.trace_rows,
        cf_id=counts.cf_id,
    )
