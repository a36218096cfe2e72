#!/usr/bin/env bash
# bench-webhook.sh - load the admission webhook over loopback with wrk (docs/performance.md,
# section "Admission webhook").
#
# usage: bench/bench-webhook.sh GPUSCHED_BINARY [SECONDS]
#
# Runs, each against a fresh `gpusched serve --webhook --threads 2` on 127.0.0.1:
#   1. plain HTTP, throughput: wrk -t1 -c16, as fast as it goes, POST /validate;
#   2. the same with --audit-log (one fdatasync'd line per decision, group commit);
#   3. plain HTTP, POST /mutate;
#   4. TLS (self-signed ECDSA P-256 from certtool), a fixed offered load of about 1,000
#      reviews/s (20 connections, each waiting 18 ms after every answer), latency
#      percentiles from wrk --latency.
# The review is a realistic 2 KiB AdmissionReview of a GPU pod as the API server sends it
# (defaulted fields, service account volume, tolerations). Any non-2xx answer or socket
# error is reported and makes the script exit 1. Needs wrk (apt-get install wrk) and, for
# TLS, certtool (gnutls-bin). Traffic stays on 127.0.0.1 and every run is bounded by
# SECONDS (default 10; the TLS run takes 1.5 x SECONDS).
set -u

GPUSCHED=${1:?usage: bench-webhook.sh GPUSCHED_BINARY [SECONDS]}
SECONDS_PER_RUN=${2:-10}
command -v wrk >/dev/null 2>&1 || { echo "bench-webhook: wrk not found (apt-get install wrk)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-bench-webhook.XXXXXX")
SPID=""
cleanup() {
    [ -n "$SPID" ] && kill -TERM "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
ERRORS=0

cat >"$WORK/review.json" <<'EOF'
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},"name":"train-0","namespace":"team-a","operation":"CREATE","userInfo":{"username":"system:serviceaccount:ci:deployer","uid":"1b2c","groups":["system:serviceaccounts","system:serviceaccounts:ci","system:authenticated"]},"object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"train-0","namespace":"team-a","labels":{"app":"train","team":"a"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":{"volumes":[{"name":"kube-api-access-x","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}],"defaultMode":420}}],"containers":[{"name":"main","image":"nvcr.io/nvidia/pytorch:24.01-py3","command":["python","train.py"],"resources":{"limits":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":"2"},"requests":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":"2"}},"volumeMounts":[{"name":"kube-api-access-x","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Never","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priorityClassName":"gpu-batch","priority":1000,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{}},"oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}}
EOF
# wrk scripts: POST the review; the paced one waits DELAY_MS after each answer
cat >"$WORK/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$WORK/review.json", "rb")
wrk.body = f:read("*a")
f:close()
EOF
cp "$WORK/post.lua" "$WORK/paced.lua"
echo 'function delay() return 18 end' >>"$WORK/paced.lua"

# start NAME ARGS...: a server on a free port; sets SPID and PORT
start() {
    local name=$1
    shift
    "$GPUSCHED" serve --webhook --listen 127.0.0.1:0 --threads 2 "$@" 2>"$WORK/$name.err" &
    SPID=$!
    PORT=""
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's/.*listening on https\{0,1\}:\/\/127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$WORK/$name.err")
        [ -n "$PORT" ] && return 0
        sleep 0.1
    done
    echo "bench-webhook: server $name did not start" >&2
    cat "$WORK/$name.err" >&2
    exit 2
}
stop() {
    kill -TERM "$SPID"
    wait "$SPID"
    SPID=""
}

# run NAME URL LUA CONNECTIONS SECONDS: wrk, then one summary line
run() {
    local name=$1 url=$2 lua=$3 conns=$4 secs=$5
    local out
    out="$WORK/$(printf '%s' "$name" | tr -c 'a-zA-Z0-9' '_').wrk"
    wrk -t1 -c"$conns" -d"${secs}s" --timeout 5s --latency -s "$lua" "$url" >"$out" 2>&1
    local rps p50 p99 max errs
    rps=$(awk '/^Requests\/sec:/ {printf "%d", $2}' "$out")
    p50=$(awk '$1 == "50%" {print $2}' "$out")
    p99=$(awk '$1 == "99%" {print $2}' "$out")
    max=$(awk '$1 == "Latency" {print $4}' "$out")
    errs=$(grep -E 'Non-2xx|Socket errors' "$out" | tr -s ' ' | tr '\n' ' ')
    printf '| %-22s | %6s | %8s | %8s | %8s | %s |\n' "$name" "$rps" "$p50" "$p99" "$max" "${errs:-0 errors}"
    if [ -n "$errs" ]; then
        ERRORS=$((ERRORS + 1))
        cat "$out" >&2
    fi
}

echo "host: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| run                    | reviews/s | p50 | p99 | max | errors |"
echo "|---|---:|---:|---:|---:|---|"

start plain
run "http validate" "http://127.0.0.1:$PORT/validate" "$WORK/post.lua" 16 "$SECONDS_PER_RUN"
run "http mutate" "http://127.0.0.1:$PORT/mutate" "$WORK/post.lua" 16 "$SECONDS_PER_RUN"
stop

start audit --audit-log "$WORK/audit.log"
run "http validate + audit" "http://127.0.0.1:$PORT/validate" "$WORK/post.lua" 16 "$SECONDS_PER_RUN"
stop
echo "(audit log: $(wc -l <"$WORK/audit.log") lines on $(df -PT "$WORK" | awk 'NR==2 {print $2}'))"

if command -v certtool >/dev/null 2>&1; then
    cat >"$WORK/cert.tmpl" <<'EOF'
cn = "gpusched bench"
ip_address = "127.0.0.1"
serial = 1
expiration_days = 1
tls_www_server
signing_key
encryption_key
EOF
    certtool --generate-privkey --key-type=ecdsa --outfile "$WORK/tls.key" >/dev/null 2>&1
    certtool --generate-self-signed --load-privkey "$WORK/tls.key" --template "$WORK/cert.tmpl" \
        --outfile "$WORK/tls.crt" >/dev/null 2>&1
    start tls --tls-cert "$WORK/tls.crt" --tls-key "$WORK/tls.key"
    run "https ~1000/s validate" "https://127.0.0.1:$PORT/validate" "$WORK/paced.lua" 20 \
        "$((SECONDS_PER_RUN * 3 / 2))"
    run "https validate (max)" "https://127.0.0.1:$PORT/validate" "$WORK/post.lua" 16 "$SECONDS_PER_RUN"
    stop
else
    echo "(certtool not found: TLS runs skipped; apt-get install gnutls-bin)"
fi
[ $ERRORS -eq 0 ]
