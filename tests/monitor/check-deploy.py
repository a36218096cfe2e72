#!/usr/bin/env python3
"""check-deploy.py - deploy/monitor against the metric contract (docs/metrics.md).

  check-deploy.py SRC                 checks (exit 0 pass, 1 fail):
    - grafana-dashboard.json is valid JSON with a `datasource` variable (type datasource,
      prometheus) that every panel and target uses, unique panel ids, panels inside the
      24-column grid, and every gpusched_* name in its queries is in docs/metrics.md;
    - alerts.yaml has exactly the alerts of docs/metrics.md's table, each with the table's
      expression and `for`, a severity, summary, description and
      runbook_url docs/runbook.md#<alert, lower case>, and docs/runbook.md has that heading;
    - alerts-test.yaml tests every alert firing and not firing;
    - kustomization.yaml lists files that exist, and the Deployment passes the flags.
  check-deploy.py SRC --dashboard-rules  prints the dashboard's queries as a Prometheus
      rule file (variables replaced) so `promtool check rules` parses each one.
Standard library only: alerts.yaml is read line by line (its layout is this repository's).
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "live"))
import gslive  # noqa: E402

CHECKS = gslive.Checks(quiet=True)
check = CHECKS.check


def contract(metrics_md):
    """Metric names, and the alert table {name: (expr, for)}, from docs/metrics.md."""
    names, alerts = set(), {}
    in_alerts = False
    for line in metrics_md.splitlines():
        if line.startswith("## "):
            in_alerts = line.startswith("## Alerts")
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        if in_alerts:
            alerts[cells[0].strip("`")] = (cells[1].strip("`").replace("\\|", "|"),
                                           cells[2])
        else:
            name = cells[0].strip("`")
            names.add(name)
            if cells[1] == "histogram":
                names.update(name + s for s in ("_bucket", "_sum", "_count"))
    return names, alerts


def used_names(text):
    return set(re.findall(r"\bgpusched_[a-z0-9_]+", text))


def dashboard_exprs(dash):
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            yield p, t


def check_dashboard(src, names):
    path = os.path.join(src, "deploy/monitor/grafana-dashboard.json")
    try:
        with open(path, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        check(False, "grafana-dashboard.json: %s" % e)
        return
    tvars = dash.get("templating", {}).get("list", [])
    ds = [v for v in tvars if v.get("name") == "datasource"]
    check(len(ds) == 1 and ds[0].get("type") == "datasource" and ds[0].get("query") == "prometheus",
          "dashboard: one `datasource` variable of type datasource, query prometheus")
    ids = [p.get("id") for p in dash.get("panels", [])]
    check(len(ids) == len(set(ids)), "dashboard: panel ids unique")
    titles = " / ".join(p.get("title", "") for p in dash["panels"])
    for want in ("reason", "Oldest pending", "Stranded", "preemptions", "Device-plugin", "Idle"):
        check(want.lower() in titles.lower(), "dashboard: a panel about %r" % want)
    n = 0
    for p in dash["panels"]:
        g = p.get("gridPos", {})
        check(0 <= g.get("x", -1) and g.get("x", 0) + g.get("w", 99) <= 24,
              "dashboard: panel %r inside the grid" % p.get("title"))
        if p.get("type") == "row":
            continue
        check(p.get("datasource", {}).get("uid") == "${datasource}",
              "dashboard: panel %r uses ${datasource}" % p.get("title"))
        for t in p.get("targets", []):
            n += 1
            check(t.get("datasource", {}).get("uid") == "${datasource}",
                  "dashboard: target of %r uses ${datasource}" % p.get("title"))
            for m in used_names(t.get("expr", "")) - names:
                check(False, "dashboard: %r queries %s, not in docs/metrics.md" % (p["title"], m))
    for v in tvars:
        for m in used_names(json.dumps(v.get("query", ""))) - names:
            check(False, "dashboard: variable %s queries %s, not in docs/metrics.md" % (v["name"], m))
    check(n >= 10, "dashboard: at least 10 queries (%d)" % n)


def read_alerts(path):
    """[{alert, expr, for, severity, summary, description, runbook_url}] of alerts.yaml."""
    rules, cur, key = [], None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            m = re.match(r"- alert: (\S+)$", s)
            if m:
                cur = {"alert": m.group(1)}
                rules.append(cur)
                key = None
                continue
            if cur is None or not s or s.startswith("#"):
                continue
            m = re.match(r"(expr|for|severity|summary|description|runbook_url): ?(.*)$", s)
            if m:
                key, val = m.group(1), m.group(2)
                cur[key] = "" if val == ">-" else val.strip('"')
            elif key == "description":
                cur[key] = (cur[key] + " " + s).strip()
    return rules


def check_alerts(src, names, table):
    rules = read_alerts(os.path.join(src, "deploy/monitor/alerts.yaml"))
    got = [r["alert"] for r in rules]
    check(sorted(got) == sorted(table), "alerts.yaml: alerts %s == docs/metrics.md %s"
          % (sorted(got), sorted(table)))
    with open(os.path.join(src, "docs/runbook.md"), encoding="utf-8") as f:
        runbook = f.read()
    anchors = {re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.*)$", runbook, re.M)}
    with open(os.path.join(src, "deploy/monitor/alerts-test.yaml"), encoding="utf-8") as f:
        tests = f.read()
    for r in rules:
        a = r["alert"]
        want = table.get(a)
        if check(want is not None, "alerts.yaml: %s is in docs/metrics.md's table" % a):
            check(r.get("expr") == want[0], "%s: expr %r == docs/metrics.md %r" % (a, r.get("expr"), want[0]))
            check(r.get("for") == want[1], "%s: for %r == docs/metrics.md %r" % (a, r.get("for"), want[1]))
        check(r.get("severity") in ("info", "warning", "critical"), "%s: severity" % a)
        check(bool(r.get("summary")) and bool(r.get("description")), "%s: summary and description" % a)
        check(r.get("runbook_url") == "docs/runbook.md#" + a.lower(), "%s: runbook_url" % a)
        check(a.lower() in anchors, "docs/runbook.md: a heading for %s" % a)
        for m in used_names(r.get("expr", "") + r.get("description", "")) - names:
            check(False, "%s: %s is not in docs/metrics.md" % (a, m))
        blocks = re.findall(r"alertname: %s\n\s+exp_alerts:(.*?)(?=\n\s+- eval_time:|\n\n|\Z)" % a,
                            tests, re.S)
        check(any(b.strip() == "[]" for b in blocks), "alerts-test.yaml: %s tested not firing" % a)
        check(any("exp_labels" in b for b in blocks), "alerts-test.yaml: %s tested firing" % a)


def check_manifests(src):
    d = os.path.join(src, "deploy/monitor")
    with open(os.path.join(d, "kustomization.yaml"), encoding="utf-8") as f:
        kust = f.read()
    res = re.findall(r"^  - (\S+\.yaml)$", kust, re.M)
    check(len(res) >= 5, "kustomization.yaml: resources listed")
    for r in res:
        check(os.path.isfile(os.path.join(d, r)), "kustomization.yaml: %s exists" % r)
    check("alerts.yaml" not in res, "kustomization.yaml: alerts.yaml is for Prometheus, not the API")
    with open(os.path.join(d, "deployment.yaml"), encoding="utf-8") as f:
        dep = f.read()
    for flag in ("--listen=", "--max-problem-series=", "--idle-threshold=", "--idle-window="):
        check("- " + flag in dep, "deployment.yaml: passes %s" % flag)
    for s in ("runAsNonRoot: true", "readOnlyRootFilesystem: true",
              "allowPrivilegeEscalation: false", "drop: [ALL]", "path: /healthz", "path: /readyz",
              "replicas: 2"):
        check(s in dep, "deployment.yaml: %s" % s)


def dashboard_rules(src):
    with open(os.path.join(src, "deploy/monitor/grafana-dashboard.json"), encoding="utf-8") as f:
        dash = json.load(f)
    print("groups:\n  - name: dashboard-queries\n    rules:")
    for i, (p, t) in enumerate(dashboard_exprs(dash)):
        e = t["expr"].replace("$__rate_interval", "5m").replace("$namespace", ".*").replace("$pool", ".*")
        print("      - record: gpusched_dashboard:query_%d\n        expr: %s" % (i, json.dumps(e)))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    src = argv[1]
    if argv[2:] == ["--dashboard-rules"]:
        dashboard_rules(src)
        return 0
    with open(os.path.join(src, "docs/metrics.md"), encoding="utf-8") as f:
        names, table = contract(f.read())
    check(len(names) > 20 and len(table) == 8, "docs/metrics.md: %d metrics, %d alerts read"
          % (len(names), len(table)))
    check_dashboard(src, names)
    check_alerts(src, names, table)
    check_manifests(src)
    return CHECKS.done("ok: dashboard, alerts and manifests match docs/metrics.md")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
