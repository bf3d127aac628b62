#!/usr/bin/env bash
# Leaper's experiments (Yang et al., VLDB 2020, section 7.3) on cairn: the cache around
# flushes and compactions. Builds cairn-bench in release mode, makes (or reuses) the Python
# environment of the learner (target/pyenv, as scripts/test.sh does), then runs
#
#   1. leaper-synthetic, leaper-ecommerce, leaper-im (Table 2's shapes; the last two are
#      synthetic streams shaped like the paper's traces) with $ENGINES, T set to cairn:lru's
#      median hit-ratio recovery time (a calibration run first); and Fig. 10's
#      flush-only run (leaper-synthetic without compactions; FIG10= skips it);
#   2. Figs. 13-14 on leaper-synthetic: range-query ratio, skew (zipf), mixture (read
#      share, update:insert 4:1), cache size; T fixed to the synthetic run's;
#   3. the tables: misses per read against the best baseline and Belady's bounds on the
#      run's own block lookups (--block-trace), invalidation misses in T1 + T2 windows against cairn:lru and
#      cairn:warmup (Incremental Warmup), p95 spike seconds, QPS outside the windows
#      (Table 5's overall overhead), the learner's offline scores.
#
# Every run: load, a warm-up part of the stream (--warmup-secs; the first engine's op
# count is then used by the others, so all run the same stream), during which cairn:leaper
# collects access statistics; the harness exports the trace, trains with
# `python -m cairn.learn.leaper train`, loads the bundle and waits for background work to
# finish (every engine waits), then the measured part. Storage reads cost what they would
# on an SSD (cairn's device profile `ssd`), so misses show in QPS and p95.
#
# Writes $OUT/summary.md, and per point a compare directory (report.md, JSON, timeline CSV,
# invalidation_timeline.png = Figs. 10/11); PUBLISH=1 also puts the summary into
# docs/results/leaper.md. The plan: `cairn-bench paper leaper`
# (crates/cairn-bench/src/paper/leaper.rs); each variable is one of its flags (QUICK REGIME
# RECORDS OPS WARMUP_SECS CACHE WBS LEVEL1 TABLE SLOT_MS MAX_K SAMPLE_P WORKLOADS ENGINES
# SWEEPS FIG10 LEARNER_ARGS MOVING_ARGS TIMELINE_MS RANGE_RATIOS ZIPFS READ_SHARES
# CACHE_SIZES REPEAT CLOCK DEVICE EXTRA OUT), unset ones taking the regime's default.
#
#   scripts/leaper-bench.sh                   # about 25-30 minutes on 2 cores (estimate)
#   QUICK=1 scripts/leaper-bench.sh           # the three workloads only, smaller: ~12 min
#   SWEEPS="skew cache" ENGINES=cairn:lru,cairn:warmup,cairn:leaper,cairn:oracle scripts/leaper-bench.sh
#
# CLOCK=virtual [DEVICE=nvme|ssd|hdd, default ssd]: every run on cairn-bench's virtual device
# clock (--threads 1, non-cairn engines dropped; Table 5's wall-clock access_cost skipped),
# written under $OUT-virtual-$DEVICE; the warm-up's end and the access statistics' slots
# are on virtual time too. Default: wall.
#
# REGIME=paper: the paper's regime (§6, §7.3) at a size that runs in minutes, on the virtual
# device clock (ssd): 1M records, 512 KiB memtable, 4 MiB level 1 and 1 MiB tables, so a
# compaction rewrites a few tables of a tree many times larger, with a block cache of
# about a quarter of the data; 100 ms slots sampled at P = 1 (the collector's cost is
# priced), a 20 s warm-up (200 training slots), k x slot = 0.8 s against T1 + T2 of about
# 0.5 s; every baseline (LRU with and without erasing dead blocks, warm-flush, warm-all,
# Incremental Warmup) and the oracle; the workloads leaper-moving (hot windows that move
# and recur), leaper-synthetic (static Zipf, the control), leaper-ecommerce and leaper-im.
# Results: $OUT-virtual-ssd.
#   REGIME=paper scripts/leaper-bench.sh     # about 30 minutes on 2 cores
# REGIME=peers: the same sizes on the wall clock with RocksDB (prepopulate_block_cache
# kFlushOnly, and without) beside cairn's policies, three runs each (leaper-moving).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/paper-lib.sh

PAPER_ARGS=(--out="${OUT:-bench-out/leaper}")
[ -n "${QUICK:-}" ] && PAPER_ARGS+=(--quick)
paper_flags REGIME RECORDS OPS WARMUP_SECS CACHE WBS LEVEL1 TABLE SLOT_MS MAX_K SAMPLE_P \
  WORKLOADS ENGINES LEARNER_ARGS MOVING_ARGS TIMELINE_MS RANGE_RATIOS ZIPFS READ_SHARES \
  CACHE_SIZES REPEAT CLOCK DEVICE EXTRA
# SWEEPS= runs no sweep; FIG10= skips Fig. 10's run.
paper_flags_set SWEEPS
if [ -n "${FIG10+x}" ]; then
  PAPER_ARGS+=("--fig10=$([ -n "$FIG10" ] && echo true || echo false)")
fi

# The learner: the Python package with its learning extras.
. scripts/pyenv.sh
pyenv_prepare test,learn release
export CAIRN_PYTHON="$PY"
if [ "${REGIME:-}" = peers ]; then
  [ -z "${BIN:-}" ] && bash crates/cairn-bench/scripts/setup-rocksdb.sh
  paper_run leaper --features rocksdb
else
  paper_run leaper
fi
