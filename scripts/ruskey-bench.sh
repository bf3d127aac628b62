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
# RusKey's K and latency settled). $OUT/summary.md collects them with each part's time.
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

# REGIME=paper: RusKey's tree shape (section 7) at a size that runs in minutes: every flush
# merged at once (level-0 trigger 1), level 1 = T memtables, 256 KiB tables, and levels
# 0..3 with enough records that level 3, the configured last level (lazy-leveling's one
# run), holds most of the data; on the virtual clock (nvme) unless CLOCK says otherwise.
# Missions of 5,000 ops; every static K from 1 to T. Each knob can still be set on its own.
REGIME=${REGIME:-}
case $REGIME in
  "") ;;
  paper)
    WBS=${WBS:-256K}
    LEVEL1=${LEVEL1:-2560K}
    L0_TRIGGER=${L0_TRIGGER:-1}
    NUM_LEVELS=${NUM_LEVELS:-4}
    TABLE=${TABLE:-256K}
    RECORDS=${RECORDS:-300000}
    CLOCK=${CLOCK:-virtual}
    # Missions of 5,000 ops: at 1,000 a mission's latency varies ~10% while neighbouring K
    # differ 0-5%, and the tuner cannot learn (docs/results/ruskey.md). The paper's are 50,000.
    MISSION_OPS=${MISSION_OPS:-5000}
    MISSIONS=${MISSIONS:-60}
    STATIC_MISSIONS=${STATIC_MISSIONS:-100}
    YCSB_OPS=${YCSB_OPS:-500000}
    ENGINES=${ENGINES:-cairn:k-1,cairn:k-2,cairn:k-3,cairn:k-4,cairn:k-5,cairn:k-6,cairn:k-7,cairn:k-8,cairn:k-9,cairn:k-10,cairn:lazy-leveling,cairn:monkey,cairn:greedy,cairn:ruskey}
    YCSB_ENGINES=${YCSB_ENGINES:-cairn:k-1,cairn:k-2,cairn:k-4,cairn:k-10,cairn:ruskey}
    ;;
  *) echo "REGIME must be empty or paper (got '$REGIME')" >&2; exit 2 ;;
esac
L0_TRIGGER=${L0_TRIGGER:-}
NUM_LEVELS=${NUM_LEVELS:-}
TABLE=${TABLE:-}

QUICK=${QUICK:-}
if [ -n "$QUICK" ]; then
  RECORDS=${RECORDS:-50000}
  MISSION_OPS=${MISSION_OPS:-500}
  MISSIONS=${MISSIONS:-100}
  STATIC_MISSIONS=${STATIC_MISSIONS:-80}
  YCSB_OPS=${YCSB_OPS:-20000}
  YCSB_WORKLOADS=${YCSB_WORKLOADS:-"a b c d e f"}
  YCSB_ENGINES=${YCSB_ENGINES:-cairn:ruskey,cairn:default,cairn:tiering}
else
  RECORDS=${RECORDS:-80000}
  MISSION_OPS=${MISSION_OPS:-1000}
  MISSIONS=${MISSIONS:-400}
  STATIC_MISSIONS=${STATIC_MISSIONS:-400}
  YCSB_OPS=${YCSB_OPS:-100000}
  YCSB_WORKLOADS=${YCSB_WORKLOADS:-"a b c d e f"}
fi
TRANSITION_MISSIONS=${TRANSITION_MISSIONS:-120}
TRANSITION_AT=${TRANSITION_AT:-$((TRANSITION_MISSIONS / 2))}
TRANSITION_ENGINES=${TRANSITION_ENGINES:-cairn:transition-greedy,cairn:transition-lazy,cairn:transition-flexible}
PARTS=${PARTS:-"sessions static greedy monkey ycsb transitions"}
ENGINES=${ENGINES:-cairn:ruskey,cairn:default,cairn:moderate,cairn:tiering,cairn:lazy-leveling,cairn:greedy}
GREEDY_ENGINES=${GREEDY_ENGINES:-cairn:greedy-50-50,cairn:greedy-33-67,cairn:greedy-25-75,cairn:greedy-10-90,cairn:greedy-25-50,cairn:greedy-50-75}
MONKEY_ENGINES=${MONKEY_ENGINES:-cairn:ruskey-monkey,cairn:lazy-leveling,cairn:monkey}
YCSB_ENGINES=${YCSB_ENGINES:-cairn:ruskey,cairn:default,cairn:moderate,cairn:tiering}
# Tuner seeds of the learned engines (cairn:ruskey*): one run per seed.
SEEDS=${SEEDS:-"1 2 3 4 5"}
# The method ruskey-summary's goals are about (default: cairn:ruskey, else the first
# cairn:ruskey*/cairn:greedy* engine); set it to try the script with static presets only.
RUSKEY=${RUSKEY:-}
KEY_SIZE=${KEY_SIZE:-128}
VALUE_SIZE=${VALUE_SIZE:-896}
WBS=${WBS:-1M}
LEVEL1=${LEVEL1:-4M}
T=${T:-10}
CACHE=${CACHE:-8M}
BLOOM=${BLOOM:-8}
MONKEY_BLOOM=${MONKEY_BLOOM:-4}
SEED=${SEED:-42}
# Fig. 6's workloads: NAME:MIX.
STATIC_MIXES=${STATIC_MIXES:-"read-heavy:read=0.9,update=0.1 balanced:read=0.5,update=0.5 write-heavy:read=0.1,update=0.9"}
OUT=${OUT:-bench-out/ruskey}
EXTRA=${EXTRA:-}
CLOCK=${CLOCK:-wall}

