from __future__ import annotations

import struct

import numpy as np
import pytest

from cairn.learn.leaper.checksum import crc32c
from cairn.learn.leaper.trace import (
    HEADER_DTYPE,
    MAGIC,
    ROW_DTYPE,
    TRANSFER_DTYPE,
    TraceError,
    decode_trace,
    encode_trace,
    read_trace,
    write_trace,
)
from conftest import trace_of


@pytest.fixture
def trace():
    return trace_of(
        [(5, 0, 3, 1), (2, 0, 1, 0), (7, 1, 0, 4), (5, 2, 9, 0)],
        [(5, 2, 11), (7, 5, 1)],
        range_width=10,
        slot_ms=60_000,
        sample_p=0.25,
        start_unix_ms=1_700_000_000_000,
    )


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def test_layout_sizes():
    assert HEADER_DTYPE.itemsize == 72 and ROW_DTYPE.itemsize == 24 and TRANSFER_DTYPE.itemsize == 24


def test_round_trip(tmp_path, trace):
    path = tmp_path / "cf1.ltr"
    write_trace(path, trace)
    data = path.read_bytes()
    assert len(data) == 72 + 4 * 24 + 2 * 24 + 4
    assert data[:8] == MAGIC
    back = read_trace(path)
    for attr in ("cf_id", "key_offset", "range_width", "slot_ms", "sample_p", "start_unix_ms"):
        assert getattr(back, attr) == getattr(trace, attr)
    assert np.array_equal(back.rows, trace.rows)
    assert np.array_equal(back.transfers, trace.transfers)
    # sorted by (slot, range) on disk
    assert back.rows["slot"].tolist() == [0, 0, 1, 2]
    assert back.rows["range"].tolist() == [2, 5, 7, 5]
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def test_header_is_little_endian(trace):
    data = encode_trace(trace)
    version, cf_id, key_offset, reserved = struct.unpack_from("<4I", data, 8)
    range_width, slot_ms = struct.unpack_from("<2Q", data, 24)
    (sample_p,) = struct.unpack_from("<d", data, 40)
    start, n_rows, n_transfers = struct.unpack_from("<3Q", data, 48)
    assert (version, cf_id, key_offset, reserved) == (1, 1, 0, 0)
    assert (range_width, slot_ms, sample_p) == (10, 60_000, 0.25)
    assert (start, n_rows, n_transfers) == (1_700_000_000_000, 4, 2)
    assert struct.unpack_from("<QQII", data, 72) == (2, 0, 1, 0)
    assert struct.unpack("<I", data[-4:])[0] == crc32c(data[:-4])


def test_empty_trace_round_trips():
    t = decode_trace(encode_trace(trace_of([])))
    assert t.n_rows == 0 and t.transfers.shape[0] == 0


@pytest.mark.parametrize("pos", [0, 9, 30, 45, 60, 72, 80, 95, 130, 170, -1])
def test_any_flipped_byte_is_refused(trace, pos):
    data = bytearray(encode_trace(trace))
    data[pos] ^= 0x40
    with pytest.raises(TraceError):
        decode_trace(bytes(data))


@pytest.mark.parametrize("cut", [0, 4, 71, 72, 100, 150, 1])
def test_truncation_is_refused(trace, cut):
    data = encode_trace(trace)
    short = data[:cut] if cut != 1 else data[:-1]
    with pytest.raises(TraceError, match="truncated"):
        decode_trace(short)


def test_trailing_bytes_are_refused(trace):
    with pytest.raises(TraceError, match="trailing"):
        decode_trace(encode_trace(trace) + b"\0")


def _resealed(data: bytearray) -> bytes:
    """Fix the CRC after an edit, so that the check under test is not the CRC's."""
    struct.pack_into("<I", data, len(data) - 4, crc32c(bytes(data[:-4])))
    return bytes(data)


def test_bad_magic_is_refused(trace):
    data = bytearray(encode_trace(trace))
    data[:8] = b"CAIRNLTX"
    with pytest.raises(TraceError, match="magic"):
        decode_trace(_resealed(data))


def test_bad_version_is_refused(trace):
    data = bytearray(encode_trace(trace))
    struct.pack_into("<I", data, 8, 2)
    with pytest.raises(TraceError, match="version"):
        decode_trace(_resealed(data))


def test_bad_crc_is_refused(trace):
    data = bytearray(encode_trace(trace))
    data[100] ^= 1
    with pytest.raises(TraceError, match="CRC32C"):
        decode_trace(bytes(data))


def test_wrong_counts_in_header_are_refused(trace):
    data = bytearray(encode_trace(trace))
    struct.pack_into("<Q", data, 56, 5)  # n_rows 4 -> 5
    with pytest.raises(TraceError, match="header says 5 rows"):
        decode_trace(_resealed(data))


def test_unsorted_rows_are_refused(trace):
    data = bytearray(encode_trace(trace))
    row0, row1 = bytes(data[72:96]), bytes(data[96:120])
    data[72:96], data[96:120] = row1, row0
    with pytest.raises(TraceError, match="sorted"):
        decode_trace(_resealed(data))


@pytest.mark.parametrize("offset,fmt,value", [(24, "<Q", 0), (32, "<Q", 0), (40, "<d", 0.0), (40, "<d", 1.5)])
def test_nonsense_parameters_are_refused(trace, offset, fmt, value):
    data = bytearray(encode_trace(trace))
    struct.pack_into(fmt, data, offset, value)
    with pytest.raises(TraceError):
        decode_trace(_resealed(data))


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        read_trace(tmp_path / "nope")
