# Sourced by scripts/test.sh and scripts/python-bench.sh: the Python environment of package
# `cairn` (python/) with its compiled module built in place.
#
# pyenv_prepare EXTRAS PROFILE
#   Makes target/pyenv (a venv) hold the package's dependencies with the given extras
#   ("test,learn", "test,learn,bench"), reinstalled when python/pyproject.toml or the extras change,
#   and builds cairn._native in place (python/cairn/) with maturin: PROFILE "debug" reuses
#   cargo's debug artifacts, "release" is for benchmarks. Sets PY to the venv's python.
#   Where python3 cannot make a venv with pip (Debian without python3-venv), the package
#   goes to the user's site-packages as an editable install (a release build) instead, and
#   PY is python3.
pyenv_prepare() {
  local extras="$1" flag=""
  [ "$2" = release ] && flag="--release"
  PY=target/pyenv/bin/python
  # A module built for one CPython (_native.cpython-3XX-*.so, by builds before the stable
  # ABI) would be imported before the abi3 one maturin now writes: remove it.
  rm -f python/cairn/_native.cpython-*.so
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    rm -rf target/pyenv
    python3 -m venv target/pyenv >/dev/null 2>&1 || true
    "$PY" -m pip --version >/dev/null 2>&1 || { rm -rf target/pyenv; PY=python3; }
  fi
  if [ "$PY" = python3 ]; then
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --user --disable-pip-version-check -e "./python[$extras]"
    return
  fi
  local venv="$PWD/target/pyenv" stamp
  stamp="$(sha256sum python/pyproject.toml | cut -d' ' -f1) $extras"
  if [ "$(cat "$venv/.cairn-stamp" 2>/dev/null)" != "$stamp" ]; then
    "$PY" -m pip install -q --disable-pip-version-check 'maturin>=1.9,<2'
    (cd python && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop -q $flag --extras "$extras")
    echo "$stamp" >"$venv/.cairn-stamp"
  else
    (cd python && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop -q $flag --skip-install)
  fi
}
