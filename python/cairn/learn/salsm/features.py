"""The feature vector of a (record, pivot) pair (§2.2.3), in days, and the training samples.

Columns (67):

* ``last_interval``: pivot minus the last access at or before it (any kind);
* ``interval_1 .. interval_7``: the 7 access intervals before that, newest first
  (``interval_1 = T_p - T_{p-1}``). Missing ones (the record has fewer accesses, was
  inserted before collection started, or the cap dropped older times) are
  :data:`SENTINEL_DAYS`, a value longer than any window: "no access for a very long
  time", which orders the right way for trees and stays finite for Cox;
* ``insert_pivot``: pivot minus the insert (or first sighting);
* ``update_pivot``: pivot minus the last update at or before the pivot. A record never
  updated counts its insert as its last write, so this equals ``insert_pivot``;
* ``insert_update``: that last update minus the insert (0 when never updated);
* ``reads_d1 .. reads_d20``, ``writes_d1 .. writes_d20``: per-day counts of the 20 whole
  days before the pivot's day (``d1`` is the day before). The pivot's own day is left out
  because its count would include accesses after the pivot (a leak into the label).
  Days before the window, or dropped by the 64-day cap, are zeros.
* ``column_0 .. column_13``: writes of each column (the trace's tagged access times) at
  or before the pivot, and ``last_column``: 1 + the column of the newest such write (0:
  none named one; features stay non-negative). The paper's semantic features count updates per column; a lifecycle's
  stage shows in which column was written last. Counts cover the access times the cap
  kept.
* ``last_read_interval``: pivot minus the last read at or before it, or minus the insert
  when none was read (what LRU looks at: a write never reads the cold tier, so recency of
  reads is the cache policy's strongest form for cold reads). When the cap dropped the
  record's reads from its kept times (status writes on a dormant record fill them), the
  per-day read counts date the last read to the end of its day.

"Update" is a write after the insert: any write in the access times except the insert
itself (the first time, when the record's insert was seen and not truncated away). When
the cap dropped the writes before the pivot, the trace's ``last_update_ms`` is used if it
is not after the pivot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .labels import last_access_index, last_at_or_before, sample_pivots, tau_labels
from .trace import COLUMNS, FLAG_INSERT_SEEN, FLAG_TRUNCATED, RecordTrace

N_EARLIER = 7
N_DAYS = 20
SENTINEL_DAYS = 10_000.0

FEATURE_NAMES = (
    ["last_interval"]
    + [f"interval_{i}" for i in range(1, N_EARLIER + 1)]
    + ["insert_pivot", "update_pivot", "insert_update"]
    + [f"reads_d{i}" for i in range(1, N_DAYS + 1)]
    + [f"writes_d{i}" for i in range(1, N_DAYS + 1)]
    + [f"column_{c}" for c in range(COLUMNS)]
    + ["last_column"]
    + ["last_read_interval"]
)
LAST = 0
EARLIER = slice(1, 1 + N_EARLIER)
INSERT_PIVOT = 1 + N_EARLIER
UPDATE_PIVOT = INSERT_PIVOT + 1
INSERT_UPDATE = INSERT_PIVOT + 2
READS = slice(INSERT_PIVOT + 3, INSERT_PIVOT + 3 + N_DAYS)
WRITES = slice(READS.stop, READS.stop + N_DAYS)
COUNTS = slice(READS.start, WRITES.stop)
COLUMN_COUNTS = slice(WRITES.stop, WRITES.stop + COLUMNS)
LAST_COLUMN = COLUMN_COUNTS.stop
LAST_READ = LAST_COLUMN + 1
N_FEATURES = LAST_READ + 1
assert len(FEATURE_NAMES) == N_FEATURES == 67


def build_features(trace: RecordTrace, rec: np.ndarray, pivots: np.ndarray) -> np.ndarray:
    """Feature rows (float64, days) for records ``rec`` at pivot times ``pivots`` (ms).

    Only data at or before each pivot is used (day counts: whole days before it).
    """
    rec = np.asarray(rec, dtype=np.int64)
    pivots = np.asarray(pivots, dtype=np.float64)
    n = rec.shape[0]
    day = float(trace.day_ms)
    x = np.empty((n, N_FEATURES), dtype=np.float64)
    ms = trace.access_ms
    ins = trace.insert_ms[rec].astype(np.float64)

    # Access intervals, walking back from the last access at or before the pivot.
    p = last_access_index(trace, rec, pivots)
    first = trace.time_off[rec]
    has = p >= first
    prev = np.where(has, ms[np.maximum(p, 0)] if ms.size else 0, ins)
    x[:, LAST] = np.maximum(pivots - prev, 0.0) / day
    for k in range(1, N_EARLIER + 1):
        ok = (p - k) >= first
        a = ms[np.maximum(p - k + 1, 0)] if ms.size else np.zeros(n)
        b = ms[np.maximum(p - k, 0)] if ms.size else np.zeros(n)
        x[:, k] = np.where(ok, (a - b) / day, SENTINEL_DAYS)

    # Insert and update.
    owner = trace.time_owner()
    w = trace.is_write.copy()
    insert_first = (trace.flags & np.uint32(FLAG_INSERT_SEEN | FLAG_TRUNCATED)) == FLAG_INSERT_SEEN
    insert_first &= trace.n_times() > 0
    w[trace.time_off[:-1][insert_first]] = False
    wi = np.flatnonzero(w)
    q = last_at_or_before(ms[wi], owner[wi], rec, pivots)
    lu = trace.last_update_ms[rec].astype(np.float64)
    upd = np.where(q >= 0, ms[wi][np.maximum(q, 0)] if wi.size else 0, np.where((lu > 0) & (lu <= pivots), lu, ins))
    upd = np.maximum(upd, ins)
    x[:, INSERT_PIVOT] = np.maximum(pivots - ins, 0.0) / day
    x[:, UPDATE_PIVOT] = np.maximum(pivots - upd, 0.0) / day
    x[:, INSERT_UPDATE] = (upd - ins) / day
    _column_features(trace, rec, pivots, x)
    x[:, LAST_READ] = np.maximum(pivots - _last_read_ms(trace, rec, pivots, ins), 0.0) / day

    # Per-day counts: look up (record, day) in the sorted composite key of the day rows.
    x[:, COUNTS] = 0.0
    if trace.day.size:
        key = _day_key(trace.day_owner(), trace.day)
        pday = np.floor(pivots / day).astype(np.int64)
        for lag in range(1, N_DAYS + 1):
            d = pday - lag
            want = _day_key(rec, d)
            j = np.minimum(np.searchsorted(key, want), key.size - 1)
            hit = (key[j] == want) & (d >= 0)
            x[:, READS.start + lag - 1] = np.where(hit, trace.day_reads[j], 0)
            x[:, WRITES.start + lag - 1] = np.where(hit, trace.day_writes[j], 0)
    return x


def _day_key(owner: np.ndarray, day: np.ndarray) -> np.ndarray:
    """A (record, day) pair as one sortable integer: the day rows are sorted by it."""
    return np.asarray(owner, dtype=np.int64) * (np.int64(1) << np.int64(32)) + day


def _last_read_ms(trace: RecordTrace, rec: np.ndarray, pivots: np.ndarray, ins: np.ndarray) -> np.ndarray:
    """Each record's last read at or before its pivot; else its insert.

    The query store keeps a record's newest ``max_times`` times only, so a dormant record's
    status writes can push its reads out. Then the per-day counts, kept for longer, date
    the last read to the end of its day (whole days before the pivot's, as the count
    features use, so no read after the pivot leaks in).
    """
    ms = trace.access_ms
    ri = np.flatnonzero(~trace.is_write)
    q = last_at_or_before(ms[ri], trace.time_owner()[ri], rec, pivots)
    kept = ms[ri][np.maximum(q, 0)] if ri.size else ins
    truncated = (trace.flags[rec] & np.uint32(FLAG_TRUNCATED)) != 0
    by_day = np.where(truncated, _last_read_day_end(trace, rec, pivots), -1.0)
    fallback = np.where(by_day >= 0, np.maximum(by_day, ins), ins)
    return np.where(q >= 0, kept, fallback)


def _last_read_day_end(trace: RecordTrace, rec: np.ndarray, pivots: np.ndarray) -> np.ndarray:
    """The end (ms) of the newest day before each pivot's day with a read counted, or -1."""
    read_days = np.flatnonzero(trace.day_reads > 0)
    if read_days.size == 0:
        return np.full(rec.shape[0], -1.0)
    owner = trace.day_owner()[read_days]
    day = trace.day[read_days]
    pday = np.floor(pivots / float(trace.day_ms)).astype(np.int64)
    j = np.searchsorted(_day_key(owner, day), _day_key(rec, pday), side="left") - 1
    ok = (j >= 0) & (owner[np.maximum(j, 0)] == rec)
    end = (day[np.maximum(j, 0)] + 1).astype(np.float64) * float(trace.day_ms)
    return np.where(ok, end, -1.0)


