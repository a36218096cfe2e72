#!/usr/bin/env bash
# agent.sh GPUSCHED FAKE_NVML REPO - `gpusched agent` under ThreadSanitizer: the end-to-end
# test (tests/agent/agent-e2e-test.py) drives it through registration, ListAndWatch pushes,
# Allocate and GetPreferredAllocation on the gRPC server threads, sampling, PodResources
# reads, /metrics renders on the HTTP threads, an XID and a recovery on the health thread and
# a kubelet restart on the registrar, while the lock (agent.c) keeps them apart. Passes when
# the test passes, which includes the agent exiting 0 on SIGTERM: ThreadSanitizer makes it
# exit 66 on any report (halt_on_error). FAKE_NVML: the fake libnvidia-ml.so.1 of a normal
# build (the TSan build has no tests). Exit 0 on success, also with "SKIP: ..." when
# ThreadSanitizer or python3-grpcio cannot run here; 1 on a report or a failure.
set -euo pipefail
bin=$1
fake=$2
repo=$3
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
probe=$(mktemp "${TMPDIR:-/tmp}/gpusched-tsan-agent.XXXXXX")
trap 'rm -f "$probe"' EXIT
if ! "$bin" --version >/dev/null 2>"$probe"; then
  if grep -q "ThreadSanitizer" "$probe"; then
    echo "SKIP: ThreadSanitizer cannot run here: $(head -n 1 "$probe")"
    exit 0
  fi
  cat "$probe"
  exit 1
fi
if [[ ! -f $fake ]]; then
  echo "agent.sh: no fake NVML at $fake (build the normal build first)"
  exit 1
fi
rc=0
/usr/bin/python3 "$repo/tests/agent/agent-e2e-test.py" "$bin" "$fake" || rc=$?
if ((rc == 77)); then
  exit 0 # the test printed its SKIP line
fi
exit "$rc"
