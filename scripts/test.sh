#!/usr/bin/env bash
# Runs cairn's checks and tests: formatting, lints, every test of the workspace, then the
# Python learners' tests. Needs a Rust toolchain (cargo fetches the crates) and python3 with
# pip (pip fetches the Python packages). Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace "$@"

# Python: the offline learners in python/ (package `cairn`), tested from the source tree.
# A virtual environment under target/ holds the package and its dependencies; it is
# (re)installed when python/pyproject.toml changes. Where python3 cannot make a venv with
# pip (Debian without python3-venv), they go to the user's site-packages instead.
PY=target/pyenv/bin/python
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  rm -rf target/pyenv
  python3 -m venv target/pyenv >/dev/null 2>&1 || true
  "$PY" -m pip --version >/dev/null 2>&1 || { rm -rf target/pyenv; PY=python3; }
fi
if [ "$PY" = python3 ]; then
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --user --disable-pip-version-check './python[test]'
else
  stamp="$(sha256sum python/pyproject.toml | cut -d' ' -f1)"
  if [ "$(cat target/pyenv/.cairn-stamp 2>/dev/null)" != "$stamp" ]; then
    "$PY" -m pip install -q --disable-pip-version-check './python[test]'
    echo "$stamp" >target/pyenv/.cairn-stamp
  fi
fi
"$PY" -m pytest python/tests -q
