#!/usr/bin/env bash
# RusKey's experiments (Mo et al., "Learning to Optimize LSM-trees", SIGMOD 2023, section 7)
# on cairn: a per-level tuner of the run limit K_i against static policies. Builds
# cairn-bench in release mode, then runs (PARTS, in this order):
#
#   sessions  Fig. 7 / Table 3: ruskey-sessions (five sessions: 90/50/10/30/70% lookups,
#             the rest updates, uniform keys) with $ENGINES; every engine loads the same
#             records first and waits for background work (--settle).
#   static    Fig. 6: read-heavy (90% lookups), balanced (50%), write-heavy (10%) with
#             $ENGINES, each its own run; summarized as three sessions of one table.
#   greedy    Fig. 12: $GREEDY_ENGINES on the sessions workload, ranked against the static
#             policies of the `sessions` part (same stream, same seed).
#   monkey    Fig. 8: $MONKEY_ENGINES on the three static workloads with Monkey blooms
#             at $MONKEY_BLOOM bits per key (the paper lowers 8 to 4 for Monkey).
#   ycsb      Fig. 11: YCSB A-F (zipfian, YCSB's mixes) with $YCSB_ENGINES, short.
#   transitions  Fig. 10: the greedy, lazy and flexible transitions under one K change: a
#             balanced workload (50% lookups) of $TRANSITION_MISSIONS missions, K = 1 at
#             every level until mission $TRANSITION_AT, then K = $T everywhere (--set-k-at).
#
# The tree: memtable $WBS, level 1 $LEVEL1, size ratio $T, so $RECORDS entries of
# $KEY_SIZE + $VALUE_SIZE bytes (the paper's 128 + 896) fill level 0 and three levels on
# disk. A mission is $MISSION_OPS operations (the harness's per-mission series and the
# tuner's mission size); the sessions have $MISSIONS missions each.
#
# Each part's directory holds one compare directory per workload (report.md, JSON with the
# per-mission series, ruskey_missions.png = Fig. 7's latency and K_i panels) and
# ruskey-summary.md (per-session latency once converged, ranks, Table 3, the goals, when
# RusKey's K and latency settled). $OUT/summary.md collects them with each part's time;
# PUBLISH=1 also puts it into docs/results/ruskey.md. The plan: `cairn-bench paper ruskey`
# (crates/cairn-bench/src/paper/ruskey.rs); each variable named here is one of its flags
# (lower case, _ as -: MISSION_OPS is --mission-ops), unset ones taking the regime's default.
#
# Seeds: the learned engines (cairn:ruskey*) run once per tuner seed in $SEEDS (default
# "1 2 3 4 5"), each seed into the workload directory's seed-S/ (--tuner-seed S); every
# other engine (statics, and greedy, which is deterministic) runs once in the workload
# directory. ruskey-summary reads them all: per session the median over the seeds ranks,
# with the worst seed beside it, and convergence is counted per seed.
#
#   SEEDS=1 scripts/ruskey-bench.sh          # about 20 minutes on 2 cores (13 with MISSIONS=200)
#   SEEDS=1 QUICK=1 scripts/ruskey-bench.sh  # smaller and shorter: about 8 minutes
#   scripts/ruskey-bench.sh                  # five seeds: each adds the cairn:ruskey* runs
#
# Time goes mostly to loads: every run loads $RECORDS records, and the tuner presets work
# during the load too (their missions count the load's writes), which made cairn:ruskey's
# loads 4-8x longer than a static preset's in the QUICK run.
#   PARTS="sessions greedy" MISSIONS=200 scripts/ruskey-bench.sh
#   ENGINES=cairn:default,cairn:moderate,cairn:tiering RUSKEY=cairn:moderate \
#     GREEDY_ENGINES=cairn:lazy-leveling MONKEY_ENGINES=cairn:lazy-leveling,cairn:monkey \
#     YCSB_ENGINES=cairn:default,cairn:tiering QUICK=1 scripts/ruskey-bench.sh  # statics only
#
# CLOCK=virtual [DEVICE=nvme|ssd|hdd, default nvme]: every run on cairn-bench's virtual device
# clock (--threads 1, non-cairn engines dropped), written under $OUT-virtual-$DEVICE. Default: wall.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/paper-lib.sh

PAPER_ARGS=(--out="${OUT:-bench-out/ruskey}")
[ -n "${QUICK:-}" ] && PAPER_ARGS+=(--quick)
paper_flags REGIME PARTS RECORDS MISSION_OPS MISSIONS STATIC_MISSIONS YCSB_OPS YCSB_WORKLOADS \
  ENGINES YCSB_ENGINES GREEDY_ENGINES MONKEY_ENGINES TRANSITION_ENGINES TRANSITION_MISSIONS \
  TRANSITION_AT SEEDS RUSKEY KEY_SIZE VALUE_SIZE WBS LEVEL1 T CACHE BLOOM MONKEY_BLOOM SEED \
  STATIC_MIXES L0_TRIGGER NUM_LEVELS TABLE CLOCK DEVICE EXTRA
paper_run ruskey
