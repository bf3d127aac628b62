#!/usr/bin/env bash
# Installs what `cargo build -p cairn-bench --features rocksdb` needs: Debian's librocksdb
# (7.8.x, which the rocksdb 0.20 crate links against), libclang for bindgen, and the
# rocksdb tools (ldb, sst_dump) for inspecting a kept database. Idempotent: apt is skipped
# when everything is already installed. Then build with:
#   ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build --release -p cairn-bench --features rocksdb
set -euo pipefail

bash "$(dirname "$0")/apt-install.sh" setup-rocksdb librocksdb-dev libclang-dev rocksdb-tools

libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
if ! ls "$libdir"/librocksdb.so* >/dev/null 2>&1; then
  echo "setup-rocksdb: librocksdb.so not found in $libdir" >&2
  exit 1
fi
echo "setup-rocksdb: export ROCKSDB_LIB_DIR=$libdir"