. scripts/virtual-clock-lib.sh

# The virtual clock: cairn only, one request thread, a device model; its own output tree.
CLOCK_FLAGS=()
case $CLOCK in
  wall) ;;
  virtual)
    DEVICE=${DEVICE:-nvme}
    virtual_device_and_out
    CLOCK_FLAGS=(--clock virtual --device "$DEVICE" --threads 1)
    ENGINES=$(cairn_only ENGINES "$ENGINES")
    GREEDY_ENGINES=$(cairn_only GREEDY_ENGINES "$GREEDY_ENGINES")
    MONKEY_ENGINES=$(cairn_only MONKEY_ENGINES "$MONKEY_ENGINES")
    YCSB_ENGINES=$(cairn_only YCSB_ENGINES "$YCSB_ENGINES")
    TRANSITION_ENGINES=$(cairn_only TRANSITION_ENGINES "$TRANSITION_ENGINES")
    ;;
  *) echo "CLOCK must be wall or virtual (got '$CLOCK')" >&2; exit 2 ;;
esac

if [ -z "${BIN:-}" ]; then
  cargo build --release -p cairn-bench
  BIN=target/release/cairn-bench
fi

SESSION_OPS=$((5 * MISSIONS * MISSION_OPS))
STATIC_OPS=$((STATIC_MISSIONS * MISSION_OPS))
mkdir -p "$OUT"
summary="$OUT/summary.md"
start=$(date +%s)

# compare DIR ENGINES ARGS...: one workload, every engine, the shared tree and budget.
compare() {
  local dir=$1 engines=$2
  shift 2
  mkdir -p "$dir"
  echo "== $engines $* -> $dir" >&2
  # shellcheck disable=SC2086
  "$BIN" compare --engines "$engines" --records "$RECORDS" --seed "$SEED" \
    --key-size "$KEY_SIZE" --value-size "$VALUE_SIZE" \
    --write-buffer-size "$WBS" --level1-bytes "$LEVEL1" --size-ratio "$T" \
    --cache-bytes "$CACHE" --mission-ops "$MISSION_OPS" --settle \
    ${L0_TRIGGER:+--l0-trigger "$L0_TRIGGER"} ${TABLE:+--target-file-size "$TABLE"} \
    ${NUM_LEVELS:+--num-levels "$NUM_LEVELS"} \
    ${CLOCK_FLAGS[@]+"${CLOCK_FLAGS[@]}"} $EXTRA "$@" --out "$dir" >"$dir/stdout.txt"
}

