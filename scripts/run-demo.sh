#!/usr/bin/env bash
# run-demo.sh - the README's first command: install what is missing, build gpusched (Release)
# into build/, then run the bundled demo in examples/ (schedule, then explain).
# Build output goes to build/run-demo.log and is shown only when the build fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/deps.sh core

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

shopt -s nullglob
examples=(examples/*.yaml)
shopt -u nullglob
if ((${#examples[@]} == 0)); then
  echo "no examples yet"
  exit 0
fi

# Run both commands even if the first reports a problem; exit with the first failure.
status=0
for subcommand in schedule explain; do
  printf '\n$ gpusched %s examples/\n' "$subcommand"
  rc=0
  build/gpusched "$subcommand" examples/ || rc=$?
  if ((rc != 0)); then
    printf 'run-demo.sh: gpusched %s exited with status %d\n' "$subcommand" "$rc" >&2
    ((status != 0)) || status=$rc
  fi
done
exit "$status"
