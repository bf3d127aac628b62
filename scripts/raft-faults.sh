#!/usr/bin/env bash
# The replicated key-value server under leader kills (crates/cairn-raft/tests/cluster_faults.rs)
# with KILLS rounds (default 100): three node processes on loopback, a client writing with
# acknowledgements, the leader killed with SIGKILL and restarted each round, every
# acknowledged write checked; then a follower wiped and rejoined by snapshot. Prints a
# markdown section (command, commit, machine, result) and writes it to $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
KILLS=${KILLS:-100}
OUT=${OUT:-bench-out/raft-faults.md}
mkdir -p "$(dirname "$OUT")"
log=$(mktemp)
start=$(date +%s)
# A snapshot copies the whole state machine: with a few hundred thousand writes, one every
# 300 entries (the short run's) kept the nodes busy building them and a follower fell
# behind for minutes.
export CAIRN_RAFT_SNAPSHOT_LOGS=${CAIRN_RAFT_SNAPSHOT_LOGS:-20000}
CAIRN_RAFT_KILLS=$KILLS RUST_BACKTRACE=0 cargo test --release -q -p cairn-raft --test cluster_faults -- --nocapture >"$log" 2>&1 ||
  { grep 'leader kills' "$log"; grep -A3 panicked "$log" || tail -40 "$log"; exit 1; }
secs=$(($(date +%s) - start))
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
{
  echo "### Leader kills on loopback"
  echo
  echo "- command: \`KILLS=$KILLS scripts/raft-faults.sh\`"
  echo "- commit: \`$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo +dirty)\`"
  echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores, $(uname -m)"
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Result: $(grep 'leader kills' "$log" | tail -1); $(grep 'rejoined' "$log" | tail -1) ($secs s with the build)."
} | tee "$OUT"
