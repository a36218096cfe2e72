#!/bin/sh
# alerts.sh SRC - the monitor's Prometheus rules with the real promtool (Debian package
# prometheus, scripts/deps.sh monitor): `promtool check rules` on deploy/monitor/alerts.yaml,
# `promtool test rules` on deploy/monitor/alerts-test.yaml (every alert fires after its `for`,
# not before, not without the problem), and every query of the Grafana dashboard parsed as
# PromQL. Exit 0 pass, 1 fail, 77 (one line) without promtool.
set -eu
src=${1:?usage: alerts.sh SRC}
promtool=${PROMTOOL:-promtool}
if ! command -v "$promtool" >/dev/null 2>&1; then
    echo "SKIP: promtool not installed: run scripts/deps.sh monitor (Debian package prometheus)"
    exit 77
fi
"$promtool" --version 2>&1 | head -n 1
"$promtool" check rules "$src/deploy/monitor/alerts.yaml"
(cd "$src/deploy/monitor" && "$promtool" test rules alerts-test.yaml)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$src/tests/monitor/check-deploy.py" "$src" --dashboard-rules >"$tmp/dashboard-queries.yaml"
"$promtool" check rules "$tmp/dashboard-queries.yaml"
