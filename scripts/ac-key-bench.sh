#!/usr/bin/env bash
# AC-Key's experiments (paper section 5): the fixed-split search (the paper's `offline`),
# Figs. 7-13 and Table 2, each point run with every cache policy on the same seeded op
# stream. Builds cairn-bench in release mode, runs `cairn-bench sweep`, and writes
# $OUT/summary.md (one section per figure: QPS, ratio to cairn:block, storage reads per op),
# $OUT/FIGURE.md, one compare directory per point, and $OUT/fig12_cache_sizes.png; PUBLISH=1
# also puts the summary into docs/results/ac-key.md. The plan: `cairn-bench paper ac-key`
# (crates/cairn-bench/src/paper/ac_key.rs); each variable below is one of its flags
# (RECORDS OPS ENGINES REFERENCE FIGURES CACHE CACHE_SIZES FIXED_STEP DEVICE TIMELINE_MS
# CLOCK EXTRA OUT; DIRECT= reads buffered).
#
#   scripts/ac-key-bench.sh                  # every figure: about an hour on 2 shared cores
#   FIGURES=fig8,fig12 scripts/ac-key-bench.sh   # one figure takes minutes
#   ENGINES=cairn:baseline,cairn:default REFERENCE=cairn:baseline FIGURES=fig9 scripts/ac-key-bench.sh
#   OPS=40000 FIGURES=fig11 EXTRA="--fixed 5-0-5" scripts/ac-key-bench.sh   # nearer steady state
#
# Read storage reads per op first: a count, the same on every run of a seed. QPS needs a
# quiet machine (two sweeps at once on 2 cores move it by 25%). At 10k ops each hot key is
# read about five times, so AC-Key's KP stage (one extra read per hot key) weighs more
# than it would in the paper's million-op runs.
#
# Storage reads cost what they would on an SSD: cairn's device profile `ssd` (228 us added
# per 4 KiB read) on top of direct I/O (O_DIRECT; cairn falls back to buffered reads where
# the filesystem refuses it, and its stats say so). Set DEVICE=none or DIRECT= to turn off.
#
# CLOCK=virtual [DEVICE=nvme|ssd|hdd, default ssd]: every point on cairn-bench's virtual device
# clock (--threads 1, non-cairn engines dropped), written under $OUT-virtual-$DEVICE. Default: wall.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/paper-lib.sh

PAPER_ARGS=(--out="${OUT:-bench-out/ac-key}")
paper_flags RECORDS OPS ENGINES REFERENCE FIGURES CACHE CACHE_SIZES FIXED_STEP DEVICE \
  TIMELINE_MS CLOCK EXTRA
if [ -n "${DIRECT+x}" ] && [ -z "$DIRECT" ]; then
  PAPER_ARGS+=(--buffered)
fi
paper_run ac-key
