#!/usr/bin/env bash
# cairn's main job: cairn against RocksDB on the same seeded operation streams.
# Installs RocksDB (Debian's librocksdb; PEER=rocksdb-latest builds a current one) when
# missing, builds cairn-bench in release mode, runs each workload REPEAT times per engine
# with the engine order alternated (RocksDB timed without statistics; its counters from
# one more, untimed pass), both engines settled after the load, prints the tables and writes
# bench-out/<workload>/{report.md,*.json,*.csv,*.png} and bench-out/summary.md (one row a
# workload: median ops/s with the range, ratio, bytes read per op, write amplification,
# disk size, peak RSS, stall time).
#
#   scripts/bench.sh                      # quick: 200k records, 200k ops, 3 runs each
#   REPEAT=5 RECORDS=1000000 OPS=1000000 scripts/bench.sh
#   THREADS="1 2 4" WORKLOADS="fillrandom readrandom" scripts/bench.sh   # scaling table
#   DIRECT=1 scripts/bench.sh             # O_DIRECT reads for both: reads reach storage
#   COMPRESSION="lz4 none" scripts/bench.sh   # block compression of both (default lz4)
#   WORKLOADS="readrandom ycsb-a" ENGINES=rocksdb,cairn,cairn:tiering scripts/bench.sh
#   ENGINES=fjall,cairn scripts/bench.sh  # against fjall (the first engine is each ratio's base)
#   PEER=rocksdb-latest scripts/bench.sh  # `rocksdb` is a current RocksDB (bundled build,
#                                         # compiled once into target/rocksdb-latest)
#   EXTRA="--value-size 1024" scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RECORDS=${RECORDS:-200000}
OPS=${OPS:-200000}
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-1}
# Block compression of both engines, at every level: none, lz4, zstd, zstd:LEVEL; a list
# runs each (values are db_bench's, compressible to about half).
COMPRESSION=${COMPRESSION:-lz4}
ENGINES=${ENGINES:-rocksdb,cairn}
WORKLOADS=${WORKLOADS:-"fillrandom overwrite readrandom seekrandom ycsb-a ycsb-b ycsb-c ycsb-d ycsb-e ycsb-f"}
# A PEER build's results go apart from the default build's.
OUT=${OUT:-bench-out${PEER:+/$PEER}}
# The shared budget: both engines get the same memtable size and count (2, RocksDB's
# default), block cache and bloom bits. The cache is small next to the data so reads
# reach storage.
BUDGET=${BUDGET:-"--write-buffer-size 4M --memtables 2 --cache-bytes 4M --bloom-bits 10"}
EXTRA=${EXTRA:-}
if [ -n "${DIRECT:-}" ]; then EXTRA="$EXTRA --direct-io"; fi

if [ "${PEER:-}" = rocksdb-latest ]; then
  # `rocksdb` is then a current RocksDB, built from source once (peers/rocksdb-latest).
  BIN=$(bash crates/cairn-bench/scripts/build-rocksdb-latest.sh)
elif [ -n "${PEER:-}" ]; then
  echo "PEER=$PEER: the only other peer build is rocksdb-latest" >&2
  exit 2
else
  bash crates/cairn-bench/scripts/setup-rocksdb.sh
  export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}
  cargo build --release -p cairn-bench --features rocksdb
  BIN=target/release/cairn-bench
fi

mkdir -p "$OUT"
dirs=()
for c in $COMPRESSION; do
  for t in $THREADS; do
    for w in $WORKLOADS; do
      dir="$OUT/$w"
      if [ "$THREADS" != 1 ]; then dir="$OUT/t$t/$w"; fi
      if [ "$COMPRESSION" != "$c" ]; then dir="$OUT/$c/${dir#"$OUT"/}"; fi
      echo "== $w, $t thread(s), compression $c =="
      mkdir -p "$dir"
      # shellcheck disable=SC2086
      "$BIN" compare --engines "$ENGINES" --workload "$w" --records "$RECORDS" --ops "$OPS" \
        --threads "$t" --repeat "$REPEAT" --compression "$c" $BUDGET $EXTRA --out "$dir" \
        || { echo "workload $w failed" >&2; exit 1; }
      dirs+=("$dir")
    done
  done
done
summary="$OUT/summary.md"
{
  echo "# cairn-bench summary"
  echo
  echo "records=$RECORDS ops=$OPS runs=$REPEAT threads=$THREADS engines=$ENGINES compression=$COMPRESSION peer=${PEER:-default}"
  echo "budget: $BUDGET $EXTRA; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  "$BIN" summary "${dirs[@]}"
} >"$summary"
cat "$summary"
echo "summary: $summary"
