#!/usr/bin/env bash
# `cairn top` driven as a user runs it: in a terminal (tmux, its own server, no user
# config), following a database that cairn-bench is writing with a statistics dump every
# PERIOD_MS. Checks that the view fills in (rates, every learned part), keeps up (the dump
# it shows is never older than the limit below), follows the database (its counters move),
# and that q quits and SIGTERM too, giving the terminal back. Installs tmux with apt-get where it is
# missing and it can (else SKIPPED, as test.sh does for RocksDB). Prints the largest and the
# median dump age seen.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
PERIOD_MS=${PERIOD_MS:-500}
INTERVAL_MS=100
# What a dump shown may be behind: a period and a poll interval by design; the dump's own
# time, its fsyncs and the redraw on a loaded two-core machine take the rest. The median
# age is what the goal is read from (printed); the limit only catches a view that stalls.
LIMIT_MS=$((2 * PERIOD_MS + INTERVAL_MS + 500))

if ! command -v tmux >/dev/null; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo -n); fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { "${sudo_cmd[@]}" apt-get update -q && "${sudo_cmd[@]}" apt-get install -y -q tmux; }; then
    echo "top-tmux-check: tmux could not be installed: SKIPPED" >&2
    exit 0
  fi
fi
cargo build -q -p cairn-cli -p cairn-bench
root=$PWD
# On tmpfs where there is one: the dumps' fsyncs then cost nothing to wait for.
work=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
session="cairn-top-check-$$"
tm() { tmux -L "$session" -f /dev/null "$@"; }
writer=""
cleanup() {
  tm kill-server 2>/dev/null || true
  if [ -n "$writer" ]; then kill "$writer" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

timeout 300 "$root/target/debug/cairn-bench" run --engine cairn:ac-key --workload ycsb-a \
  --records 20000 --ops 100000000 --threads 1 --stats-dump-ms "$PERIOD_MS" --db-dir "$work" \
  --out "$work/out" >"$work/writer.log" 2>&1 &
writer=$!
db="$work/cairn-bench-cairn-ac-key"
tm new-session -d -s top -x 200 -y 45 -c "$root" \
  "$root/target/debug/cairn top $db --interval-ms $INTERVAL_MS"
# The screen now ("" once the session is gone).
pane() { tm capture-pane -p -t top 2>/dev/null || true; }
fail() {
  echo "top-tmux-check: $1" >&2
  echo "--- screen:" >&2
  pane >&2
  echo "--- writer:" >&2
  tail -5 "$work/writer.log" >&2 || true
  exit 1
}

# The view fills in: a rate needs two dumps.
screen=""
for _ in $(seq 1 120); do
  screen=$(pane)
  [[ $screen =~ gets\ [0-9,]+/s ]] && break
  tm has-session -t top 2>/dev/null || fail "cairn top exited"
  sleep 0.5
done
[[ $screen =~ gets\ [0-9,]+/s ]] || fail "no rates on screen after 60 s"
for part in "Bourbon:" "AC-Key (ac-key):" "Leaper:" "RusKey (" "SA-LSM:"; do
  [[ $screen == *"$part"* ]] || fail "'$part' missing"
done

# It keeps up, and follows the database: the flush and compaction counts and the levels
# move (the screen without its dump age, which changes on every redraw anyway).
no_age() { sed -E 's/dump [0-9.]+ s ago//'; }
first=$(printf '%s\n' "$screen" | no_age)
ages=()
for _ in $(seq 1 20); do
  sleep 0.25
  screen=$(pane)
  [[ $screen =~ dump\ ([0-9.]+)\ s\ ago ]] || fail "no dump age on screen"
  ages+=("${BASH_REMATCH[1]}")
done
read -r max_age median_age < <(printf '%s\n' "${ages[@]}" | sort -n |
  awk '{ a[NR] = $1 } END { print a[NR], a[int((NR + 1) / 2)] }')
if awk -v a="$max_age" -v l="$LIMIT_MS" 'BEGIN { exit !(a * 1000 > l) }'; then
  fail "a dump was shown ${max_age} s after it was written (limit ${LIMIT_MS} ms)"
fi
[ "$(printf '%s\n' "$screen" | no_age)" != "$first" ] ||
  fail "nothing but the dump age changed in 5 s of writes"

# q quits and the session (the terminal) goes.
tm send-keys -t top q
for _ in $(seq 1 50); do
  tm has-session -t top 2>/dev/null || break
  sleep 0.1
done
if tm has-session -t top 2>/dev/null; then fail "q did not quit"; fi

# Killed by SIGTERM, it still gives the terminal back: the shell that ran it finds the
# terminal out of raw mode (stty's icanon and echo on again).
tm new-session -d -s term -x 200 -y 45 -c "$root" \
  "bash -c '$root/target/debug/cairn top $db --interval-ms $INTERVAL_MS; stty -a > $work/stty.txt; sleep 30'"
top_pid=""
for _ in $(seq 1 100); do
  shell_pid=$(tm list-panes -t term -F '#{pane_pid}' 2>/dev/null || true)
  top_pid=$(pgrep -P "${shell_pid:-0}" -f 'cairn top' || true)
  screen=$(tm capture-pane -p -t term 2>/dev/null || true)
  [ -n "$top_pid" ] && [[ $screen == *"cairn top"* ]] && break
  sleep 0.1
done
[ -n "$top_pid" ] || fail "cairn top did not start for the SIGTERM check"
kill -TERM "$top_pid"
for _ in $(seq 1 50); do
  [ -s "$work/stty.txt" ] && break
  sleep 0.1
done
[ -s "$work/stty.txt" ] || fail "cairn top did not end on SIGTERM"
if grep -qwE -- '-icanon|-echo' "$work/stty.txt"; then
  fail "killed by SIGTERM, cairn top left the terminal in raw mode: $(tr '\n' ' ' < "$work/stty.txt")"
fi
echo "top-tmux-check: ok (dump every ${PERIOD_MS} ms, view polling every ${INTERVAL_MS} ms:" \
  "median age shown ${median_age} s, largest ${max_age} s, limit ${LIMIT_MS} ms)"
