#!/usr/bin/env bash
# hostile-names.sh - file names and object names from the input never reach a terminal or
# a CI log raw. File names with control characters, invalid UTF-8 and GitHub Actions
# workflow commands are created here at run time (git cannot carry them portably); every
# output format of check, and schedule/explain text, is scanned for:
#   C0 controls other than newline and tab, DEL, C1 controls, invalid UTF-8,
#   a line starting with "::" after blanks, the legacy "##[" form;
# JSON and SARIF must parse (python3) and JUnit must be well-formed XML (python3).
#
# Usage: hostile-names.sh <gpusched-binary> <hostile.yaml>
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LC_ALL=C

names=($'::error file=a,line=1::pwned.yaml' $'\e[31mred\e[0m\e]0;title\a.yaml' $'bad\xff\xc2\x9b.yaml'
       $'nl\n::warning::x.yaml' $'##[error]legacy.yaml' $'rtl\xe2\x80\xaeyaml.txt.yaml')
mkdir "$work/in"
for n in "${names[@]}"; do
  cp "$src" "$work/in/$n"
done
# one unreadable input too: its name is quoted in an error
printf 'apiVersion: v1\nkind: Pod\nmetadata: [\n' > "$work/in/"$'broken\e[5m.yaml'

fail=0
scan() { # scan <label> <file>
  local label=$1 f=$2
  if grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$f"; then
    echo "FAIL $label: raw control character"; grep -nP '[\x00-\x08\x0b-\x1f\x7f]' "$f" | head -3 | cat -A; fail=1
  fi
  if grep -qP '\xc2[\x80-\x9f]' "$f"; then
    echo "FAIL $label: raw C1 control"; fail=1
  fi
  if ! iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1; then
    echo "FAIL $label: not UTF-8"; fail=1
  fi
  if grep -qP '^[ \t]*::' "$f"; then
    echo "FAIL $label: a line starts a workflow command"; grep -nP '^[ \t]*::' "$f" | head -3; fail=1
  fi
  if grep -qF '##[' "$f"; then
    echo "FAIL $label: legacy workflow command"; fail=1
  fi
  if [[ $label == check-* ]] && ! grep -q pwned "$f"; then
    echo "FAIL $label: the hostile file is missing from the output"; fail=1
  fi
}

run() { # run <label> <args...>: exit status 0, 1 or 2 are all fine here
  local label=$1
  shift
  local rc=0
  "$bin" "$@" >"$work/$label.out" 2>"$work/$label.err" || rc=$?
  if ((rc > 2)); then
    echo "FAIL $label: exit status $rc"; fail=1
  fi
  scan "$label" "$work/$label.out"
  scan "$label stderr" "$work/$label.err"
}

run check-text check "$work/in"
run check-junit check -o junit "$work/in"
run check-json check -o json "$work/in"
run check-yaml check -o yaml "$work/in"
run check-sarif check -o sarif "$work/in"
rm "$work/in/"$'broken\e[5m.yaml'
run schedule-text schedule "$work/in"
run explain-text explain "$work/in"
# an error naming a hostile file (stderr only)
"$bin" check "$work/in/"$'\e[2Jmissing\n::error::x.yaml' >"$work/missing.out" 2>"$work/missing.err" || true
scan "missing stderr" "$work/missing.err"
grep -q 'missing' "$work/missing.err" || { echo "FAIL missing: no error"; fail=1; }

if command -v python3 >/dev/null; then
  python3 - "$work" <<'PY' || fail=1
import json, sys, xml.dom.minidom
w = sys.argv[1]
for k in ("check-json", "check-sarif"):
    with open(f"{w}/{k}.out", encoding="utf-8") as f:
        json.load(f)
xml.dom.minidom.parse(f"{w}/check-junit.out")
PY
fi
((fail == 0)) && echo "hostile-names: ok"
exit $fail
