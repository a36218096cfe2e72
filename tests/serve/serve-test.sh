#!/usr/bin/env bash
# serve-test.sh - integration test of `gpusched serve --webhook` over loopback.
#
# usage: serve-test.sh GPUSCHED_BINARY
#
# Starts the server on 127.0.0.1 with a free port (--listen 127.0.0.1:0; the port is read
# from the "listening on" line), first over plain HTTP, then over TLS with self-signed
# certificates made by certtool, and checks: allow / deny / warnings / JSONPatch, the
# audit log, 413 for an oversized body, 400 for malformed JSON and for a wrong kind, 404,
# 405, 415, a stalled client closed by the timeout while others are served, concurrent
# clients, certificate reload on SIGHUP (and a bad reload keeping the old pair), /readyz,
# /metrics, and exit status 0 on SIGTERM. Every wait is bounded; every curl has -m.
#
# Exit 0 pass, 1 fail, 77 skipped (curl missing, certtool missing for the TLS half, or a
# gpusched without the serve command).
set -u

GPUSCHED=${1:?usage: serve-test.sh GPUSCHED_BINARY}
if ! command -v curl >/dev/null 2>&1; then
    echo "SKIP: curl not found (apt-get install curl)"
    exit 77
fi
if ! "$GPUSCHED" serve --help >/dev/null 2>&1; then
    echo "SKIP: $GPUSCHED has no 'serve' command (not registered in cli/main.c yet)"
    exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-serve-test.XXXXXX")
SPID=""
PORT=""
FAILED=0
CHECKS=0

cleanup() {
    if [ -n "$SPID" ] && kill -0 "$SPID" 2>/dev/null; then
        kill -KILL "$SPID" 2>/dev/null
        wait "$SPID" 2>/dev/null
    fi
    exec 3>&- 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    FAILED=$((FAILED + 1))
}
ok() {
    CHECKS=$((CHECKS + 1))
}
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then ok; else fail "$what"; fi
}

# start_server NAME ARGS...: sets SPID and PORT; the server's stderr goes to $WORK/NAME.err
start_server() {
    local name=$1
    shift
    : >"$WORK/$name.err"
    "$GPUSCHED" serve --webhook --listen 127.0.0.1:0 --drain-period 1 "$@" 2>"$WORK/$name.err" &
    SPID=$!
    PORT=""
    for _ in $(seq 1 100); do # at most 10 s
        PORT=$(sed -n 's/.*listening on https\{0,1\}:\/\/127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$WORK/$name.err")
        [ -n "$PORT" ] && return 0
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.1
    done
    echo "server $name did not start:"
    cat "$WORK/$name.err"
    exit 1
}

# stop_server NAME: SIGTERM, wait at most 15 s, check exit status 0
stop_server() {
    local name=$1
    kill -TERM "$SPID"
    local waited=0
    while kill -0 "$SPID" 2>/dev/null && [ $waited -lt 150 ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$SPID" 2>/dev/null; then
        fail "$name: still running 15 s after SIGTERM"
        kill -KILL "$SPID"
    fi
    wait "$SPID"
    local status=$?
    check "$name: exit status after SIGTERM is $status, expected 0" [ "$status" -eq 0 ]
    check "$name: 'stopped' logged" grep -q "stopped" "$WORK/$name.err"
    SPID=""
}

# wait_log NAME PATTERN COUNT: wait (at most 10 s) until PATTERN occurs COUNT times
wait_log() {
    for _ in $(seq 1 100); do
        [ "$(grep -c "$2" "$WORK/$1.err")" -ge "$3" ] && return 0
        sleep 0.1
    done
    return 1
}

# post URL FILE [CURL ARGS...]: body in $WORK/out, HTTP code in $CODE
post() {
    local url=$1 file=$2
    shift 2
    CODE=$(curl -sS -m 5 -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary @"$file" "$@" "$url" 2>"$WORK/curl.err")
    [ -n "$CODE" ] || CODE=000
}

# review FILE OPERATION KIND OBJECT: write an AdmissionReview
review() {
    local file=$1 op=$2 kind=$3 object=$4 group=""
    [ "$kind" = Deployment ] && group=apps
    printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-%s","kind":{"group":"%s","version":"v1","kind":"%s"},"resource":{"group":"%s","version":"v1","resource":"pods"},"name":"p","namespace":"team-a","operation":"%s","userInfo":{"username":"alice@example.com","groups":["system:authenticated"]},"object":%s,"oldObject":null,"dryRun":false}}' \
        "$(basename "$file")" "$group" "$kind" "$group" "$op" "$object" >"$file"
}

# warnings in $WORK/out are each at most 120 bytes
warnings_short() {
    local w
    w=$(grep -o '"warnings":\[[^]]*\]' "$WORK/out" | sed 's/^"warnings":\[//; s/\]$//')
    [ -z "$w" ] && return 0
    printf '%s\n' "$w" | sed 's/","/"\n"/g' | while IFS= read -r line; do
        line=${line#\"}
        line=${line%\"}
        [ ${#line} -le 120 ] || { echo "warning longer than 120 bytes: $line"; exit 1; }
    done
}

CPU_POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"1"}}}]}}'
GPU_POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"cuda","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}'
GPU_TOL_POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],"containers":[{"name":"c","image":"cuda","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}'
BAD_GPU_POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"cuda","resources":{"limits":{"nvidia.com/gpu":"0.5"}}}]}}'
review "$WORK/cpu.json" CREATE Pod "$CPU_POD"
review "$WORK/gpu.json" CREATE Pod "$GPU_POD"
review "$WORK/gputol.json" CREATE Pod "$GPU_TOL_POD"
review "$WORK/bad.json" CREATE Pod "$BAD_GPU_POD"
review "$WORK/delete.json" DELETE Pod null

