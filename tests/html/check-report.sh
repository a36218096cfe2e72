#!/usr/bin/env bash
# check-report.sh GPUSCHED REPO - the HTML report of `gpusched simulate` renders in a real
# browser: headless Chromium loads two reports (a replay with --compare-taint on the
# bundled incident, an FGD sweep on the golden openb sample), and
#   - the DOM after rendering has every chart (<svg class="chart">) and the report's own
#     check (an inline script that measures each chart's plot with getBBox) says all of
#     them drew something: <body data-charts="N" data-charts-rendered="N">, N as expected;
#   - a screenshot is a real, non-trivial PNG.
# Exit 77 (CTest: skipped) with "SKIP: chromium not found" when no browser is installed
# (Debian package chromium; scripts/deps.sh browser installs it).
set -euo pipefail
bin=$1
repo=$2

browser=""
for candidate in chromium chromium-browser; do
  if command -v "$candidate" >/dev/null 2>&1; then
    browser=$(command -v "$candidate")
    break
  fi
done
if [[ -z $browser ]]; then
  echo "SKIP: chromium not found"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpusched-html.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-component-update --no-first-run --disable-extensions
  --user-data-dir="$tmp/profile")

fail() {
  echo "check-report: $*"
  if [[ -s $tmp/browser.log ]]; then
    echo "--- browser log (last lines) ---"
    tail -n 20 "$tmp/browser.log"
  fi
  exit 1
}

# check NAME EXPECTED_CHARTS: render $tmp/NAME.html and check it
check() {
  local name=$1 want=$2 page=$tmp/$1.html
  timeout 90 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$tmp/$name.dom" 2>"$tmp/browser.log" ||
    fail "$name: chromium --dump-dom failed"
  local body charts rendered svgs
  body=$(grep -o '<body[^>]*>' "$tmp/$name.dom" | head -n 1 || true)
  charts=$(sed -n 's/.*data-charts="\([0-9]*\)".*/\1/p' <<<"$body")
  rendered=$(sed -n 's/.*data-charts-rendered="\([0-9]*\)".*/\1/p' <<<"$body")
  svgs=$(grep -o '<svg class="chart"' "$tmp/$name.dom" | wc -l)
  [[ -n $charts && -n $rendered ]] || fail "$name: the page's render check did not run (body: $body)"
  ((svgs == want)) || fail "$name: expected $want charts in the DOM, found $svgs"
  ((charts == want && rendered == want)) ||
    fail "$name: $rendered of $charts charts drew something (expected $want)"
  grep -q '<path stroke=' "$tmp/$name.dom" || fail "$name: no plotted line in the DOM"

  timeout 90 "$browser" "${flags[@]}" --window-size=1280,2600 --hide-scrollbars \
    --screenshot="$tmp/$name.png" "file://$page" >/dev/null 2>"$tmp/browser.log" ||
    fail "$name: chromium --screenshot failed"
  [[ -s $tmp/$name.png ]] || fail "$name: no screenshot"
  local magic size
  magic=$(head -c 8 "$tmp/$name.png" | od -An -tx1 | tr -d ' \n')
  [[ $magic == 89504e470d0a1a0a ]] || fail "$name: the screenshot is not a PNG"
  size=$(wc -c <"$tmp/$name.png")
  # a blank page compresses to a few KiB; charts, tables and text take far more
  ((size > 40000)) || fail "$name: the screenshot is nearly empty ($size bytes)"
  echo "check-report: $name: $rendered/$charts charts rendered, screenshot $size bytes"
}

# a replay report: allocation vs load, 4 pending-time CDFs, allocation, stranded GPUs and
# GPU nodes in use over time
"$bin" simulate --compare-taint --policy default,binpack --quiet \
  "$repo/examples/incident/cluster.yaml" "$repo/examples/incident/workload.yaml" \
  --html "$tmp/replay.html" >/dev/null || fail "gpusched simulate (replay) failed"
check replay 8

# a MIG report: static against dynamic MIG; allocation vs load, 2 CDFs, allocation,
# MIG slices not serving pods over time (no stranded-GPU chart: no whole GPU), the MIG table
"$bin" simulate --compare-mig --quiet "$repo/examples/mig/inference-day" --html "$tmp/mig.html" \
  >/dev/null || fail "gpusched simulate (MIG) failed"
grep -q '<h2>MIG</h2>' "$tmp/mig.html" || fail "mig: no MIG table"
grep -q 'MIG slices not serving pods' "$tmp/mig.html" || fail "mig: no MIG chart"
check mig 5

# an FGD report: allocation and fragmentation vs arrived load
golden=$repo/tests/golden/simulate-fgd-csv
"$bin" simulate --method fgd --nodes "$golden/nodes.csv" --pods "$golden/pods.csv" \
  --policy fgd,bestfit,random --seeds 1-3 --quiet --html "$tmp/fgd.html" >/dev/null ||
  fail "gpusched simulate (fgd) failed"
check fgd 2
