"""Shared fixtures: one small synthetic trace and one training run on it (session-wide,
so the slow part, LightGBM, runs once for the whole suite)."""

from __future__ import annotations

import pytest

try:
    import numpy as np

    from cairn.learn.leaper.counts import Counts, from_traces
    from cairn.learn.leaper.synth import SynthConfig, synth_trace
    from cairn.learn.leaper.trace import Trace, make_rows, make_transfers
    from cairn.learn.leaper.train import TrainConfig, train
except ImportError:
    # A plain install (no `learn` extra), as scripts/wheel-check.sh tests the wheel: only
    # the binding tests run there, and they use none of what follows.
    LEARN = False
else:
    LEARN = True

if LEARN:
    # Four days of 20-minute slots: enough days for the time-of-day features, small
    # enough for a few seconds of training on two cores.
    SMALL = SynthConfig(slots=288, slot_ms=1_200_000, ranges=1000, ops_per_slot=600, seed=0)


@pytest.fixture(scope="session")
def small_trace() -> Trace:
    return synth_trace(SMALL)


@pytest.fixture(scope="session")
def trained(small_trace):
    # One LightGBM thread: on a busy two-core machine, OpenMP threads waiting for each
    # other make training many times slower; one thread keeps the suite's time steady.
    return train([small_trace], TrainConfig(k=2, rounds=100, threads=1, seed=0))


def trace_of(cells, transfers=(), *, range_width=10, slot_ms=60_000, sample_p=1.0, start_unix_ms=0) -> Trace:
    """A trace from ``(range, slot, reads, writes)`` tuples and ``(to, from, count)`` tuples."""
    cells = list(cells)
    rows = make_rows(*(np.array([c[i] for c in cells], dtype=np.uint64) for i in range(4))) if cells else None
    tr = list(transfers)
    trs = make_transfers(*(np.array([t[i] for t in tr], dtype=np.uint64) for i in range(3))) if tr else None
    kw = {}
    if rows is not None:
        kw["rows"] = rows[np.lexsort((rows["range"], rows["slot"]))]
    if trs is not None:
        kw["transfers"] = trs
    return Trace(
        cf_id=1,
        key_offset=0,
        range_width=range_width,
        slot_ms=slot_ms,
        sample_p=sample_p,
        start_unix_ms=start_unix_ms,
        **kw,
    )


def counts_of(cells, transfers=(), **kw) -> Counts:
    return from_traces([trace_of(cells, transfers, **kw)])


# --- The engine bindings (cairn._native) ---------------------------------------------
# scripts/test.sh builds the compiled module and sets CAIRN_REQUIRE_NATIVE=1, so there a
# missing or broken build fails the tests; elsewhere (the learners alone, say) the
# binding tests are skipped.


@pytest.fixture(scope="session")
def native():
    import os

    try:
        import cairn._native as mod
    except ImportError as e:
        if os.environ.get("CAIRN_REQUIRE_NATIVE") == "1":
            pytest.fail(f"cairn._native is not built: {e}")
        pytest.skip(f"cairn._native is not built ({e}); 'maturin develop' in python/ builds it")
    return mod


@pytest.fixture
def db_path(tmp_path, native):
    return tmp_path / "db"


@pytest.fixture
def db(db_path):
    import cairn

    d = cairn.Db(db_path, options={"write_buffer_size": 64 << 10})
    yield d
    d.close()
