"""Writer (and reader, for tests) of the cold-key set (service -> engine), `docs/design/formats/sa-lsm.md`.

The set holds whole keys, strictly ascending bytewise, so the engine answers membership
exactly with a binary search. The writer sorts and deduplicates; the reader refuses keys
out of order, as the engine does.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ..leaper.atomic import atomic_write
from ..leaper.checksum import crc32c

MAGIC = b"CAIRNCLD"
VERSION = 1
HEAD = struct.Struct("<8sIIQQd")  # magic, version, cf id, created_ms, trace_end_ms, alpha
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
CRC_SIZE = 4
# Names a set may carry (``gbdt``: an older name of ``gbdt-h``); informative only.
METHODS = ("rsf", "gbdt-naive", "gbdt-h", "gbdt", "cox", "lru", "lfu", "lru2", "lirs", "oracle")


class ColdSetError(ValueError):
    """A cold-key set that is damaged or does not follow the format."""


@dataclass
class ColdSet:
    cf_id: int
    trace_end_ms: int
    alpha: float  # ms: Algorithm 3's threshold, or the budget's equivalent
    method: str
    keys: list[bytes] = field(default_factory=list)
    created_ms: int | None = None  # the trace's end_ms unless given

    def __post_init__(self) -> None:
        if self.created_ms is None:
            self.created_ms = self.trace_end_ms


def encode_cold_set(cs: ColdSet) -> bytes:
    """Serialize ``cs``; keys are sorted bytewise and deduplicated here."""
    method = cs.method.encode("utf-8")
    if not method:
        raise ColdSetError("method name is empty")
    keys = sorted(set(bytes(k) for k in cs.keys))
    parts = [HEAD.pack(MAGIC, VERSION, cs.cf_id, int(cs.created_ms), int(cs.trace_end_ms), float(cs.alpha))]
    parts += [U32.pack(len(method)), method, U64.pack(len(keys))]
    for k in keys:
        parts += [U32.pack(len(k)), k]
    body = b"".join(parts)
    return body + U32.pack(crc32c(body))


def decode_cold_set(data: bytes, name: str = "cold set") -> ColdSet:
    """Parse and verify a cold-key set; raises :class:`ColdSetError` naming what is wrong."""
    view = memoryview(data)
    minimum = HEAD.size + 4 + 8 + CRC_SIZE
    if len(view) < minimum:
        raise ColdSetError(f"{name}: truncated: {len(view)} bytes, a cold-key set has at least {minimum}")
    if bytes(view[:8]) != MAGIC:
        raise ColdSetError(f"{name}: bad magic {bytes(view[:8])!r}, expected {MAGIC!r}")
    _, version, cf_id, created, trace_end, alpha = HEAD.unpack_from(view, 0)
    if version != VERSION:
        raise ColdSetError(f"{name}: unsupported version {version}, expected {VERSION}")
    (stored,) = U32.unpack_from(view, len(view) - CRC_SIZE)
    actual = crc32c(view[:-CRC_SIZE])
    if stored != actual:
        raise ColdSetError(f"{name}: CRC32C mismatch: stored {stored:08x}, computed {actual:08x}")
    body = len(view) - CRC_SIZE
    pos = HEAD.size

    def take(k: int, what: str) -> memoryview:
        nonlocal pos
        if pos + k > body:
            raise ColdSetError(f"{name}: truncated ({what})")
        out = view[pos : pos + k]
        pos += k
        return out

    (mlen,) = U32.unpack(take(4, "method length"))
    try:
        method = bytes(take(mlen, "method")).decode("utf-8")
    except UnicodeDecodeError:
        raise ColdSetError(f"{name}: method name is not UTF-8") from None
    (n,) = U64.unpack(take(8, "key count"))
    if n > (body - pos) // 4:
        raise ColdSetError(f"{name}: header says {n} keys, more than the file can hold")
    keys: list[bytes] = []
    for i in range(n):
        (klen,) = U32.unpack(take(4, f"key {i} length"))
        k = bytes(take(klen, f"key {i}"))
        if keys and k <= keys[-1]:
            raise ColdSetError(f"{name}: key {i} is not strictly above the previous one (out of order or repeated)")
        keys.append(k)
    if pos != body:
        raise ColdSetError(f"{name}: {body - pos} bytes after the last key")
    return ColdSet(cf_id=cf_id, trace_end_ms=trace_end, alpha=alpha, method=method, keys=keys, created_ms=created)


def read_cold_set(path: str | os.PathLike) -> ColdSet:
    path = Path(path)
    return decode_cold_set(path.read_bytes(), name=str(path))


def write_cold_set(path: str | os.PathLike, cs: ColdSet) -> None:
    """Write ``cs`` to ``path`` atomically (temporary name in the same folder, then rename)."""
    atomic_write(Path(path), encode_cold_set(cs))
