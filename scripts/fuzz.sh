#!/usr/bin/env bash
# Fuzzes cairn's decoders: each target of fuzz/ for a bounded time.
#
# With a nightly toolchain, runs cargo-fuzz (installing it if missing) from the checked-in
# corpus fuzz/corpus/<target>/, growing a working corpus in fuzz/target/corpus/<target>/
# (with -m, what adds coverage is merged back into fuzz/corpus, minimized and at most
# FUZZ_MERGE_MAX_LEN bytes an input); crashing inputs go to fuzz/artifacts/<target>/. Without
# one (or with FUZZ_MODE=replay), runs the stable replay test instead
# (crates/cairn/tests/fuzz_corpus.rs: the corpus and regressions, then its seeded
# mutation loop for the same time per target). Either way it ends with a table of targets,
# inputs run, seconds and crashes, and exits non-zero if any target crashed.
#
# Usage: scripts/fuzz.sh [-s SECONDS] [-m] [TARGET...]
#   -s SECONDS   time per target (default: $FUZZ_SECONDS or 60)
#   -m           merge new coverage into fuzz/corpus (cargo-fuzz only)
#   TARGET       targets to run (default: every fuzz/fuzz_targets/*.rs)
# Environment:
#   FUZZ_MODE=auto|cargo-fuzz|replay   how to fuzz (default auto)
#   FUZZ_KEEP_GOING=1   cargo-fuzz: keep fuzzing past a crash (-fork=1 -ignore_crashes=1)
#   FUZZ_ARGS="..."     extra libFuzzer flags (e.g. "-max_len=65536")
#   FUZZ_LOGS=DIR       keep each target's log as DIR/<target> (default: a temporary dir)
#   FUZZ_MERGE_MAX_LEN  longest input -m adds to fuzz/corpus (default 4096)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

secs=${FUZZ_SECONDS:-60}
merge=0
while getopts "s:mh" opt; do
    case $opt in
        s) secs=$OPTARG ;;
        m) merge=1 ;;
        h) sed -n '2,22p' "$0"; exit 0 ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
case $secs in
    '' | *[!0-9]*) echo "fuzz.sh: -s wants whole seconds, got '$secs'" >&2; exit 2 ;;
esac

if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for f in fuzz/fuzz_targets/*.rs; do
        targets+=("$(basename "$f" .rs)")
    done
fi
for t in "${targets[@]}"; do
    if [ ! -f "fuzz/fuzz_targets/$t.rs" ]; then
        echo "fuzz.sh: no target '$t' (see fuzz/fuzz_targets/)" >&2
        exit 2
    fi
done

mode=${FUZZ_MODE:-auto}
if [ "$mode" = auto ]; then
    mode=replay
    if cargo +nightly --version >/dev/null 2>&1; then
        if cargo +nightly fuzz --version >/dev/null 2>&1 \
            || cargo install cargo-fuzz --locked >&2; then
            mode=cargo-fuzz
        else
            echo "fuzz.sh: cargo-fuzz could not be installed; using the replay test" >&2
        fi
    else
        echo "fuzz.sh: no nightly toolchain; using the replay test" >&2
    fi
fi

if [ -n "${FUZZ_LOGS:-}" ]; then
    logs=$FUZZ_LOGS
    mkdir -p "$logs"
else
    logs=$(mktemp -d)
    trap 'rm -rf "$logs"' EXIT
fi
rows=()
failed=0

# Files under a directory, or 0 if it is absent.
count_files() {
    if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi
}

case $mode in
cargo-fuzz)
    echo "fuzz.sh: building the targets (cargo +nightly fuzz build -O)" >&2
    cargo +nightly fuzz build -O >&2
    for t in "${targets[@]}"; do
        art="fuzz/artifacts/$t"
        before=$(count_files "$art")
        work="fuzz/target/corpus/$t"
        mkdir -p "fuzz/corpus/$t" "$work"
        flags=(-max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
        if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
            flags+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
        fi
        # shellcheck disable=SC2206
        flags+=(${FUZZ_ARGS:-})
        echo "fuzz.sh: $t for ${secs}s" >&2
        start=$(date +%s)
        rc=0
        # New inputs go to the first directory, the working corpus.
        cargo +nightly fuzz run -O "$t" "$work" "fuzz/corpus/$t" -- "${flags[@]}" \
            >"$logs/$t" 2>&1 || rc=$?
        took=$(($(date +%s) - start))
        # Executions: libFuzzer's final stats, or (after a crash, or in fork mode) its last
        # progress line "#<runs>: cov: ...".
        runs=$(awk '/stat::number_of_executed_units:/ { s += $2; n++ }
                    /^#[0-9]+/ { last = substr($1, 2) + 0 }
                    END { print (n ? s : last + 0) }' "$logs/$t")
        crashes=$(($(count_files "$art") - before))
        if [ "$rc" != 0 ] && [ "$crashes" = 0 ]; then
            crashes=1 # died without an artifact (build error, out of memory...)
        fi
        if [ "$crashes" != 0 ]; then
            failed=1
            echo "fuzz.sh: $t crashed; log tail:" >&2
            tail -n 40 "$logs/$t" >&2
        fi
        if [ "$merge" = 1 ]; then
            # Edge coverage only (no hit counts), so the checked-in corpus stays small.
            cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" "$work" -- -merge=1 \
                -use_counters=0 -max_len="${FUZZ_MERGE_MAX_LEN:-4096}" -rss_limit_mb=2048 \
                >"$logs/$t.merge" 2>&1 || echo "fuzz.sh: merging $t failed" >&2
            grep -h 'MERGE-OUTER: .* new files' "$logs/$t.merge" >&2 || true
        fi
        rows+=("$t $runs $took $crashes")
    done
    ;;
replay)
    for t in "${targets[@]}"; do
        echo "fuzz.sh: $t for ${secs}s (replay test)" >&2
        start=$(date +%s)
        rc=0
        CAIRN_FUZZ_SECONDS=$secs cargo test --release -q -p cairn --test fuzz_corpus -- \
            --exact "$t" --nocapture >"$logs/$t" 2>&1 || rc=$?
        took=$(($(date +%s) - start))
        runs=$(awk -v t="$t" '$1 == "fuzz-stat" && $2 == t { print $3 }' "$logs/$t")
        crashes=0
        if [ "$rc" != 0 ]; then
            crashes=1
            failed=1
            echo "fuzz.sh: $t failed; log tail:" >&2
            tail -n 40 "$logs/$t" >&2
        fi
        rows+=("$t ${runs:-0} $took $crashes")
    done
    ;;
*)
    echo "fuzz.sh: unknown FUZZ_MODE '$mode' (auto, cargo-fuzz or replay)" >&2
    exit 2
    ;;
esac

echo
echo "fuzzing with $mode, ${secs}s per target"
printf '%-18s %12s %8s %8s\n' target runs seconds crashes
for r in "${rows[@]}"; do
    # shellcheck disable=SC2086
    printf '%-18s %12s %8s %8s\n' $r
done
if [ "$failed" != 0 ]; then
    if [ "$mode" = cargo-fuzz ]; then
        echo "crashing inputs are in fuzz/artifacts/<target>/; minimize one with" \
            "'cargo +nightly fuzz tmin -O <target> <file>' and add it to fuzz/regressions/<target>/"
    fi
    exit 1
fi
