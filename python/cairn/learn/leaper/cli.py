"""Command line: ``python -m cairn.learn.leaper {train,report,synth} ...``.

* ``train --trace FILE [--trace FILE2 ...] --out BUNDLE``: the whole offline analysis,
  prints the report table and writes the bundle (``--watch DIR --every S`` keeps
  retraining on the newest trace of DIR);
* ``report --trace FILE [--model BUNDLE]``: the report only; with ``--model``, the
  bundle's models are scored on every sample of the trace instead of training new ones;
* ``synth --out FILE``: a synthetic trace (see :mod:`.synth`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from .bundle import BundleError, read_bundle, write_bundle
from .counts import coarsen, from_traces
from .features import build_samples, from_first_read, uncovered_positive_share
from .report import evaluate, format_table, json_safe, write_figure
from .synth import SynthConfig, synth_trace
from .trace import TraceError, read_trace, write_trace
from .train import TrainConfig, predict, steps_for, to_bundle, train
from .watch import watch


def _training_options(p: argparse.ArgumentParser) -> None:
    d = TrainConfig()
    p.add_argument("--trace", action="append", default=[], metavar="FILE", help="access trace (repeatable)")
    p.add_argument("--k", type=int, default=None, help=f"number of models / future slots (default {d.k})")
    p.add_argument(
        "--compaction-secs",
        type=float,
        nargs="+",
        metavar="T1+T2",
        help="compaction plus cache-recovery durations in seconds; k = ceil(max / slot) + C (eq. 2)",
    )
    p.add_argument("--extra-models", type=int, default=1, metavar="C", help="C of eq. 2 (default 1)")
    p.add_argument("--alpha", type=float, default=d.alpha, help="Algorithm 1 threshold (default 0.6)")
    p.add_argument("--multiplier", type=int, default=None, help="use A* = M * A0 instead of Algorithm 1")
    p.add_argument("--max-multiplier", type=int, default=None, help="upper bound for Algorithm 1's multiplier")
    p.add_argument("--gamma", type=int, default=d.gamma, help="precursors per range, 1..3 (default 3)")
    p.add_argument("--epsilon", type=float, default=d.epsilon, help="cosine similarity threshold (default 0.5)")
    p.add_argument("--test-share", type=float, default=d.test_share, help="last share of slots for testing")
    p.add_argument("--val-share", type=float, default=d.val_share, help="share of the rest for validation")
    p.add_argument(
        "--hot-reads", type=float, default=None, help=f"reads in a slot that make a range hot (default {d.hot_reads:g})"
    )
    p.add_argument(
        "--hot-share",
        type=float,
        default=None,
        help="choose --hot-reads from the trace so that at most this share of samples is hot",
    )
    p.add_argument("--recall-target", type=float, default=d.recall_target, help="validation recall to keep")
    p.add_argument("--rounds", type=int, default=d.rounds, help="boosting rounds at most (early stopping)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--threads", type=int, default=d.threads, help="LightGBM threads (0: default)")
    p.add_argument("--iw-window", type=int, default=d.iw_window, help="slots of the IW proxy baseline")
    p.add_argument("--report-json", type=Path, help="also write the report as JSON here")
    p.add_argument("--figure", type=Path, help="also draw a Fig. 6-style PNG here (needs matplotlib)")


def _config(args: argparse.Namespace, slot_ms: int | None) -> TrainConfig:
    if args.k is not None and args.compaction_secs:
        raise ValueError("give --k or --compaction-secs, not both")
    k = args.k if args.k is not None else TrainConfig().k
    if args.compaction_secs:
        if slot_ms is None:
            raise ValueError("--compaction-secs needs the trace's slot length")
        k = steps_for(args.compaction_secs, slot_ms, args.extra_models)
    return TrainConfig(
        k=k,
        alpha=args.alpha,
        gamma=args.gamma,
        epsilon=args.epsilon,
        test_share=args.test_share,
        val_share=args.val_share,
        recall_target=args.recall_target,
        hot_reads=TrainConfig().hot_reads if args.hot_reads is None else args.hot_reads,
        hot_share=args.hot_share,
        rounds=args.rounds,
        seed=args.seed,
        threads=args.threads,
        iw_window=args.iw_window,
        multiplier=args.multiplier,
        max_multiplier=args.max_multiplier,
    )


def _emit_report(report: dict, args: argparse.Namespace) -> None:
    print(format_table(report))
    if args.report_json:
        args.report_json.write_text(json.dumps(json_safe(report), indent=2, allow_nan=False) + "\n")
    if args.figure:
        write_figure(report, str(args.figure))  # skipped silently without matplotlib


def cmd_train(args: argparse.Namespace) -> int:
    if args.watch:
        if args.trace:
            raise ValueError("--watch takes its traces from the folder; drop --trace")
        slot_ms = None
        if args.compaction_secs:
            raise ValueError("--compaction-secs needs a fixed trace; use --k with --watch")
        config = _config(args, slot_ms)
        watch(Path(args.watch), args.out, config, args.every, args.pattern, args.max_polls)
        return 0
    if not args.trace:
        raise ValueError("give at least one --trace (or --watch DIR)")
    traces = [read_trace(p) for p in args.trace]
    result = train(traces, _config(args, traces[0].slot_ms))
    _emit_report(result.report, args)
    write_bundle(args.out, to_bundle(result))
    print(
        f"wrote {args.out}: k = {len(result.models)} models, A* = {result.prepared.counts.range_width} "
        f"(m = {result.prepared.selection.multiplier}), threshold {result.threshold:.4f}, "
        f"{len(result.prepared.precursors)} ranges with precursors, {result.seconds:.1f} s"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    if not args.trace:
        raise ValueError("give at least one --trace")
    traces = [read_trace(p) for p in args.trace]
    if args.model is None:
        result = train(traces, _config(args, traces[0].slot_ms))
        _emit_report(result.report, args)
        return 0
    bundle = read_bundle(args.model)
    meta = bundle.metadata
    fine = from_traces(traces)
    if fine.key_offset != meta["key_offset"]:
        raise ValueError(f"trace key_offset {fine.key_offset} differs from the bundle's {meta['key_offset']}")
    m, rem = divmod(meta["range_width"], fine.range_width)
    if rem or m < 1:
        raise ValueError(
            f"bundle range width {meta['range_width']} is not a multiple of the trace's {fine.range_width}"
        )
    counts = coarsen(fine, m)
    precursors = {int(r): [int(p) for p in ps] for r, ps in meta["precursors"].items()}
    if args.hot_reads is not None or args.hot_share is not None:
        raise ValueError("--hot-reads and --hot-share are for training; with --model the bundle's label is used")
    hot_reads = float(meta["report"].get("hot_reads", 1.0)) if isinstance(meta["report"], dict) else 1.0
    samples = from_first_read(counts, build_samples(counts, precursors, meta["k"], min_reads=hot_reads))
    if len(samples) == 0:
        raise ValueError("no samples in the trace")
    rep = evaluate(samples, predict(bundle.models, samples.x), meta["threshold"], args.iw_window, hot_reads)
    rep["range_width"] = counts.range_width
    rep["range_multiplier"] = m
    rep["uncovered_positive_share"] = uncovered_positive_share(counts, samples, 1, hot_reads)
    _emit_report(rep, args)
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    cfg = SynthConfig(**{f.name: getattr(args, f.name) for f in fields(SynthConfig)})
    trace = synth_trace(cfg)
    write_trace(args.out, trace)
    print(f"wrote {args.out}: {trace.n_rows} rows, {trace.transfers.shape[0]} transfers, {cfg.slots} slots")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m cairn.learn.leaper", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train the models and write the bundle")
    _training_options(p)
    p.add_argument("--out", type=Path, required=True, metavar="MODEL_BUNDLE")
    p.add_argument("--watch", metavar="DIR", help="retrain whenever the newest trace in DIR changes")
    p.add_argument("--every", type=float, default=60.0, metavar="SECONDS", help="poll period of --watch")
    p.add_argument("--pattern", default="*", help="glob of trace files in the --watch folder")
    p.add_argument("--max-polls", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("report", help="print the offline report (no bundle written)")
    _training_options(p)
    p.add_argument("--model", type=Path, help="score this bundle's models instead of training")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("synth", help="write a synthetic access trace")
    p.add_argument("--out", type=Path, required=True)
    for f in fields(SynthConfig):
        p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default), default=f.default)
    p.set_defaults(func=cmd_synth)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (TraceError, BundleError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
