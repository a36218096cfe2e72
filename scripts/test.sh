#!/usr/bin/env bash
# test.sh - the whole check, as CI runs it (see docs/building.md):
#   1. dependencies        scripts/deps.sh core fuzz http browser monitor grpc-peer (chromium for the HTML report test, promtool for the alert rules, python3-grpcio for the kubelet peer)
#   1b. test peers         scripts/peers.sh: the real etcd, kube-apiserver, kube-scheduler,
#                          kubectl (and kwok), built once per machine with Go into a cache
#                          outside the tree; a failure (no Go, no module proxy) is a SKIP, and
#                          then the live tests (tests/live/) skip too
#   2. normal build        build/      (Release) + ctest
#   3. sanitizer build     build-asan/ (Debug, -DGS_SANITIZE=ON: ASan + UBSan) + ctest
#   4. fuzz build          build-fuzz/ (clang, -DGS_FUZZ=ON) + a short libFuzzer run of every
#                          tests/fuzz/fuzz_*.c target, seeded from tests/fuzz/corpus/<name>/
#   5. thread sanitizer    build-tsan/ (clang, -fsanitize=thread, the library and the CLI) +
#                          tests/tsan/parallel-simulate.sh (simulate -j 4 sweeps) and
#                          tests/tsan/monitor.sh (gpusched monitor on a live control plane)
#                          and tests/tsan/agent.sh (gpusched agent end to end)
# Each numbered item is split into steps; a step whose prerequisite failed is skipped (and not
# counted). The last line printed is always "N passed, M failed" (steps); the exit status is
# non-zero when any step failed.
#
# Environment: GS_FUZZ_SECONDS (default 5) seconds of fuzzing per target; GS_PEERS_TIMEOUT
# (default 5400) seconds allowed for building the test peers; GS_PEERS_CACHE (see peers.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzz_seconds=${GS_FUZZ_SECONDS:-5}
if [[ ! $fuzz_seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "test.sh: GS_FUZZ_SECONDS must be a positive integer, got '$fuzz_seconds'" >&2
  exit 2
fi
jobs=$(nproc 2>/dev/null || echo 2)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpusched-test.XXXXXX")

passed=0
failed=0
results=()
finished=0

# Runs on every exit, including an unexpected one, so the summary is always the last line.
finish() {
  local rc=$?
  rm -rf "$scratch"
  if ((finished == 0)); then
    failed=$((failed + 1))
    results+=("FAIL  test.sh itself (stopped early, exit status $rc)")
  fi
  printf '\n== summary ==\n'
  printf '%s\n' "${results[@]}"
  printf '%d passed, %d failed\n' "$passed" "$failed"
  if ((failed > 0)); then
    exit 1
  fi
  exit 0
}
trap finish EXIT

# step NAME COMMAND [ARG...]: run one step, record PASS/FAIL; returns the command's success.
step() {
  local name=$1
  shift
  printf '\n==> %s\n' "$name"
  if "$@"; then
    passed=$((passed + 1))
    results+=("PASS  $name")
    return 0
  fi
  failed=$((failed + 1))
  results+=("FAIL  $name")
  return 1
}

skip() {
  results+=("SKIP  $1 ($2)")
}

configure_and_build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j"$jobs"
}

run_ctest() {
  ctest --test-dir "$1" --output-on-failure -j"$jobs"
}

# Sanitizer runtimes shipped with Debian 12 (GCC 12, LLVM 14) predate the fix for kernels
# with vm.mmap_rnd_bits > 28 and can die at startup there. Where that is the case and the
# container allows it, run sanitized programs with address-space randomisation off.
sanitizer_launcher=()
mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
if ((mmap_rnd_bits > 28)) && setarch "$(uname -m)" -R true 2>/dev/null; then
  sanitizer_launcher=(setarch "$(uname -m)" -R)
fi

run_sanitized_ctest() {
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "${sanitizer_launcher[@]}" ctest --test-dir "$1" --output-on-failure -j"$jobs"
}

# fuzz_smoke NAME: fuzz build-fuzz/tests/fuzz/NAME for $fuzz_seconds seconds, starting from a
# throw-away copy of tests/fuzz/corpus/NAME/ (libFuzzer adds files to its corpus directory).
# Crash reproducers go to build-fuzz/fuzz-artifacts/NAME/, the full log to
# build-fuzz/fuzz-logs/NAME.log; on failure the log minus progress lines is printed.
fuzz_smoke() {
  local name=$1
  local binary=build-fuzz/tests/fuzz/$name
  local corpus=$scratch/corpus-$name
  local artifacts=build-fuzz/fuzz-artifacts/$name/
  local log=build-fuzz/fuzz-logs/$name.log
  if [[ ! -x $binary ]]; then
    echo "test.sh: $binary was not built"
    return 1
  fi
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")" || return 1
  if [[ -d tests/fuzz/corpus/$name ]]; then
    cp -R "tests/fuzz/corpus/$name/." "$corpus/" || return 1
  fi
  local rc=0
  timeout --kill-after=10 $((fuzz_seconds + 120)) \
    "${sanitizer_launcher[@]}" "$binary" -max_total_time="$fuzz_seconds" -timeout=20 \
    -rss_limit_mb=2048 -artifact_prefix="$artifacts" "$corpus" </dev/null >"$log" 2>&1 || rc=$?
  rm -rf "$corpus"
  if ((rc != 0)); then
    grep -v -E '^#[0-9]+' "$log"
    echo "test.sh: $name exited with status $rc (log: $log, reproducers: $artifacts)"
    return 1
  fi
  grep -E '^(INFO: seed corpus|Done [0-9]+ runs)' "$log" || true
  return 0
}

if ! step "dependencies (scripts/deps.sh core fuzz http browser monitor grpc-peer)" ./scripts/deps.sh core fuzz http browser monitor grpc-peer; then
  finished=1
  exit 1
fi

# The live tests need the control-plane peers. Building them (once per machine) may fail where
# there is no Go or no module proxy: that is recorded as SKIP, not FAIL, and the live tests then
# print one line each saying why they skip.
peers_timeout=${GS_PEERS_TIMEOUT:-5400}
printf '\n==> control-plane peers (scripts/peers.sh)\n'
if timeout --kill-after=30 "$peers_timeout" ./scripts/peers.sh; then
  passed=$((passed + 1))
  results+=("PASS  control-plane peers (scripts/peers.sh)")
else
  skip "control-plane peers (scripts/peers.sh)" "not built, exit status $?: the live tests skip"
fi

normal_flags=(-DCMAKE_BUILD_TYPE=Release -DGS_SANITIZE=OFF -DGS_FUZZ=OFF -DGS_TESTS=ON)
if step "normal build (build/)" configure_and_build build "${normal_flags[@]}"; then
  step "normal ctest (build/)" run_ctest build || true
else
  skip "normal ctest (build/)" "build failed"
fi

asan_flags=(-DCMAKE_BUILD_TYPE=Debug -DGS_SANITIZE=ON -DGS_FUZZ=OFF -DGS_TESTS=ON)
if step "sanitizer build (build-asan/)" configure_and_build build-asan "${asan_flags[@]}"; then
  step "sanitizer ctest (build-asan/)" run_sanitized_ctest build-asan || true
else
  skip "sanitizer ctest (build-asan/)" "build failed"
fi

shopt -s nullglob
fuzz_sources=(tests/fuzz/fuzz_*.c)
shopt -u nullglob
fuzz_flags=(-DGS_FUZZ=ON -DGS_TESTS=OFF -DGS_BENCH=OFF -DGS_SANITIZE=OFF)
if CC=clang step "fuzz build (build-fuzz/)" configure_and_build build-fuzz "${fuzz_flags[@]}"; then
  if ((${#fuzz_sources[@]} == 0)); then
    echo "test.sh: no tests/fuzz/fuzz_*.c targets yet"
  fi
  for source in "${fuzz_sources[@]}"; do
    name=$(basename "$source" .c)
    step "fuzz smoke $name (${fuzz_seconds}s)" fuzz_smoke "$name" || true
  done
else
  for source in "${fuzz_sources[@]}"; do
    skip "fuzz smoke $(basename "$source" .c)" "fuzz build failed"
  done
fi

tsan_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGS_FUZZ=OFF -DGS_TESTS=OFF -DGS_BENCH=OFF
  -DGS_SANITIZE=OFF -DCMAKE_C_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread)
if CC=clang step "thread sanitizer build (build-tsan/)" configure_and_build build-tsan "${tsan_flags[@]}"; then
  step "thread sanitizer: parallel simulate" "${sanitizer_launcher[@]}" \
    tests/tsan/parallel-simulate.sh build-tsan/gpusched "$PWD" || true
  step "thread sanitizer: monitor on a live cluster" "${sanitizer_launcher[@]}" \
    tests/tsan/monitor.sh build-tsan/gpusched "$PWD" || true
  step "thread sanitizer: agent end to end" "${sanitizer_launcher[@]}" \
    tests/tsan/agent.sh build-tsan/gpusched build/tests/fake_nvml/libnvidia-ml.so.1 "$PWD" || true
else
  skip "thread sanitizer: parallel simulate" "build failed"
  skip "thread sanitizer: monitor on a live cluster" "build failed"
  skip "thread sanitizer: agent end to end" "build failed"
fi

finished=1
