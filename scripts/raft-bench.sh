#!/usr/bin/env bash
# Replicated writes on a 3-node loopback cluster (crates/cairn-raft): cairn's Raft store
# against RocksDB's (the same Raft logic behind the engine seam, Debian's librocksdb),
# one client and 16, three runs each with the order alternated. Prints the markdown
# section (command, commit, machine, medians and ranges) and writes it to $OUT.
#
#   scripts/raft-bench.sh                 # about 5 minutes on 2 cores
#   OPS=20000 REPEAT=5 scripts/raft-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OPS=${OPS:-8000}
REPEAT=${REPEAT:-3}
CLIENTS=${CLIENTS:-1,16}
OUT=${OUT:-bench-out/raft-bench.md}
bash crates/cairn-bench/scripts/setup-rocksdb.sh
export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}
cargo build --release -q -p cairn-raft --features rocksdb --bins
mkdir -p "$(dirname "$OUT")"
target/release/cairn-raft-bench --engines cairn,rocksdb --clients "$CLIENTS" \
  --ops "$OPS" --repeat "$REPEAT" | tee "$OUT"