# ================================================================ plain HTTP
AUDIT=$WORK/audit.log
start_server plain --audit-log "$AUDIT" --timeout 2 --threads 2
BASE=http://127.0.0.1:$PORT
DECISIONS=0
check "plain-HTTP warning printed" grep -q "warning: no --tls-cert" "$WORK/plain.err"

check "GET /healthz" curl -sSf -m 5 -o /dev/null "$BASE/healthz"
check "GET /readyz" curl -sSf -m 5 -o /dev/null "$BASE/readyz"

post "$BASE/validate" "$WORK/cpu.json"
DECISIONS=$((DECISIONS + 1))
check "validate CPU pod: HTTP $CODE" [ "$CODE" = 200 ]
check "validate CPU pod: allowed" grep -q '"allowed":true' "$WORK/out"
check "validate CPU pod: uid copied" grep -q '"uid":"uid-cpu.json"' "$WORK/out"
check "validate CPU pod: response kind" grep -q '"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response"' "$WORK/out"
check "validate never patches" sh -c "! grep -q patchType '$WORK/out'"

post "$BASE/validate" "$WORK/bad.json"
DECISIONS=$((DECISIONS + 1))
check "validate fractional GPU: HTTP $CODE" [ "$CODE" = 200 ]
check "validate fractional GPU: denied" grep -q '"allowed":false' "$WORK/out"
check "validate fractional GPU: status" grep -Eq '"status":\{"code":(403|422),"reason":"(Forbidden|Invalid)","message":"' "$WORK/out"
check "validate fractional GPU: warnings at most 120 bytes" warnings_short
# the denial names each rule as "GS009 rule-name: message"
DENY_IDS=$(grep -Eo 'GS[0-9]{3} [a-z0-9-]+: ' "$WORK/out" | cut -c1-5 | sort -u)
[ -n "$DENY_IDS" ] || echo "note: the denial names no rule id (the object did not decode): $(cat "$WORK/out")"

post "$BASE/validate" "$WORK/gputol.json"
DECISIONS=$((DECISIONS + 1))
check "validate tolerating GPU pod: HTTP $CODE" [ "$CODE" = 200 ]
check "validate tolerating GPU pod: allowed" grep -q '"allowed":true' "$WORK/out"
check "validate tolerating GPU pod: warnings at most 120 bytes" warnings_short

post "$BASE/validate" "$WORK/delete.json"
DECISIONS=$((DECISIONS + 1))
check "validate DELETE: allowed" grep -q '"allowed":true' "$WORK/out"

post "$BASE/mutate" "$WORK/gpu.json"
DECISIONS=$((DECISIONS + 1))
check "mutate GPU pod: HTTP $CODE" [ "$CODE" = 200 ]
check "mutate GPU pod: allowed with a JSONPatch" grep -q '"allowed":true,"patchType":"JSONPatch","patch":"' "$WORK/out"
PATCH=$(sed -n 's/.*"patch":"\([^"]*\)".*/\1/p' "$WORK/out" | base64 -d 2>/dev/null)
check "mutate GPU pod: patch adds the GPU toleration ($PATCH)" test "$PATCH" = \
    '[{"op":"add","path":"/spec/tolerations","value":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}]'

