#!/usr/bin/env bash
# The cost of following a running cairn database (issue: metrics that cost < 1%): each
# workload on cairn with the statistics dump off and every PERIODS ms
# (Options::stats_dump_period_ms: STATS.json written atomically and a LOG line), RUNS
# runs each in rotated order, on the wall clock. Writes docs/results/observability.md
# (OUT=FILE for another) with the command, commit and machine at the top.
#   RECORDS=200000 OPS=400000 RUNS=3 PERIODS="1000 100" WORKLOADS="readrandom ycsb-a"
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-200000}
OPS=${OPS:-400000}
RUNS=${RUNS:-3}
PERIODS=${PERIODS:-"1000 100"}
WORKLOADS=${WORKLOADS:-"readrandom ycsb-a"}
OUT=${OUT:-docs/results/observability.md}
BIN=${BIN:-target/release/cairn-bench}
if [ ! -x "$BIN" ]; then
  cargo build --release -p cairn-bench
fi
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
settings=(0 $PERIODS)
for w in $WORKLOADS; do
  for r in $(seq 1 "$RUNS"); do
    # Rotate the order each round, so no setting always runs first.
    n=${#settings[@]}
    for i in $(seq 0 $((n - 1))); do
      p=${settings[$(((i + r) % n))]}
      extra=()
      [ "$p" != 0 ] && extra=(--stats-dump-ms "$p")
      echo "$w run $r: stats dump ${p} ms" >&2
      "$BIN" run --engine cairn --workload "$w" --records "$RECORDS" --ops "$OPS" \
        "${extra[@]}" --json "$runs/$w-$p-$r.json" --db-dir "$runs/db-$w-$p-$r" --keep-db >/dev/null
      # The dumps' own times, from the event log's stats lines.
      grep -ho ' stats .*$' "$runs/db-$w-$p-$r"/*/LOG \
        | sed 's/.* snapshot_micros=\([0-9]*\) micros=\([0-9]*\)$/\1 \2/' >"$runs/$w-$p-$r.dumps" || true
      rm -rf "$runs/db-$w-$p-$r"
    done
  done
done
cmd="RECORDS=$RECORDS OPS=$OPS RUNS=$RUNS PERIODS=\"$PERIODS\" WORKLOADS=\"$WORKLOADS\" scripts/stats-dump-bench.sh"
python3 - "$runs" "$cmd" "$(git rev-parse --short HEAD)" >"$OUT" <<'PY'
import glob, json, os, platform, statistics, sys
runs, cmd, commit = sys.argv[1:4]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
rows, dumps = {}, {}
for f in sorted(glob.glob(os.path.join(runs, "*.json"))):
    w, p, _ = os.path.basename(f)[:-5].rsplit("-", 2)
    d = json.load(open(f))
    rows.setdefault((w, int(p)), []).append(d["ops_per_sec"])
    for line in open(f[:-5] + ".dumps"):
        snap, total = line.split()
        dumps.setdefault((w, int(p)), []).append((int(snap), int(total)))
print("# Following a running database: the cost of the statistics dump\n")
print(f"Command: `{cmd}`  ")
print(f"Commit: {commit}  ")
print(f"Machine: {cpu}, {os.cpu_count()} cores; wall clock, page cache\n")
print("Each workload on cairn with `Options::stats_dump_period_ms` off and on (every period a")
print("thread writes `STATS.json` atomically, with fsync, and a `stats` line to `LOG`); the")
print("event log `LOG` is on in every run. Median ops/s of the runs, their range, and the")
print("median against the same workload with the dump off (goal: a cost below 1%). The")
print("dump's own time (snapshot, JSON, write, fsyncs; from the `micros=` of LOG's `stats`")
print("lines), as a median over every dump of the runs, and that time as a share of its")
print("period: the CPU and lock time the dump takes, which does not depend on the machine's")
print("noise as the ops/s do.\n")
print("| workload | stats dump | runs | median ops/s | range | vs off | dumps | median snapshot us | median dump us | dump share of period |")
print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
for (w, p) in sorted(rows):
    v = rows[(w, p)]
    base = statistics.median(rows.get((w, 0), v))
    m = statistics.median(v)
    label = "off" if p == 0 else f"every {p} ms"
    ds = dumps.get((w, p), [])
    sm = statistics.median(d[0] for d in ds) if ds else None
    dm = statistics.median(d[1] for d in ds) if ds else None
    sus = "-" if sm is None else f"{sm:,.0f}"
    dus = "-" if dm is None else f"{dm:,.0f}"
    share = "-" if dm is None else f"{dm / (p * 1000):.3%}"
    print(f"| {w} | {label} | {len(v)} | {m:,.0f} | {min(v):,.0f}-{max(v):,.0f} | {m / base:.3f}x | {len(ds)} | {sus} | {dus} | {share} |")
PY
echo "wrote $OUT" >&2
