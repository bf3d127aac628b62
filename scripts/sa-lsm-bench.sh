#!/usr/bin/env bash
# SA-LSM's experiments (Zhang et al., "SA-LSM: Optimize Data Layout for LSM-tree Based
# Storage using Survival Analysis", VLDB 2022, section 4) on cairn. Builds cairn-bench in
# release mode, then
#
#   1. traces: for each AWPI profile ($TRACES; synthetic streams only *shaped like* the
#      paper's Table 2), cairn:sa-lsm replays the 20 trace days and exports its record
#      trace; the service's `evaluate` (python -m cairn.learn.salsm) scores every method on
#      held-out records: Table 3 (c-index of rsf, gbdt, cox, lru, lfu, lru2, lirs) and
#      Fig. 12 (cold_fir at equal budgets: B, the true cold share, and 0.2/0.3/0.5), and
#      draws the Kaplan-Meier curve (Fig. 11, traces/PROFILE/km.png);
#   2. compare: for each profile in $COMPARE, `compare` with $ENGINES: each engine replays
#      the trace days on a simulated clock, makes its placement at the same cold budget
#      (sa-*: the service trains and the engine compacts proactively; age-tier: the age
#      that makes the same share old; passive: level 1 sized to hold the rest), then
#      replays 3 more days with the tiers' device latencies (x $SCALE_LAT), measured:
#      Figs. 15-17 (throughput, p99, cold-tier reads per op) and the engine-side cold_fir;
#      cairn:sa-lsm also measures Table 5 (its proactive compaction vs a passive
#      compaction of a copy of the same data);
#   3. `cairn-bench salsm-summary --dir $OUT`: $OUT/salsm-summary.md with the tables and
#      the paper's goals marked met / not met.
#
#   scripts/sa-lsm-bench.sh                  # about 20 minutes on 2 cores
#   QUICK=1 scripts/sa-lsm-bench.sh          # smaller streams: a few minutes
#   COMPARE="order" ENGINES=cairn:passive,cairn:sa-lsm QUICK=1 scripts/sa-lsm-bench.sh
#   SERVICE_ARGS="--tau-days 3" scripts/sa-lsm-bench.sh   # extra `train` flags
#
# CLOCK=virtual: the compare runs on cairn-bench's virtual device clock (each tier priced on
# its own device, ssd hot and hdd cold as SA-LSM Table 4; DEVICE, default ssd, for a tier
# without one), one thread, background work at fixed points; output in $OUT-virtual-$DEVICE.
# The traces part is untimed (trace export and the models' offline scores) and runs the same
# on either clock. Default: CLOCK=wall.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-}
if [ -n "$QUICK" ]; then
  TRACE_SCALE=${TRACE_SCALE:-0.15}
  SCALE=${SCALE:-0.3}
else
  TRACE_SCALE=${TRACE_SCALE:-0.4}
  SCALE=${SCALE:-1.0}
fi
TRACES=${TRACES-"auction dispute funds logistics order pay"}
COMPARE=${COMPARE-"logistics order"}
ENGINES=${ENGINES:-cairn:passive,cairn:age-tier,cairn:sa-lru,cairn:sa-gbdt,cairn:sa-lsm}
SCALE_LAT=${SCALE_LAT:-0.05}
SEED=${SEED:-42}
SERVICE_ARGS=${SERVICE_ARGS:-}
EVAL_ARGS=${EVAL_ARGS:-}
OUT=${OUT:-bench-out/sa-lsm}
EXTRA=${EXTRA:-}

CLOCK=${CLOCK:-wall}
CLOCK_ARGS=()
case $CLOCK in
  wall) ;;
  virtual)
    DEVICE=${DEVICE:-ssd}
    case $DEVICE in
      nvme | ssd | hdd) ;;
      *) echo "DEVICE must be nvme, ssd or hdd on the virtual clock (got '$DEVICE')" >&2; exit 2 ;;
    esac
    CLOCK_ARGS=(--clock virtual --device "$DEVICE" --threads 1)
    case $OUT in
      *-virtual-"$DEVICE") ;;
      *) OUT="$OUT-virtual-$DEVICE" ;;
    esac
    ;;
  *) echo "CLOCK must be wall or virtual (got '$CLOCK')" >&2; exit 2 ;;
esac

if [ -z "${BIN:-}" ]; then
  cargo build --release -p cairn-bench
  BIN=target/release/cairn-bench
fi
PY=${CAIRN_PYTHON:-target/pyenv/bin/python}
if ! "$PY" -c "import numpy, sksurv, lightgbm" >/dev/null 2>&1; then
  echo "SA-LSM's service needs numpy, scikit-survival and lightgbm in $PY" >&2
  echo "(scripts/test.sh makes target/pyenv; or set CAIRN_PYTHON)" >&2
  exit 2
fi
mkdir -p "$OUT"
start=$(date +%s)
log="$OUT/times.txt"
: >"$log"

for p in $TRACES; do
  t=$(date +%s)
  echo "== trace + evaluate awpi-$p" >&2
  # shellcheck disable=SC2086
  "$BIN" salsm-trace --workload "awpi-$p" --awpi-scale "$TRACE_SCALE" --seed "$SEED" \
    --python "$PY" --out "$OUT/traces/$p" --evaluate --km-plot \
    ${EVAL_ARGS:+--eval-args "$EVAL_ARGS"} $EXTRA
  echo "trace $p: $(($(date +%s) - t)) s" >>"$log"
done
# Fig. 11: the workloads' Kaplan-Meier curves in one plot.
reports=()
for p in $TRACES; do
  [ -f "$OUT/traces/$p/eval.json" ] && reports+=("$p=$OUT/traces/$p/eval.json")
done
if [ ${#reports[@]} -gt 0 ]; then
  PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH} "$PY" -m cairn.learn.salsm km --out "$OUT/km.png" "${reports[@]}" >&2 || true
fi

for p in $COMPARE; do
  t=$(date +%s)
  dir="$OUT/compare/$p"
  mkdir -p "$dir"
  echo "== compare awpi-$p: $ENGINES" >&2
  # shellcheck disable=SC2086
  "$BIN" compare --engines "$ENGINES" --workload "awpi-$p" --awpi-scale "$SCALE" \
    --seed "$SEED" --python "$PY" --salsm-latency-scale "$SCALE_LAT" --timeline-ms 250 \
    ${SERVICE_ARGS:+--salsm-service-args "$SERVICE_ARGS"} "${CLOCK_ARGS[@]}" $EXTRA --out "$dir" \
    >"$dir/stdout.txt"
  echo "compare $p: $(($(date +%s) - t)) s" >>"$log"
done

"$BIN" salsm-summary --dir "$OUT" >/dev/null
{
  echo
  echo "Settings: traces at --awpi-scale $TRACE_SCALE, compare runs at $SCALE, device latency x $SCALE_LAT,"
  echo "seed $SEED, service args '${SERVICE_ARGS}'. Times:"
  echo
  sed 's/^/    /' "$log"
  echo
  echo "Total: $(($(date +%s) - start)) s."
} >>"$OUT/salsm-summary.md"
cat "$OUT/salsm-summary.md"
echo "summary: $OUT/salsm-summary.md" >&2
