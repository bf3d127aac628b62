"""Periodic retraining (the paper's future work): watch a folder of traces, retrain on the
newest one when it changes, and atomically replace the bundle the engine loads."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from .bundle import write_bundle
from .report import format_table
from .trace import TraceError, read_trace
from .train import TrainConfig, to_bundle, train


def newest_trace(folder: Path, pattern: str = "*", exclude: Path | None = None) -> Path | None:
    """The most recently modified file matching ``pattern`` (dot-files, i.e. temporary
    files, and ``exclude``, the bundle when it lives in the same folder, skipped)."""
    files = [
        p
        for p in folder.glob(pattern)
        if p.is_file() and not p.name.startswith(".") and (exclude is None or p.resolve() != exclude.resolve())
    ]
    return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name), default=None)


def watch(
    folder: Path,
    out: Path,
    config: TrainConfig,
    every_s: float,
    pattern: str = "*",
    max_polls: int | None = None,
    log: Callable[[str], None] = print,
) -> int:
    """Poll ``folder`` every ``every_s`` seconds; returns the number of bundles written.

    A trace is (re)trained on when its (path, mtime, size) differs from the last one
    looked at; at start, a bundle newer than the newest trace counts as up to date. A
    trace that fails to read (damaged, or still being written without a rename) is
    logged and skipped until it changes again; the old bundle stays in place.
    """
    last: tuple | None = None
    written = polls = 0
    while True:
        path = newest_trace(folder, pattern, exclude=out)
        if path is not None:
            st = path.stat()
            key = (str(path), st.st_mtime_ns, st.st_size)
            if last is None and out.exists() and out.stat().st_mtime_ns >= st.st_mtime_ns:
                last = key
            if key != last:
                last = key
                try:
                    result = train([read_trace(path)], config)
                    write_bundle(out, to_bundle(result))
                    written += 1
                    log(format_table(result.report))
                    log(f"retrained on {path.name}: wrote {out} (threshold {result.threshold:.4f})")
                except (TraceError, ValueError) as e:
                    log(f"skipped {path.name}: {e}")
        polls += 1
        if max_polls is not None and polls >= max_polls:
            return written
        time.sleep(every_s)
