"""Survival labels: tau-events (Def. 2.1), censoring (eq. 1) and pivot sampling (Alg. 1).

Which accesses make events is a setting, ``events``: ``"reads"`` (the default) or
``"all"``. A placement pays for a record on the cold tier only when it is read (a put
never reads the cold tier), so by default only reads count: writes (the insert, updates)
never make an event, and a read's interval is to the previous *read* (the record's first
read has none, as the first access has none under ``"all"``). ``"all"`` counts every
access, reads and writes alike.

For a pivot ``P``, the tau-event is the first counted access ``T_v > P`` whose interval
to the previous counted access, ``T_v - T_{v-1}``, is below ``tau``; ``T_{v-1}`` may lie
before the pivot. An isolated access after a long silence (interval >= tau) is skipped: it
does not make the record hot. The event time is ``T_v - P``. Labels follow eq. 1:
``(y, delta)`` is ``(T_v - P, 1)`` when the event happens by the end of the window
``T_e``, else ``(T_e - P, 0)`` (censored).

Pivot sampling (Alg. 1) stays over all accesses whatever ``events`` is: the features (the
intervals, the update times, the per-day counts) are about all accesses, and a record that
is only written still needs its (censored) samples, or the model would never see one.
How the window's edges are handled: a record with accesses ``T_1 < ... < T_k`` in the
window has ``k`` candidate intervals, ``(T_1, T_2], ..., (T_{k-1}, T_k]`` and the open
last one ``(T_k, T_e]`` (the record's silence up to the export; pivots there give the
censored samples of records that went cold). The leading stretch ``[T_s, T_1]`` is not a
candidate: before its first access the record either did not exist yet (``T_1`` is its
insert) or nothing is known about its previous access, so no feature could be computed.
Zero-length intervals (two accesses in the same millisecond) cannot hold a pivot and are
dropped. Step 1 picks ``min(n, k)`` interval indices uniformly without replacement, step 2
a uniform time inside each; because step 1 ignores interval lengths, long intervals are
not favoured (no inspection-paradox bias on a renewal process).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .trace import RecordTrace

EVENT_KINDS = ("reads", "all")


def event_view(trace: RecordTrace, events: str = "reads") -> RecordTrace:
    """The trace whose access times are those that can make a tau-event (``events``)."""
    if events not in EVENT_KINDS:
        raise ValueError(f"events must be one of {', '.join(EVENT_KINDS)}, got {events!r}")
    if events == "all":
        return trace
    keep = ~trace.is_write
    off = np.concatenate([[0], np.cumsum(np.bincount(trace.time_owner()[keep], minlength=trace.n_records))])
    return RecordTrace(
        cf_id=trace.cf_id,
        sample_rate=trace.sample_rate,
        day_ms=trace.day_ms,
        start_ms=trace.start_ms,
        end_ms=trace.end_ms,
        max_times=trace.max_times,
        keys=trace.keys,
        insert_ms=trace.insert_ms,
        flags=trace.flags,
        last_update_ms=trace.last_update_ms,
        time_off=off,
        times=trace.times[keep],
    )


def tau_event(times: Sequence[float], pivot: float, tau: float, t_end: float) -> tuple[float, bool]:
    """Reference (one record, plain Python) of Def. 2.1 and eq. 1: ``(y, delta)``.

    ``times`` are the record's access times, ascending, all of them (also those before the
    pivot, which give the first later access its interval).
    """
    for v in range(1, len(times)):
        t = times[v]
        if t <= pivot:
            continue
        if t > t_end:
            break
        if t - times[v - 1] < tau:
            return t - pivot, True
    return t_end - pivot, False


def last_at_or_before(ms: np.ndarray, owner: np.ndarray, rec: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For flat times ``ms`` grouped by ``owner`` (records one after another, ascending
    times inside each), the flat index of record ``rec[i]``'s last time at or before
    ``at[i]`` (ms, may be fractional), or -1 when it has none.

    One ``searchsorted`` over a composite key ``owner * W + (ms - base)``, which is sorted.
    """
    rec = np.asarray(rec, dtype=np.int64)
    if ms.size == 0:
        return np.full(rec.shape[0], -1, dtype=np.int64)
    at = np.floor(np.asarray(at, dtype=np.float64))  # T <= P  <=>  T <= floor(P) for integer T
    base = int(ms.min())
    span = int(ms.max()) - base
    w = span + 2
    key_t = owner * w + (ms - base)
    rel = np.clip(at - base, -1, span + 1).astype(np.int64)
    p = np.searchsorted(key_t, rec * w + rel, side="right") - 1
    ok = (p >= 0) & (owner[np.maximum(p, 0)] == rec)
    return np.where(ok, p, -1)


