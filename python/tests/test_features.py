"""The 18 features and labels of a tiny trace, computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.leaper.features import (
    FEATURE_NAMES,
    build_samples,
    first_read_slot,
    from_first_read,
    hot_reads_for_share,
    uncovered_positive_share,
)
from conftest import counts_of

# P = 0.5, so eq. 1 maps S = 1, 2, 3, 4, 5 to 1, 3, 5, 7, 9.
CELLS = [
    (1, 0, 1, 0),
    (1, 2, 3, 1),
    (1, 5, 2, 0),
    (1, 6, 1, 2),
    (1, 7, 0, 1),
    (1, 8, 4, 0),
    (2, 6, 5, 0),
    (2, 8, 1, 0),
    (9, 1, 1, 0),
]
# 1_700_000_000 s is 22:13:20 UTC; slots are one minute long.
START = 1_700_000_000_000


@pytest.fixture
def samples():
    c = counts_of(CELLS, sample_p=0.5, slot_ms=60_000, start_unix_ms=START)
    return build_samples(c, {1: [2, 9]}, k=2)


def row(samples, range_, slot):
    (i,) = np.flatnonzero((samples.range == range_) & (samples.slot == slot))
    return dict(zip(FEATURE_NAMES, samples.x[i].tolist())), samples.y[i].tolist()


def test_feature_names():
    assert FEATURE_NAMES == [
        "r1", "r2", "r3", "r4", "r5", "r6",
        "w1", "w2", "w3", "w4", "w5", "w6",
        "hour", "minute", "second",
        "p1", "p2", "p3",
    ]  # fmt: skip


def test_which_pairs_are_samples(samples):
    # k = 2 and the last slot is 8, so s <= 6; a range is sampled at s when it had any
    # access in s-5..s.
    got = sorted(zip(samples.range.tolist(), samples.slot.tolist()))
    assert got == [(1, s) for s in range(7)] + [(2, 6)] + [(9, s) for s in range(1, 7)]
    assert samples.x.shape == (14, 18) and samples.y.shape == (14, 2)
    assert np.all(np.diff(samples.slot) >= 0)  # chronological


def test_row_range1_slot6(samples):
    f, y = row(samples, 1, 6)
    assert [f[f"r{i}"] for i in range(1, 7)] == [1.0, 3.0, 0.0, 0.0, 5.0, 0.0]
    assert [f[f"w{i}"] for i in range(1, 7)] == [3.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert (f["hour"], f["minute"], f["second"]) == (22.0, 20.0, 20.0)  # end of slot 6
    assert (f["p1"], f["p2"], f["p3"]) == (9.0, 0.0, 0.0)  # range 2 read S=5 in slot 6
    assert y == [False, True]  # no read in slot 7, S=4 in slot 8


def test_row_range1_slot0_history_before_the_trace_is_zero(samples):
    f, y = row(samples, 1, 0)
    assert [f[f"r{i}"] for i in range(1, 7)] == [1.0, 0, 0, 0, 0, 0]
    assert all(f[f"w{i}"] == 0 for i in range(1, 7))
    assert (f["hour"], f["minute"], f["second"]) == (22.0, 14.0, 20.0)
    assert (f["p1"], f["p2"], f["p3"]) == (0.0, 0.0, 0.0)
    assert y == [False, True]


def test_row_range9_slot6_old_access_at_the_window_edge(samples):
    f, y = row(samples, 9, 6)
    assert [f[f"r{i}"] for i in range(1, 7)] == [0, 0, 0, 0, 0, 1.0]
    assert (f["p1"], f["p2"], f["p3"]) == (0.0, 0.0, 0.0)  # no precursors
    assert y == [False, False]


def test_uncovered_share(samples):
    c = counts_of(CELLS, sample_p=0.5, slot_ms=60_000, start_unix_ms=START)
    # reads in slots 1..7: (9,1), (1,2), (1,5), (1,6), (2,6); all follow a sampled pair
    # except (9, 1) (range 9 was silent before) and (2, 6) (range 2 silent in 0..5).
    assert uncovered_positive_share(c, samples, 1) == pytest.approx(2 / 5)


def test_all_zero_rows_make_no_samples():
    c = counts_of([(4, 0, 0, 0), (5, 0, 1, 0), (5, 3, 1, 0)])
    s = build_samples(c, {}, k=1)
    assert set(s.range.tolist()) == {5}


def test_hot_reads_for_share_and_min_reads():
    c = counts_of(CELLS, sample_p=0.5, slot_ms=60_000, start_unix_ms=START)
    s = build_samples(c, {1: [2, 9]}, k=2)
    # Reads in slot s + 1 over the 14 samples: 5, 3 and 1 once each, else 0.
    assert hot_reads_for_share(c, s, 0.5) == 1.0
    assert hot_reads_for_share(c, s, 0.2) == 3.0  # 2 of 14 have >= 3
    assert hot_reads_for_share(c, s, 0.1) == 5.0
    assert hot_reads_for_share(c, s, 0.01) == 5.0  # none fits: the largest count
    hot = build_samples(c, {1: [2, 9]}, k=2, min_reads=3.0)
    rows = zip(hot.range.tolist(), hot.slot.tolist(), hot.y[:, 0].tolist())
    assert {(r, t) for r, t, y in rows if y} == {(1, 1), (1, 4)}
    with pytest.raises(ValueError):
        build_samples(c, {}, k=1, min_reads=0.0)
    with pytest.raises(ValueError):
        hot_reads_for_share(c, s, 0.0)


def test_samples_start_where_reads_start():
    # A bulk load (writes only) in slots 0..2, then reads.
    cells = [(1, 0, 0, 3), (2, 1, 0, 2), (1, 2, 0, 1), (1, 3, 2, 0), (2, 4, 1, 0), (1, 5, 1, 0)]
    c = counts_of(cells, sample_p=1.0, slot_ms=60_000, start_unix_ms=START)
    assert first_read_slot(c) == 3
    s = build_samples(c, {}, k=1)
    assert s.slot.min() == 0
    kept = from_first_read(c, s)
    # The first kept samples are at slot 2, whose label slot 3 is the first with reads.
    assert kept.slot.min() == 2 and len(kept) == np.count_nonzero(s.slot >= 2)
    writes_only = counts_of([(1, 0, 0, 3), (1, 1, 0, 1)], sample_p=1.0, slot_ms=60_000, start_unix_ms=START)
    assert first_read_slot(writes_only) is None
    s = build_samples(writes_only, {}, k=1)
    assert len(from_first_read(writes_only, s)) == len(s)
