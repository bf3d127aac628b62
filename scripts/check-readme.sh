#!/usr/bin/env bash
# Keeps README.md a front door: at most 250 lines, and every relative markdown link in it
# pointing to a file or directory that exists (anchors are not checked). Run by
# scripts/test.sh; the long material belongs in docs/ (CONTRIBUTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."

max=250
readme=README.md
status=0

lines=$(wc -l < "$readme")
if [ "$lines" -gt "$max" ]; then
  echo "check-readme: $readme has $lines lines, more than $max: move the detail into docs/" \
    "(results to docs/results/, mechanisms to docs/papers/, see CONTRIBUTING.md)" >&2
  status=1
fi

# Relative link targets: [text](target) outside code fences, without URLs or pure anchors.
targets=$(awk '/^```/ { fence = !fence; next } !fence' "$readme" \
  | grep -o '\]([^) ]*)' | sed -e 's/^](//' -e 's/)$//' || true)
for target in $targets; do
  case "$target" in
    http://* | https://* | mailto:* | '#'*) continue ;;
  esac
  path=${target%%#*}
  if [ ! -e "$path" ]; then
    echo "check-readme: $readme links to $target, which does not exist" >&2
    status=1
  fi
done

exit "$status"
