#!/usr/bin/env bash
# SA-LSM's experiments (Zhang et al., "SA-LSM: Optimize Data Layout for LSM-tree Based
# Storage using Survival Analysis", VLDB 2022, section 4) on cairn. Builds cairn-bench in
# release mode, then
#
#   1. traces: for each AWPI profile ($TRACES; synthetic lifecycle streams only *shaped
#      like* the paper's Table 2 and Fig. 13), cairn:sa-lsm replays the trace days (20
#      feature days and the 30-day horizon) and exports its record trace; the service's
#      `evaluate` (python -m cairn.learn.salsm) scores every method on held-out records:
#      Table 3 (Harrell's and Uno's c-index, gains over the paper's censoring-naive GBDT),
#      Fig. 12 (cold_fir at Algorithm 3's count and at fixed shares, with the Bayes oracle
#      and a random placement beside them), the cold-tier reads curve, the Kaplan-Meier
#      curve (Fig. 11); and the Figs. 13-14 sweeps (labelling window, sample share);
#   2. the cold count: for each profile in $COMPARE and seed in $SEEDS, the service's
#      RSF applies Algorithm 3 (alpha = $ALPHA days) to the same trace at the compare
#      scale; the share it migrates is every placement's budget B (equal counts, §4.2.2);
#   3. compare: `compare` with $ENGINES at that B: each engine replays the trace days,
#      makes its placement (sa-*: the service trains and the engine compacts proactively;
#      age-tier: the age that makes B old; passive: level 1 sized to hold the rest), then
#      replays 3 more days with the tiers' device latencies (x $SCALE_LAT), measured:
#      Figs. 15-17 (throughput, p99, cold-tier reads per op) and the engine-side cold_fir
#      (over reads); cairn:sa-lsm also measures Table 5;
#   3b. open loop (virtual clock, unless OPEN_LOAD is empty): the same compare with the
#      measured ops arriving at one offered rate (--salsm-arrival-rate), the rate at which
#      sa-gbdt-naive's busiest device (the hdd) would be busy $OPEN_LOAD of the time by
#      its closed-loop device time per op: Figs. 15-16 as the paper's rate-driven replay
#      measures them (requests queue at a busy cold tier), in $OUT/open/, with
#      $OPEN_ENGINES (default $ENGINES; ENGINES must hold cairn:sa-gbdt-naive);
#   4. `cairn-bench salsm-summary --dir $OUT`: $OUT/salsm-summary.md with the tables and
#      the paper's goals marked met / not met; $OUT/summary.md adds the settings and times
#      (PUBLISH=1: also into docs/results/sa-lsm.md).
#
# The plan: `cairn-bench paper sa-lsm` (crates/cairn-bench/src/paper/sa_lsm.rs); each
# variable named here is one of its flags (lower case, _ as -: TRACE_SCALE is
# --trace-scale; SWEEPS= is --sweeps=false, OPEN_LOAD= is --open-load=0).
#
#   scripts/sa-lsm-bench.sh                  # the virtual device clock, 3 seeds
#   QUICK=1 scripts/sa-lsm-bench.sh          # smaller streams, one seed: a few minutes
#   COMPARE="order" ENGINES=cairn:sa-lru,cairn:sa-lsm QUICK=1 scripts/sa-lsm-bench.sh
#   GENERATOR=decay scripts/sa-lsm-bench.sh  # the control generator
#   TRACES= SWEEPS= ENGINES=cairn:sa-gbdt-naive OPEN_ENGINES=cairn:sa-lru,cairn:sa-lsm \
#     scripts/sa-lsm-bench.sh                # the open-loop replays alone
#   ABLATE=revival scripts/sa-lsm-bench.sh   # a lifecycle ingredient switched off
#
# CLOCK=virtual (the default): the compare runs on cairn-bench's virtual device clock (each
# tier priced on its own device, ssd hot and hdd cold as SA-LSM Table 4), one thread,
# background work at fixed points: a rerun gives the same numbers. CLOCK=wall: the wall
# clock (the device latency then sleeps in the calling thread), output in $OUT-wall.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/paper-lib.sh

PAPER_ARGS=(--out="${OUT:-bench-out/sa-lsm}")
[ -n "${QUICK:-}" ] && PAPER_ARGS+=(--quick)
paper_flags TRACE_SCALE SCALE SEEDS ENGINES OPEN_ENGINES SCALE_LAT SEED ALPHA GENERATOR ABLATE \
  SERVICE_ARGS TAUS EVAL_ARGS CLOCK EXTRA
# TRACES= and COMPARE= skip their steps.
paper_flags_set TRACES COMPARE
if [ -n "${SWEEPS+x}" ]; then
  PAPER_ARGS+=("--sweeps=$([ -n "$SWEEPS" ] && echo true || echo false)")
fi
if [ -n "${OPEN_LOAD+x}" ]; then
  PAPER_ARGS+=("--open-load=${OPEN_LOAD:-0}")
fi
paper_run sa-lsm
