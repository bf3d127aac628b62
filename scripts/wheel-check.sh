#!/usr/bin/env bash
# The Python package as a user installs it: builds the wheel with maturin (one abi3 wheel for
# every CPython >= 3.10), installs it into a fresh venv with no package index and no Rust
# toolchain on PATH (so it can pull no dependency and build nothing), checks that the plain
# install holds no learner dependency and that `cairn.learn` then says what to install, and
# runs the binding tests against the installed wheel (not the source tree).
#
# usage: scripts/wheel-check.sh [debug|release] [--write]
#   debug (the default, what scripts/test.sh runs) reuses cargo's debug artifacts; release
#   builds the wheel a user gets. --write puts the measurements in
#   docs/results/packaging.md.
set -euo pipefail
# A decimal point in $EPOCHREALTIME, as awk reads it.
export LC_ALL=C
cd "$(dirname "$0")/.."
PROFILE=${1:-debug}
WRITE=${2:-}
# shellcheck source=scripts/pyenv.sh
. scripts/pyenv.sh
pyenv_prepare test,learn "$PROFILE"
if [ "$PY" = python3 ]; then
  echo "wheel-check.sh: python3 cannot make a venv here (python3-venv missing): SKIPPED" >&2
  exit 0
fi
OUT=target/wheel-check
rm -rf "$OUT"
mkdir -p "$OUT/wheels" "$OUT/tests"
flag=""
[ "$PROFILE" = release ] && flag="--release"
(cd python && VIRTUAL_ENV="$PWD/../target/pyenv" ../target/pyenv/bin/maturin build -q $flag --out "../$OUT/wheels")
wheel=$(ls "$OUT"/wheels/cairn-*.whl)
case "$wheel" in
  *-abi3-*) ;;
  *) echo "wheel-check.sh: $wheel is not an abi3 wheel" >&2; exit 1 ;;
esac
wheel_mb=$(du -m "$wheel" | cut -f1)

# A fresh venv; the install sees no index and no cargo.
python3 -m venv "$OUT/venv"
V="$PWD/$OUT/venv/bin"
# PATH holds the venv alone: no cargo, no rustc, no compiler for pip to find.
start=$EPOCHREALTIME
env -u CARGO_HOME -u RUSTUP_HOME PATH="$V" "$V/pip" install -q --no-index \
  --disable-pip-version-check "$wheel"
install_s=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

# Run from the tests' copy: `cairn` must come from the venv, never from python/.
cp python/tests/conftest.py python/tests/test_db_api.py python/tests/test_db_model.py \
  python/tests/test_db_threads.py python/tests/test_db_errors.py "$OUT/tests/"
printf '[pytest]\n' >"$OUT/tests/pytest.ini"
cd "$OUT/tests"
"$V/python" - <<'EOF'
import importlib
import importlib.util

import cairn

assert "/wheel-check/venv/" in cairn.__file__, cairn.__file__
learners = ("numpy", "scipy", "lightgbm", "sksurv", "crc32c", "sklearn")
present = [m for m in learners if importlib.util.find_spec(m) is not None]
assert not present, f"a plain install pulled learner dependencies: {present}"
for learner in ("leaper", "salsm"):
    try:
        importlib.import_module(f"cairn.learn.{learner}")
    except ImportError as e:
        assert "cairn[learn]" in str(e), e
    else:
        raise AssertionError(f"cairn.learn.{learner} imported without its dependencies")
with cairn.Db("db") as db:
    db[b"k"] = b"v"
    assert db[b"k"] == b"v"
print("plain install: bindings work, no learner dependency, the learners name their extra")
EOF
rm -rf db
# What a call through the installed module costs (best of three passes over 50,000 keys
# of a database held in its memtable).
calls=$("$V/python" - <<'EOF'
import time
import cairn

with cairn.Db("calls-db") as db:
    keys = [b"key%08d" % i for i in range(50000)]
    for k in keys:
        db.put(k, b"v" * 100)
    get = put = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for k in keys:
            db.get(k)
        get = min(get, (time.perf_counter() - t) / len(keys))
        t = time.perf_counter()
        for k in keys:
            db.put(k, b"w" * 100)
        put = min(put, (time.perf_counter() - t) / len(keys))
print(f"{get * 1e9:.0f} {put * 1e9:.0f}")
EOF
)
read -r get_ns put_ns <<<"$calls"
rm -rf calls-db
"$V/pip" install -q --disable-pip-version-check 'pytest>=7'
CAIRN_REQUIRE_NATIVE=1 "$V/python" -m pytest -q -p no:cacheprovider \
  -k "not learners_import_without_the_compiled_module" .
cd - >/dev/null

echo "wheel: $(basename "$wheel") (${wheel_mb} MiB, $PROFILE); install into a fresh venv: ${install_s} s;" \
  "a get ${get_ns} ns, a put ${put_ns} ns through it"
if [ "$WRITE" = --write ]; then
  commit=$(git rev-parse --short HEAD)
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
  cat >docs/results/packaging.md <<EOF
# Packaging: the wheel and a plain install

- command: \`scripts/wheel-check.sh $PROFILE --write\`
- commit: $commit
- machine: $cpu, $(nproc) cores; $(python3 --version)

| wheel | size | profile | install into a fresh venv (no index, no Rust toolchain) | learner packages pulled | get, put through it (ns a call) |
|---|---|---|---|---|---|
| $(basename "$wheel") | ${wheel_mb} MiB | $PROFILE | ${install_s} s | none | ${get_ns}, ${put_ns} |

The goal (issue 39): under 30 s, and a plain install pulls no learner dependency. The
binding tests (test_db_api, test_db_model, test_db_threads, test_db_errors) pass against
the installed wheel; \`scripts/test.sh\` runs this check with a debug wheel. The calls: best of
three passes of 50,000 gets and puts of 100-byte values, the database in its memtable.
EOF
  echo "wrote docs/results/packaging.md"
fi
