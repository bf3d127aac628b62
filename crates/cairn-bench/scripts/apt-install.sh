#!/usr/bin/env bash
# Installs those of the Debian packages named that are missing (apt-get, through sudo when
# not root), saying what it does on stderr so that callers keep stdout for their own
# output. Idempotent: apt is skipped when everything is already installed.
#   apt-install.sh LABEL PACKAGE...
set -euo pipefail
label=$1
shift

missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$label: already installed: $*" >&2
  exit 0
fi

echo "$label: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q >&2
"${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}" >&2
