# Sourced by the paper scripts (scripts/<paper>-bench.sh), which are thin wrappers around
# `cairn-bench paper <name>`: they map their environment variables to its flags, build the
# binary (BIN= skips the build) and run it. `cairn-bench paper <name> --help` lists the flags.

# paper_flags VAR...: for each VAR set and not empty, `--var=VALUE` (lower case, _ as -).
paper_flags() {
  local v
  for v in "$@"; do
    if [ -n "${!v:-}" ]; then
      PAPER_ARGS+=("--$(echo "$v" | tr 'A-Z_' 'a-z-')=${!v}")
    fi
  done
}

# paper_flags_set VAR...: as paper_flags, but a VAR set to the empty string passes too
# (e.g. SWEEPS= runs no sweep).
paper_flags_set() {
  local v
  for v in "$@"; do
    if [ -n "${!v+x}" ]; then
      PAPER_ARGS+=("--$(echo "$v" | tr 'A-Z_' 'a-z-')=${!v}")
    fi
  done
}

# paper_run NAME [CARGO_FLAGS...]: builds cairn-bench in release mode (with CARGO_FLAGS,
# e.g. --features rocksdb) unless BIN names a binary, then runs `paper NAME` with
# PAPER_ARGS (PUBLISH=1 adds --publish: the summary goes into docs/results/NAME.md too).
paper_run() {
  local name=$1
  shift
  if [ -z "${BIN:-}" ]; then
    cargo build --release -p cairn-bench "$@"
    BIN=target/release/cairn-bench
  fi
  [ -n "${PUBLISH:-}" ] && PAPER_ARGS+=(--publish)
  "$BIN" paper "$name" ${PAPER_ARGS[@]+"${PAPER_ARGS[@]}"}
}
