#!/usr/bin/env bash
# cairn's Python bindings against rocksdict (RocksDB's Python binding): builds the compiled
# module in release mode in target/pyenv, then runs python/bench/bench_kv.py. Arguments go
# to the script (e.g. --keys 200000 --repeat 5); results in bench-out/python-kv.json.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/pyenv.sh
. scripts/pyenv.sh
pyenv_prepare test,learn,bench release
"$PY" python/bench/bench_kv.py --out bench-out/python-kv.json "$@"