def _column_features(trace: RecordTrace, rec: np.ndarray, pivots: np.ndarray, x: np.ndarray) -> None:
    """Per-column write counts at or before each pivot, and the newest write's column."""
    col, ms, owner = trace.column, trace.access_ms, trace.time_owner()
    for c in range(COLUMNS):
        idx = np.flatnonzero(col == c)
        if idx.size == 0:
            x[:, COLUMN_COUNTS.start + c] = 0.0
            continue
        q = last_at_or_before(ms[idx], owner[idx], rec, pivots)
        start = np.searchsorted(owner[idx], rec, side="left")
        x[:, COLUMN_COUNTS.start + c] = np.where(q >= 0, q - start + 1, 0)
    named = np.flatnonzero(col >= 0)
    q = last_at_or_before(ms[named], owner[named], rec, pivots)
    x[:, LAST_COLUMN] = np.where(q >= 0, col[named][np.maximum(q, 0)] + 1 if named.size else 0, 0)


@dataclass
class Samples:
    """Training or test samples: features, eq. 1 labels (days), and where they came from."""

    x: np.ndarray
    y: np.ndarray  # days
    delta: np.ndarray  # True: the tau-event was observed
    rec: np.ndarray
    pivots: np.ndarray  # ms

    def __len__(self) -> int:
        return int(self.y.shape[0])

    @property
    def censored_share(self) -> float:
        return float(1.0 - self.delta.mean()) if len(self) else float("nan")

    def take(self, mask: np.ndarray) -> Samples:
        return Samples(self.x[mask], self.y[mask], self.delta[mask], self.rec[mask], self.pivots[mask])


def make_samples(
    trace: RecordTrace,
    n_pivots: int,
    tau_ms: float,
    rng: np.random.Generator,
    t_end: float | None = None,
    records: np.ndarray | None = None,
    events: str = "reads",
) -> Samples:
    """Pivots by Algorithm 1, labels by eq. 1 (window ending at ``t_end``, tau-events of
    the ``events`` accesses), features."""
    rec, piv = sample_pivots(trace, n_pivots, rng, t_end=t_end, records=records)
    y, delta = tau_labels(trace, rec, piv, tau_ms, t_end=t_end, events=events)
    return Samples(build_features(trace, rec, piv), y / trace.day_ms, delta, rec, piv)
