#!/usr/bin/env bash
# Cross-checks cairn-bench's RocksDB figures against RocksDB's own db_bench (Debian's
# rocksdb-tools, the same librocksdb 7.8 the harness links) under matched conditions:
# the same records, reads, key and value sizes, memtable size and count, block cache,
# bloom bits, no compression, statistics off, and the same fill/flush/settle/read steps
# (db_bench: filluniquerandom,flush,waitforcompaction,readrandom). Keeps db_bench's
# output and writes $OUT/check.md: db_bench's ops/s beside the harness's for RocksDB
# (and cairn's, for scale).
#
#   scripts/db-bench-check.sh
#   RECORDS=1000000 READS=1000000 DIRECT=1 scripts/db-bench-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RECORDS=${RECORDS:-200000}
READS=${READS:-200000}
REPEAT=${REPEAT:-3}
WBS=${WBS:-4194304}
CACHE=${CACHE:-4194304}
OUT=${OUT:-bench-out/db-bench-check}
direct=false
extra=()
if [ -n "${DIRECT:-}" ]; then direct=true; extra+=(--direct-io); fi

bash crates/cairn-bench/scripts/setup-rocksdb.sh
export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}
cargo build --release -p cairn-bench --features rocksdb
BIN=target/release/cairn-bench
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# db_bench, REPEAT times, each on a fresh database.
: >"$OUT/db_bench.txt"
for i in $(seq "$REPEAT"); do
  rm -rf "$work/db"
  db_bench --benchmarks=filluniquerandom,flush,waitforcompaction,readrandom \
    --db="$work/db" --num="$RECORDS" --reads="$READS" --key_size=16 --value_size=100 \
    --write_buffer_size="$WBS" --max_write_buffer_number=2 --cache_size="$CACHE" \
    --bloom_bits=10 --compression_type=none --statistics=0 --threads=1 --seed="$i" \
    --use_direct_reads="$direct" --use_direct_io_for_flush_and_compaction="$direct" \
    | tee -a "$OUT/db_bench.txt"
done

# The harness on the same conditions (fills are timed to the last write, as db_bench's
# filluniquerandom is; readrandom after flush and settle).
common=(--records "$RECORDS" --write-buffer-size "$WBS" --memtables 2 --cache-bytes "$CACHE"
  --bloom-bits 10 --repeat "$REPEAT" "${extra[@]}")
"$BIN" compare --engines rocksdb,cairn --workload fillrandom "${common[@]}" --out "$OUT/fillrandom"
"$BIN" compare --engines rocksdb,cairn --workload readrandom --ops "$READS" "${common[@]}" \
  --out "$OUT/readrandom"

# Median of db_bench's ops/sec per benchmark.
median() { sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
dbb() { grep -E "^$1 +:" "$OUT/db_bench.txt" | sed -E 's/.* ([0-9]+) ops\/sec.*/\1/' | median; }
harness() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["ops_per_sec"]))' "$1"; }
{
  echo "# db_bench cross-check"
  echo
  echo "records=$RECORDS reads=$READS runs=$REPEAT write buffer=$WBS x2 cache=$CACHE bloom=10 direct=$direct; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "| step | db_bench RocksDB ops/s | cairn-bench RocksDB ops/s | harness / db_bench | cairn-bench cairn ops/s |"
  echo "|---|---:|---:|---:|---:|"
  for pair in "filluniquerandom fillrandom" "readrandom readrandom"; do
    set -- $pair
    d=$(dbb "$1"); r=$(harness "$OUT/$2/rocksdb.json"); c=$(harness "$OUT/$2/cairn.json")
    ratio=$(python3 -c "import sys; d,r=sys.argv[1:]; print(f'{float(r)/float(d):.2f}x' if d not in ('-','0') else '-')" "$d" "$r")
    echo "| $1 / $2 | $d | $r | $ratio | $c |"
  done
  echo
  echo "Medians of $REPEAT runs each. db_bench's own output: db_bench.txt."
} >"$OUT/check.md"
cat "$OUT/check.md"
