#!/usr/bin/env bash
# Builds cairn-bench against a current RocksDB (peers/rocksdb-latest: the `rocksdb` crate's
# bundled build, compiled from source) into target/rocksdb-latest, installing a C++
# compiler and libclang (bindgen) when missing. The first build compiles RocksDB itself
# (tens of minutes on two cores); later ones reuse it. Prints the binary's path last.
set -euo pipefail
cd "$(dirname "$0")/../../.." >/dev/null

bash crates/cairn-bench/scripts/apt-install.sh build-rocksdb-latest g++ libclang-dev

# Point bindgen at one libclang, the same every time: a changed LIBCLANG_PATH rebuilds
# bindgen and so RocksDB itself.
if [ -z "${LIBCLANG_PATH:-}" ]; then
  lib=$({ find /usr/lib \( -name 'libclang.so*' -o -name 'libclang-[0-9]*.so*' \) 2>/dev/null ||
    true; } | sort | tail -n 1)
  if [ -n "$lib" ]; then export LIBCLANG_PATH=$(dirname "$lib"); fi
fi
# Compile RocksDB from its bundled sources even where ROCKSDB_LIB_DIR points at Debian's
# (setup-rocksdb.sh says to export it): with it set, librocksdb-sys links that library.
unset ROCKSDB_LIB_DIR ROCKSDB_STATIC ROCKSDB_INCLUDE_DIR
# RocksDB's own build compiles for the machine it runs on (-march=native unless PORTABLE):
# without it the crate's build sees only Rust's baseline x86-64 features, and RocksDB's
# CRC32C (its WAL's checksum) falls back to software. The C++ compile only: cairn's Rust
# code is built as in the main workspace.
export CFLAGS="${CFLAGS:-} -march=native" CXXFLAGS="${CXXFLAGS:-} -march=native"
export CARGO_TARGET_DIR=target/rocksdb-latest
cargo build --release --locked --manifest-path peers/rocksdb-latest/Cargo.toml >&2
echo "$CARGO_TARGET_DIR/release/cairn-bench"
