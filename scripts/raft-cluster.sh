#!/usr/bin/env bash
# A 3-node cluster of cairn's replicated key-value server (crates/cairn-raft) on loopback
# ports: each node an HTTP server over its own cairn database.
#
#   scripts/raft-cluster.sh start     # build, start nodes 1-3, initialise the cluster
#   scripts/raft-cluster.sh demo      # start, write and read a few keys, show who leads, stop
#   scripts/raft-cluster.sh stop      # stop the nodes of the last start
#
# DIR (default target/raft-cluster) holds each node's store and log; BASE_PORT (21001)
# is node 1's port, node i listens on BASE_PORT + i - 1; PRESET names cairn's options
# for every node (e.g. PRESET=acKey). Only 127.0.0.1 is used.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${DIR:-target/raft-cluster}
BASE_PORT=${BASE_PORT:-21001}
PRESET=${PRESET:-}
BIN=target/release/cairn-raft-kv
addr() { echo "127.0.0.1:$((BASE_PORT + $1 - 1))"; }

stop() {
  for f in "$DIR"/*.pid; do
    [ -e "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

start() {
  cargo build --release -q -p cairn-raft --bin cairn-raft-kv
  stop
  mkdir -p "$DIR"
  for i in 1 2 3; do
    "$BIN" --id "$i" --addr "$(addr "$i")" --dir "$DIR/node$i" ${PRESET:+--preset "$PRESET"} \
      >"$DIR/node$i.log" 2>&1 &
    echo $! >"$DIR/node$i.pid"
  done
  for i in 1 2 3; do
    for _ in $(seq 100); do
      curl -sf "http://$(addr "$i")/cluster/metrics" >/dev/null && break
      sleep 0.1
    done
  done
  # A restarted cluster is initialised already: then init answers 409 and that is fine.
  curl -s -X POST -H 'content-type: application/json' "http://$(addr 1)/cluster/init" \
    -d "{\"1\":\"$(addr 1)\",\"2\":\"$(addr 2)\",\"3\":\"$(addr 3)\"}" >/dev/null
  for _ in $(seq 100); do
    leader=$(curl -sf "http://$(addr 1)/cluster/metrics" | jq -r '.current_leader // empty')
    [ -n "$leader" ] && break
    sleep 0.1
  done
  echo "cluster up: nodes at $(addr 1), $(addr 2), $(addr 3); leader: node ${leader:-?}"
  echo "stores and logs in $DIR; stop with: scripts/raft-cluster.sh stop"
}

demo() {
  start
  trap stop EXIT
  local leader_addr
  leader_addr=$(addr "$leader")
  for k in alpha beta gamma; do
    curl -sf -X POST -H 'content-type: application/json' "http://$leader_addr/kv/put" \
      -d "{\"key\":\"$k\",\"value\":\"value of $k\"}"
    echo
  done
  echo "linearizable read on the leader: $(curl -sf "http://$leader_addr/kv/get?key=beta")"
  sleep 0.5
  for i in 1 2 3; do
    echo "node $i applied: $(curl -sf "http://$(addr "$i")/kv/get?key=gamma&local=true")"
  done
  echo "a write sent to a follower is redirected (HTTP 421 with the leader):"
  follower=$(( leader % 3 + 1 ))
  curl -s -o /dev/stdout -w ' (HTTP %{http_code})\n' -X POST -H 'content-type: application/json' \
    "http://$(addr "$follower")/kv/put" -d '{"key":"k","value":"v"}'
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  demo) demo ;;
  *) echo "usage: $0 start|demo|stop" >&2; exit 2 ;;
esac
