#!/usr/bin/env bash
# Runs cairn's checks and tests: formatting, lints, and every test of the workspace.
# Needs only a Rust toolchain (cargo fetches the crates). Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace "$@"
