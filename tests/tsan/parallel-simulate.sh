#!/usr/bin/env bash
# parallel-simulate.sh GPUSCHED REPO - `gpusched simulate -j N` under ThreadSanitizer: the
# runs of a sweep share read-only snapshots (replay) or one workload (FGD) and a process-wide
# table of GPU model names; each writes only its own result slot. GPUSCHED must be built with
# -fsanitize=thread (scripts/test.sh builds build-tsan/). Every sweep runs with -j 4 and
# must (1) raise no ThreadSanitizer report and (2) print the same bytes as with -j 1.
# Exit 0 on success; 0 with "SKIP: ..." when this kernel cannot host ThreadSanitizer's
# memory layout (it refuses to start); 1 on a report or a difference.
set -euo pipefail
bin=$1
repo=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpusched-tsan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"

if ! "$bin" --version >"$tmp/probe.out" 2>"$tmp/probe.err"; then
  if grep -q "ThreadSanitizer" "$tmp/probe.err"; then
    echo "SKIP: ThreadSanitizer cannot run here: $(head -n 1 "$tmp/probe.err")"
    exit 0
  fi
  cat "$tmp/probe.err"
  exit 1
fi

golden=$repo/tests/golden/simulate-fgd-csv
sweeps=(
  "simulate --compare-mig --policy default,binpack,spread --seeds 1-2 $repo/examples/mig/inference-day"
  "simulate --compare-taint --policy default,binpack $repo/examples/incident/cluster.yaml $repo/examples/incident/workload.yaml"
  "simulate --method fgd --nodes $golden/nodes.csv --pods $golden/pods.csv --policy fgd,bestfit,random --seeds 1-3"
  "simulate --mig-parted $repo/examples/mig/mig-parted.yaml --mig-config all-balanced,inference-mix --mig dynamic --policy default,binpack $repo/examples/mig/inference-day"
)
status=0
for i in "${!sweeps[@]}"; do
  read -r -a words <<<"${sweeps[$i]}"
  rc=0
  "$bin" "${words[@]}" -j 4 -q >"$tmp/j4.out" 2>"$tmp/j4.err" || rc=$?
  if ((rc != 0)); then
    echo "parallel-simulate: sweep $i (${sweeps[$i]} -j 4) exited $rc"
    grep -A 30 "WARNING: ThreadSanitizer" "$tmp/j4.err" | head -n 60 || tail -n 20 "$tmp/j4.err"
    status=1
    continue
  fi
  "$bin" "${words[@]}" -j 1 -q >"$tmp/j1.out" 2>/dev/null
  if ! cmp -s "$tmp/j1.out" "$tmp/j4.out"; then
    echo "parallel-simulate: sweep $i prints different bytes with -j 4 and -j 1"
    diff "$tmp/j1.out" "$tmp/j4.out" | head -n 20
    status=1
    continue
  fi
  echo "parallel-simulate: sweep $i: no ThreadSanitizer report, -j 4 = -j 1 ($(wc -l <"$tmp/j4.out") lines)"
done
exit $status
