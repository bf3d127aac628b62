"""Text tables of the evaluate and sweep reports (the JSON holds everything; these are
what a person reads at the terminal)."""

from __future__ import annotations

import numpy as np

CURVE_COLUMNS = (0.1, 0.3, 0.5, 0.7, 0.9)


def _fmt(v) -> str:
    return "-" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.3f}"


def _pct(v) -> str:
    return "-" if v is None or not np.isfinite(v) else f"{v:+.1%}"


def _alpha_line(a: dict) -> str:
    if a.get("n_cold") is None:
        return f"alpha {a['alpha_days']:g} d: no alpha budget ({a.get('error', 'rsf missing')})"
    return (
        f"alpha {a['alpha_days']:g} d: rsf's Algorithm 3 migrates {a['n_cold']} held-out records "
        f"({a['migrated_share']:.1%}); fir@a gives every method that count"
    )


def format_table(rep: dict) -> str:
    """The evaluation: c-index and Uno's C with their gains over gbdt-naive (gain: relative;
    d-rm: share of its discordant pairs removed), cold_fir at the alpha count and per
    budget, then the hot records each method would place cold along the curve."""
    budgets = [f"{b:g}" for b in rep["budgets"]]
    head = (
        f"{'method':10s} {'c-index':>7s} {'gain':>7s} {'d-rm':>7s} {'uno-c':>7s} {'gain':>7s} {'d-rm':>7s} "
        f"{'fir@a':>7s} " + " ".join(f"{'fir@' + b:>8s}" for b in budgets) + f" {'secs':>6s}"
    )
    cut = rep["cut"]
    lines = [
        f"{rep['records']} records ({rep['train_records']} train / {rep['test_records']} test), "
        f"{rep['samples']['train']} + {rep['samples']['test']} samples, "
        f"censored {rep['samples']['censored_share']:.1%}, "
        f"tau {rep['tau_days']:g} d over {rep['event_kinds']}, horizon {rep['horizon_days']:g} d; "
        f"read share at T_cut {_fmt(cut['hot_share'])} (a random pick's cold_fir), "
        f"tau-event share {_fmt(cut.get('tau_hot_share'))}",
        _alpha_line(rep["alpha"]),
        head,
        "-" * len(head),
    ]
    for m, row in rep["methods"].items():
        alpha = (row.get("alpha") or {}).get("cold_fir")
        firs = " ".join(f"{_fmt(row['cold_fir'][b]['cold_fir']):>8s}" for b in budgets)
        err = f"  ({row['error']})" if "error" in row else ""
        lines.append(
            f"{m:10s} {_fmt(row['c_index']):>7s} {_pct(row.get('c_index_gain_vs_gbdt_naive')):>7s} "
            f"{_pct(row.get('discordant_removed_vs_gbdt_naive')):>7s} {_fmt(row.get('uno_c')):>7s} "
            f"{_pct(row.get('uno_c_gain_vs_gbdt_naive')):>7s} "
            f"{_pct(row.get('uno_discordant_removed_vs_gbdt_naive')):>7s} {_fmt(alpha):>7s} {firs} "
            f"{row['seconds']:6.1f}{err}"
        )
    return "\n".join(lines + _curve_lines(rep.get("curve")))


def _curve_lines(curve: dict | None) -> list[str]:
    if not curve or not curve["methods"]:
        return []
    shares = curve["migrated_share"]
    cols = [shares.index(c) for c in CURVE_COLUMNS if c in shares]
    head = f"{'method':10s} " + " ".join(f"{'hot@' + format(shares[i], 'g'):>8s}" for i in cols)
    lines = [
        "",
        f"hot records placed cold against the migrated share ({curve['hot_records']} of {curve['records']} are read)",
        head,
        "-" * len(head),
    ]
    for m, c in curve["methods"].items():
        lines.append(f"{m:10s} " + " ".join(f"{c['hot_placed_cold'][i]:>8d}" for i in cols))
    return lines


def format_sweep(rep: dict) -> str:
    """One line per swept value: c-index (and Uno's C) of rsf and gbdt-naive, and the
    censored share of the samples."""
    what = {"label-window": "label days", "sample-share": "rsf share"}[rep["kind"]]
    head = (
        f"{what:>10s} {'samples':>8s} {'censored':>8s} {'rsf':>7s} {'gbdt-n':>7s} {'gain':>7s} {'d-rm':>7s} "
        f"{'rsf-uno':>7s} {'gbdt-uno':>8s}"
    )
    lines = [f"sweep {rep['kind']}: tau {rep['tau_days']:g} d over {rep['event_kinds']}", head, "-" * len(head)]
    for r in rep["rows"]:
        rsf, gb = r["rsf"], r["gbdt-naive"]
        lines.append(
            f"{r['value']:>10g} {rsf['train_samples']:>8d} {_fmt(r['censored_share']):>8s} {_fmt(rsf['c_index']):>7s} "
            f"{_fmt(gb['c_index']):>7s} {_pct(r['c_index_gain_vs_gbdt_naive']):>7s} "
            f"{_pct(r['discordant_removed_vs_gbdt_naive']):>7s} {_fmt(rsf['uno_c']):>7s} {_fmt(gb['uno_c']):>8s}"
        )
    return "\n".join(lines)
