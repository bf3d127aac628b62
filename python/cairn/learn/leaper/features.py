"""The 18 features of `docs/design/formats/leaper.md` and the multi-step labels.

For a (range, slot s) sample, taken at the end of slot s:

* ``r1..r6``: estimated reads of the range in slots s, s-1, .., s-5 (most recent first);
* ``w1..w6``: estimated writes in the same slots;
* ``hour, minute, second``: UTC time of day at the end of slot s
  (``start_unix_ms + (s + 1) * slot_ms``);
* ``p1..p3``: estimated reads in slot s of the range's precursors 1..3 (0 when absent).

Slots before the trace count as 0. Label ``i`` (i = 1..k) is "estimated reads in slot
s + i >= h", the target of model ``i``: h = 1 is the paper's "accessed"; a larger h
(:func:`hot_reads_for_share`) labels only the busiest ranges hot, for small key spaces
where nearly every range is read in every slot and "accessed" carries no signal.

Which pairs become samples: every range with any access (read or write) in slots
s-5..s, for every slot s whose k label slots lie inside the trace. A range with no access
in that window has all twelve arrival-rate features at 0 and carries no signal of its own;
the engine likewise only has counters for ranges it has seen, and the prefetcher only asks
about ranges of blocks it is moving. The share of positives that this leaves out (ranges
read in s+1 after six silent slots) is reported by :func:`uncovered_positive_share`.

Everything is vectorised: cells are addressed by ``range_index * n_slots + slot`` in one
sorted key array and looked up with ``np.searchsorted``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .counts import Counts

HISTORY_SLOTS = 6
N_PRECURSORS = 3
FEATURE_NAMES: list[str] = (
    [f"r{i}" for i in range(1, HISTORY_SLOTS + 1)]
    + [f"w{i}" for i in range(1, HISTORY_SLOTS + 1)]
    + ["hour", "minute", "second"]
    + [f"p{i}" for i in range(1, N_PRECURSORS + 1)]
)
R_COLS = slice(0, HISTORY_SLOTS)
W_COLS = slice(HISTORY_SLOTS, 2 * HISTORY_SLOTS)
assert len(FEATURE_NAMES) == 18


@dataclass
class Samples:
    """Feature rows ``x`` (n x 18), labels ``y`` (n x k, bool), and each row's range and slot."""

    x: np.ndarray
    y: np.ndarray
    range: np.ndarray
    slot: np.ndarray

    @property
    def k(self) -> int:
        return int(self.y.shape[1])

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def subset(self, mask: np.ndarray) -> Samples:
        return Samples(self.x[mask], self.y[mask], self.range[mask], self.slot[mask])


