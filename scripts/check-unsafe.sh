#!/usr/bin/env bash
# Keeps UNSAFE.md whole: each Rust source file's count of `unsafe` sites (blocks, impls,
# fns) must equal the count its row in UNSAFE.md gives, and no file with a site may be
# missing there. Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
declare -A listed
while IFS='|' read -r _ file count _; do
  file=$(echo "$file" | tr -d ' `')
  count=$(echo "$count" | tr -d ' ')
  case "$file" in crates/*) listed[$file]=$count ;; esac
done < UNSAFE.md

declare -A found
while read -r n file; do
  found[$file]=$n
done < <(grep -rcE '\bunsafe (\{|impl|fn)' --include='*.rs' crates \
  | grep -v '/tests/' | grep -v ':0$' | awk -F: '{ print $2, $1 }')

for file in "${!found[@]}"; do
  if [ "${listed[$file]:-}" != "${found[$file]}" ]; then
    echo "check-unsafe: $file has ${found[$file]} unsafe sites, UNSAFE.md lists ${listed[$file]:-none}:" \
      "describe each site's invariant there" >&2
    status=1
  fi
done
for file in "${!listed[@]}"; do
  if [ -z "${found[$file]:-}" ]; then
    echo "check-unsafe: UNSAFE.md lists $file, which has no unsafe site any more" >&2
    status=1
  fi
done
exit $status