post "$BASE/mutate" "$WORK/cpu.json"
DECISIONS=$((DECISIONS + 1))
check "mutate CPU pod: no patch" sh -c "grep -q '\"allowed\":true' '$WORK/out' && ! grep -q patch '$WORK/out'"

# bad input: clear 4xx with a metav1.Status message
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":' >"$WORK/malformed.json"
post "$BASE/validate" "$WORK/malformed.json"
check "malformed JSON: HTTP $CODE, expected 400" [ "$CODE" = 400 ]
check "malformed JSON: message" grep -q '"status":"Failure","message":"request body line [0-9]*, column [0-9]*: malformed JSON' "$WORK/out"
printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}' >"$WORK/wrongkind.json"
post "$BASE/validate" "$WORK/wrongkind.json"
check "wrong kind: HTTP $CODE, expected 400" [ "$CODE" = 400 ]
check "wrong kind: message" grep -q 'wrong kind \\"Pod\\": expected AdmissionReview' "$WORK/out"
sed 's#admission.k8s.io/v1#admission.k8s.io/v1beta1#' "$WORK/cpu.json" >"$WORK/v1beta1.json"
post "$BASE/validate" "$WORK/v1beta1.json"
check "wrong version: HTTP $CODE, expected 400" [ "$CODE" = 400 ]
head -c 1100000 /dev/zero | tr '\0' ' ' >"$WORK/big.json"
post "$BASE/validate" "$WORK/big.json"
check "oversized body: HTTP $CODE, expected 413" [ "$CODE" = 413 ]
check "oversized body: message" grep -q 'exceeds the limit of 1048576 bytes' "$WORK/out"
post "$BASE/validate" "$WORK/big.json" -H 'Transfer-Encoding: chunked'
check "oversized chunked body: HTTP $CODE, expected 413" [ "$CODE" = 413 ]
CODE=$(curl -sS -m 5 -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: application/yaml' \
    --data-binary @"$WORK/cpu.json" "$BASE/validate")
check "wrong content type: HTTP $CODE, expected 415" [ "$CODE" = 415 ]
post "$BASE/nope" "$WORK/cpu.json"
check "unknown path: HTTP $CODE, expected 404" [ "$CODE" = 404 ]
CODE=$(curl -sS -m 5 -o "$WORK/out" -w '%{http_code}' "$BASE/validate")
check "GET /validate: HTTP $CODE, expected 405" [ "$CODE" = 405 ]

# a stalled client: headers promise a body that never comes; others are still served
# and the server closes the stalled connection after --timeout (2 s)
if exec 3<>"/dev/tcp/127.0.0.1/$PORT"; then
    printf 'POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"api' >&3
    check "healthz while a client stalls" curl -sSf -m 5 -o /dev/null "$BASE/healthz"
    START=$(date +%s)
    timeout 10 cat <&3 >/dev/null
    STATUS=$?
    ELAPSED=$(($(date +%s) - START))
    check "stalled client closed by the timeout (status $STATUS after ${ELAPSED}s)" [ "$STATUS" -ne 124 ]
    exec 3>&-
else
    fail "cannot open a raw connection to 127.0.0.1:$PORT"
fi

# many concurrent clients: every one gets its answer (each curl is bounded by -m 10)
PIDS=""
for i in $(seq 1 40); do
    curl -sS -m 10 -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
        --data-binary @"$WORK/gputol.json" "$BASE/validate" >"$WORK/conc.$i" 2>&1 &
    PIDS="$PIDS $!"
done
# shellcheck disable=SC2086
wait $PIDS
DECISIONS=$((DECISIONS + 40))
GOOD=$(cat "$WORK"/conc.* | grep -c '^200$')
check "concurrent clients: $GOOD of 40 answered 200" [ "$GOOD" = 40 ]

curl -sS -m 5 -o "$WORK/metrics" "$BASE/metrics"
check "metrics: reviews counted" grep -q '^gpusched_webhook_reviews_total{endpoint="validate",verdict="denied"} 1$' "$WORK/metrics"
check "metrics: patches counted" grep -q '^gpusched_webhook_patches_total 1$' "$WORK/metrics"
check "metrics: 413 counted" grep -q '^gpusched_webhook_http_errors_total{code="413"} 2$' "$WORK/metrics"
check "metrics: latency histogram" grep -q '^gpusched_webhook_review_duration_seconds_count{endpoint="validate"} ' "$WORK/metrics"

# the audit log: one line per decision, with who, what and the verdict
LINES=$(wc -l <"$AUDIT")
check "audit log: $LINES lines for $DECISIONS decisions" [ "$LINES" -eq "$DECISIONS" ]
check "audit log: user, object, verdict" grep -q '"uid":"uid-bad.json","claimedUser":"alice@example.com","caller":null,"endpoint":"validate","operation":"CREATE","object":{"group":"","version":"v1","kind":"Pod","namespace":"team-a","name":"p"},"dryRun":false,"verdict":"denied"' "$AUDIT"
check "audit log: the patch" grep -q '"endpoint":"mutate".*"patch":\[{"op":"add","path":"/spec/tolerations"' "$AUDIT"

stop_server plain

# a second server: the rules of the denial turned into warnings by --config, and the
# default GPU PriorityClass
if [ -n "$DENY_IDS" ]; then
    {
        echo "rules:"
        for id in $DENY_IDS; do echo "  $id: warning"; done
        echo "defaultGpuPriorityClass: gpu-batch"
    } >"$WORK/config.yaml"
    # the class's value is required: a usage error at once (a server would be killed at 10 s)
    timeout 10 "$GPUSCHED" serve --webhook --listen 127.0.0.1:0 --config "$WORK/config.yaml" \
        >/dev/null 2>"$WORK/noval.err"
    STATUS=$?
    check "a default class without --gpu-priority-value: exit $STATUS, expected 2" [ "$STATUS" -eq 2 ]
    check "a default class without --gpu-priority-value: says so" grep -q "gpu-priority-value" "$WORK/noval.err"
    start_server config --config "$WORK/config.yaml" --gpu-priority-value 1000
    post "http://127.0.0.1:$PORT/validate" "$WORK/bad.json"
    check "config: errors made warnings allow" grep -q '"allowed":true' "$WORK/out"
    for id in $DENY_IDS; do
        check "config: warning for $id" grep -q "\"$id: " "$WORK/out"
    done
    check "config: warnings at most 120 bytes" warnings_short
    post "http://127.0.0.1:$PORT/mutate" "$WORK/gpu.json"
    PATCH=$(sed -n 's/.*"patch":"\([^"]*\)".*/\1/p' "$WORK/out" | base64 -d 2>/dev/null)
    check "config: default class patched ($PATCH)" sh -c "echo '$PATCH' | grep -q '{\"op\":\"add\",\"path\":\"/spec/priorityClassName\",\"value\":\"gpu-batch\"},{\"op\":\"add\",\"path\":\"/spec/priority\",\"value\":1000}'"
    stop_server config
fi

# ================================================================ TLS
if ! command -v certtool >/dev/null 2>&1; then
    echo "plain HTTP: $CHECKS checks passed, $FAILED failed"
    [ $FAILED -eq 0 ] || exit 1
    echo "SKIP: certtool not found (apt-get install gnutls-bin): TLS and certificate reload not tested"
    exit 77
fi

make_cert() { # make_cert NAME SERIAL
    cat >"$WORK/$1.tmpl" <<EOF
cn = "gpusched webhook test $2"
dns_name = "localhost"
ip_address = "127.0.0.1"
serial = $2
expiration_days = 2
tls_www_server
signing_key
encryption_key
EOF
    certtool --generate-privkey --key-type=ecdsa --outfile "$WORK/$1.key" >/dev/null 2>&1 &&
        certtool --generate-self-signed --load-privkey "$WORK/$1.key" --template "$WORK/$1.tmpl" \
            --outfile "$WORK/$1.crt" >/dev/null 2>&1
}
make_cert one 1 || { fail "certtool could not make a certificate"; exit 1; }
make_cert two 2 || { fail "certtool could not make a certificate"; exit 1; }
cp "$WORK/one.crt" "$WORK/tls.crt"
cp "$WORK/one.key" "$WORK/tls.key"

start_server tls --tls-cert "$WORK/tls.crt" --tls-key "$WORK/tls.key"
TBASE=https://127.0.0.1:$PORT
check "TLS: listening on https" grep -q "listening on https://" "$WORK/tls.err"
check "TLS: healthz with the first certificate" curl -sSf -m 5 --cacert "$WORK/one.crt" -o /dev/null "$TBASE/healthz"
CODE=$(curl -sS -m 5 --cacert "$WORK/one.crt" -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$WORK/gpu.json" "$TBASE/mutate")
check "TLS: mutate answers 200 ($CODE)" [ "$CODE" = 200 ]
check "TLS: plain HTTP on the TLS port fails" sh -c "! curl -sSf -m 5 -o /dev/null 'http://127.0.0.1:$PORT/healthz' 2>/dev/null"

# swap both files, SIGHUP: new connections get the second certificate
cp "$WORK/two.crt" "$WORK/tls.crt.new" && mv "$WORK/tls.crt.new" "$WORK/tls.crt"
cp "$WORK/two.key" "$WORK/tls.key.new" && mv "$WORK/tls.key.new" "$WORK/tls.key"
kill -HUP "$SPID"
check "TLS: reload logged" wait_log tls "certificate reloaded" 1
check "TLS: healthz with the second certificate" curl -sSf -m 5 --cacert "$WORK/two.crt" -o /dev/null "$TBASE/healthz"
check "TLS: the first certificate is gone" sh -c "! curl -sSf -m 5 --cacert '$WORK/one.crt' -o /dev/null '$TBASE/healthz' 2>/dev/null"

# a key that does not match the certificate: refused, the old pair keeps serving
cp "$WORK/one.key" "$WORK/tls.key"
kill -HUP "$SPID"
check "TLS: bad reload refused" wait_log tls "certificate not reloaded" 1
check "TLS: bad reload names the mismatch" grep -q "does not belong to the certificate" "$WORK/tls.err"
check "TLS: still serving the second certificate" curl -sSf -m 5 --cacert "$WORK/two.crt" -o /dev/null "$TBASE/healthz"
curl -sS -m 5 --cacert "$WORK/two.crt" -o "$WORK/metrics" "$TBASE/metrics"
check "TLS: reloads counted" grep -q '^gpusched_webhook_cert_reloads_total{result="ok"} 1$' "$WORK/metrics"
check "TLS: failed reloads counted" grep -q '^gpusched_webhook_cert_reloads_total{result="error"} 1$' "$WORK/metrics"
stop_server tls

# mTLS: --client-ca; reviews need a client certificate the CA signed for client auth
printf 'cn = "test ca"\nca\ncert_signing_key\nexpiration_days = 2\n' >"$WORK/ca.tmpl"
printf 'cn = "kube-apiserver"\ntls_www_client\nsigning_key\nexpiration_days = 2\n' >"$WORK/cli.tmpl"
certtool --generate-privkey --key-type=ecdsa --outfile "$WORK/ca.key" >/dev/null 2>&1 &&
    certtool --generate-self-signed --load-privkey "$WORK/ca.key" --template "$WORK/ca.tmpl" \
        --outfile "$WORK/ca.crt" >/dev/null 2>&1 &&
    certtool --generate-privkey --key-type=ecdsa --outfile "$WORK/cli.key" >/dev/null 2>&1 &&
    certtool --generate-certificate --load-privkey "$WORK/cli.key" --load-ca-certificate "$WORK/ca.crt" \
        --load-ca-privkey "$WORK/ca.key" --template "$WORK/cli.tmpl" --outfile "$WORK/cli.crt" >/dev/null 2>&1 ||
    { fail "certtool could not make a client certificate"; exit 1; }
start_server mtls --tls-cert "$WORK/two.crt" --tls-key "$WORK/two.key" --client-ca "$WORK/ca.crt" \
    --audit-log "$WORK/mtls.log"
MBASE=https://127.0.0.1:$PORT
CODE=$(curl -sS -m 5 --cacert "$WORK/two.crt" -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$WORK/cpu.json" "$MBASE/validate")
check "mTLS: a review without a client certificate: HTTP $CODE, expected 401" [ "$CODE" = 401 ]
CODE=$(curl -sS -m 5 --cacert "$WORK/two.crt" --cert "$WORK/one.crt" --key "$WORK/one.key" -o "$WORK/out" \
    -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$WORK/cpu.json" "$MBASE/validate")
check "mTLS: a certificate the CA did not sign: HTTP $CODE, expected 401" [ "$CODE" = 401 ]
CODE=$(curl -sS -m 5 --cacert "$WORK/two.crt" --cert "$WORK/cli.crt" --key "$WORK/cli.key" -o "$WORK/out" \
    -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$WORK/cpu.json" "$MBASE/validate")
check "mTLS: the client certificate: HTTP $CODE, expected 200" [ "$CODE" = 200 ]
check "mTLS: healthz needs no certificate" curl -sSf -m 5 --cacert "$WORK/two.crt" -o /dev/null "$MBASE/healthz"
check "mTLS: audit line names the verified caller" grep -q '"claimedUser":"alice@example.com","caller":"CN=kube-apiserver"' "$WORK/mtls.log"
check "mTLS: one audit line" [ "$(wc -l <"$WORK/mtls.log")" -eq 1 ]
stop_server mtls

echo "$CHECKS checks passed, $FAILED failed"
[ $FAILED -eq 0 ]
