#!/usr/bin/env bash
# The virtual device clock's results page (docs/results/virtual-clock.md): the CPU price
# calibration and how close it comes (from the price file), reruns checked field by field,
# and a static sweep of K (1, 2, 5, 10, lazy-leveling) over RusKey's read-heavy and
# write-heavy sessions on virtual time, at two bloom-filter sizes.
#
# The tree is RusKey's (scripts/ruskey-bench.sh: 1 MiB memtable, 4 MiB level 1, T = 10,
# 128 + 896-byte entries, 8 MiB cache) with 1 MiB tables so that a level holds several.
# Every run is on `--clock virtual --device $DEVICE`; the whole sweep runs twice and the
# second pass must match the first in every count and virtual time.
#
#   scripts/virtual-clock-bench.sh                # about 5 minutes on 2 cores
#   CALIBRATE=1 scripts/virtual-clock-bench.sh    # measure the CPU prices again first
#   OTHER=DIR OTHER_LABEL="an H100 host" scripts/virtual-clock-bench.sh
#       # DIR: this script's `sweep` directory from another machine, checked against ours
#   SUMMARY_ONLY=1 OTHER=DIR scripts/virtual-clock-bench.sh   # the page from existing runs
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-bench-out/virtual-clock}
DEVICE=${DEVICE:-nvme}
RECORDS=${RECORDS:-80000}
OPS=${OPS:-100000}
BLOOMS=${BLOOMS:-"8 2"}
ENGINES=${ENGINES:-cairn:default,cairn:k-2,cairn:moderate,cairn:tiering,cairn:lazy-leveling}
SESSIONS=${SESSIONS:-"read-heavy:read=0.9,update=0.1 write-heavy:read=0.1,update=0.9"}
RESULTS=${RESULTS:-docs/results/virtual-clock.md}
PASSES=${PASSES:-"sweep rerun"}

if [ -z "${BIN:-}" ]; then
  cargo build --release -p cairn-bench
  BIN=target/release/cairn-bench
fi
mkdir -p "$OUT"
if [ -n "${CALIBRATE:-}" ]; then
  "$BIN" calibrate | tee "$OUT/calibrate.md"
fi

sweep_dirs=()
rerun_dirs=()
other_dirs=()
for pass in $PASSES; do
  for b in $BLOOMS; do
    for s in $SESSIONS; do
      name="${s%%:*}-bloom$b"
      dir="$OUT/$pass/$name"
      mkdir -p "$dir"
      echo "== $pass $name" >&2
      [ -n "${SUMMARY_ONLY:-}" ] || "$BIN" compare --engines "$ENGINES" --records "$RECORDS" --seed 42 \
        --key-size 128 --value-size 896 --write-buffer-size 1M --level1-bytes 4M \
        --size-ratio 10 --target-file-size 1M --cache-bytes 8M --mission-ops 1000 --settle \
        --workload mix --mix "${s#*:}" --distribution uniform --ops "$OPS" --bloom-bits "$b" \
        --threads 1 --clock virtual --device "$DEVICE" --out "$dir" >"$dir/stdout.txt"
      case $pass in
        sweep)
          sweep_dirs+=(--sweep "$dir")
          if [ -n "${OTHER:-}" ]; then other_dirs+=(--other "$OTHER/$name"); fi
          ;;
        *) rerun_dirs+=(--rerun "$dir") ;;
      esac
    done
  done
done

"$BIN" clock-summary "${sweep_dirs[@]}" "${rerun_dirs[@]}" \
  ${other_dirs[@]+"${other_dirs[@]}"} --other-label "${OTHER_LABEL:-another machine}" \
  --command "${OTHER:+OTHER=$OTHER }scripts/virtual-clock-bench.sh (RECORDS=$RECORDS OPS=$OPS DEVICE=$DEVICE BLOOMS='$BLOOMS')" \
  --out "$RESULTS" >/dev/null
echo "wrote $RESULTS" >&2
