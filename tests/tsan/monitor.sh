#!/usr/bin/env bash
# monitor.sh GPUSCHED REPO - `gpusched monitor` under ThreadSanitizer against a real control
# plane (tests/live/controlplane.py; peers from scripts/peers.sh): informer threads put into
# the store while the observer queues changes, the update thread applies them and runs the
# engine, HTTP threads render, the Event writer and the Lease elector run. For ~20 s pods
# and nodes churn (kubectl) while /metrics, /pending, /hygiene and /idle are fetched in a
# loop; then SIGTERM. Passes when the monitor exits 0 and ThreadSanitizer reported nothing.
# Exit 0 on success; 0 with "SKIP: ..." without a control plane or when ThreadSanitizer
# cannot run here; 1 on a report or a failure.
set -euo pipefail
bin=$1
repo=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpusched-tsan-mon.XXXXXX")
state=$tmp/plane
cleanup() {
  python3 "$repo/tests/live/controlplane.py" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
if ! "$bin" --version >"$tmp/probe.out" 2>"$tmp/probe.err"; then
  if grep -q "ThreadSanitizer" "$tmp/probe.err"; then
    echo "SKIP: ThreadSanitizer cannot run here: $(head -n 1 "$tmp/probe.err")"
    exit 0
  fi
  cat "$tmp/probe.err"
  exit 1
fi
rc=0
python3 "$repo/tests/live/controlplane.py" start "$state" >"$tmp/start.log" 2>&1 || rc=$?
if ((rc == 77)); then
  echo "SKIP: no control plane: $(tail -n 1 "$tmp/start.log")"
  exit 0
elif ((rc != 0)); then
  cat "$tmp/start.log"
  exit 1
fi
python3 "$repo/tests/live/controlplane.py" exec "$state" -- bash -s "$bin" "$tmp" <<'SCRIPT'
set -euo pipefail
bin=$1
tmp=$2
export KUBECONFIG=$GS_KUBECONFIG_ADMIN
ns=tsan-$RANDOM
kubectl create namespace "$ns" >/dev/null
"$bin" monitor --listen 127.0.0.1:0 --update-interval 50ms --dcgm-endpoints none \
  --lease-namespace "$ns" >"$tmp/mon.out" 2>"$tmp/mon.err" &
pid=$!
trap 'kill -KILL "$pid" 2>/dev/null || true' EXIT
port=
for _ in $(seq 200); do
  port=$(sed -n 's#.*serving on http://127.0.0.1:\([0-9]*\)/.*#\1#p' "$tmp/mon.err" | head -n 1)
  [[ -n $port ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $port ]]; then echo "monitor did not start"; cat "$tmp/mon.err"; exit 1; fi
( end=$((SECONDS + 20))
  while ((SECONDS < end)); do
    for v in metrics pending hygiene idle 'pending?format=json' readyz; do
      curl -s -o /dev/null "http://127.0.0.1:$port/$v" || true
    done
  done ) &
scraper=$!
for i in $(seq 1 12); do
  kubectl apply -f - >/dev/null <<Y
apiVersion: v1
kind: Node
metadata:
  name: $ns-gpu-$i
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: "8"}
---
apiVersion: v1
kind: Pod
metadata: {name: train-$i, namespace: $ns}
spec:
  schedulerName: tsan-none
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "$(( (i % 4) + 1 ))"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-$i, namespace: $ns}
spec:
  nodeName: $ns-gpu-$i
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
Y
  kubectl patch node "$ns-gpu-$i" --subresource=status --type=merge \
    -p '{"status":{"capacity":{"cpu":"64","memory":"256Gi","pods":"110","nvidia.com/gpu":"8"},"allocatable":{"cpu":"64","memory":"256Gi","pods":"110","nvidia.com/gpu":"8"}}}' >/dev/null
  ((i % 3 == 0)) && kubectl delete pod -n "$ns" "train-$((i - 1))" --wait=false >/dev/null
done
wait "$scraper"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
for i in $(seq 1 12); do kubectl delete node "$ns-gpu-$i" --wait=false >/dev/null 2>&1 || true; done
if grep -q "ThreadSanitizer" "$tmp/mon.err"; then
  grep -A 40 "WARNING: ThreadSanitizer" "$tmp/mon.err" | head -n 80
  exit 1
fi
if ((rc != 0)); then echo "monitor exited $rc"; tail -n 20 "$tmp/mon.err"; exit 1; fi
echo "monitor under ThreadSanitizer: exit 0, no report ($(grep -c . "$tmp/mon.err") stderr lines)"
SCRIPT
