"""Writer and reader of the model bundle (learner -> engine), `docs/design/formats/leaper.md`.

Layout (UTF-8 text): the line ``CAIRN-LEAPER-MODEL 1``, one line of metadata JSON, then
for i = 1..k the line ``MODEL i <byte length>`` followed by exactly that many bytes of
LightGBM text model (no separator after them), and last the line
``CRC32C <8 lowercase hex digits>`` over every byte before it. The file is written under a
temporary name and renamed, so the engine never loads half a bundle.

The reader checks the trailer first, so any damaged byte is reported as a checksum
mismatch, then the structure and the metadata fields the engine relies on.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .atomic import atomic_write
from .checksum import crc32c
from .features import FEATURE_NAMES, HISTORY_SLOTS
from .report import json_safe

HEADER = b"CAIRN-LEAPER-MODEL 1\n"
VERSION = 1
_TRAILER = re.compile(rb"CRC32C ([0-9a-f]{8})\n\Z")
_TRAILER_LEN = len(b"CRC32C 00000000\n")
_MODEL_LINE = re.compile(rb"MODEL ([1-9][0-9]*) (0|[1-9][0-9]*)\Z")

REQUIRED_FIELDS = (
    "version",
    "range_width",
    "fine_range_width",
    "key_offset",
    "slot_ms",
    "k",
    "threshold",
    "history_slots",
    "gamma",
    "features",
    "precursors",
    "trained_unix_ms",
    "trace_rows",
    "report",
)


class BundleError(ValueError):
    """A model bundle that is damaged or does not follow the format."""


@dataclass
class Bundle:
    metadata: dict
    models: list[str]


def make_metadata(
    *,
    range_width: int,
    fine_range_width: int,
    key_offset: int,
    slot_ms: int,
    k: int,
    threshold: float,
    gamma: int,
    precursors: dict[int, list[int]],
    trace_rows: int,
    report: dict,
    trained_unix_ms: int,
) -> dict:
    """The metadata object, fields in the spec's order."""
    return {
        "version": VERSION,
        "range_width": int(range_width),
        "fine_range_width": int(fine_range_width),
        "key_offset": int(key_offset),
        "slot_ms": int(slot_ms),
        "k": int(k),
        "threshold": float(threshold),
        "history_slots": HISTORY_SLOTS,
        "gamma": int(gamma),
        "features": list(FEATURE_NAMES),
        "precursors": {str(int(r)): [int(p) for p in ps] for r, ps in sorted(precursors.items())},
        "trained_unix_ms": int(trained_unix_ms),
        "trace_rows": int(trace_rows),
        "report": report,
    }


def _check_metadata(meta: object, n_models: int, err: Callable[[str], Exception]) -> None:
    if not isinstance(meta, dict):
        raise err("metadata is not a JSON object")
    missing = [f for f in REQUIRED_FIELDS if f not in meta]
    if missing:
        raise err(f"metadata lacks {', '.join(missing)}")
    if meta["version"] != VERSION:
        raise err(f"metadata version {meta['version']!r}, expected {VERSION}")
    if not isinstance(meta["k"], int) or meta["k"] < 1:
        raise err(f"metadata k = {meta['k']!r}, expected at least one model")
    if meta["k"] != n_models:
        raise err(f"metadata says k = {meta['k']!r} but the bundle has {n_models} models")
    if meta["features"] != FEATURE_NAMES:
        raise err("metadata features are not the 18 of the format, in order")
    if meta["history_slots"] != HISTORY_SLOTS:
        raise err(f"history_slots {meta['history_slots']!r}, expected {HISTORY_SLOTS}")
    rw, frw = meta["range_width"], meta["fine_range_width"]
    if not (isinstance(rw, int) and isinstance(frw, int) and frw >= 1 and rw >= frw and rw % frw == 0):
        raise err(f"range_width {rw!r} is not a positive multiple of fine_range_width {frw!r}")
    thr = meta["threshold"]
    if not isinstance(thr, (int, float)) or not 0.0 <= thr <= 1.0:
        raise err(f"threshold {thr!r} is not a probability")
    if not isinstance(meta["precursors"], dict):
        raise err("precursors is not an object")


def encode_bundle(bundle: Bundle) -> bytes:
    _check_metadata(bundle.metadata, len(bundle.models), ValueError)
    meta = json.dumps(json_safe(bundle.metadata), separators=(",", ":"), allow_nan=False)
    assert "\n" not in meta  # json.dumps escapes newlines inside strings
    parts = [HEADER, meta.encode("utf-8"), b"\n"]
    for i, text in enumerate(bundle.models, start=1):
        body = text.encode("utf-8")
        parts += [f"MODEL {i} {len(body)}\n".encode("ascii"), body]
    data = b"".join(parts)
    return data + f"CRC32C {crc32c(data):08x}\n".encode("ascii")


def decode_bundle(data: bytes, name: str = "bundle") -> Bundle:
    """Parse and verify a bundle; raises :class:`BundleError` naming what is wrong."""
    if not data.startswith(HEADER):
        raise BundleError(f"{name}: not a Leaper model bundle (first line is not {HEADER[:-1].decode()!r})")
    m = _TRAILER.search(data[-_TRAILER_LEN:]) if len(data) >= len(HEADER) + _TRAILER_LEN else None
    if m is None:
        raise BundleError(f"{name}: no CRC32C trailer line at the end (truncated?)")
    body = data[:-_TRAILER_LEN]
    stored, actual = int(m.group(1), 16), crc32c(body)
    if stored != actual:
        raise BundleError(f"{name}: CRC32C mismatch: stored {stored:08x}, computed {actual:08x}")
    pos = len(HEADER)
    end = body.find(b"\n", pos)
    if end < 0:
        raise BundleError(f"{name}: no metadata line")
    try:
        meta = json.loads(body[pos:end].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"{name}: metadata is not JSON: {e}") from None
    pos = end + 1
    models: list[str] = []
    while pos < len(body):
        end = body.find(b"\n", pos)
        line = body[pos:end] if end >= 0 else body[pos:]
        mm = _MODEL_LINE.match(line)
        if end < 0 or mm is None:
            raise BundleError(f"{name}: expected 'MODEL {len(models) + 1} <length>' at byte {pos}")
        index, length = int(mm.group(1)), int(mm.group(2))
        if index != len(models) + 1:
            raise BundleError(f"{name}: model {index} where model {len(models) + 1} was expected")
        start = end + 1
        if start + length > len(body):
            raise BundleError(f"{name}: model {index} claims {length} bytes, only {len(body) - start} left")
        try:
            models.append(body[start : start + length].decode("utf-8"))
        except UnicodeDecodeError as e:
            raise BundleError(f"{name}: model {index} is not UTF-8: {e}") from None
        pos = start + length
    _check_metadata(meta, len(models), lambda msg: BundleError(f"{name}: {msg}"))
    return Bundle(meta, models)


def write_bundle(path: str | os.PathLike, bundle: Bundle) -> None:
    """Write ``bundle`` to ``path`` atomically."""
    atomic_write(Path(path), encode_bundle(bundle))


def read_bundle(path: str | os.PathLike) -> Bundle:
    """Read and verify the bundle at ``path``."""
    path = Path(path)
    return decode_bundle(path.read_bytes(), name=str(path))
