"""tau-events (Def. 2.1), censoring (eq. 1) and two-step pivot sampling (Alg. 1)."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.salsm.features import make_samples
from cairn.learn.salsm.labels import event_view, reads_between, sample_pivots, tau_event, tau_labels
from cairn.learn.salsm.trace import Record, RecordTrace

H = dict(cf_id=0, sample_rate=1.0, day_ms=1000, start_ms=0)


def trace_of(seqs, end_ms=100_000, max_times=None) -> RecordTrace:
    recs = [
        Record(f"r{i}".encode(), s[0] if s else 0, [(t, j == 0) for j, t in enumerate(s)]) for i, s in enumerate(seqs)
    ]
    kw = {} if max_times is None else {"max_times": max_times}
    return RecordTrace.from_records(recs, end_ms=end_ms, **H, **kw)


def labels(seq, pivot, tau, end, events="all"):
    t = trace_of([seq], end_ms=end)
    y, d = tau_labels(t, np.array([0]), np.array([float(pivot)]), tau, t_end=end, events=events)
    return float(y[0]), bool(d[0])


def mixed(accesses, pivot, tau, end, events=None):
    """Labels of one record given as ``(ms, is_write)`` pairs; ``events=None``: the default."""
    t = RecordTrace.from_records([Record(b"k", accesses[0][0], accesses)], end_ms=end, **H)
    kw = {} if events is None else {"events": events}
    y, d = tau_labels(t, np.array([0]), np.array([float(pivot)]), tau, t_end=end, **kw)
    return float(y[0]), bool(d[0])


def test_updates_after_the_pivot_are_censored_under_reads():
    # insert, two reads, pivot at 1100, then only updates 100 ms apart: no read, no event
    acc = [(0, True), (900, False), (1000, False), (2000, True), (2100, True), (2200, True)]
    assert mixed(acc, 1100, 500, 5000) == (3900.0, False)  # reads are the default
    assert mixed(acc, 1100, 500, 5000, "reads") == (3900.0, False)
    assert mixed(acc, 1100, 500, 5000, "all") == (1000.0, True)


def test_a_reads_interval_is_to_the_previous_read():
    # read at 0, update at 900, read at 1000: 100 ms after the update but 1000 after the read
    acc = [(0, False), (900, True), (1000, False), (1300, False)]
    assert mixed(acc, 950, 500, 5000, "all") == (50.0, True)
    assert mixed(acc, 950, 500, 5000, "reads") == (350.0, True)  # 1300 follows the read at 1000
    # a record's first read has no previous read, whatever was written before it
    assert mixed([(0, True), (100, False), (5000, False)], 50, 500, 9000, "reads") == (8950.0, False)
    with pytest.raises(ValueError, match="events"):
        mixed(acc, 950, 500, 5000, "writes")


def test_reads_between_counts_reads_only():
    t = RecordTrace.from_records(
        [
            Record(b"a", 0, [(0, True), (100, False), (200, True), (300, False), (400, False)]),
            Record(b"b", 0, [(0, True), (250, True)]),
            Record(b"c", 50, [(50, False)], flags=0),
        ],
        end_ms=1000,
        **H,
    )
    assert reads_between(t, np.array([0, 1, 2, 0]), 100, 400).tolist() == [2, 0, 0, 2]
    assert reads_between(t, np.array([0, 2]), -1, 1000).tolist() == [3, 1]
    assert event_view(t, "all") is t and event_view(t, "reads").n_times().tolist() == [3, 0, 1]


def test_pivots_stay_over_all_accesses():
    # a record only written after its insert still gets its pivots (censored under reads)
    t = RecordTrace.from_records([Record(b"w", 0, [(0, True), (100, True), (200, True)])], end_ms=1000, **H)
    a = make_samples(t, 10, 500, np.random.default_rng(0), events="reads")
    b = make_samples(t, 10, 500, np.random.default_rng(0), events="all")
    assert len(a) == 3 and np.array_equal(a.pivots, b.pivots) and np.array_equal(a.x, b.x)
    assert not a.delta.any() and b.delta[:2].all()


def test_first_close_access_after_the_pivot_is_the_event():
    # accesses 0, 100 | pivot 150 | 400 (gap 300 < 500) -> event at 400
    assert labels([0, 100, 400, 450], 150, 500, 1000) == (250.0, True)


def test_a_rare_access_after_a_long_silence_is_skipped():
    # pivot 150; 3000 follows 100 by 2900 >= tau (skipped); 3200 follows 3000 by 200 < tau: event
    assert labels([0, 100, 3000, 3200], 150, 500, 10_000) == (3050.0, True)
    # the same without the close follow-up: no event, censored at the window's end
    assert labels([0, 100, 3000, 9000], 150, 500, 10_000) == (9850.0, False)


def test_the_interval_may_span_the_pivot():
    # the first access after the pivot counts its interval to the access before the pivot
    assert labels([0, 1000, 1300], 1100, 500, 5000) == (200.0, True)
    assert labels([0, 1000, 1600], 1100, 500, 5000) == (3900.0, False)


def test_event_after_the_window_is_censored():
    # the event would be at 1300, but the window ends at 1200
    assert labels([0, 1000, 1300], 500, 400, 1200) == (700.0, False)
    assert labels([0, 1000, 1300], 500, 400, 1300) == (800.0, True)


def test_interval_exactly_tau_is_not_an_event():
    assert labels([0, 1000, 1500], 1100, 500, 5000) == (3900.0, False)
    assert labels([0, 1000, 1499], 1100, 500, 5000) == (399.0, True)


def test_accesses_at_the_pivot_belong_to_the_past():
    # an access exactly at the pivot is not "after" it
    assert labels([0, 100, 200, 1000], 200, 500, 5000) == (4800.0, False)


def test_vectorised_labels_match_the_reference():
    rng = np.random.default_rng(5)
    recs, counted = [], {"all": [], "reads": []}
    for i in range(200):
        ts = np.sort(rng.integers(0, 50_000, rng.integers(1, 30))).tolist()
        acc = [(t, j == 0 or bool(rng.random() < 0.3)) for j, t in enumerate(ts)]
        recs.append(Record(f"r{i}".encode(), ts[0], acc))
        counted["all"].append(ts)
        counted["reads"].append([t for t, w in acc if not w])
    t = RecordTrace.from_records(recs, end_ms=60_000, **H)
    rec, piv = sample_pivots(t, 10, rng)
    for events, seqs in counted.items():
        for end in (60_000, 30_000):
            y, d = tau_labels(t, rec, piv, 700, t_end=end, events=events)
            for i in range(rec.size):
                if piv[i] > end:
                    continue
                ref = tau_event(seqs[rec[i]], piv[i], 700, end)
                assert (y[i], d[i]) == pytest.approx(ref), (events, rec[i], piv[i])


def test_pivots_lie_in_distinct_intervals_of_their_record():
    rng = np.random.default_rng(0)
    seqs = [[0, 10, 30, 60, 100], [5, 7], [50], [0, 5, 5, 9] + list(range(20, 400, 10))]
    t = trace_of(seqs, end_ms=1000)
    for trial in range(20):
        rec, piv = sample_pivots(t, 3, np.random.default_rng(trial))
        for r in range(len(seqs)):
            p = piv[rec == r]
            bounds = seqs[r] + [1000]
            # the interval each pivot lies in (strictly after its lower end)
            idx = np.searchsorted(bounds, p, side="right") - 1
            assert (p > np.asarray(bounds)[idx]).all() and (p < np.asarray(bounds)[idx + 1]).all()
            assert len(set(idx.tolist())) == idx.size  # no interval index reused
            nonempty = sum(1 for a, b in zip(bounds[:-1], bounds[1:]) if b > a)
            assert p.size == min(3, nonempty)
    # every record gets min(n, k) pivots; 5,5 is a zero-length interval and holds none
    rec, piv = sample_pivots(t, 100, rng)
    assert np.bincount(rec).tolist() == [5, 2, 1, 3 + 37 + 1]
    assert piv.min() > 0 and piv.max() < 1000


def test_pivots_only_for_chosen_records_and_before_t_end():
    t = trace_of([[0, 10, 20, 900], [0, 500]], end_ms=1000)
    rec, piv = sample_pivots(t, 10, np.random.default_rng(1), t_end=100, records=np.array([0]))
    assert (rec == 0).all() and rec.size == 3 and (piv < 100).all()


def test_two_step_sampling_is_unbiased_on_a_renewal_process():
    # Long-tailed intervals (mean 10, E[V^2]/E[V] = 37): a uniformly random time falls in a
    # long interval far more often (inspection paradox); Alg. 1 picks an index first.
    rng = np.random.default_rng(42)
    n_rec, k = 400, 60
    gaps = rng.lognormal(np.log(5.0), 1.2, size=(n_rec, k))
    times = np.floor(np.cumsum(gaps * 1000, axis=1)).astype(np.int64)
    seqs = [row.tolist() for row in times]
    end = int(times.max()) + 1
    t = trace_of(seqs, end_ms=end)
    rec, piv = sample_pivots(t, 10, rng)
    lengths = []
    for r, p in zip(rec, piv):
        s = times[r]
        j = np.searchsorted(s, p, side="right")
        if j < k:  # leave out the open last interval, which the renewal mean does not cover
            lengths.append(s[j] - s[j - 1])
    mean_interval = float(np.diff(times, axis=1).mean())
    sampled = float(np.mean(lengths))
    assert abs(sampled / mean_interval - 1.0) < 0.08
    # the naive scheme (a uniform time in the record's span) is biased upwards by ~2x here
    naive = []
    for r in range(n_rec):
        s = times[r]
        p = rng.uniform(s[0], s[-1], 10)
        j = np.searchsorted(s, p, side="right")
        naive.extend((s[j] - s[j - 1]).tolist())
    assert np.mean(naive) / mean_interval > 1.5
