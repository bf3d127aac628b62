#!/usr/bin/env bash
# cairn's main job: cairn against RocksDB on the same seeded operation streams.
# Installs RocksDB (Debian's librocksdb) when missing, builds cairn-bench in release mode,
# runs each workload with both engines one after the other, prints the tables and writes
# bench-out/<workload>/{report.md,*.json,*.csv,*.png} and bench-out/summary.md.
#
#   scripts/bench.sh                      # quick: 200k records, 200k ops per workload
#   RECORDS=1000000 OPS=1000000 scripts/bench.sh
#   WORKLOADS="readrandom ycsb-a" ENGINES=rocksdb,cairn,cairn:tiering scripts/bench.sh
#   EXTRA="--value-size 1024" scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RECORDS=${RECORDS:-200000}
OPS=${OPS:-200000}
ENGINES=${ENGINES:-rocksdb,cairn}
WORKLOADS=${WORKLOADS:-"fillrandom readrandom ycsb-a ycsb-b ycsb-c ycsb-d ycsb-e ycsb-f"}
OUT=${OUT:-bench-out}
# The shared budget: both engines get the same memtable, block cache and bloom bits.
# The cache is small next to the data so reads reach storage.
BUDGET=${BUDGET:-"--write-buffer-size 4M --cache-bytes 4M --bloom-bits 10"}
EXTRA=${EXTRA:-}

bash crates/cairn-bench/scripts/setup-rocksdb.sh
export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}
cargo build --release -p cairn-bench --features rocksdb
BIN=target/release/cairn-bench

mkdir -p "$OUT"
summary="$OUT/summary.md"
{
  echo "# cairn-bench summary"
  echo
  echo "records=$RECORDS ops=$OPS engines=$ENGINES budget: $BUDGET $EXTRA"
  echo
} >"$summary"
for w in $WORKLOADS; do
  echo "== $w =="
  mkdir -p "$OUT/$w"
  # shellcheck disable=SC2086
  "$BIN" compare --engines "$ENGINES" --workload "$w" --records "$RECORDS" --ops "$OPS" \
    $BUDGET $EXTRA --out "$OUT/$w" | tee "$OUT/$w/table.md.tmp" || { echo "workload $w failed" >&2; exit 1; }
  { echo "## $w"; echo; cat "$OUT/$w/table.md.tmp"; echo; } >>"$summary"
  rm -f "$OUT/$w/table.md.tmp"
done
echo "summary: $summary"
