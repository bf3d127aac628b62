"""Reader and writer of the record trace (engine -> service), `docs/design/formats/sa-lsm.md`.

Records have variable length (key, access times, day rows), so decoding walks them once
with ``struct``; the access times and day rows of each record are sliced with
``np.frombuffer`` and stored flat (CSR-style: one concatenated array plus offsets), which
is what the vectorised labelling and feature code wants. A reader refuses a damaged file
with :class:`TraceError` before any of it is used.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..leaper.atomic import atomic_write
from ..leaper.checksum import crc32c

MAGIC = b"CAIRNRTR"
VERSION = 2
# An access time is (ms << TAG_BITS) | tag: 0 a read, 1 a write naming no column, 2 + c a
# write of column c (version 1 stored (ms << 1) | is_write; read and converted).
TAG_BITS = 4
COLUMNS = 14
HEADER = struct.Struct("<8sIIdQQQIIQQQQ")
REC_HEAD = struct.Struct("<I")  # key length
REC_MID = struct.Struct("<QIIQ")  # insert_ms, flags, number of times, last_update_ms
U32 = struct.Struct("<I")
CRC_SIZE = 4
# The smallest record: key length, empty key, insert, flags, count, last update, day count.
MIN_RECORD = 4 + REC_MID.size + 4

FLAG_INSERT_SEEN = 1
FLAG_TRUNCATED = 2
FLAG_DELETED = 4

assert HEADER.size == 88


class TraceError(ValueError):
    """A record trace that is damaged or does not follow the format."""


def tag_time(ms: int, is_write: bool, column: int | None = None) -> int:
    """An access time as stored (see ``TAG_BITS``)."""
    tag = 0 if not is_write else 1 if column is None else 2 + min(int(column), COLUMNS - 1)
    return (int(ms) << TAG_BITS) | tag


@dataclass
class Record:
    """One record, as written by hand in tests: ``accesses`` are ``(ms, is_write)`` pairs or
    ``(ms, is_write, column)`` triples."""

    key: bytes
    insert_ms: int
    accesses: Sequence[tuple[int, bool]] = ()
    flags: int = FLAG_INSERT_SEEN
    last_update_ms: int = 0
    days: Sequence[tuple[int, int, int]] = ()  # (day, reads, writes)


@dataclass
class RecordTrace:
    """One column family's record trace.

    Access times of record ``i`` are ``times[time_off[i]:time_off[i + 1]]`` in the file's
    raw encoding (:func:`tag_time`); :attr:`access_ms`, :attr:`is_write` and
    :attr:`column` decode them. Day rows of record ``i`` are ``day[day_off[i]:day_off[i + 1]]`` (with
    ``day_reads`` / ``day_writes``).
    """

    cf_id: int
    sample_rate: float
    day_ms: int
    start_ms: int
    end_ms: int
    max_times: int
    point_reads: int = 0
    writes: int = 0
    scans: int = 0
    keys: list[bytes] = field(default_factory=list)
    insert_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    flags: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    last_update_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    time_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    day_off: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    day: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    day_reads: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    day_writes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        self.insert_ms = np.asarray(self.insert_ms, dtype=np.int64)
        self.flags = np.asarray(self.flags, dtype=np.uint32)
        self.last_update_ms = np.asarray(self.last_update_ms, dtype=np.int64)
        self.time_off = np.asarray(self.time_off, dtype=np.int64)
        self.times = np.asarray(self.times, dtype=np.uint64)
        self.day_off = np.asarray(self.day_off, dtype=np.int64)
        self.day = np.asarray(self.day, dtype=np.int64)
        self.day_reads = np.asarray(self.day_reads, dtype=np.int64)
        self.day_writes = np.asarray(self.day_writes, dtype=np.int64)

    @property
    def n_records(self) -> int:
        return len(self.keys)

    @property
    def access_ms(self) -> np.ndarray:
        return (self.times >> np.uint64(TAG_BITS)).astype(np.int64)

    @property
    def is_write(self) -> np.ndarray:
        return (self.times & np.uint64((1 << TAG_BITS) - 1)) != 0

    @property
    def column(self) -> np.ndarray:
        """Per access time: the column a write updated, -1 for reads and writes naming none."""
        tag = (self.times & np.uint64((1 << TAG_BITS) - 1)).astype(np.int64)
        return np.where(tag >= 2, tag - 2, -1)

    def n_times(self) -> np.ndarray:
        return np.diff(self.time_off)

    def time_owner(self) -> np.ndarray:
        """Record index of every flat access time."""
        return np.repeat(np.arange(self.n_records, dtype=np.int64), self.n_times())

    def day_owner(self) -> np.ndarray:
        """Record index of every flat day row."""
        return np.repeat(np.arange(self.n_records, dtype=np.int64), np.diff(self.day_off))

    def record(self, i: int) -> Record:
        a, b = int(self.time_off[i]), int(self.time_off[i + 1])
        c, d = int(self.day_off[i]), int(self.day_off[i + 1])
        ms, w, col = self.access_ms[a:b], self.is_write[a:b], self.column[a:b]
        return Record(
            key=self.keys[i],
            insert_ms=int(self.insert_ms[i]),
            accesses=[(int(t), bool(x)) if c < 0 else (int(t), bool(x), int(c)) for t, x, c in zip(ms, w, col)],
            flags=int(self.flags[i]),
            last_update_ms=int(self.last_update_ms[i]),
            days=[
                (int(x), int(y), int(z)) for x, y, z in zip(self.day[c:d], self.day_reads[c:d], self.day_writes[c:d])
            ],
        )

    @classmethod
    def from_records(cls, records: Sequence[Record], **header) -> RecordTrace:
        """Build a trace from :class:`Record` objects; ``header`` holds the header fields.

        ``days`` left empty are derived from the accesses (exact, as the engine's are).
        """
        times, days, d_reads, d_writes = [], [], [], []
        t_off, d_off = [0], [0]
        day_ms = int(header["day_ms"])
        for r in records:
            acc = sorted((int(a[0]), bool(a[1]), a[2] if len(a) > 2 else None) for a in r.accesses)
            times.extend(tag_time(t, w, c) for t, w, c in acc)
            t_off.append(len(times))
            rows = list(r.days)
            if not rows and acc:
                per: dict[int, list[int]] = {}
                for t, w, _ in acc:
                    per.setdefault(t // day_ms, [0, 0])[int(w)] += 1
                rows = [(d, rw[0], rw[1]) for d, rw in sorted(per.items())]
            for d, rd, wr in rows:
                days.append(d)
                d_reads.append(rd)
                d_writes.append(wr)
            d_off.append(len(days))
        header.setdefault("max_times", max([t_off[i + 1] - t_off[i] for i in range(len(records))] + [1]))
        return cls(
            keys=[bytes(r.key) for r in records],
            insert_ms=[r.insert_ms for r in records],
            flags=[r.flags for r in records],
            last_update_ms=[r.last_update_ms for r in records],
            time_off=t_off,
            times=np.array(times, dtype=np.uint64),
            day_off=d_off,
            day=days,
            day_reads=d_reads,
            day_writes=d_writes,
            **header,
        )

    def subset(self, idx: np.ndarray) -> RecordTrace:
        """The trace restricted to records ``idx`` (in that order); header unchanged."""
        idx = np.asarray(idx, dtype=np.int64)
        t_sel, t_off = _gather(self.time_off, idx)
        d_sel, d_off = _gather(self.day_off, idx)
        return RecordTrace(
            cf_id=self.cf_id,
            sample_rate=self.sample_rate,
            day_ms=self.day_ms,
            start_ms=self.start_ms,
            end_ms=self.end_ms,
            max_times=self.max_times,
            point_reads=self.point_reads,
            writes=self.writes,
            scans=self.scans,
            keys=[self.keys[i] for i in idx],
            insert_ms=self.insert_ms[idx],
            flags=self.flags[idx],
            last_update_ms=self.last_update_ms[idx],
            time_off=t_off,
            times=self.times[t_sel],
            day_off=d_off,
            day=self.day[d_sel],
            day_reads=self.day_reads[d_sel],
            day_writes=self.day_writes[d_sel],
        )

    def cut(self, t_cut: int) -> tuple[RecordTrace, np.ndarray]:
        """What the query store would have exported at ``t_cut`` (for leak-free evaluation).

        Keeps access times ``<= t_cut`` and whole days before ``t_cut``'s day (the day
        holding ``t_cut`` may count later accesses), recomputes ``last_update_ms`` from
        the kept writes, and drops records not yet seen. Returns the trace and the
        original index of each kept record. Request counts stay those of the whole window
        (they only feed the AWPI check). Exact only where the cap truncated no record
        after ``t_cut``: otherwise the cut keeps only the times that survived the later
        cap (it loses the busiest records' history, never adds future). So the offline
        trace is exported with room (``salsm-trace --store-times``) and :meth:`capped` to
        the engine's size after the cut (``Settings.store_times``).
        """
        t_cut = int(t_cut)
        ms, w = self.access_ms, self.is_write
        owner = self.time_owner()
        keep_t = ms <= t_cut
        first_d = self.day < t_cut // self.day_ms
        seen = np.bincount(owner[keep_t], minlength=self.n_records) > 0
        # A record whose cap dropped its early times may still predate t_cut.
        seen |= (self.insert_ms <= t_cut) & ((self.flags & FLAG_TRUNCATED) > 0)
        kept = np.flatnonzero(seen)
        # Newest kept write that is not the insert (the first time, when it was seen).
        upd = np.zeros(self.n_records, dtype=np.int64)
        is_insert = np.zeros(ms.shape[0], dtype=bool)
        has_ins = (self.flags & (FLAG_INSERT_SEEN | FLAG_TRUNCATED)) == FLAG_INSERT_SEEN
        has_ins &= self.n_times() > 0
        is_insert[self.time_off[:-1][has_ins]] = True
        wsel = keep_t & w & ~is_insert
        np.maximum.at(upd, owner[wsel], ms[wsel])
        old = (self.last_update_ms <= t_cut) & (self.last_update_ms > 0)
        upd = np.where(upd > 0, upd, np.where(old, self.last_update_ms, 0))
        out = RecordTrace(
            cf_id=self.cf_id,
            sample_rate=self.sample_rate,
            day_ms=self.day_ms,
            start_ms=self.start_ms,
            end_ms=max(t_cut, self.start_ms),
            max_times=self.max_times,
            point_reads=self.point_reads,
            writes=self.writes,
            scans=self.scans,
            keys=list(self.keys),
            insert_ms=self.insert_ms,
            flags=self.flags & ~np.uint32(FLAG_DELETED),
            last_update_ms=upd,
            time_off=np.concatenate([[0], np.cumsum(np.bincount(owner[keep_t], minlength=self.n_records))]),
            times=self.times[keep_t],
            day_off=np.concatenate([[0], np.cumsum(np.bincount(self.day_owner()[first_d], minlength=self.n_records))]),
            day=self.day[first_d],
            day_reads=self.day_reads[first_d],
            day_writes=self.day_writes[first_d],
        )
        return out.subset(kept), kept

    def capped(self, max_times: int) -> RecordTrace:
        """What a query store keeping only ``max_times`` access times per record would
        have exported: each record's newest ``max_times`` times, ``FLAG_TRUNCATED`` where
        older ones go (as the engine's store drops them). The per-day counts and the last
        update time are kept whole, as the store keeps them apart from the times. A trace
        already within the cap is returned as is.
        """
        if max_times < 1:
            raise ValueError(f"max_times must be >= 1, got {max_times}")
        n = self.n_times()
        if self.max_times <= max_times or not np.any(n > max_times):
            return self
        pos = np.arange(self.times.size, dtype=np.int64) - np.repeat(self.time_off[:-1], n)
        keep = pos >= np.repeat(n - max_times, n)
        flags = np.where(n > max_times, self.flags | np.uint32(FLAG_TRUNCATED), self.flags)
        return replace(
            self,
            max_times=max_times,
            flags=flags,
            time_off=np.concatenate([[0], np.cumsum(np.minimum(n, max_times))]),
            times=self.times[keep],
        )


def _gather(off: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of the segments ``idx`` of a CSR offset array, and their new offsets."""
    lens = off[idx + 1] - off[idx]
    new_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    starts = np.repeat(off[idx] - new_off[:-1], lens)
    return starts + np.arange(new_off[-1], dtype=np.int64), new_off


def _check_header(name: str, sample_rate: float, day_ms: int, start_ms: int, end_ms: int) -> None:
    if not (0.0 < sample_rate <= 1.0):
        raise TraceError(f"{name}: sample rate {sample_rate} is not in (0, 1]")
    if day_ms < 1:
        raise TraceError(f"{name}: day_ms must be >= 1, got {day_ms}")
    if end_ms < start_ms:
        raise TraceError(f"{name}: end_ms {end_ms} is before start_ms {start_ms}")


def encode_trace(t: RecordTrace) -> bytes:
    """Serialize ``t`` (checks the invariants a reader checks, so a written file reads back)."""
    _check_header("trace", t.sample_rate, t.day_ms, t.start_ms, t.end_ms)
    parts = [
        HEADER.pack(
            MAGIC,
            VERSION,
            t.cf_id,
            t.sample_rate,
            t.day_ms,
            t.start_ms,
            t.end_ms,
            t.max_times,
            0,
            t.point_reads,
            t.writes,
            t.scans,
            t.n_records,
        )
    ]
    ms = t.access_ms
    for i, key in enumerate(t.keys):
        a, b = int(t.time_off[i]), int(t.time_off[i + 1])
        c, d = int(t.day_off[i]), int(t.day_off[i + 1])
        if b - a > t.max_times:
            raise TraceError(f"record {i}: {b - a} access times, above max_times {t.max_times}")
        if b - a > 1 and (np.diff(ms[a:b]) < 0).any():
            raise TraceError(f"record {i}: access times out of order")
        if d - c > 1 and (np.diff(t.day[c:d]) <= 0).any():
            raise TraceError(f"record {i}: day rows out of order")
        parts.append(REC_HEAD.pack(len(key)))
        parts.append(bytes(key))
        parts.append(REC_MID.pack(int(t.insert_ms[i]), int(t.flags[i]), b - a, int(t.last_update_ms[i])))
        parts.append(t.times[a:b].astype("<u8").tobytes())
        parts.append(U32.pack(d - c))
        rows = np.stack([t.day[c:d], t.day_reads[c:d], t.day_writes[c:d]], axis=1).astype("<u4")
        parts.append(rows.tobytes())
    body = b"".join(parts)
    return body + U32.pack(crc32c(body))


def decode_trace(data: bytes, name: str = "trace") -> RecordTrace:
    """Parse and verify a record trace; raises :class:`TraceError` naming what is wrong."""
    view = memoryview(data)
    if len(view) < HEADER.size + CRC_SIZE:
        raise TraceError(f"{name}: truncated: {len(view)} bytes, a record trace has at least {HEADER.size + CRC_SIZE}")
    if bytes(view[:8]) != MAGIC:
        raise TraceError(f"{name}: bad magic {bytes(view[:8])!r}, expected {MAGIC!r}")
    (magic, version, cf_id, rate, day_ms, start_ms, end_ms, max_times, _res, reads, writes, scans, n) = (
        HEADER.unpack_from(view, 0)
    )
    if not 1 <= version <= VERSION:
        raise TraceError(f"{name}: unsupported version {version}, expected 1 to {VERSION}")
    (stored,) = U32.unpack_from(view, len(view) - CRC_SIZE)
    actual = crc32c(view[:-CRC_SIZE])
    if stored != actual:
        raise TraceError(f"{name}: CRC32C mismatch: stored {stored:08x}, computed {actual:08x} (damaged or truncated)")
    _check_header(name, rate, day_ms, start_ms, end_ms)
    body = len(view) - CRC_SIZE
    if n > (body - HEADER.size) // MIN_RECORD:
        raise TraceError(f"{name}: header says {n} records, more than {body} bytes can hold")

    keys: list[bytes] = []
    ins = np.empty(n, np.int64)
    flags = np.empty(n, np.uint32)
    upd = np.empty(n, np.int64)
    t_off = np.zeros(n + 1, np.int64)
    d_off = np.zeros(n + 1, np.int64)
    t_chunks, d_chunks = [], []
    pos = HEADER.size

    def need(k: int, what: str, i: int) -> None:
        if pos + k > body:
            raise TraceError(f"{name}: truncated in record {i} ({what}): needs {pos + k} bytes, has {body}")

    for i in range(n):
        need(4, "key length", i)
        (klen,) = REC_HEAD.unpack_from(view, pos)
        pos += 4
        need(klen + REC_MID.size, "key and times header", i)
        keys.append(bytes(view[pos : pos + klen]))
        pos += klen
        ins[i], flags[i], nt, upd[i] = REC_MID.unpack_from(view, pos)
        pos += REC_MID.size
        if nt > max_times:
            raise TraceError(f"{name}: record {i} has {nt} access times, above max_times {max_times}")
        need(8 * nt + 4, "access times", i)
        t = np.frombuffer(view, dtype="<u8", count=nt, offset=pos)
        pos += 8 * nt
        if version == 1:
            if (t >> np.uint64(60)).any():
                raise TraceError(f"{name}: record {i}: a version-1 access time too large to convert")
            t = ((t >> np.uint64(1)) << np.uint64(TAG_BITS)) | (t & np.uint64(1))
        if nt > 1 and ((t[1:] >> np.uint64(TAG_BITS)) < (t[:-1] >> np.uint64(TAG_BITS))).any():
            raise TraceError(f"{name}: record {i}: access times out of order")
        t_chunks.append(t)
        t_off[i + 1] = t_off[i] + nt
        (nd,) = U32.unpack_from(view, pos)
        pos += 4
        need(12 * nd, "day rows", i)
        rows = np.frombuffer(view, dtype="<u4", count=3 * nd, offset=pos).reshape(nd, 3)
        pos += 12 * nd
        if nd > 1 and (rows[1:, 0] <= rows[:-1, 0]).any():
            raise TraceError(f"{name}: record {i}: day rows out of order")
        d_chunks.append(rows)
        d_off[i + 1] = d_off[i] + nd
    if pos != body:
        raise TraceError(f"{name}: {body - pos} bytes after the last of {n} records")
    days = np.concatenate(d_chunks).astype(np.int64) if d_chunks else np.zeros((0, 3), np.int64)
    return RecordTrace(
        cf_id=cf_id,
        sample_rate=rate,
        day_ms=day_ms,
        start_ms=start_ms,
        end_ms=end_ms,
        max_times=max_times,
        point_reads=reads,
        writes=writes,
        scans=scans,
        keys=keys,
        insert_ms=ins,
        flags=flags,
        last_update_ms=upd,
        time_off=t_off,
        times=np.concatenate(t_chunks).astype(np.uint64) if t_chunks else np.zeros(0, np.uint64),
        day_off=d_off,
        day=days[:, 0],
        day_reads=days[:, 1],
        day_writes=days[:, 2],
    )


def read_trace(path: str | os.PathLike) -> RecordTrace:
    """Read and verify the record trace at ``path``."""
    path = Path(path)
    return decode_trace(path.read_bytes(), name=str(path))


def write_trace(path: str | os.PathLike, trace: RecordTrace) -> None:
    """Write ``trace`` to ``path`` atomically (temporary name in the same folder, then rename)."""
    atomic_write(Path(path), encode_trace(trace))