# seeded DIR ENGINES ARGS...: compare ENGINES on one workload: the learned ones
# (cairn:ruskey*) once per seed of $SEEDS into DIR/seed-S with --tuner-seed S, the others
# once into DIR. On the virtual clock a static's rerun is identical, so one run suffices
# (greedy is deterministic too). Appends the directories it wrote to DIRS.
seeded() {
  local dir=$1 e s learned=() others=()
  local -a all
  IFS=, read -ra all <<<"$2"
  shift 2
  for e in "${all[@]}"; do
    case $e in
      cairn:ruskey*) learned+=("$e") ;;
      *) others+=("$e") ;;
    esac
  done
  if [ ${#others[@]} -gt 0 ]; then
    compare "$dir" "$(IFS=,; echo "${others[*]}")" "$@"
    DIRS+=("$dir")
  fi
  if [ ${#learned[@]} -gt 0 ]; then
    for s in $SEEDS; do
      compare "$dir/seed-$s" "$(IFS=,; echo "${learned[*]}")" "$@" --tuner-seed "$s"
      DIRS+=("$dir/seed-$s")
    done
  fi
}

# rsummary TITLE OUTFILE DIR...: ruskey-summary over the directories, into the summary.
rsummary() {
  local title=$1 out=$2
  shift 2
  local args=()
  for d in "$@"; do args+=(--dir "$d"); done
  [ -n "$RUSKEY" ] && args+=(--ruskey "$RUSKEY")
  {
    echo
    "$BIN" ruskey-summary --title "$title" --out "$out" "${args[@]}"
  } >>"$summary"
}

# part NAME: times a part into the summary.
part_start=0
begin() { part_start=$(date +%s); echo "### part $1" >&2; }
finish() { echo "_Part $1: $(($(date +%s) - part_start)) s._" >>"$summary"; }

{
  echo "# RusKey on cairn (cairn-bench, scripts/ruskey-bench.sh)"
  echo
  echo "$RECORDS records of $KEY_SIZE + $VALUE_SIZE bytes (uniform keys unless YCSB); memtable $WBS,"
  echo "level 1 $LEVEL1, size ratio $T, block cache $CACHE, $BLOOM bloom bits per key; missions of"
  echo "$MISSION_OPS ops, $MISSIONS per session ($SESSION_OPS ops over five sessions), $STATIC_MISSIONS per"
  echo "static workload ($STATIC_OPS ops); seed $SEED. Every engine loads the records and waits for"
  echo "background work (--settle) before the measured ops. Tuner seeds of cairn:ruskey*: $SEEDS"
  echo "(one run each; other engines run once). Extra flags: ${EXTRA:-none}."
  if [ "$CLOCK" = virtual ]; then
    echo
    echo "Clock: virtual, device $DEVICE (--clock virtual --threads 1): times and latencies are"
    echo "the simulated device's and priced CPU's, not the wall clock's."
  fi
} >"$summary"

for p in $PARTS; do
  case $p in
    sessions)
      begin sessions
      DIRS=()
      seeded "$OUT/sessions" "$ENGINES" --workload ruskey-sessions --distribution uniform \
        --ops "$SESSION_OPS" --bloom-bits "$BLOOM"
      rsummary "Fig. 7 / Table 3: dynamic sessions" "$OUT/sessions/ruskey-summary.md" "${DIRS[@]}"
      finish sessions
      ;;
    static)
      begin static
      DIRS=()
      for w in $STATIC_MIXES; do
        name=${w%%:*}
        seeded "$OUT/static/$name" "$ENGINES" --workload mix --mix "${w#*:}" \
          --distribution uniform --ops "$STATIC_OPS" --bloom-bits "$BLOOM"
      done
      rsummary "Fig. 6: static workloads" "$OUT/static/ruskey-summary.md" "${DIRS[@]}"
      finish static
      ;;
    greedy)
      begin greedy
      DIRS=()
      seeded "$OUT/greedy" "$GREEDY_ENGINES" --workload ruskey-sessions --distribution uniform \
        --ops "$SESSION_OPS" --bloom-bits "$BLOOM"
      # With the sessions part's runs (same stream; its seeds of this run only): each
      # greedy variant ranks against its static policies (Fig. 12's table).
      [ -d "$OUT/sessions" ] && DIRS+=("$OUT/sessions")
      for s in $SEEDS; do
        [ -d "$OUT/sessions/seed-$s" ] && DIRS+=("$OUT/sessions/seed-$s")
      done
      rsummary "Fig. 12: greedy thresholds" "$OUT/greedy/ruskey-summary.md" "${DIRS[@]}"
      finish greedy
      ;;
    monkey)
      begin monkey
      DIRS=()
      for w in $STATIC_MIXES; do
        name=${w%%:*}
        seeded "$OUT/monkey/$name" "$MONKEY_ENGINES" --workload mix --mix "${w#*:}" \
          --distribution uniform --ops "$STATIC_OPS" --bloom-bits "$MONKEY_BLOOM"
      done
      rsummary "Fig. 8: Monkey blooms ($MONKEY_BLOOM bits per key)" "$OUT/monkey/ruskey-summary.md" "${DIRS[@]}"
      finish monkey
      ;;
    ycsb)
      begin ycsb
      DIRS=()
      for l in $YCSB_WORKLOADS; do
        seeded "$OUT/ycsb/ycsb-$l" "$YCSB_ENGINES" --workload "ycsb-$l" \
          --ops "$YCSB_OPS" --bloom-bits "$BLOOM"
      done
      rsummary "Fig. 11: YCSB (zipfian)" "$OUT/ycsb/ruskey-summary.md" "${DIRS[@]}"
      finish ycsb
      ;;
    transitions)
      begin transitions
      compare "$OUT/transitions" "$TRANSITION_ENGINES" --workload mix --mix read=0.5,update=0.5 \
        --distribution uniform --ops $((TRANSITION_MISSIONS * MISSION_OPS)) --bloom-bits "$BLOOM" \
        --set-k-at "$TRANSITION_AT:$T"
      {
        echo
        echo "## Fig. 10: transitions ($OUT/transitions/report.md, transition.png)"
        echo
        awk '/^## K change/{p=1; next} /^## /{p=0} p' "$OUT/transitions/report.md"
      } >>"$summary"
      finish transitions
      ;;
    *)
      echo "unknown part $p (sessions static greedy monkey ycsb transitions)" >&2
      exit 2
      ;;
  esac
done

{
  echo
  echo "Total time: $(($(date +%s) - start)) s. Per-mission plots: */ruskey_missions.png."
} >>"$summary"
cat "$summary"
echo "summary: $summary" >&2
