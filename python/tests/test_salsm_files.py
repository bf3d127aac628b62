"""SA-LSM's two files: record trace and cold-key set round trips, and refusal of damage."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cairn.learn.leaper.checksum import crc32c
from cairn.learn.salsm.coldset import (
    ColdSet,
    ColdSetError,
    decode_cold_set,
    encode_cold_set,
    read_cold_set,
    write_cold_set,
)
from cairn.learn.salsm.settings import Settings, cut_view
from cairn.learn.salsm.synth import SynthConfig, synth_trace
from cairn.learn.salsm.trace import (
    FLAG_DELETED,
    FLAG_INSERT_SEEN,
    FLAG_TRUNCATED,
    Record,
    RecordTrace,
    TraceError,
    decode_trace,
    encode_trace,
    read_trace,
    write_trace,
)

DAY = 86_400_000
HEADER = dict(
    cf_id=7,
    sample_rate=0.5,
    day_ms=DAY,
    start_ms=10 * DAY,
    end_ms=20 * DAY,
    max_times=8,
    point_reads=1000,
    writes=100,
    scans=3,
)


def small_trace() -> RecordTrace:
    recs = [
        Record(
            b"k1",
            10 * DAY + 5,
            [(10 * DAY + 5, True), (11 * DAY, False), (11 * DAY + 9, True)],
            last_update_ms=11 * DAY + 9,
        ),
        Record(b"", 3 * DAY, [(12 * DAY, False)], flags=0),  # empty key, insert before collection
        Record(b"\x00\xff" * 40, 15 * DAY, [], flags=FLAG_INSERT_SEEN | FLAG_DELETED, days=[(15, 0, 2)]),
        Record(
            b"k4",
            10 * DAY,
            [(19 * DAY + i, i % 2 == 0) for i in range(8)],
            flags=FLAG_TRUNCATED,
            days=[(12, 40, 1), (19, 5, 3)],
        ),
    ]
    return RecordTrace.from_records(recs, **HEADER)


def records_equal(a: RecordTrace, b: RecordTrace) -> None:
    assert a.n_records == b.n_records
    for i in range(a.n_records):
        assert a.record(i) == b.record(i)
    for f in ("cf_id", "sample_rate", "day_ms", "start_ms", "end_ms", "max_times", "point_reads", "writes", "scans"):
        assert getattr(a, f) == getattr(b, f)


def test_trace_round_trip_hand_made(tmp_path):
    t = small_trace()
    path = tmp_path / "cf7.rtr"
    write_trace(path, t)
    back = read_trace(path)
    records_equal(t, back)
    assert back.record(0).days == [(10, 0, 1), (11, 1, 1)]  # derived from the accesses
    assert back.record(3).days == [(12, 40, 1), (19, 5, 3)]  # given
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_trace_layout_matches_the_spec():
    t = RecordTrace.from_records(
        [Record(b"ab", 5, [(5, True), (7, False)], last_update_ms=0, days=[(0, 1, 1)])], **HEADER
    )
    b = encode_trace(t)
    assert b[:8] == b"CAIRNRTR" and struct.unpack_from("<II", b, 8) == (2, 7)
    assert struct.unpack_from("<d", b, 16)[0] == 0.5
    assert struct.unpack_from("<QQQII", b, 24) == (DAY, 10 * DAY, 20 * DAY, 8, 0)
    assert struct.unpack_from("<QQQQ", b, 56) == (1000, 100, 3, 1)
    assert struct.unpack_from("<I2sQIIQ", b, 88) == (2, b"ab", 5, FLAG_INSERT_SEEN, 2, 0)
    assert struct.unpack_from("<QQ", b, 88 + 4 + 2 + 24) == ((5 << 4) | 1, 7 << 4)
    assert struct.unpack_from("<IIII", b, 88 + 30 + 16) == (1, 0, 1, 1)
    assert len(b) == 88 + 30 + 16 + 16 + 4
    assert struct.unpack_from("<I", b, len(b) - 4)[0] == crc32c(b[:-4])


def test_trace_round_trip_synthetic():
    t = synth_trace(SynthConfig(profile="pay", records=300, days=40, seed=3))
    records_equal(t, decode_trace(encode_trace(t)))


def _recrc(b: bytes) -> bytes:
    return b[:-4] + struct.pack("<I", crc32c(b[:-4]))


@pytest.mark.parametrize("where", [0, 8, 30, 60, 87, 88, 100, 140, -5, -1])
def test_trace_flipped_byte_is_refused(where):
    b = bytearray(encode_trace(small_trace()))
    b[where] ^= 0x10
    with pytest.raises(TraceError):
        decode_trace(bytes(b))


@pytest.mark.parametrize("cut", [0, 10, 87, 91, 150, -4, -1])
def test_trace_truncation_is_refused(cut):
    b = encode_trace(small_trace())
    with pytest.raises(TraceError):
        decode_trace(b[:cut])


def test_trace_structural_damage_with_a_valid_crc_is_refused():
    b = encode_trace(small_trace())
    with pytest.raises(TraceError, match="version"):
        decode_trace(_recrc(b[:8] + struct.pack("<I", 3) + b[12:]))
    with pytest.raises(TraceError, match="records"):  # record count larger than the file
        decode_trace(_recrc(b[:80] + struct.pack("<Q", 10**6) + b[88:]))
    with pytest.raises(TraceError, match="truncated"):  # one record more than present
        decode_trace(_recrc(b[:80] + struct.pack("<Q", 5) + b[88:]))
    with pytest.raises(TraceError, match="after the last"):
        decode_trace(_recrc(b[:-4] + b"\0\0\0\0" + b[-4:]))
    with pytest.raises(TraceError, match="sample rate"):
        decode_trace(_recrc(b[:16] + struct.pack("<d", 0.0) + b[24:]))
    with pytest.raises(TraceError, match="end_ms"):
        decode_trace(_recrc(b[:40] + struct.pack("<Q", 0) + b[48:]))
    with pytest.raises(TraceError, match="max_times"):
        decode_trace(_recrc(b[:48] + struct.pack("<I", 2) + b[52:]))
    unordered = RecordTrace.from_records([Record(b"a", 0, [(5, False), (9, False)])], **HEADER)
    raw = bytearray(encode_trace(unordered))
    raw[88 + 4 + 1 + 24 : 88 + 4 + 1 + 40] = struct.pack("<QQ", 9 << 4, 5 << 4)
    with pytest.raises(TraceError, match="out of order"):
        decode_trace(_recrc(bytes(raw)))

    with pytest.raises(TraceError, match="magic"):
        decode_trace(b"CAIRNLTR" + b[8:])


def test_version_one_times_are_converted_and_columns_round_trip():
    t = RecordTrace.from_records(
        [Record(b"a", 5, [(5, True), (7, False), (9, True, 3), (11, True, 99)])], **HEADER
    )
    back = decode_trace(encode_trace(t))
    assert back.column.tolist() == [-1, -1, 3, 13]  # 99 folds into the last column
    assert back.is_write.tolist() == [True, False, True, True]
    v1 = RecordTrace.from_records([Record(b"a", 5, [(5, True), (7, False)])], **HEADER)
    raw = bytearray(encode_trace(v1))
    raw[8:12] = struct.pack("<I", 1)
    raw[88 + 4 + 1 + 24 : 88 + 4 + 1 + 40] = struct.pack("<QQ", (5 << 1) | 1, 7 << 1)
    old = decode_trace(_recrc(bytes(raw)))
    assert old.access_ms.tolist() == [5, 7] and old.is_write.tolist() == [True, False]
    assert old.column.tolist() == [-1, -1]


def test_trace_writer_checks_what_the_reader_checks():
    t = small_trace()
    t.max_times = 2
    with pytest.raises(TraceError, match="max_times"):
        encode_trace(t)


def test_cut_keeps_only_the_past():
    t = small_trace()
    cut, kept = t.cut(11 * DAY + 1)
    assert list(kept) == [0, 3]  # record 1 first seen on day 12; record 2 has no times but is not truncated
    r0 = cut.record(0)
    assert r0.accesses == [(10 * DAY + 5, True), (11 * DAY, False)]
    assert r0.last_update_ms == 0  # the update at 11 d + 9 ms is after the cut
    assert r0.days == [(10, 0, 1)]  # day 11 holds the cut: left out
    assert cut.record(1).accesses == [] and cut.record(1).days == []
    assert cut.end_ms == 11 * DAY + 1


def busy_trace(max_times: int) -> RecordTrace:
    """One record read every 10 ms from 0 to 990 (100 times), one read twice; day = 100 ms."""
    busy = Record(b"busy", 0, [(t, t == 0) for t in range(0, 1000, 10)], last_update_ms=0)
    idle = Record(b"idle", 5, [(5, True), (505, False)])
    t = RecordTrace.from_records([busy, idle], cf_id=0, sample_rate=1.0, day_ms=100, start_ms=0, end_ms=1000)
    return t.capped(max_times)


def test_capped_keeps_the_newest_times_and_the_day_counts():
    t = busy_trace(200)
    c = t.capped(32)
    assert c.max_times == 32
    busy = c.record(0)
    assert [ms for ms, _ in busy.accesses] == list(range(680, 1000, 10))
    assert busy.flags & FLAG_TRUNCATED and not c.record(1).flags & FLAG_TRUNCATED
    assert busy.days == t.record(0).days  # the store keeps day counts apart from the times
    assert c.record(1).accesses == t.record(1).accesses
    assert t.capped(500) is t
    with pytest.raises(ValueError):
        t.capped(0)


def test_a_store_cut_at_t_holds_the_newest_times_before_t():
    """The held-out evaluation cuts the trace at T_cut. Cut from a trace exported with the
    engine's cap, a busy record has lost every time before T_cut (the later ones pushed
    them out); cut from a trace exported with room and then capped, it holds what a store
    of that size held at T_cut."""
    engine_sized = busy_trace(32)
    cut, kept = engine_sized.cut(500)
    assert list(kept) == [0, 1] and cut.record(0).accesses == []  # the gap
    cut, kept = cut_view(busy_trace(4096), 500, Settings(store_times=32))
    assert [ms for ms, _ in cut.record(0).accesses] == list(range(190, 510, 10))
    assert cut.record(0).flags & FLAG_TRUNCATED
    assert cut.record(1).accesses == [(5, True)]
    # store_times 0: the trace as exported.
    cut, _ = cut_view(busy_trace(4096), 500, Settings())
    assert len(cut.record(0).accesses) == 51
    with pytest.raises(ValueError, match="store times"):
        Settings(store_times=-1)


def cold(keys, **kw) -> ColdSet:
    return ColdSet(cf_id=3, trace_end_ms=123_456, alpha=2.5e9, method=kw.pop("method", "rsf"), keys=keys, **kw)


def test_cold_set_round_trip_sorted_unique(tmp_path):
    path = tmp_path / "cf3.cld"
    write_cold_set(path, cold([b"b", b"a", b"", b"ab", b"a", b"\xff"]))
    back = read_cold_set(path)
    assert back.keys == [b"", b"a", b"ab", b"b", b"\xff"]
    assert (back.cf_id, back.trace_end_ms, back.created_ms, back.alpha, back.method) == (
        3,
        123_456,
        123_456,
        2.5e9,
        "rsf",
    )
    assert list(tmp_path.iterdir()) == [path]


def test_cold_set_layout_matches_the_spec():
    b = encode_cold_set(cold([b"x"], method="lru2"))
    assert struct.unpack_from("<8sIIQQd", b, 0) == (b"CAIRNCLD", 1, 3, 123_456, 123_456, 2.5e9)
    assert struct.unpack_from("<I4sQI1s", b, 40) == (4, b"lru2", 1, 1, b"x")
    assert len(b) == 40 + 4 + 4 + 8 + 4 + 1 + 4


@pytest.mark.parametrize("where", [0, 9, 13, 20, 33, 41, 46, 50, -6, -1])
def test_cold_set_flipped_byte_is_refused(where):
    b = bytearray(encode_cold_set(cold([b"alpha", b"beta"])))
    b[where] ^= 0x01
    with pytest.raises(ColdSetError):
        decode_cold_set(bytes(b))


@pytest.mark.parametrize("cut", [0, 8, 40, 55, -5, -1])
def test_cold_set_truncation_is_refused(cut):
    with pytest.raises(ColdSetError):
        decode_cold_set(encode_cold_set(cold([b"alpha", b"beta"]))[:cut])


def test_cold_set_out_of_order_or_repeated_keys_are_refused():
    b = encode_cold_set(cold([b"aa", b"bb"]))
    swapped = b.replace(b"aa", b"cc")  # now "cc" before "bb"
    with pytest.raises(ColdSetError, match="strictly"):
        decode_cold_set(_recrc(swapped))
    repeated = b.replace(b"bb", b"aa")
    with pytest.raises(ColdSetError, match="strictly"):
        decode_cold_set(_recrc(repeated))


def test_cold_set_many_keys_round_trip():
    rng = np.random.default_rng(1)
    keys = [rng.bytes(int(n)) for n in rng.integers(0, 20, 500)]
    assert decode_cold_set(encode_cold_set(cold(keys))).keys == sorted(set(keys))


def test_files_written_by_the_engine_read():
    """The engine's own encoders wrote the fuzz seeds (`fuzz/corpus`): the service reads them."""
    from pathlib import Path

    from cairn.learn.salsm import read_cold_set, read_trace

    root = Path(__file__).resolve().parents[2] / "fuzz" / "corpus"
    t = read_trace(root / "record_trace" / "seed-0")
    assert t.cf_id == 1 and t.n_records == 4 and t.end_ms == 5000
    assert t.keys[0] == b"user0000"
    cs = read_cold_set(root / "cold_set" / "seed-0")
    assert cs.method == "rsf" and cs.cf_id == 0 and len(cs.keys) == 6
    assert cs.keys[0] == b"user0000"
