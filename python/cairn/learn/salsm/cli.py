"""Command line: ``python -m cairn.learn.salsm {train,evaluate,sweep,km,synth} ...`` (or ``cairn-salsm``).

* ``train --trace T --method M --out COLD --report R.json (--budget F | --alpha-days A)``:
  learn from the trace, predict at its end for every record, write the cold-key set and a
  JSON report;
* ``evaluate --trace T --methods rsf,gbdt-naive,... --budgets 0.2,0.3,0.5 [--alpha-days A]
  --out E.json``: c-index, Uno's C and cold_fir of the methods side by side, at the budgets
  and at the count Algorithm 3 gives SA-LSM (see :mod:`.pipeline`);
* ``sweep --trace T --kind label-window|sample-share --values ...``: Figs. 13-14
  (see :mod:`.sweep`);
* ``synth --out T --profile P``: a synthetic record trace (see :mod:`.synth`).

``--tau-days auto`` picks tau among ``--tau-candidates`` by cross-validation (:mod:`.tune`);
``--oracle-scores FILE`` gives the ``oracle`` method its probabilities (:mod:`.oracle`).

A damaged or foreign file, a non-AWPI trace (without ``--force``) or bad options end with
exit code 2 and a one-line message, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..leaper.report import json_safe
from .coldset import ColdSetError, write_cold_set
from .labels import EVENT_KINDS
from .metrics import plot_km
from .models import ALIASES, METHODS, REFERENCES, canonical
from .oracle import OracleError, read_oracle
from .pipeline import evaluate, format_table, train
from .settings import TAU_CANDIDATES, Settings
from .sweep import SWEEP_KINDS, sweep
from .synth import PROFILES, SynthConfig, synth_trace
from .tables import format_sweep
from .trace import TraceError, read_trace, write_trace


def _common(p: argparse.ArgumentParser) -> None:
    d = Settings()
    p.add_argument("--trace", type=Path, required=True, help="record trace (CAIRNRTR) exported by the engine")
    p.add_argument("--tau-days", default=f"{d.tau_days:g}", help="tau of Def. 2.1 in days, or auto (default 1)")
    p.add_argument(
        "--tau-candidates",
        default=",".join(f"{t:g}" for t in TAU_CANDIDATES),
        help="taus --tau-days auto chooses among (default 0.25,0.5,1,2)",
    )
    p.add_argument("--pivots", type=int, default=d.n_pivots, help="pivots per record, Alg. 1 (default 10)")
    p.add_argument("--horizon-days", type=float, default=d.horizon_days, help="prediction horizon (default 30)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--jobs", type=int, default=d.n_jobs, help="threads for RSF and LightGBM (default 2)")
    p.add_argument("--force", action="store_true", help="train even if the workload is not AWPI")
    p.add_argument("--max-samples", type=int, default=d.max_samples, help="fit on at most this many samples (0: all)")
    p.add_argument(
        "--store-times",
        type=int,
        default=d.store_times,
        metavar="N",
        help="models see a query store of N access times per record, cut where evaluated (default 0: as exported)",
    )
    p.add_argument(
        "--events", choices=EVENT_KINDS, default=d.event_kinds, help="accesses that make tau-events (default reads)"
    )


def _tau(text: str) -> tuple[float, bool]:
    """``--tau-days``: ``(days, False)``, or ``(1.0, True)`` for ``auto``."""
    if text.strip() == "auto":
        return 1.0, True
    try:
        tau = float(text)
    except ValueError:
        raise ValueError(f"--tau-days: expected a number of days or auto, got {text!r}") from None
    if not tau > 0:
        raise ValueError("--tau-days must be > 0")
    return tau, False


def _settings(args: argparse.Namespace) -> Settings:
    tau, auto = _tau(args.tau_days)
    if args.horizon_days <= 0:
        raise ValueError("--horizon-days must be > 0")
    if args.pivots < 1:
        raise ValueError("--pivots must be >= 1")
    return Settings(
        tau_days=tau,
        tau_auto=auto,
        tau_candidates=tuple(_floats(args.tau_candidates, "--tau-candidates")),
        n_pivots=args.pivots,
        horizon_days=args.horizon_days,
        seed=args.seed,
        n_jobs=args.jobs,
        force=args.force,
        max_samples=args.max_samples,
        event_kinds=args.events,
        store_times=args.store_times,
    )


def _write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(json_safe(obj), indent=2, allow_nan=False) + "\n")


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{what}: expected comma-separated numbers, got {text!r}") from None


def _oracle(args: argparse.Namespace):
    return read_oracle(args.oracle_scores) if args.oracle_scores else None


def cmd_train(args: argparse.Namespace) -> int:
    trace = read_trace(args.trace)
    s = _settings(args)
    cs, report = train(trace, args.method, s, budget=args.budget, alpha_days=args.alpha_days, oracle=_oracle(args))
    write_cold_set(args.out, cs)
    report["trace"] = str(args.trace)
    report["out"] = str(args.out)
    if args.report:
        _write_json(args.report, report)
    print(
        f"wrote {args.out}: {report['cold_keys']} cold keys of {report['records']} records "
        f"(migrated share {report['migrated_share']:.3f}), method {args.method}, "
        f"train {report['train_seconds']:.1f} s, predict {report['predict_seconds']:.1f} s"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    trace = read_trace(args.trace)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        canonical(m)
    budgets = _floats(args.budgets, "--budgets")
    s = _settings(args)
    rep = evaluate(trace, methods, budgets, s, alpha_days=args.alpha_days, oracle=_oracle(args))
    rep["trace"] = str(args.trace)
    print(format_table(rep))
    if args.out:
        _write_json(args.out, rep)
    if args.km_plot:
        curve = {"training samples": (rep["km"]["t_days"], rep["km"]["survival"])}
        if plot_km(curve, str(args.km_plot), f"Kaplan-Meier, {args.trace.name}"):
            print(f"wrote {args.km_plot}")
        else:
            print("matplotlib is not installed: no Kaplan-Meier plot", file=sys.stderr)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    trace = read_trace(args.trace)
    values = _floats(args.values, "--values")
    rep = sweep(trace, args.kind, values, _settings(args), feature_days=args.feature_days)
    rep["trace"] = str(args.trace)
    print(format_sweep(rep))
    if args.out:
        _write_json(args.out, rep)
    return 0


def cmd_km(args: argparse.Namespace) -> int:
    """One Kaplan-Meier plot of several evaluations (Fig. 11: one curve per workload)."""
    curves = {}
    for spec in args.reports:
        label, sep, path = spec.partition("=")
        if not sep:
            label, path = Path(spec).parent.name or spec, spec
        with open(path, encoding="utf-8") as f:
            rep = json.load(f)
        km = rep.get("km")
        if not isinstance(km, dict) or "t_days" not in km or "survival" not in km:
            raise ValueError(f"{path}: not an evaluate report (no Kaplan-Meier curve)")
        curves[label] = (np.asarray(km["t_days"], float), np.asarray(km["survival"], float))
    if not plot_km(curves, str(args.out), args.title):
        print("matplotlib is not installed: no Kaplan-Meier plot", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    cfg = SynthConfig(profile=args.profile, records=args.records, days=args.days, seed=args.seed, cf_id=args.cf_id)
    trace = synth_trace(cfg)
    write_trace(args.out, trace)
    print(f"wrote {args.out}: {trace.n_records} records, {trace.times.size} access times, {cfg.days} days")
    return 0


def _oracle_arg(p: argparse.ArgumentParser, when: str) -> None:
    p.add_argument(
        "--oracle-scores", type=Path, metavar="FILE", help=f"true read probabilities for the oracle method, at {when}"
    )


class _Parser(argparse.ArgumentParser):
    """Bad options end like every other error: one line, exit code 2 (not a usage dump)."""

    def error(self, message: str):
        raise ValueError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m cairn.learn.salsm", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train one method and write the cold-key set")
    _common(p)
    p.add_argument("--method", choices=[*METHODS, *REFERENCES, *ALIASES], default="rsf")
    p.add_argument("--out", type=Path, required=True, metavar="COLD_SET")
    p.add_argument("--report", type=Path, metavar="R.json", help="also write a JSON report here")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--budget", type=float, help="migrate this share of the records, the coldest first")
    g.add_argument("--alpha-days", type=float, help="Algorithm 3: cold when the predicted time to event > alpha")
    _oracle_arg(p, "the trace's end")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="c-index and cold_fir of several methods side by side")
    _common(p)
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: all)")
    p.add_argument("--budgets", default="0.2,0.3,0.5", help="migrated shares for cold_fir (default 0.2,0.3,0.5)")
    p.add_argument("--out", type=Path, metavar="E.json", help="write the evaluation as JSON here")
    p.add_argument("--km-plot", type=Path, metavar="KM.png", help="Kaplan-Meier curve of the training samples")
    p.add_argument(
        "--alpha-days", type=float, help="alpha of the rsf rule that sets every method's count (default: the horizon)"
    )
    _oracle_arg(p, "T_cut = the trace's end - horizon")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("sweep", help="Figs. 13-14: rsf and gbdt-naive over labelling windows or sample shares")
    _common(p)
    p.add_argument("--kind", choices=SWEEP_KINDS, required=True)
    p.add_argument("--values", required=True, help="label windows in days, or rsf's sample shares, comma-separated")
    p.add_argument("--feature-days", type=float, default=20.0, help="label-window: the feature phase (default 20)")
    p.add_argument("--out", type=Path, metavar="S.json", help="write the sweep as JSON here")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("km", help="one Kaplan-Meier plot of several evaluate reports (Fig. 11)")
    p.add_argument("reports", nargs="+", metavar="[LABEL=]E.json", help="evaluate --out reports")
    p.add_argument("--out", type=Path, required=True, metavar="KM.png")
    p.add_argument("--title", default="Kaplan-Meier: time to the next tau-event")
    p.set_defaults(func=cmd_km)

    p = sub.add_parser("synth", help="write a synthetic record trace")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--profile", choices=sorted(PROFILES), default="logistics")
    p.add_argument("--records", type=int, default=SynthConfig.records)
    p.add_argument("--days", type=int, default=SynthConfig.days)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cf-id", type=int, default=0)
    p.set_defaults(func=cmd_synth)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (TraceError, ColdSetError, OracleError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
