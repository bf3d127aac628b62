"""What train, evaluate, the tau search and the sweeps share: the settings, the seeded
record split, the sample cap, and sample building under the settings."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .features import Samples, make_samples
from .labels import EVENT_KINDS
from .trace import RecordTrace

TAU_CANDIDATES = (0.25, 0.5, 1.0, 2.0)


@dataclass
class Settings:
    tau_days: float = 1.0
    n_pivots: int = 10
    horizon_days: float = 30.0
    seed: int = 0
    n_jobs: int = 2
    force: bool = False
    # Cap on the samples a model is fit on (a uniform subset; 0: all). RSF's cost grows
    # with samples x trees, and the paper's Fig. 14 shows it ahead of GBDT on a tenth of
    # GBDT's samples; 50k keeps a fit within about a minute on 2 cores.
    max_samples: int = 50_000
    # Accesses that make tau-events: "reads" (what costs on the cold tier) or "all".
    event_kinds: str = "reads"
    # tau by cross-validation on the training window (:mod:`.tune`) instead of tau_days.
    tau_auto: bool = False
    tau_candidates: tuple[float, ...] = TAU_CANDIDATES
    # Access times per record of the query store the models see (0: the trace as exported).
    # A trace exported with more times than the engine keeps (salsm-trace --store-times)
    # can be cut at any earlier time and capped to this, which is what a store of that
    # size would have held then; truths (reads in a horizon) always use every time.
    store_times: int = 0

    def __post_init__(self) -> None:
        if self.event_kinds not in EVENT_KINDS:
            raise ValueError(f"event kinds must be one of {', '.join(EVENT_KINDS)}, got {self.event_kinds!r}")
        if self.store_times < 0:
            raise ValueError(f"store times must be >= 0 (0: as exported), got {self.store_times}")
        if not self.tau_candidates or min(self.tau_candidates) <= 0:
            raise ValueError(f"tau candidates must be > 0 days, got {list(self.tau_candidates)}")


def store_view(trace: RecordTrace, s: Settings) -> RecordTrace:
    """``trace`` as a query store of ``s.store_times`` times per record holds it."""
    return trace.capped(s.store_times) if s.store_times else trace


def cut_view(trace: RecordTrace, t_ms: float, s: Settings) -> tuple[RecordTrace, np.ndarray]:
    """What the store held at ``t_ms`` (:meth:`RecordTrace.cut`, then the store's cap),
    and the index in ``trace`` of each of its records."""
    cut, kept = trace.cut(int(t_ms))
    return store_view(cut, s), kept


def cap_samples(samples: Samples, s: Settings) -> Samples:
    """A seeded uniform subset of at most ``s.max_samples`` samples."""
    n = len(samples)
    if s.max_samples <= 0 or n <= s.max_samples:
        return samples
    return share_of(samples, s.max_samples / n, s.seed + 1)


def share_of(samples: Samples, share: float, seed: int) -> Samples:
    """A seeded uniform subset of ``round(share * n)`` samples (at least one)."""
    n = len(samples)
    k = min(n, max(1, int(round(share * n))))
    keep = np.zeros(n, dtype=bool)
    keep[np.random.default_rng(seed).choice(n, size=k, replace=False)] = True
    return samples.take(keep)


def train_split(keys: list[bytes], seed: int, train_share: float = 0.8) -> np.ndarray:
    """True for the records on the training side: a keyed BLAKE2b hash of the key, so the
    split is stable across runs and independent of record order."""
    salt = seed.to_bytes(8, "little", signed=True)
    h = np.fromiter(
        (int.from_bytes(hashlib.blake2b(k, digest_size=8, key=salt).digest(), "little") for k in keys),
        dtype=np.uint64,
        count=len(keys),
    )
    return h < np.uint64(int(train_share * 2**64))


def window_samples(trace: RecordTrace, s: Settings, t_end: float | None = None, records=None) -> Samples:
    """Alg. 1 pivots and eq. 1 labels of the window ending at ``t_end``, under ``s``."""
    rng = np.random.default_rng(s.seed)
    tau_ms = s.tau_days * trace.day_ms
    return make_samples(trace, s.n_pivots, tau_ms, rng, t_end=t_end, records=records, events=s.event_kinds)
