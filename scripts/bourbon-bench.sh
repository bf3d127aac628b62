#!/usr/bin/env bash
# Bourbon's experiments on this machine, learned against baseline in one run each:
#   1. datasets (linear, seg1, normal, seg10, clustered = synthetic real-world-like;
#      file:PATH for a key file), and realkeys (real key sets that ship in registry
#      packages: scripts/real-keys.sh),
#      uniform random read-only: throughput, #segments, %segments (segments / entries of
#      the learned tables), sampled table-search time on each path and its index part
#      (before the data block is asked for; the rest is the data block's);
#   2. request distributions (sequential, zipfian, hotspot, exponential, uniform, latest),
#      read-only, on seg1;
#   3. YCSB A-F on the default (sequential-number) keys;
#   4. write-heavy mixes with learning never / always / cba: throughput, p99, learning
#      CPU time and the process's CPU time in the measured phase;
#   5. the lookup breakdown of each dataset run: mean ns per get in memtables, filters,
#      index or model, data block, value-log read and the rest (one get in 64 timed).
# Each compare runs every engine REPEAT times, the order alternating; tables show the
# median run. Tables are TABLE_SIZE and level 1 holds LEVEL1 bytes, so millions of
# records make a tree of 4+ levels (a get touches several tables, as in the paper).
# Bourbon's setting (LevelDB's): an 8 MiB block cache, tables and value logs read through
# memory maps, so the data is in memory in the OS page cache and a block the cache lacks
# is copied out of the map (BUDGET="... --cache-bytes 1G" without --mmap-reads keeps
# every block in the block cache instead). Bourbon's presets write fixed-width blocks,
# so a learned get copies just its window's entries; `bourbon-always-blocks` is the
# ablation whose model reads whole blocks. Keys are loaded in random order (the harness's
# load), so young tables hold scattered keys of the dataset.
# Writes bourbon-out/summary.md (and per-scenario reports under bourbon-out/); PUBLISH=1
# also puts it into docs/results/bourbon.md. The plan: `cairn-bench paper bourbon`
# (crates/cairn-bench/src/paper/bourbon.rs); each variable below is one of its flags.
#
#   scripts/bourbon-bench.sh
#   SECTIONS="datasets ycsb" YCSB="c e" scripts/bourbon-bench.sh
#
# CLOCK=virtual [DEVICE=nvme|ssd|hdd, default nvme]: every run on cairn-bench's virtual device
# clock (--threads 1, cairn engines only, REPEAT 1: reruns repeat exactly), written under
# $OUT-virtual-$DEVICE. Default: CLOCK=wall, no device. BIN= skips the cargo build.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/paper-lib.sh

PAPER_ARGS=(--out="${OUT:-bourbon-out}")
paper_flags CLOCK DEVICE RECORDS OPS WOPS REPEAT WARMUP TABLE_SIZE LEVEL1 BUDGET SECTIONS \
  DATASETS KEYS REAL DISTS MIXES YCSB BASE EXTRA
paper_run bourbon
