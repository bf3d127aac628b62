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
# Writes bourbon-out/summary.md (and per-scenario reports under bourbon-out/).
#
#   scripts/bourbon-bench.sh
#   SECTIONS="datasets ycsb" YCSB="c e" scripts/bourbon-bench.sh
#
# CLOCK=virtual [DEVICE=nvme|ssd|hdd, default nvme]: every run on cairn-bench's virtual device
# clock (--threads 1, cairn engines only, REPEAT 1: reruns repeat exactly), written under
# $OUT-virtual-$DEVICE. Default: CLOCK=wall, no device. BIN= skips the cargo build.
set -euo pipefail
cd "$(dirname "$0")/.."

CLOCK=${CLOCK:-wall}
RECORDS=${RECORDS:-2000000}
OPS=${OPS:-1000000}
WOPS=${WOPS:-300000}
OUT=${OUT:-bourbon-out}
if [ "$CLOCK" = virtual ]; then
  REPEAT=${REPEAT:-1}
else
  REPEAT=${REPEAT:-3}
fi
TABLE_SIZE=${TABLE_SIZE:-2M}
LEVEL1=${LEVEL1:-512K}
BUDGET=${BUDGET:-"--write-buffer-size 4M --cache-bytes 8M --mmap-reads --bloom-bits 10 --target-file-size $TABLE_SIZE --level1-bytes $LEVEL1"}
SECTIONS=${SECTIONS:-"datasets realkeys dists ycsb mixes"}
DATASETS=${DATASETS:-"linear seg1 normal seg10 clustered"}
# Section realkeys: key sets from registry packages (scripts/real-keys.sh writes them).
KEYS=${KEYS:-bench-data/keys}
REAL=${REAL:-"cities flights words"}
DISTS=${DISTS:-"sequential zipfian hotspot exponential uniform latest"}
MIXES=${MIXES:-"read=0.5,update=0.5 read=0.1,update=0.9"}
YCSB=${YCSB:-"a b c d e f"}
# The fence-pointer baseline: Bourbon's presets run on key-value separation (WiscKey), so
# cairn:wisckey is the like-for-like baseline; BASE=cairn:baseline compares with values inline.
BASE=${BASE:-cairn:wisckey}
# WARMUP=N: N ops of each run's stream unmeasured first (the analyzer has learned by then).

# The virtual clock: cairn only, one request thread, a device model; its own output tree.
# Note: it reads through pread, never memory maps (--mmap-reads has no effect there), so a
# block-cache miss costs a device read rather than a copy from the page cache.
CLOCK_FLAGS=()
case $CLOCK in
  wall) ;;
  virtual)
    DEVICE=${DEVICE:-nvme}
    case $DEVICE in
      nvme | ssd | hdd) ;;
      *) echo "CLOCK=virtual needs DEVICE=nvme, ssd or hdd (got '$DEVICE')" >&2; exit 2 ;;
    esac
    case $BASE in
      cairn | cairn:*) ;;
      *) echo "CLOCK=virtual runs cairn's engines only: BASE=$BASE cannot run there (use a cairn preset)" >&2; exit 2 ;;
    esac
    CLOCK_FLAGS=(--clock virtual --device "$DEVICE" --threads 1)
    OUT="${OUT%-virtual-"$DEVICE"}-virtual-$DEVICE"
    ;;
  *) echo "CLOCK must be wall or virtual (got '$CLOCK')" >&2; exit 2 ;;
esac

if [ -z "${BIN:-}" ]; then
  cargo build --release -p cairn-bench
  BIN=target/release/cairn-bench
fi
mkdir -p "$OUT"
summary="$OUT/summary.md"

# run DIR ENGINES ARGS...: one compare, its JSONs land in DIR.
run() {
  local dir=$1 engines=$2
  shift 2
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  "$BIN" compare --engines "$engines" --records "$RECORDS" $BUDGET --repeat "$REPEAT" \
    ${WARMUP:+--warmup-ops "$WARMUP"} ${CLOCK_FLAGS[@]+"${CLOCK_FLAGS[@]}"} --out "$dir" "$@" >"$dir/stdout.txt"
}

# j DIR JQ ENGINE: a field of ENGINE's result in DIR.
j() { jq -r "$2" "$1"/"$(echo "$3" | tr ':' '-')".json; }

