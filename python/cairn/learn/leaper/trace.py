"""Reader and writer of the access trace (engine -> learner), `docs/design/formats/leaper.md`.

The file is little-endian with fixed-size records, so the header, the count rows and the
transfer rows each map onto one numpy structured dtype and the whole file is read with
``np.frombuffer`` (no per-row Python work, so million-row traces load in milliseconds).
A reader refuses a damaged file with :class:`TraceError` before any of it is used.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .atomic import atomic_write
from .checksum import crc32c

MAGIC = b"CAIRNLTR"
VERSION = 1

HEADER_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("cf_id", "<u4"),
        ("key_offset", "<u4"),
        ("reserved", "<u4"),
        ("range_width", "<u8"),
        ("slot_ms", "<u8"),
        ("sample_p", "<f8"),
        ("start_unix_ms", "<u8"),
        ("n_rows", "<u8"),
        ("n_transfers", "<u8"),
    ]
)
ROW_DTYPE = np.dtype([("range", "<u8"), ("slot", "<u8"), ("reads", "<u4"), ("writes", "<u4")])
TRANSFER_DTYPE = np.dtype([("to", "<u8"), ("from", "<u8"), ("count", "<u4"), ("reserved", "<u4")])
CRC_SIZE = 4

assert HEADER_DTYPE.itemsize == 72
assert ROW_DTYPE.itemsize == 24
assert TRANSFER_DTYPE.itemsize == 24


class TraceError(ValueError):
    """A trace file that is damaged or does not follow the format."""


@dataclass
class Trace:
    """One column family's access trace: sampled counts at fine width ``range_width`` (A0).

    ``rows`` (dtype :data:`ROW_DTYPE`) hold only non-zero cells, sorted by (slot, range);
    ``transfers`` (dtype :data:`TRANSFER_DTYPE`) hold ``T[to][from]`` counts for Algorithm 2.
    """

    cf_id: int
    key_offset: int
    range_width: int
    slot_ms: int
    sample_p: float
    start_unix_ms: int
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=ROW_DTYPE))
    transfers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=TRANSFER_DTYPE))

    def __post_init__(self) -> None:
        self.rows = np.asarray(self.rows, dtype=ROW_DTYPE)
        self.transfers = np.asarray(self.transfers, dtype=TRANSFER_DTYPE)

    @property
    def n_rows(self) -> int:
        return int(self.rows.shape[0])


def make_rows(range_, slot, reads, writes) -> np.ndarray:
    """Build a :data:`ROW_DTYPE` array from four equal-length sequences."""
    range_ = np.asarray(range_)
    out = np.zeros(range_.shape[0], dtype=ROW_DTYPE)
    out["range"], out["slot"], out["reads"], out["writes"] = range_, slot, reads, writes
    return out


def make_transfers(to, from_, count) -> np.ndarray:
    """Build a :data:`TRANSFER_DTYPE` array from three equal-length sequences."""
    to = np.asarray(to)
    out = np.zeros(to.shape[0], dtype=TRANSFER_DTYPE)
    out["to"], out["from"], out["count"] = to, from_, count
    return out


def _validate_params(range_width: int, slot_ms: int, sample_p: float) -> None:
    if range_width < 1:
        raise TraceError(f"range_width must be >= 1, got {range_width}")
    if slot_ms < 1:
        raise TraceError(f"slot_ms must be >= 1, got {slot_ms}")
    if not (0.0 < sample_p <= 1.0):
        raise TraceError(f"sample_p must be in (0, 1], got {sample_p}")


def encode_trace(trace: Trace) -> bytes:
    """Serialize ``trace``; rows are sorted by (slot, range) and all-zero rows dropped."""
    _validate_params(trace.range_width, trace.slot_ms, trace.sample_p)
    rows = trace.rows[(trace.rows["reads"] > 0) | (trace.rows["writes"] > 0)]
    rows = rows[np.lexsort((rows["range"], rows["slot"]))]
    if rows.shape[0] > 1:
        same = (rows["slot"][1:] == rows["slot"][:-1]) & (rows["range"][1:] == rows["range"][:-1])
        if same.any():
            raise TraceError("two rows for the same (range, slot) cell")
    header = np.zeros(1, dtype=HEADER_DTYPE)
    header["magic"] = MAGIC
    header["version"] = VERSION
    header["cf_id"] = trace.cf_id
    header["key_offset"] = trace.key_offset
    header["range_width"] = trace.range_width
    header["slot_ms"] = trace.slot_ms
    header["sample_p"] = trace.sample_p
    header["start_unix_ms"] = trace.start_unix_ms
    header["n_rows"] = rows.shape[0]
    header["n_transfers"] = trace.transfers.shape[0]
    body = header.tobytes() + rows.tobytes() + trace.transfers.tobytes()
    return body + struct.pack("<I", crc32c(body))


def decode_trace(data: bytes, name: str = "trace") -> Trace:
    """Parse and verify a trace; raises :class:`TraceError` naming what is wrong."""
    view = memoryview(data)
    minimum = HEADER_DTYPE.itemsize + CRC_SIZE
    if len(view) < minimum:
        raise TraceError(f"{name}: truncated: {len(view)} bytes, a trace has at least {minimum}")
    if bytes(view[:8]) != MAGIC:
        raise TraceError(f"{name}: bad magic {bytes(view[:8])!r}, expected {MAGIC!r}")
    header = np.frombuffer(view, dtype=HEADER_DTYPE, count=1)[0]
    if int(header["version"]) != VERSION:
        raise TraceError(f"{name}: unsupported version {int(header['version'])}, expected {VERSION}")
    n_rows, n_transfers = int(header["n_rows"]), int(header["n_transfers"])
    expected = HEADER_DTYPE.itemsize + n_rows * ROW_DTYPE.itemsize + n_transfers * TRANSFER_DTYPE.itemsize + CRC_SIZE
    if len(view) != expected:
        what = "truncated" if len(view) < expected else "trailing bytes"
        raise TraceError(
            f"{name}: {what}: {len(view)} bytes, header says {n_rows} rows and "
            f"{n_transfers} transfers, i.e. {expected} bytes"
        )
    (stored,) = struct.unpack("<I", view[-CRC_SIZE:])
    actual = crc32c(view[:-CRC_SIZE])
    if stored != actual:
        raise TraceError(f"{name}: CRC32C mismatch: stored {stored:08x}, computed {actual:08x}")
    _validate_params_named(name, int(header["range_width"]), int(header["slot_ms"]), float(header["sample_p"]))
    offset = HEADER_DTYPE.itemsize
    rows = np.frombuffer(view, dtype=ROW_DTYPE, count=n_rows, offset=offset).copy()
    offset += n_rows * ROW_DTYPE.itemsize
    transfers = np.frombuffer(view, dtype=TRANSFER_DTYPE, count=n_transfers, offset=offset).copy()
    if n_rows > 1:
        slot, rng = rows["slot"], rows["range"]
        ordered = (slot[1:] > slot[:-1]) | ((slot[1:] == slot[:-1]) & (rng[1:] > rng[:-1]))
        if not ordered.all():
            bad = int(np.argmin(ordered)) + 1
            raise TraceError(
                f"{name}: rows not strictly sorted by (slot, range) at row {bad} "
                f"(slot {int(slot[bad])}, range {int(rng[bad])})"
            )
    return Trace(
        cf_id=int(header["cf_id"]),
        key_offset=int(header["key_offset"]),
        range_width=int(header["range_width"]),
        slot_ms=int(header["slot_ms"]),
        sample_p=float(header["sample_p"]),
        start_unix_ms=int(header["start_unix_ms"]),
        rows=rows,
        transfers=transfers,
    )


def _validate_params_named(name: str, range_width: int, slot_ms: int, sample_p: float) -> None:
    try:
        _validate_params(range_width, slot_ms, sample_p)
    except TraceError as e:
        raise TraceError(f"{name}: {e}") from None


def read_trace(path: str | os.PathLike) -> Trace:
    """Read and verify the trace at ``path``."""
    path = Path(path)
    return decode_trace(path.read_bytes(), name=str(path))


def write_trace(path: str | os.PathLike, trace: Trace) -> None:
    """Write ``trace`` to ``path`` atomically (temporary name in the same folder, then rename)."""
    atomic_write(Path(path), encode_trace(trace))
