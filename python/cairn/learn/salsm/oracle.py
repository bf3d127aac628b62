"""Reader (and writer, for tests) of the oracle scores file (bench -> service),
`docs/design/formats/sa-lsm.md`.

The bench knows each record's hidden state and writes, per key, the true probability of
a read within a horizon from a time ``at_ms``. The ``oracle`` method ranks by it: the
best any placement can do on that workload, the ceiling the learned models are read
against. A file that does not follow the format raises :class:`OracleError`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..leaper.atomic import atomic_write

FORMAT = "cairn-salsm-oracle"
VERSION = 1


class OracleError(ValueError):
    """An oracle scores file that is damaged, foreign, or does not fit the trace."""


@dataclass
class OracleScores:
    at_ms: int
    horizon_ms: float
    keys: list[bytes]
    p_read: np.ndarray  # P(read in (at_ms, at_ms + horizon_ms]) per key
    futures: int | None = None  # simulated futures behind each probability, if said
    name: str = "oracle scores"

    def lookup(self, keys: Sequence[bytes]) -> np.ndarray:
        """The probability of each of ``keys``; every key must be in the file."""
        index = {k: i for i, k in enumerate(self.keys)}
        pos = np.fromiter((index.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        missing = np.flatnonzero(pos < 0)
        if missing.size:
            first = keys[int(missing[0])].hex()
            raise OracleError(
                f"{self.name}: {missing.size} of {len(keys)} records have no probability (first: key {first!r})"
            )
        return self.p_read[pos]

    def check_at(self, t_ms: float, day_ms: int, what: str) -> None:
        """Refuse a file made for another time than ``t_ms`` (within a day)."""
        if abs(self.at_ms - t_ms) > day_ms:
            raise OracleError(
                f"{self.name}: probabilities are for at_ms {self.at_ms}, but the ranking is at {what} = "
                f"{int(t_ms)} ({(self.at_ms - t_ms) / day_ms:+.2f} days off; within a day is needed)"
            )


def _number(v, what: str, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise OracleError(f"{name}: {what} must be a finite number, got {v!r}")
    return float(v)


def _keys(raw, name: str) -> list[bytes]:
    if not isinstance(raw, list):
        raise OracleError(f"{name}: keys_hex must be a list of hex strings")
    out = []
    for i, k in enumerate(raw):
        try:
            out.append(bytes.fromhex(k))
        except (TypeError, ValueError):
            raise OracleError(f"{name}: keys_hex[{i}] is not a hex string: {k!r}") from None
    if len(set(out)) != len(out):
        raise OracleError(f"{name}: keys_hex repeats a key")
    return out


def _probabilities(raw, n: int, name: str) -> np.ndarray:
    if not isinstance(raw, list) or len(raw) != n:
        raise OracleError(f"{name}: p_read must be a list of {n} numbers, one per key")
    p = np.array([_number(v, f"p_read[{i}]", name) for i, v in enumerate(raw)], dtype=float)
    bad = np.flatnonzero((p < 0) | (p > 1))
    if bad.size:
        raise OracleError(f"{name}: p_read[{bad[0]}] = {p[bad[0]]} is not a probability")
    return p


def decode_oracle(data: bytes, name: str = "oracle scores") -> OracleScores:
    """Parse and check an oracle scores file; raises :class:`OracleError`."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise OracleError(f"{name}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise OracleError(f"{name}: not an oracle scores file (format is not {FORMAT!r})")
    if doc.get("version") != VERSION or isinstance(doc.get("version"), bool):
        raise OracleError(f"{name}: unsupported version {doc.get('version')!r}, expected {VERSION}")
    at = _number(doc.get("at_ms"), "at_ms", name)
    horizon = _number(doc.get("horizon_ms"), "horizon_ms", name)
    if at < 0 or at != int(at) or horizon <= 0:
        raise OracleError(f"{name}: at_ms must be a whole number >= 0 and horizon_ms > 0")
    keys = _keys(doc.get("keys_hex"), name)
    futures = doc.get("futures")
    if futures is not None and (isinstance(futures, bool) or not isinstance(futures, int) or futures < 1):
        raise OracleError(f"{name}: futures must be a whole number >= 1, got {futures!r}")
    p = _probabilities(doc.get("p_read"), len(keys), name)
    return OracleScores(int(at), horizon, keys, p, futures, name)


def read_oracle(path: str | os.PathLike) -> OracleScores:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OracleError(f"{path}: cannot read ({e.strerror or e})") from None
    return decode_oracle(data, name=str(path))


def encode_oracle(o: OracleScores) -> bytes:
    doc = {"format": FORMAT, "version": VERSION, "at_ms": int(o.at_ms), "horizon_ms": o.horizon_ms}
    if o.futures is not None:
        doc["futures"] = int(o.futures)
    doc["keys_hex"] = [k.hex() for k in o.keys]
    doc["p_read"] = [float(p) for p in o.p_read]
    return json.dumps(doc).encode()


def write_oracle(path: str | os.PathLike, o: OracleScores) -> None:
    atomic_write(Path(path), encode_oracle(o))
