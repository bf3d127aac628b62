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
#      the paper's goals marked met / not met.
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

QUICK=${QUICK:-}
if [ -n "$QUICK" ]; then
  TRACE_SCALE=${TRACE_SCALE:-0.1}
  SCALE=${SCALE:-0.2}
  SEEDS=${SEEDS:-42}
else
  TRACE_SCALE=${TRACE_SCALE:-0.3}
  SCALE=${SCALE:-0.5}
  SEEDS=${SEEDS:-"42 43 44"}
fi
TRACES=${TRACES-"auction dispute funds logistics order pay"}
COMPARE=${COMPARE-"logistics order"}
ENGINES=${ENGINES:-cairn:passive,cairn:age-tier,cairn:sa-random,cairn:sa-lru,cairn:sa-gbdt-naive,cairn:sa-gbdt,cairn:sa-oracle,cairn:sa-lsm}
SCALE_LAT=${SCALE_LAT:-1.0}
SEED=${SEED:-42}
ALPHA=${ALPHA:-30}
GENERATOR=${GENERATOR:-lifecycle}
ABLATE=${ABLATE:-}
SWEEPS=${SWEEPS-1}
OPEN_LOAD=${OPEN_LOAD-0.8}
OPEN_ENGINES=${OPEN_ENGINES:-$ENGINES}
SERVICE_ARGS=${SERVICE_ARGS:-}
# tau by cross-validation on the training window (the cost truth is a read, so long taus
# are candidates too); the compare runs use the tau the alpha step chose.
TAUS=${TAUS:-0.5,1,3,7,30}
EVAL_ARGS=${EVAL_ARGS:-}
OUT=${OUT:-bench-out/sa-lsm}
EXTRA=${EXTRA:-}
GEN_ARGS=(--salsm-generator "$GENERATOR")
if [ -n "$ABLATE" ]; then
  GEN_ARGS+=(--salsm-ablate "$ABLATE")
  OUT="$OUT-no-${ABLATE//,/-}"
fi
[ "$GENERATOR" = lifecycle ] || OUT="$OUT-$GENERATOR"

CLOCK=${CLOCK:-virtual}
CLOCK_ARGS=()
case $CLOCK in
  wall)
    case $OUT in *-wall) ;; *) OUT="$OUT-wall" ;; esac
    ;;
  virtual) CLOCK_ARGS=(--clock virtual --device ssd --threads 1) ;;
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
    "${GEN_ARGS[@]}" --python "$PY" --out "$OUT/traces/$p" --evaluate --km-plot \
    --eval-args "--alpha-days $ALPHA --tau-days auto --tau-candidates $TAUS${EVAL_ARGS:+ $EVAL_ARGS}" $EXTRA
  if [ -n "$SWEEPS" ]; then
    # Figs. 13-14: the labelling window (20 feature days, labels over 10-30 days; the trace
    # holds 30) and RSF on a share of GBDT's samples.
    for kind in "label-window 10,20,30" "sample-share 0.1,0.3,1.0"; do
      set -- $kind
      PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH} "$PY" -m cairn.learn.salsm sweep \
        --trace "$OUT/traces/$p/trace.rtr" --kind "$1" --values "$2" --tau-days "$(
          "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['tau_days'])" "$OUT/traces/$p/eval.json"
        )" --out "$OUT/traces/$p/sweep-$1.json" >&2
    done
  fi
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
  for seed in $SEEDS; do
    t=$(date +%s)
    dir="$OUT/compare/$p-seed$seed"
    mkdir -p "$dir"
    # Algorithm 3 decides the count: RSF's alpha rule on this stream's trace.
    # shellcheck disable=SC2086
    "$BIN" salsm-trace --workload "awpi-$p" --awpi-scale "$SCALE" --seed "$seed" \
      "${GEN_ARGS[@]}" --python "$PY" --out "$dir/alpha" $EXTRA
    PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH} "$PY" -m cairn.learn.salsm train \
      --trace "$dir/alpha/trace.rtr" --method rsf --alpha-days "$ALPHA" \
      --tau-days auto --tau-candidates "$TAUS" \
      --out "$dir/alpha/cold.cld" --report "$dir/alpha/alpha.json" ${SERVICE_ARGS} >&2
    read -r budget tau < <("$PY" -c "import json,sys; r = json.load(open(sys.argv[1])); print(r['migrated_share'], r['tau_days'])" "$dir/alpha/alpha.json")
    echo "== compare awpi-$p seed $seed at B = $budget (RSF, alpha $ALPHA days, tau $tau days): $ENGINES" >&2
    # shellcheck disable=SC2086
    "$BIN" compare --engines "$ENGINES" --workload "awpi-$p" --awpi-scale "$SCALE" \
      --seed "$seed" "${GEN_ARGS[@]}" --python "$PY" --salsm-budget "$budget" \
      --salsm-latency-scale "$SCALE_LAT" --timeline-ms 250 \
      --salsm-service-args "--tau-days $tau${SERVICE_ARGS:+ $SERVICE_ARGS}" "${CLOCK_ARGS[@]}" $EXTRA --out "$dir" \
      >"$dir/stdout.txt"
    echo "compare $p seed $seed: $(($(date +%s) - t)) s" >>"$log"
    if [ -n "$OPEN_LOAD" ] && [ "$CLOCK" = virtual ] &&
      rate=$("$PY" scripts/salsm_open_rate.py "$dir" "$OPEN_LOAD"); then
      t=$(date +%s)
      odir="$OUT/open/$p-seed$seed"
      mkdir -p "$odir"
      echo "== open loop awpi-$p seed $seed at $rate ops/s (load $OPEN_LOAD of sa-gbdt-naive's busiest device)" >&2
      # shellcheck disable=SC2086
      "$BIN" compare --engines "$OPEN_ENGINES" --workload "awpi-$p" --awpi-scale "$SCALE" \
        --seed "$seed" "${GEN_ARGS[@]}" --python "$PY" --salsm-budget "$budget" \
        --salsm-latency-scale "$SCALE_LAT" --timeline-ms 250 --salsm-no-table5 \
        --salsm-arrival-rate "$rate" \
        --salsm-service-args "--tau-days $tau${SERVICE_ARGS:+ $SERVICE_ARGS}" "${CLOCK_ARGS[@]}" $EXTRA --out "$odir" \
        >"$odir/stdout.txt"
      echo "open loop $p seed $seed: $(($(date +%s) - t)) s" >>"$log"
    fi
  done
done

"$BIN" salsm-summary --dir "$OUT" >/dev/null
{
  echo
  echo "Settings: generator $GENERATOR${ABLATE:+ without $ABLATE}, traces at --awpi-scale $TRACE_SCALE"
  echo "(seed $SEED), compare runs at $SCALE (seeds $SEEDS) on the $CLOCK clock, device latency x $SCALE_LAT,"
  echo "alpha $ALPHA days, service args '${SERVICE_ARGS}', open-loop load ${OPEN_LOAD:-none}. Times:"
  echo
  sed 's/^/    /' "$log"
  echo
  echo "Total: $(($(date +%s) - start)) s."
} >>"$OUT/salsm-summary.md"
cat "$OUT/salsm-summary.md"
echo "summary: $OUT/salsm-summary.md" >&2
