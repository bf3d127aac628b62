"""AWPI detection (§2.2.1): SA-LSM targets workloads of mostly point reads and writes.

The trace header counts every point read, write and range query the column family served
in the window (not only the sampled records); the workload is AWPI when point reads plus
writes are above 90% of them. Training on another workload is refused unless forced:
the features and the tau-event say nothing about range scans.
"""

from __future__ import annotations

from .trace import RecordTrace

AWPI_SHARE = 0.9


class AwpiError(ValueError):
    """The trace's workload is not AWPI (or shows no requests at all)."""


def awpi_figures(trace: RecordTrace) -> dict:
    total = trace.point_reads + trace.writes + trace.scans
    share = (trace.point_reads + trace.writes) / total if total else float("nan")
    return {
        "point_reads": int(trace.point_reads),
        "writes": int(trace.writes),
        "scans": int(trace.scans),
        "point_share": share,
        "read_write_ratio": trace.point_reads / trace.writes if trace.writes else float("nan"),
        "awpi": bool(total > 0 and share > AWPI_SHARE),
    }


def check_awpi(trace: RecordTrace, force: bool = False) -> dict:
    """The AWPI figures; raises :class:`AwpiError` for a non-AWPI trace unless ``force``."""
    f = awpi_figures(trace)
    if not f["awpi"] and not force:
        if f["point_reads"] + f["writes"] + f["scans"] == 0:
            raise AwpiError("the trace counts no requests, so the workload cannot be checked for AWPI (use --force)")
        raise AwpiError(
            f"not an AWPI workload: point reads and writes are {100 * f['point_share']:.1f}% of requests "
            f"(needs > {100 * AWPI_SHARE:.0f}%; use --force to train anyway)"
        )
    return f
