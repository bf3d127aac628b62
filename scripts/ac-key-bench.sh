#!/usr/bin/env bash
# AC-Key's experiments (paper section 5): the fixed-split search (the paper's `offline`),
# Figs. 7-13 and Table 2, each point run with every cache policy on the same seeded op
# stream. Builds cairn-bench in release mode, runs `cairn-bench sweep`, and writes
# $OUT/summary.md (one section per figure: QPS, ratio to cairn:block, storage reads per op),
# $OUT/FIGURE.md, one compare directory per point, and $OUT/fig12_cache_sizes.png.
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

RECORDS=${RECORDS:-100000}
OPS=${OPS:-10000}
ENGINES=${ENGINES:-cairn:ac-key,cairn:block,cairn:pure-kv,cairn:pure-kp}
REFERENCE=${REFERENCE:-cairn:block}
FIGURES=${FIGURES:-fixed,fig7,fig8,fig9,fig10,fig11,fig12,fig13,table2}
# The data is about 13 MiB at 100k records: a 512 KiB cache is a few percent of it.
CACHE=${CACHE:-512K}
CACHE_SIZES=${CACHE_SIZES:-128K,256K,512K,1M,2M}
FIXED_STEP=${FIXED_STEP:-5}
DEVICE=${DEVICE:-ssd}
DIRECT=${DIRECT---direct-io}
OUT=${OUT:-bench-out/ac-key}
EXTRA=${EXTRA:-}
TIMELINE_MS=${TIMELINE_MS:-500}
CLOCK=${CLOCK:-wall}

# The virtual clock: cairn only, one request thread, a device model; its own output tree.
. scripts/virtual-clock-lib.sh
CLOCK_FLAGS=()
case $CLOCK in
  wall) ;;
  virtual)
    virtual_device_and_out
    ENGINES=$(cairn_only ENGINES "$ENGINES")
    CLOCK_FLAGS=(--clock virtual --threads 1)
    ;;
  *) echo "CLOCK must be wall or virtual (got '$CLOCK')" >&2; exit 2 ;;
esac

if [ -z "${BIN:-}" ]; then
  cargo build --release -p cairn-bench
  BIN=target/release/cairn-bench
fi

mkdir -p "$OUT"
# shellcheck disable=SC2086
"$BIN" sweep --figures "$FIGURES" --engines "$ENGINES" --reference "$REFERENCE" \
  --records "$RECORDS" --ops "$OPS" --cache-bytes "$CACHE" --cache-sizes "$CACHE_SIZES" \
  --fixed-step "$FIXED_STEP" --write-buffer-size 4M --device "$DEVICE" $DIRECT --settle \
  ${CLOCK_FLAGS[@]+"${CLOCK_FLAGS[@]}"} --timeline-ms "$TIMELINE_MS" $EXTRA --out "$OUT"
