#!/usr/bin/env bash
# Runs cairn's checks and tests: formatting, lints, every test of the workspace, then the
# tests of the Python package (engine bindings and learners). Needs a Rust toolchain (cargo
# fetches the crates) and python3 with pip (pip fetches the Python packages). Extra
# arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check-readme.sh
bash scripts/check-unsafe.sh
python3 scripts/check-fn-length.py
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The engine's API docs build without a broken link.
RUSTDOCFLAGS="-D warnings" cargo doc -p cairn --no-deps
cargo test --workspace "$@"
# `cairn top` in a terminal (tmux) following a database being written (the debug
# binaries the workspace's tests just built).
bash scripts/top-tmux-check.sh
# The engine without RusKey's feature (no candle): every target type-checks and lints,
# and the library's tests pass (RusKey's presets are refused at open).
cargo clippy -p cairn --no-default-features --all-targets -- -D warnings
cargo test -p cairn --no-default-features --lib "$@"

# The RocksDB peer of cairn-bench (the benchmark's other engine): Debian's librocksdb,
# installed by the setup script; CAIRN_SKIP_ROCKSDB=1 leaves it out on a machine without
# apt-get.
if [ -z "${CAIRN_SKIP_ROCKSDB:-}" ]; then
  if bash crates/cairn-bench/scripts/setup-rocksdb.sh; then
    export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/x86_64-linux-gnu}
    cargo clippy -p cairn-bench --features rocksdb --all-targets -- -D warnings
    cargo test -p cairn-bench --features rocksdb "$@"
    # cairn-raft's comparison store (RocksDB behind the same seam) against openraft's suite.
    cargo clippy -p cairn-raft --features rocksdb --all-targets -- -D warnings
    cargo test -p cairn-raft --features rocksdb --test suite "$@"
  else
    echo "test.sh: librocksdb could not be installed (apt-get needs root or sudo):" \
      "the RocksDB peer's tests are SKIPPED" >&2
  fi
fi

# Python: package `cairn` in python/ (the engine bindings, crates/cairn-py, and the offline
# learners), tested from the source tree with its compiled module built in place.
# shellcheck source=scripts/pyenv.sh
. scripts/pyenv.sh
pyenv_prepare test,learn debug
CAIRN_REQUIRE_NATIVE=1 "$PY" -m pytest python/tests -q
# The package as users install it: the abi3 wheel into a fresh venv (no index, no Rust
# toolchain), no learner dependency in a plain install, the binding tests against it.
bash scripts/wheel-check.sh debug
