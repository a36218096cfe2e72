#!/usr/bin/env bash
# run-demo.sh - the README's first command: install what is missing, build gpusched (Release)
# into build/, then run the bundled demo in examples/ (schedule, explain, then the incident
# replayed over time with and without the GPU taint: simulate --compare-taint).
# Build output goes to build/run-demo.log and is shown only when the build fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/deps.sh core http

mkdir -p build
log=build/run-demo.log
printf 'building gpusched (Release) into build/ ... '
if ! {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGS_SANITIZE=OFF -DGS_FUZZ=OFF -DGS_TESTS=ON &&
    cmake --build build -j"$(nproc)" --target gpusched-cli
} >"$log" 2>&1; then
  printf 'FAILED\n'
  tail -n 60 "$log" >&2
  printf 'run-demo.sh: build failed; full log: %s\n' "$log" >&2
  exit 1
fi
printf 'done\n'

# The incident of examples/README.md: schedule new work on the cluster, then explain the
# cluster as the on-call engineer finds it. Exit status 1 from gpusched means "some pods
# are not placed / problems found", which is the point of the demo; 2 and 3 are failures.
status=0
run() {
  printf '\n$ gpusched %s\n' "$*"
  local rc=0
  build/gpusched "$@" || rc=$?
  if ((rc > 1)); then
    printf 'run-demo.sh: gpusched %s exited with status %d\n' "$1" "$rc" >&2
    ((status != 0)) || status=$rc
  fi
}
run schedule examples/cluster.yaml examples/workloads.yaml
run explain examples/cluster.yaml examples/pending.yaml

# The same incident over time (examples/incident/): web pods arrive steadily, training pods
# need whole GPUs. The replay runs twice, GPU nodes as given (untainted) and with the GPU
# NoSchedule taint, and prints both side by side; the HTML report goes to build/.
run simulate --compare-taint examples/incident/cluster.yaml examples/incident/workload.yaml \
  --html build/incident-report.html --quiet
printf '\n(HTML report with charts: build/incident-report.html)\n'
exit "$status"
