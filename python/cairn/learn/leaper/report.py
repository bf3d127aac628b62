"""The offline report (the paper's Fig. 6): Leaper's models against two baselines.

All three are scored on the same test samples and labels:

* ``leaper``: model i's probability, hot at or above the bundle's threshold;
* ``last_slot``: "hot last slot, hot next": hot iff the range was read in slot s
  (the paper's offline baseline, §7.1);
* ``iw_proxy``: Incremental Warmup (X-Engine's default) refills the cache with the new
  blocks that overlap blocks already cached, i.e. whatever was read recently enough to
  still be in the cache. Offline there is no cache to look at, so the proxy is: hot iff
  the range was read in any of the last W slots (W = 6 by default, the whole feature
  history), standing for a cache that holds about W slots' worth of reads.

Baseline AUCs are those of their 0/1 decisions (one point on the ROC curve);
``last_slot`` also carries ``auc_r1``, the AUC of its read count r1 used as a score, a
stronger ranking baseline than the rule itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .features import R_COLS, Samples
from .metrics import auc, scores

METHODS = ("leaper", "last_slot", "iw_proxy")
LABELS = {"leaper": "leaper", "last_slot": "last-slot", "iw_proxy": "IW proxy"}


def baseline_decisions(x: np.ndarray, iw_window: int, hot_reads: float = 1.0) -> dict[str, np.ndarray]:
    """The two baselines' hot/cold decisions from the feature rows, a range being hot in a
    past slot when it had at least ``hot_reads`` reads there (the labels' rule)."""
    reads = x[:, R_COLS]
    return {
        "last_slot": np.asarray(reads[:, 0] >= hot_reads),
        "iw_proxy": np.asarray((reads[:, :iw_window] >= hot_reads).any(axis=1)),
    }


def evaluate(
    samples: Samples,
    probs: Sequence[np.ndarray],
    threshold: float,
    iw_window: int,
    hot_reads: float = 1.0,
) -> dict:
    """Per-horizon precision / recall / AUC of the models and the baselines on ``samples``
    (labelled with ``hot_reads``)."""
    base = baseline_decisions(samples.x, iw_window, hot_reads)
    horizons = []
    for i, prob in enumerate(probs):
        y = samples.y[:, i]
        last = scores(y, base["last_slot"]).as_dict()
        last["auc_r1"] = auc(y, samples.x[:, 0])
        horizons.append(
            {
                "horizon": i + 1,
                "positive_rate": float(y.mean()) if y.shape[0] else float("nan"),
                "leaper": scores(y, prob >= threshold, prob).as_dict(),
                "last_slot": last,
                "iw_proxy": scores(y, base["iw_proxy"]).as_dict(),
            }
        )
    return {
        "threshold": threshold,
        "iw_window": iw_window,
        "hot_reads": hot_reads,
        "test_samples": len(samples),
        "horizons": horizons,
    }


def _fmt(v) -> str:
    return "   n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:6.3f}"


def format_table(report: dict) -> str:
    """A plain-text table: one line per horizon and method."""
    w = report.get("iw_window", 6)
    lines = [f"{'horizon':>7}  {'method':<14} {'precision':>9} {'recall':>7} {'AUC':>7} {'hot':>8}"]
    for h in report["horizons"]:
        for m in METHODS:
            s = h[m]
            label = LABELS[m] + (f" (W={w})" if m == "iw_proxy" else "")
            lines.append(
                f"{h['horizon']:>7}  {label:<14} {_fmt(s['precision']):>9} {_fmt(s['recall']):>7} "
                f"{_fmt(s['auc']):>7} {s['predicted']:>8}"
            )
    h1 = report["horizons"][0] if report["horizons"] else None
    foot = [f"threshold {report['threshold']:.4f}; {report.get('test_samples', 0)} test samples"]
    if h1 is not None:
        foot.append(f"positive rate (h=1) {_fmt(h1['positive_rate']).strip()}")
        foot.append(f"last-slot AUC with r1 as score (h=1) {_fmt(h1['last_slot']['auc_r1']).strip()}")
    if "uncovered_positive_share" in report:
        foot.append(f"reads outside the sample set (h=1) {report['uncovered_positive_share']:.3f}")
    if "range_width" in report:
        foot.append(f"range width A* = {report['range_width']} (m = {report.get('range_multiplier')})")
    return "\n".join(lines + ["; ".join(foot)])


def json_safe(obj):
    """Replace NaN and infinities by None, so strict JSON readers (serde_json) accept it."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    return obj


def write_figure(report: dict, path: str) -> bool:
    """Fig. 6-style bars (precision, recall, AUC for horizon 1); False when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    h = report["horizons"][0]
    metrics = ("precision", "recall", "auc")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.27
    for j, m in enumerate(METHODS):
        vals = [h[m][k] if h[m][k] is not None else 0.0 for k in metrics]
        ax.bar([i + (j - 1) * width for i in range(len(metrics))], vals, width, label=LABELS[m])
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(["precision", "recall", "AUC"])
    ax.set_ylim(0, 1.2)
    ax.legend(loc="upper center", ncol=len(METHODS), frameon=False)
    ax.set_title("Leaper offline metrics (next slot)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
