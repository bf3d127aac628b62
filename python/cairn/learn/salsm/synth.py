"""Synthetic AWPI record traces for tests and offline experiments (not the paper's data).

Records are inserted over the window (a share of them before collection started, so their
insert is not seen) and are accessed by one of five behaviours, mixed per profile:

* ``flash``: a burst right after the insert that dies within hours to a day;
* ``short``: popularity decaying over a few days;
* ``long``: popularity decaying over weeks;
* ``periodic``: a short burst every 5 to 20 days (a monthly statement, a settlement), the
  case where recency alone misleads;
* ``dormant``: the insert, then only isolated accesses at least 1.5 days apart.

Decaying popularity is a Poisson process with rate ``r0 * exp(-age / L)``; ``r0`` and the
lifetime ``L`` are log-normal per record (heterogeneous, long-tailed lifetimes). Active
records also get rare isolated accesses (one every two months), the noise that tau-events skip.
Each access is a read or a write; the write share is set so that the trace's read/write
ratio is about the profile's.

The six profiles borrow the names, read/write ratios and censored shares of the paper's
Table 2 (auction 3.7 / 55%, dispute 42.5 / 72%, funds 1.9 / 92%, logistics 16.8 / 68%,
order 3.6 / 82%, pay 13.8 / 45%) only as targets for the shape: the traces are synthetic,
and the censored share they reach (of pivot samples, tau = 1 day) is approximate.
The Rust bench has its own generator; this one is for the Python tests and experiments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .trace import FLAG_INSERT_SEEN, FLAG_TRUNCATED, TAG_BITS, RecordTrace

BEHAVIOURS = ("flash", "short", "long", "periodic", "dormant")
SPARSE_GAP = 1.5  # days between a dormant record's accesses, at least


@dataclass(frozen=True)
class Profile:
    rw_ratio: float  # point reads per write (Table 2)
    censored: float  # Table 2's censored share: what the mix aims at
    mix: tuple[float, float, float, float, float]  # shares of BEHAVIOURS
    heat: float = 1.0  # multiplies the access rates of the decaying behaviours
    noise_per_day: float = 1 / 60  # isolated accesses of the active records
    sparse_per_day: float = 1 / 10  # accesses of the dormant records (SPARSE_GAP apart)


# Mixes and heats tuned so that 4000-record traces land near Table 2's two figures.
PROFILES = {
    "auction": Profile(3.7, 0.552, (0.105, 0.105, 0.07, 0.07, 0.65), heat=2.0),
    "dispute": Profile(42.5, 0.716, (0.045, 0.045, 0.068, 0.022, 0.82), heat=36.0),
    "funds": Profile(1.9, 0.918, (0.026, 0.017, 0.009, 0.009, 0.94)),
    "logistics": Profile(16.8, 0.678, (0.079, 0.052, 0.052, 0.026, 0.79), heat=16.0),
    "order": Profile(3.6, 0.819, (0.06, 0.04, 0.02, 0.02, 0.86)),
    "pay": Profile(13.8, 0.450, (0.09, 0.135, 0.135, 0.09, 0.55), heat=2.0),
}


@dataclass
class SynthConfig:
    profile: str = "logistics"
    records: int = 4000
    days: int = 90  # length of the observation window (evaluate needs more than the horizon)
    pre_days: int = 20  # records inserted up to this many days before collection started ...
    pre_share: float = 0.15  # ... make up this share
    day_ms: int = 86_400_000
    start_day: int = 19_700  # start_ms = start_day * day_ms
    max_times: int = 256
    scan_share: float = 0.02  # range queries among all requests (AWPI: small)
    seed: int = 0
    cf_id: int = 0


def _lognormal(rng: np.random.Generator, median: float, sigma: float, n: int) -> np.ndarray:
    return median * np.exp(sigma * rng.standard_normal(n))


def synth_trace(cfg: SynthConfig | None = None) -> RecordTrace:
    """A deterministic (given ``cfg.seed``) synthetic record trace; see the module docstring."""
    cfg = cfg or SynthConfig()
    try:
        prof = PROFILES[cfg.profile]
    except KeyError:
        raise ValueError(f"unknown profile {cfg.profile!r}; choose from {', '.join(PROFILES)}") from None
    rng = np.random.default_rng(cfg.seed)
    n, end = cfg.records, float(cfg.days)
    pre = rng.random(n) < cfg.pre_share
    ins = np.where(pre, -rng.random(n) * cfg.pre_days, rng.random(n) * (end - 0.5))
    mix = np.asarray(prof.mix) / np.sum(prof.mix)
    kind = rng.choice(len(BEHAVIOURS), size=n, p=mix)
    span = end - ins  # time from insert to the end of the window

    recs, times = [np.arange(n)], [ins]  # the insert is the first access

    # Decaying popularity: inverse-CDF draws of a truncated exponential on [ins, end).
    for k, (l_med, r_med) in zip((0, 1, 2), ((0.25, 40.0), (3.0, 4.0), (20.0, 1.5))):
        idx = np.flatnonzero(kind == k)
        life = _lognormal(rng, l_med, 0.6, idx.size)
        r0 = _lognormal(rng, r_med * prof.heat, 0.5, idx.size)
        frac = 1.0 - np.exp(-span[idx] / life)
        cnt = rng.poisson(r0 * life * frac)
        owner = np.repeat(idx, cnt)
        u = rng.random(owner.size)
        t = ins[owner] - np.repeat(life, cnt) * np.log1p(-u * np.repeat(frac, cnt))
        recs.append(owner)
        times.append(t)

    # Periodic bursts: every `period` days a burst of 2-6 accesses within two hours.
    idx = np.flatnonzero(kind == 3)
    period = rng.uniform(5.0, 20.0, idx.size)
    nb = np.floor(span[idx] / period).astype(np.int64)
    b_owner = np.repeat(np.arange(idx.size), nb)
    b_k = np.arange(b_owner.size) - np.repeat(np.cumsum(nb) - nb, nb) + 1
    b_start = ins[idx][b_owner] + b_k * period[b_owner] + rng.normal(0.0, 0.3, b_owner.size)
    keep = rng.random(b_owner.size) < 0.85
    b_owner, b_start = b_owner[keep], b_start[keep]
    m = 2 + rng.poisson(2.0, b_owner.size)
    owner = np.repeat(idx[b_owner], m)
    recs.append(owner)
    times.append(np.repeat(b_start, m) + rng.random(owner.size) * (2.0 / 24.0))

    # Rare isolated accesses of the active records (noise that tau-events skip).
    cnt = rng.poisson(np.where(kind == 4, 0.0, prof.noise_per_day) * span)
    owner = np.repeat(np.arange(n), cnt)
    recs.append(owner)
    times.append(ins[owner] + rng.random(owner.size) * span[owner])

    # Dormant records: isolated accesses at least GAP days apart (uniform order statistics
    # on the span left after reserving the gaps, then shifted by one gap per rank).
    idx = np.flatnonzero(kind == 4)
    cnt = np.minimum(rng.poisson(prof.sparse_per_day * span[idx]), np.floor(span[idx] / SPARSE_GAP).astype(np.int64))
    owner = np.repeat(idx, cnt)
    u = rng.random(owner.size) * (span[owner] - SPARSE_GAP * np.repeat(cnt, cnt))
    order = np.lexsort((u, owner))
    rank = np.arange(owner.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    recs.append(owner)
    times.append(ins[owner] + u[order] + SPARSE_GAP * (rank + 1))

    rec = np.concatenate(recs)
    t = np.concatenate(times)
    is_insert = np.zeros(rec.size, dtype=bool)
    is_insert[:n] = True
    inside = (t >= 0.0) & (t < end)
    rec, t, is_insert = rec[inside], t[inside], is_insert[inside]
    ms = cfg.start_day * cfg.day_ms + np.floor(t * cfg.day_ms).astype(np.int64)
    order = np.lexsort((~is_insert, ms, rec))  # the insert first among equal times
    rec, ms, is_insert = rec[order], ms[order], is_insert[order]

    # Writes: every seen insert, plus a share p of the other accesses tuned to the ratio.
    n_ins = int(is_insert.sum())
    others = rec.size - n_ins
    ratio = prof.rw_ratio
    p = (others - ratio * n_ins) / (others * (1.0 + ratio)) if others else 0.0
    write = is_insert | (rng.random(rec.size) < min(max(p, 0.01), 0.95))

    # Records the store saw, in key order.
    seen = np.unique(rec)
    remap = np.full(n, -1)
    remap[seen] = np.arange(seen.size)
    rec = remap[rec]
    n_seen = seen.size
    counts = np.bincount(rec, minlength=n_seen)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    insert_seen = ins[seen] >= 0.0
    insert_ms = np.where(insert_seen, cfg.start_day * cfg.day_ms + np.floor(ins[seen] * cfg.day_ms), ms[first])

    upd_ms = np.zeros(n_seen, dtype=np.int64)
    upd = write & ~is_insert
    np.maximum.at(upd_ms, rec[upd], ms[upd])

    # Per-day counts (exact, from every access), the last 64 active days of each record.
    day = ms // cfg.day_ms
    pair = rec * (1 << 32) + day
    upair, inv = np.unique(pair, return_inverse=True)
    d_reads = np.bincount(inv, weights=(~write).astype(float), minlength=upair.size).astype(np.int64)
    d_writes = np.bincount(inv, weights=write.astype(float), minlength=upair.size).astype(np.int64)
    d_rec, d_day = upair >> 32, upair & ((1 << 32) - 1)
    d_cnt = np.bincount(d_rec, minlength=n_seen)
    d_pos = np.arange(upair.size) - np.repeat(np.r_[0, np.cumsum(d_cnt)[:-1]], d_cnt)
    keep_d = d_pos >= np.repeat(d_cnt, d_cnt) - 64

    # The cap on access times keeps the newest.
    pos = np.arange(rec.size) - np.repeat(first, counts)
    keep_t = pos >= np.repeat(counts, counts) - cfg.max_times
    truncated = counts > cfg.max_times
    flags = np.where(insert_seen, FLAG_INSERT_SEEN, 0) | np.where(truncated, FLAG_TRUNCATED, 0)
    kept_counts = np.minimum(counts, cfg.max_times)

    reads_total, writes_total = int((~write).sum()), int(write.sum())
    scans = int(round(cfg.scan_share * (reads_total + writes_total) / (1.0 - cfg.scan_share)))
    return RecordTrace(
        cf_id=cfg.cf_id,
        sample_rate=1.0,
        day_ms=cfg.day_ms,
        start_ms=cfg.start_day * cfg.day_ms,
        end_ms=(cfg.start_day + cfg.days) * cfg.day_ms,
        max_times=cfg.max_times,
        point_reads=reads_total,
        writes=writes_total,
        scans=scans,
        keys=[f"{cfg.profile}:{i:08d}".encode() for i in seen],
        insert_ms=insert_ms.astype(np.int64),
        flags=flags,
        last_update_ms=upd_ms,
        time_off=np.r_[0, np.cumsum(kept_counts)],
        times=((ms[keep_t].astype(np.uint64) << np.uint64(TAG_BITS)) | write[keep_t].astype(np.uint64)),
        day_off=np.r_[0, np.cumsum(np.bincount(d_rec[keep_d], minlength=n_seen))],
        day=d_day[keep_d],
        day_reads=d_reads[keep_d],
        day_writes=d_writes[keep_d],
    )