{
  echo "# Bourbon on cairn"
  echo
  echo "Command: \`$(for v in CLOCK DEVICE RECORDS OPS WARMUP REPEAT SECTIONS DATASETS REAL; do [ -n "${!v:-}" ] && printf '%s="%s" ' "$v" "${!v}"; done)scripts/bourbon-bench.sh\`; commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`; machine: $(nproc) cores, $(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $(date -u +%F)."
  echo
  echo "records=$RECORDS, read ops=$OPS, write-mix ops=$WOPS, repeats=$REPEAT (median run), budget: $BUDGET"
  if [ "$CLOCK" = virtual ]; then
    echo
    echo "Clock: virtual, device $DEVICE (--clock virtual --threads 1; reads by pread, no memory maps): ops/s and latencies are simulated device time plus priced CPU;"
    echo "the sampled ns columns (search ns, lookup breakdown) and CPU columns are still measured on the wall clock."
  fi
} >"$summary"
has() { [[ " $SECTIONS " == *" $1 "* ]]; }

# dataset_name DATASET: a dataset's name in tables and directories (a key file's basename).
dataset_name() { if [[ $1 == file:* ]]; then basename "${1#file:}" .keys; else echo "$1"; fi; }

# dataset_rows TITLE DATASET...: the read-only datasets table and its lookup breakdown.
# A dataset is a name or file:PATH (a key file, e.g. from scripts/real-keys.sh): a file
# loads all its keys (at most RECORDS), with the key size its longest key needs.
dataset_rows() {
  local title=$1 d dir records keyflags name
  shift
  {
    echo
    echo "## $title (uniform random reads)"
    echo
    echo "| dataset | records | baseline ops/s | bourbon ops/s | ratio | bourbon-always ops/s | ratio | always, whole blocks | ratio | learned tables: cba (always) | #seg | %seg | fence search ns (index part) | model search ns (index part) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  } >>"$summary"
  for d in "$@"; do
    name=$(dataset_name "$d") records=$RECORDS keyflags=()
    if [[ $d == file:* ]]; then
      records=$(grep -c . "${d#file:}")
      [ "$records" -gt "$RECORDS" ] && records=$RECORDS
      # Byte keys (a line that is not a decimal integer) need their longest key plus the
      # 8 bytes inserted keys number; integers are 8 bytes, padded to the default 16.
      if grep -qv '^[0-9]*$' "${d#file:}"; then
        keyflags=(--key-size "$(LC_ALL=C awk '{ if (length($0) > m) m = length($0) } END { print (m + 8 > 16 ? m + 8 : 16) }' "${d#file:}")")
      fi
    fi
    echo "== dataset $name =="
    dir="$OUT/dataset-$name"
    RECORDS=$records run "$dir" "$BASE,cairn:bourbon,cairn:bourbon-always,cairn:bourbon-always-blocks" --workload readrandom --ops "$OPS" --dataset "$d" ${keyflags[@]+"${keyflags[@]}"}
    b=$(j "$dir" .ops_per_sec "$BASE")
    l=$(j "$dir" .ops_per_sec cairn:bourbon)
    a=$(j "$dir" .ops_per_sec cairn:bourbon-always)
    w=$(j "$dir" .ops_per_sec cairn:bourbon-always-blocks)
    lt=$(j "$dir" .engine_stats.learned_tables cairn:bourbon)
    s=$(j "$dir" '.engine_stats | "(\(.learned_tables)) | \(.learned_segments) | \(.learned_pct_segments * 1000 | round / 1000)%"' cairn:bourbon-always)
    s="$lt $s"
    f=$(j "$dir" '.engine_stats | "\(.fence_path_ns | round) (\(.fence_index_ns | round))"' "$BASE")
    mo=$(j "$dir" '.engine_stats | "\(.model_path_ns | round) (\(.model_index_ns | round))"' cairn:bourbon-always)
    printf '| %s | %s | %.0f | %.0f | %.2fx | %.0f | %.2fx | %.0f | %.2fx | %s | %s | %s |\n' "$name" "$records" "$b" "$l" "$(echo "$l / $b" | bc -l)" "$a" "$(echo "$a / $b" | bc -l)" "$w" "$(echo "$w / $b" | bc -l)" "$s" "$f" "$mo" >>"$summary"
  done
  {
    echo
    echo "### Lookup breakdown (mean ns per get, one get in 64 timed; the runs above)"
    echo
    echo "| dataset | engine | memtables | filters | index/model | data block | value read | other | total | levels with tables |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  } >>"$summary"
  for d in "$@"; do
    name=$(dataset_name "$d")
    for e in "$BASE" cairn:bourbon cairn:bourbon-always cairn:bourbon-always-blocks; do
      row=$(j "$OUT/dataset-$name" '.engine_stats | [.step_memtables_ns, .step_filters_ns, .step_index_ns, .step_data_ns, .step_value_ns, .step_other_ns, .step_total_ns] | map(round | tostring) | join(" | ")' "$e")
      lv=$(j "$OUT/dataset-$name" '[.engine_stats | to_entries[] | select(.key | startswith("files_L")) | select(.value > 0)] | length' "$e")
      printf '| %s | %s | %s | %s |\n' "$name" "$e" "$row" "$lv" >>"$summary"
    done
  done
}

if has datasets; then
  # shellcheck disable=SC2086
  dataset_rows "Datasets" $DATASETS
fi

if has realkeys; then
  scripts/real-keys.sh "$KEYS" >&2
  real=()
  for k in $REAL; do real+=("file:$KEYS/$k.keys"); done
  dataset_rows "Real key sets (sources: $KEYS/SOURCES.md)" "${real[@]}"
fi

if has dists; then
{
  echo
  echo "## Request distributions (read-only, seg1)"
  echo
  echo "| distribution | baseline ops/s | bourbon ops/s | ratio |"
  echo "|---|---:|---:|---:|"
} >>"$summary"
for q in $DISTS; do
  echo "== distribution $q =="
  dir="$OUT/dist-$q"
  run "$dir" "$BASE,cairn:bourbon" --workload readrandom --ops "$OPS" --dataset seg1 \
    --distribution "$q"
  b=$(j "$dir" .ops_per_sec "$BASE")
  l=$(j "$dir" .ops_per_sec cairn:bourbon)
  printf '| %s | %.0f | %.0f | %.2fx |\n' "$q" "$b" "$l" "$(echo "$l / $b" | bc -l)" >>"$summary"
done
fi

if has ycsb; then
{
  echo
  echo "## YCSB (default keys)"
  echo
  echo "| workload | baseline ops/s | bourbon ops/s | ratio | bourbon-always ops/s | ratio | baseline p99 us | bourbon p99 us | learned tables, always | learned gets (fallbacks), always | learned seeks (fallbacks), always |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >>"$summary"
for y in $YCSB; do
  echo "== ycsb-$y =="
  dir="$OUT/ycsb-$y"
  run "$dir" "$BASE,cairn:bourbon,cairn:bourbon-always" --workload "ycsb-$y" --ops "$WOPS"
  b=$(j "$dir" .ops_per_sec "$BASE")
  l=$(j "$dir" .ops_per_sec cairn:bourbon)
  a=$(j "$dir" .ops_per_sec cairn:bourbon-always)
  bp=$(j "$dir" '.latency_us.p99 * 10 | round / 10' "$BASE")
  lp=$(j "$dir" '.latency_us.p99 * 10 | round / 10' cairn:bourbon)
  lt=$(j "$dir" .engine_stats.learned_tables cairn:bourbon)
  sk=$(j "$dir" '.engine_stats | "\(.learned_tables) | \(.learned_lookups) (\(.learned_fallbacks)) | \(.learned_seeks) (\(.learned_seek_fallbacks))"' cairn:bourbon-always)
  sk="$lt, $sk"
  printf '| ycsb-%s | %.0f | %.0f | %.2fx | %.0f | %.2fx | %s | %s | %s |\n' "$y" "$b" "$l" "$(echo "$l / $b" | bc -l)" "$a" "$(echo "$a / $b" | bc -l)" "$bp" "$lp" "$sk" >>"$summary"
done
fi

if has mixes; then
{
  echo
  echo "## Write-heavy mixes (seg1, uniform): learning never / always / cba"
  echo
  echo "| mix | engine | ops/s | vs baseline | p99 us | tables learned | learning CPU ms | process CPU s |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
} >>"$summary"
for m in $MIXES; do
  echo "== mix $m =="
  dir="$OUT/mix-$(echo "$m" | tr ',=' '-_')"
  engines=$BASE,cairn:bourbon-never,cairn:bourbon-always,cairn:bourbon
  run "$dir" "$engines" --workload mix --mix "$m" --distribution uniform --ops "$WOPS" \
    --dataset seg1
  base=$(j "$dir" .ops_per_sec "$BASE")
  for e in ${engines//,/ }; do
    ops=$(j "$dir" .ops_per_sec "$e")
    row=$(j "$dir" '"\(.latency_us.p99 * 10 | round / 10) | \(.engine_stats.learned_tables) | \(.engine_stats.learn_cpu_ms | round) | \((.cpu.user_s + .cpu.sys_s) * 100 | round / 100)"' "$e")
    printf '| %s | %s | %.0f | %.2fx | %s |\n' "$m" "$e" "$ops" "$(echo "$ops / $base" | bc -l)" "$row" >>"$summary"
  done
done
fi

echo
cat "$summary"
