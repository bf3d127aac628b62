#!/usr/bin/env bash
# `cairn top` driven as a user runs it: in a terminal (tmux), following a database that
# cairn-bench is writing with a statistics dump every PERIOD_MS. Checks that the view
# fills in (rates, every learned part), keeps up (the dump it shows is never older than
# one period plus its poll interval, and a little scheduling slack), moves as the database
# does, and that q quits and gives the terminal back. Installs tmux with apt-get where it
# is missing. Prints the largest dump age seen.
set -euo pipefail
cd "$(dirname "$0")/.."
PERIOD_MS=${PERIOD_MS:-500}
INTERVAL_MS=100
SLACK_MS=300

if ! command -v tmux >/dev/null; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q && "${sudo_cmd[@]}" apt-get install -y -q tmux
fi
cargo build -q -p cairn-cli -p cairn-bench
work=$(mktemp -d)
session="cairn-top-check-$$"
writer=""
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  [ -n "$writer" ] && kill "$writer" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

target/debug/cairn-bench run --engine cairn:ac-key --workload ycsb-a --records 20000 \
  --ops 100000000 --threads 1 --stats-dump-ms "$PERIOD_MS" --db-dir "$work" \
  --out "$work/out" >"$work/writer.log" 2>&1 &
writer=$!
db="$work/cairn-bench-cairn-ac-key"
tmux new-session -d -s "$session" -x 200 -y 45 \
  "target/debug/cairn top $db --interval-ms $INTERVAL_MS"
pane() { tmux capture-pane -p -t "$session"; }

# The view fills in: a rate needs two dumps.
for _ in $(seq 1 120); do
  pane | grep -qE 'gets [0-9,]+/s' && break
  sleep 0.5
done
if ! pane | grep -qE 'gets [0-9,]+/s'; then
  echo "top-tmux-check: no rates on screen after 60 s" >&2
  pane >&2
  tail -5 "$work/writer.log" >&2
  exit 1
fi
for part in "Bourbon:" "AC-Key (ac-key):" "Leaper:" "RusKey (" "SA-LSM:"; do
  pane | grep -qF "$part" || { echo "top-tmux-check: '$part' missing" >&2; pane >&2; exit 1; }
done

# It keeps up and moves.
max_age=0
first=$(pane)
for _ in $(seq 1 20); do
  sleep 0.25
  age=$(pane | grep -oE 'dump [0-9.]+ s ago' | grep -oE '[0-9.]+')
  max_age=$(awk -v a="$age" -v m="$max_age" 'BEGIN { print (a > m) ? a : m }')
done
limit=$(awk -v p="$PERIOD_MS" -v i="$INTERVAL_MS" -v s="$SLACK_MS" 'BEGIN { print (p + i + s) / 1000 }')
if awk -v a="$max_age" -v l="$limit" 'BEGIN { exit !(a > l) }'; then
  echo "top-tmux-check: a dump was shown $max_age s after it was written (limit $limit s)" >&2
  exit 1
fi
if [ "$(pane)" = "$first" ]; then
  echo "top-tmux-check: the view did not change in 5 s of writes" >&2
  exit 1
fi

# q quits and the session (the terminal) goes.
tmux send-keys -t "$session" q
for _ in $(seq 1 30); do
  tmux has-session -t "$session" 2>/dev/null || break
  sleep 0.1
done
if tmux has-session -t "$session" 2>/dev/null; then
  echo "top-tmux-check: q did not quit" >&2
  exit 1
fi
echo "top-tmux-check: ok (dump every ${PERIOD_MS} ms, largest age shown ${max_age} s, limit ${limit} s)"
