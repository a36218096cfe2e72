#!/usr/bin/env bash
# update-readme.sh [GPUSCHED] - maintainers: re-run every "$ gpusched ..." block of README.md
# and replace its output with what the command prints now (tests/readme/check-readme.sh is
# the test that fails when they drift). Default binary: build/gpusched.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${1:-build/gpusched}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
inblock=0
skipping=0
while IFS= read -r line || [ -n "$line" ]; do
  if [ "$skipping" -eq 1 ]; then
    if [[ $line == '```'* ]]; then
      skipping=0
      inblock=0
      printf '%s\n' "$line"
    fi
    continue
  fi
  if [[ $line == '```'* ]]; then
    if [ "$inblock" -eq 0 ]; then inblock=1; first=1; else inblock=0; fi
    printf '%s\n' "$line"
    continue
  fi
  if [ "$inblock" -eq 1 ] && [ "${first:-0}" -eq 1 ] && [[ $line == '$ gpusched '* ]]; then
    printf '%s\n' "$line"
    read -r -a words <<< "${line#\$ }"
    "$bin" "${words[@]:1}" 2>/dev/null || true
    skipping=1
    first=0
    continue
  fi
  first=0
  printf '%s\n' "$line"
done < README.md > "$tmp"
cp "$tmp" README.md