class _CellIndex:
    """Look up a count of any (range, slot); absent cells are 0."""

    def __init__(self, counts: Counts):
        self.lo, self.hi = counts.slot_bounds()
        self.n_slots = self.hi - self.lo + 1
        self.ids = np.unique(counts.range)
        self.ridx = np.searchsorted(self.ids, counts.range).astype(np.int64)
        keys = self.ridx * self.n_slots + (counts.slot - self.lo)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.reads = counts.reads[order]
        self.writes = counts.writes[order]

    def index_of(self, ranges: np.ndarray) -> np.ndarray:
        """Dense index of each range id, -1 for ranges without any count."""
        ranges = np.asarray(ranges, dtype=np.uint64)
        if self.ids.shape[0] == 0:
            return np.full(ranges.shape[0], -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.ids, ranges), self.ids.shape[0] - 1)
        return np.where(self.ids[pos] == ranges, pos, -1).astype(np.int64)

    def lookup(self, ridx: np.ndarray, slot: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``values`` of cell (ridx, slot) for each pair; 0 where the cell is absent."""
        if self.keys.shape[0] == 0:
            return np.zeros(ridx.shape[0])
        ok = (ridx >= 0) & (slot >= self.lo) & (slot <= self.hi)
        key = np.where(ok, ridx * self.n_slots + (slot - self.lo), -1)
        pos = np.minimum(np.searchsorted(self.keys, key), self.keys.shape[0] - 1)
        return np.where(ok & (self.keys[pos] == key), values[pos], 0.0)


def precursor_matrix(index: _CellIndex, precursors: Mapping[int, Sequence[int]]) -> np.ndarray:
    """(n_ranges x 3) dense indexes of each range's precursors; -1 where absent."""
    out = np.full((index.ids.shape[0], N_PRECURSORS), -1, dtype=np.int64)
    tos, js, froms = [], [], []
    for to, plist in precursors.items():
        for j, p in enumerate(list(plist)[:N_PRECURSORS]):
            tos.append(int(to))
            js.append(j)
            froms.append(int(p))
    if tos:
        ti = index.index_of(np.array(tos, dtype=np.uint64))
        fi = index.index_of(np.array(froms, dtype=np.uint64))
        ok = ti >= 0
        out[ti[ok], np.array(js)[ok]] = fi[ok]
    return out


def time_of_day(counts: Counts, slot: np.ndarray) -> np.ndarray:
    """(n x 3) hour, minute, second (UTC) at the end of each slot."""
    end_ms = counts.start_unix_ms + (np.asarray(slot, dtype=np.int64) + 1) * counts.slot_ms
    sod = (end_ms // 1000) % 86400
    return np.stack([sod // 3600, (sod // 60) % 60, sod % 60], axis=1).astype(np.float64)


def build_samples(
    counts: Counts,
    precursors: Mapping[int, Sequence[int]],
    k: int,
    history: int = HISTORY_SLOTS,
    min_reads: float = 1.0,
) -> Samples:
    """Feature rows and k labels (reads >= ``min_reads``) for every sample of ``counts``
    (see the module docstring)."""
    if not min_reads > 0.0:
        raise ValueError(f"min_reads must be > 0, got {min_reads}")
    if history != HISTORY_SLOTS:
        raise ValueError(f"the bundle format fixes the history at {HISTORY_SLOTS} slots")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    idx = _CellIndex(counts)
    last = idx.hi - k  # last slot whose k label slots are in the trace
    if counts.n_cells == 0 or last < idx.lo:
        return Samples(np.zeros((0, 18)), np.zeros((0, k), dtype=bool), np.zeros(0, np.uint64), np.zeros(0, np.int64))
    cand = []
    for d in range(history):
        s = counts.slot + d
        ok = s <= last
        cand.append(idx.ridx[ok] * idx.n_slots + (s[ok] - idx.lo))
    keys = np.unique(np.concatenate(cand))
    ridx = keys // idx.n_slots
    slot = keys % idx.n_slots + idx.lo
    order = np.lexsort((ridx, slot))  # chronological, then by range
    ridx, slot = ridx[order], slot[order]

    n = ridx.shape[0]
    x = np.empty((n, len(FEATURE_NAMES)))
    for j in range(history):
        x[:, j] = idx.lookup(ridx, slot - j, idx.reads)
        x[:, history + j] = idx.lookup(ridx, slot - j, idx.writes)
    x[:, 2 * history : 2 * history + 3] = time_of_day(counts, slot)
    pre = precursor_matrix(idx, precursors)[ridx]
    for j in range(N_PRECURSORS):
        x[:, 2 * history + 3 + j] = idx.lookup(pre[:, j], slot, idx.reads)
    y = np.empty((n, k), dtype=bool)
    for i in range(1, k + 1):
        y[:, i - 1] = idx.lookup(ridx, slot + i, idx.reads) >= min_reads
    return Samples(x, y, idx.ids[ridx], slot)


def first_read_slot(counts: Counts) -> int | None:
    """The first slot with any read, None without reads. A trace that starts with a bulk
    load has write-only slots first: samples there have no positive label to learn from,
    and a chronological split would train on them alone."""
    read = counts.reads > 0.0
    return int(counts.slot[read].min()) if read.any() else None


def from_first_read(counts: Counts, samples: Samples) -> Samples:
    """``samples`` whose label slots start at the first slot with reads."""
    first = first_read_slot(counts)
    return samples if first is None else samples.subset(samples.slot >= first - 1)


def hot_reads_for_share(counts: Counts, samples: Samples, share: float) -> float:
    """The smallest read count h (at least 1) such that "reads in slot s + 1 >= h" holds
    for at most ``share`` of ``samples``; the largest count seen when none does."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"hot share must be in (0, 1], got {share}")
    if len(samples) == 0:
        return 1.0
    idx = _CellIndex(counts)
    reads = idx.lookup(idx.index_of(samples.range), samples.slot + 1, idx.reads)
    cand = np.unique(reads[reads >= 1.0])
    if cand.size == 0:
        return 1.0
    ordered = np.sort(reads)
    share_at_least = 1.0 - np.searchsorted(ordered, cand, side="left") / ordered.shape[0]
    ok = np.nonzero(share_at_least <= share)[0]
    return float(cand[ok[0]] if ok.size else cand[-1])


def uncovered_positive_share(counts: Counts, samples: Samples, horizon: int = 1, min_reads: float = 1.0) -> float:
    """Share of (range, s + horizon) hot cells (reads >= ``min_reads``, the samples' label
    rule), s a sampled slot, with no sample at (range, s).

    These are reads of ranges silent for the whole history window: no method compared
    here can predict them, so the metrics only cover the rest.
    """
    if len(samples) == 0:
        return 0.0
    s_lo, s_hi = int(samples.slot.min()), int(samples.slot.max())
    read = counts.reads >= min_reads
    target = counts.slot[read] - horizon
    in_window = (target >= s_lo) & (target <= s_hi)
    total = int(np.count_nonzero(in_window))
    if total == 0:
        return 0.0
    covered = int(np.count_nonzero(samples.y[:, horizon - 1]))
    return max(total - covered, 0) / total
