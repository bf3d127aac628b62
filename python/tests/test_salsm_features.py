"""The 67 features of a (record, pivot) pair on hand-made records."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.salsm.features import (
    COLUMN_COUNTS,
    EARLIER,
    FEATURE_NAMES,
    INSERT_PIVOT,
    INSERT_UPDATE,
    LAST,
    LAST_COLUMN,
    LAST_READ,
    READS,
    SENTINEL_DAYS,
    UPDATE_PIVOT,
    WRITES,
    build_features,
    make_samples,
)
from cairn.learn.salsm.trace import FLAG_TRUNCATED, Record, RecordTrace

D = 1000  # a 1000 ms day keeps the arithmetic readable
H = dict(cf_id=0, sample_rate=1.0, day_ms=D, start_ms=0, end_ms=40 * D)


def one(record: Record, pivot: float) -> np.ndarray:
    t = RecordTrace.from_records([record], **H)
    return build_features(t, np.array([0]), np.array([pivot]))[0]


def test_feature_names_and_layout():
    assert len(FEATURE_NAMES) == 67 and FEATURE_NAMES[LAST_READ] == "last_read_interval"
    assert FEATURE_NAMES[COLUMN_COUNTS][0] == "column_0" and FEATURE_NAMES[LAST_COLUMN] == "last_column"
    assert FEATURE_NAMES[LAST] == "last_interval" and FEATURE_NAMES[EARLIER][0] == "interval_1"
    assert FEATURE_NAMES[READS][0] == "reads_d1" and FEATURE_NAMES[WRITES][-1] == "writes_d20"


def test_hand_made_record():
    # insert at day 1.0; reads at 2.0, 2.5, 5.0; update at 6.0; read at 9.0 (after the pivot)
    acc = [(1000, True), (2000, False), (2500, False), (5000, False), (6000, True), (9000, False)]
    x = one(Record(b"a", 1000, acc, last_update_ms=6000), 7500.0)
    assert x[LAST] == pytest.approx(1.5)  # 7.5 - 6.0
    assert x[EARLIER][:4].tolist() == pytest.approx([1.0, 2.5, 0.5, 1.0])
    assert (x[EARLIER][4:] == SENTINEL_DAYS).all()
    assert x[INSERT_PIVOT] == pytest.approx(6.5)
    assert x[UPDATE_PIVOT] == pytest.approx(1.5)
    assert x[INSERT_UPDATE] == pytest.approx(5.0)
    # whole days before day 7: d1 = day 6 (the update), d2 = day 5, d5 = day 2 (two reads), d6 = day 1
    reads, writes = x[READS], x[WRITES]
    assert reads[:6].tolist() == [0, 1, 0, 0, 2, 0] and writes[:6].tolist() == [1, 0, 0, 0, 0, 1]
    assert reads[6:].sum() == 0 and writes[6:].sum() == 0  # day 9's read is in the future


def test_column_counts_and_the_last_column_stop_at_the_pivot():
    # insert; column 2 written twice, column 5 once before the pivot, column 3 after it
    acc = [(0, True), (1000, True, 2), (2000, False), (3000, True, 2), (4000, True, 5), (9000, True, 3)]
    x = one(Record(b"a", 0, acc), 5000.0)
    cols = x[COLUMN_COUNTS]
    assert cols[2] == 2 and cols[5] == 1 and cols[3] == 0 and cols.sum() == 3
    assert x[LAST_COLUMN] == 5 + 1
    early = one(Record(b"a", 0, acc), 500.0)
    assert early[COLUMN_COUNTS].sum() == 0 and early[LAST_COLUMN] == 0
    # Two records side by side: counts stay per record.
    t = RecordTrace.from_records([Record(b"a", 0, acc), Record(b"b", 0, [(0, True), (100, True, 2)])], **H)
    both = build_features(t, np.array([1, 0]), np.array([5000.0, 5000.0]))
    assert both[0, COLUMN_COUNTS][2] == 1 and both[1, COLUMN_COUNTS][2] == 2
    assert both[0, LAST_COLUMN] == 2 + 1


def test_pivot_day_and_later_accesses_are_not_counted():
    acc = [(0, True), (7100, False), (7900, False)]
    x = one(Record(b"a", 0, acc), 7500.0)
    assert x[READS].sum() == 0  # the read at 7.1 is on the pivot's own day: left out of the counts
    assert x[LAST] == pytest.approx(0.4) and x[EARLIER][0] == pytest.approx(7.1)


def test_update_before_the_pivot_only():
    acc = [(1000, True), (3000, True), (8000, True)]
    x = one(Record(b"a", 1000, acc, last_update_ms=8000), 5000.0)
    assert x[UPDATE_PIVOT] == pytest.approx(2.0) and x[INSERT_UPDATE] == pytest.approx(2.0)
    # never updated before the pivot: the insert is the last write
    x = one(Record(b"a", 1000, acc, last_update_ms=8000), 2000.0)
    assert x[UPDATE_PIVOT] == pytest.approx(1.0) and x[INSERT_UPDATE] == 0.0


def test_truncated_record_uses_last_update_ms_and_sentinels():
    # the cap dropped the insert and the update at day 3; the trace still knows last_update_ms
    x = one(Record(b"a", 1000, [(6000, False), (6500, False)], flags=FLAG_TRUNCATED, last_update_ms=3000), 7000.0)
    assert x[UPDATE_PIVOT] == pytest.approx(4.0) and x[INSERT_UPDATE] == pytest.approx(2.0)
    assert x[EARLIER][0] == pytest.approx(0.5) and (x[EARLIER][1:] == SENTINEL_DAYS).all()
    # with the first write being an update (insert not seen), it counts as one
    x = one(Record(b"a", 6000, [(6000, True), (6500, False)], flags=0), 7000.0)
    assert x[UPDATE_PIVOT] == pytest.approx(1.0)


def test_no_access_before_the_pivot_falls_back_to_the_insert():
    x = one(Record(b"a", 2000, [(5000, False)], flags=0), 3000.0)
    assert x[LAST] == pytest.approx(1.0) and (x[EARLIER] == SENTINEL_DAYS).all()


def test_read_recency_skips_writes_and_falls_back_to_the_insert():
    # insert at day 1; read at 2; writes at 4 and 6 (status updates); read at 9 (after the pivot)
    acc = [(1000, True), (2000, False), (4000, True, 8), (6000, True, 8), (9000, False)]
    x = one(Record(b"a", 1000, acc, last_update_ms=6000), 7000.0)
    assert x[LAST] == pytest.approx(1.0) and x[LAST_READ] == pytest.approx(5.0)
    # never read before the pivot: the insert
    x = one(Record(b"a", 1000, acc[:1] + acc[2:], last_update_ms=6000), 7000.0)
    assert x[LAST_READ] == pytest.approx(6.0)
    # the cap dropped the older times and kept only status writes: the day counts date the
    # last read to the end of its day (day 2's read ends at 3.0), not the first kept time
    days = [(1, 0, 1), (2, 1, 0), (20, 0, 1), (21, 0, 1)]
    capped = Record(b"a", 1000, [(20000, True, 8), (21000, True, 8)], flags=FLAG_TRUNCATED, days=days)
    x = one(capped, 22000.0)
    assert x[LAST_READ] == pytest.approx(19.0) and x[LAST] == pytest.approx(1.0)
    # a read counted on the pivot's own day may come after it: left out, as in the counts
    days_today = days + [(22, 1, 0)]
    x = one(Record(b"a", 1000, capped.accesses, flags=FLAG_TRUNCATED, days=days_today), 22000.0)
    assert x[LAST_READ] == pytest.approx(19.0)
    # no read in the day counts either: the insert
    x = one(Record(b"a", 1000, capped.accesses, flags=FLAG_TRUNCATED, days=[(20, 0, 1), (21, 0, 1)]), 22000.0)
    assert x[LAST_READ] == pytest.approx(21.0)


def test_vectorised_rows_equal_one_at_a_time():
    rng = np.random.default_rng(3)
    recs = []
    for i in range(50):
        ts = np.sort(rng.integers(0, 39 * D, rng.integers(1, 25)))
        acc = [(int(t), bool(rng.random() < 0.3) or j == 0) for j, t in enumerate(ts)]
        upd = max([t for j, (t, w) in enumerate(acc) if w and j > 0], default=0)
        recs.append(Record(f"{i:03d}".encode(), acc[0][0], acc, last_update_ms=upd))
    t = RecordTrace.from_records(recs, **H)
    s = make_samples(t, 10, D, rng)
    for i in range(0, len(s), 7):
        assert np.array_equal(s.x[i], one(recs[s.rec[i]], s.pivots[i]))
    assert np.isfinite(s.x).all() and (s.x >= 0).all()
    assert (s.y >= 0).all() and s.y.shape == s.delta.shape == (len(s),)