def last_access_index(trace: RecordTrace, rec: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Flat index of record ``rec[i]``'s last access at or before ``at[i]``;
    ``trace.time_off[rec[i]] - 1`` (one before its first) when it has none."""
    rec = np.asarray(rec, dtype=np.int64)
    p = last_at_or_before(trace.access_ms, trace.time_owner(), rec, at)
    return np.where(p >= 0, p, trace.time_off[rec] - 1)


def short_accesses(trace: RecordTrace, tau_ms: float) -> np.ndarray:
    """Flat mask: the access follows the record's previous access by less than ``tau_ms``."""
    ms = trace.access_ms
    out = np.zeros(ms.shape[0], dtype=bool)
    if ms.size > 1:
        out[1:] = (ms[1:] - ms[:-1]) < tau_ms
    out[trace.time_off[:-1][trace.n_times() > 0]] = False  # a record's first access has no previous one
    return out


def tau_labels(
    trace: RecordTrace,
    rec: np.ndarray,
    pivots: np.ndarray,
    tau_ms: float,
    t_end: float | None = None,
    events: str = "reads",
) -> tuple[np.ndarray, np.ndarray]:
    """``(y_ms, delta)`` of eq. 1 for each (record, pivot); the window ends at ``t_end``
    (default: the trace's ``end_ms``); ``events`` says which accesses count."""
    trace = event_view(trace, events)
    rec = np.asarray(rec, dtype=np.int64)
    pivots = np.asarray(pivots, dtype=np.float64)
    t_end = float(trace.end_ms if t_end is None else t_end)
    ms = trace.access_ms
    short_pos = np.flatnonzero(short_accesses(trace, tau_ms) & (ms <= t_end))
    first_after = last_access_index(trace, rec, pivots) + 1
    k = np.searchsorted(short_pos, first_after, side="left")
    cand = short_pos[np.minimum(k, max(short_pos.size - 1, 0))] if short_pos.size else np.zeros_like(k)
    delta = (k < short_pos.size) & (cand < trace.time_off[rec + 1])
    y = np.where(delta, ms[cand] - pivots if ms.size else 0.0, t_end - pivots)
    return y.astype(np.float64), delta


def reads_between(trace: RecordTrace, rec: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Number of reads of each record ``rec[i]`` in ``(lo, hi]`` (ms)."""
    rv = event_view(trace, "reads")
    rec = np.asarray(rec, dtype=np.int64)
    n = rec.shape[0]
    return last_access_index(rv, rec, np.full(n, float(hi))) - last_access_index(rv, rec, np.full(n, float(lo)))


def sample_pivots(
    trace: RecordTrace,
    n_pivots: int,
    rng: np.random.Generator,
    t_end: float | None = None,
    records: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 for every record (or only ``records``): returns ``(rec, pivot_ms)``,
    grouped by record. Accesses after ``t_end`` are ignored."""
    if n_pivots < 1:
        raise ValueError(f"n_pivots must be >= 1, got {n_pivots}")
    t_end = float(trace.end_ms if t_end is None else t_end)
    ms = trace.access_ms.astype(np.float64)
    owner = trace.time_owner()
    hi = np.full(ms.shape[0], t_end)
    same_next = np.zeros(ms.shape[0], dtype=bool)
    if ms.size > 1:
        same_next[:-1] = owner[1:] == owner[:-1]
        hi[:-1] = np.where(same_next[:-1], np.minimum(ms[1:], t_end), t_end)
    ok = (ms <= t_end) & (hi > ms)
    if records is not None:
        chosen = np.zeros(trace.n_records, dtype=bool)
        chosen[np.asarray(records, dtype=np.int64)] = True
        ok &= chosen[owner]
    cand = np.flatnonzero(ok)
    if cand.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    # Step 1: a uniformly random order of each record's intervals; keep the first n of it.
    order = cand[np.lexsort((rng.random(cand.size), owner[cand]))]
    o = owner[order]
    starts = np.flatnonzero(np.r_[True, o[1:] != o[:-1]])
    rank = np.arange(o.size) - np.repeat(starts, np.diff(np.r_[starts, o.size]))
    pick = order[rank < n_pivots]
    pick.sort()  # group by record, intervals in time order
    # Step 2: a uniform time inside the chosen interval.
    lo = ms[pick]
    pivots = lo + rng.random(pick.size) * (hi[pick] - lo)
    return owner[pick], pivots
