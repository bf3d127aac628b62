#!/usr/bin/env bash
# Installs what `cargo build -p cairn-bench --features rocksdb` needs: Debian's librocksdb
# (7.8.x, which the rocksdb 0.20 crate links against), libclang for bindgen, and the
# rocksdb tools (ldb, sst_dump) for inspecting a kept database. Idempotent: apt is skipped
# when everything is already installed. Then build with:
#   ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu cargo build --release -p cairn-bench --features rocksdb
set -euo pipefail

packages=(librocksdb-dev libclang-dev rocksdb-tools)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-rocksdb: already installed: ${packages[*]}"
else
  echo "setup-rocksdb: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}"
fi

libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
if ! ls "$libdir"/librocksdb.so* >/dev/null 2>&1; then
  echo "setup-rocksdb: librocksdb.so not found in $libdir" >&2
  exit 1
fi
echo "setup-rocksdb: export ROCKSDB_LIB_DIR=$libdir"
