#!/usr/bin/env bash
# check-readme.sh GPUSCHED REPO - keep README.md true: every fenced block in README.md that
# starts with a line "$ gpusched ARGS" must show exactly what `gpusched ARGS` prints
# (stdout) when run from the repository root. Blocks without such a first line are prose.
set -euo pipefail
bin=$1
repo=$2
cd "$repo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
  /^```/ {
    if (inblock) { inblock = 0; if (cmd != "") close(out); cmd = ""; next }
    inblock = 1; first = 1; next
  }
  inblock && first {
    first = 0
    if ($0 ~ /^\$ gpusched /) {
      n++; cmd = substr($0, 3)
      out = dir "/block" n ".expected"
      print cmd > (dir "/block" n ".cmd")
      close(dir "/block" n ".cmd")
      printf "" > out
    }
    next
  }
  inblock && cmd != "" { print >> out }
' README.md
status=0
count=0
for cmdfile in "$tmp"/block*.cmd; do
  [ -e "$cmdfile" ] || continue
  count=$((count + 1))
  read -r -a words < "$cmdfile"
  expected=${cmdfile%.cmd}.expected
  actual=${cmdfile%.cmd}.actual
  "$bin" "${words[@]:1}" > "$actual" 2>/dev/null || true
  if ! diff -u "$expected" "$actual" > "${cmdfile%.cmd}.diff"; then
    echo "README.md block '$(cat "$cmdfile")' is out of date:"
    cat "${cmdfile%.cmd}.diff"
    status=1
  fi
done
if [ "$count" -eq 0 ]; then
  echo "check-readme: no '\$ gpusched' blocks found in README.md"
  exit 1
fi
echo "check-readme: $count blocks checked"
exit "$status"
