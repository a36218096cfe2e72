#!/usr/bin/env python3
"""deploy-monitor-test.py - deploy/monitor against the real API server of the live tests.

Run as `controlplane.py exec STATE -- python3 deploy-monitor-test.py` (ctest
live/deploy-monitor, fixture gs_live). In a namespace of its own (`gs-mon-<hex>`), through a
kustomize overlay of deploy/monitor that sets that namespace and a unique name prefix (the
ClusterRole and its binding are cluster-wide):
  - installs the ServiceMonitor CRD of tests/data/crds (kept: idempotent, used by no one else);
  - `kubectl apply --dry-run=server -k` of every manifest succeeds and creates nothing;
    a ServiceMonitor with a malformed interval is refused (the CRD's schema is enforced);
  - the real apply; then as the monitor's service account (impersonated, and with a real
    token from the TokenRequest API) it may list/watch what it reads, create and patch
    events.k8s.io Events anywhere, get/create/update Leases in its namespace; it may not
    delete pods, read secrets, touch Leases elsewhere, write core Events or patch nodes.
Cleanup: the overlay's objects, then the namespace (finalized by hand: no namespace
controller runs in the plane). Exit 0 pass, 1 fail, 77 without a control plane.
"""
import json
import os
import secrets
import ssl
import sys
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gslive  # noqa: E402
from gslive import applied_names, env, kubectl  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check
env("GS_KUBECTL")
env("GS_KUBECONFIG_ADMIN")
TAG = secrets.token_hex(3)
NS = "gs-mon-" + TAG
PREFIX = "gsmon-%s-" % TAG
SA = PREFIX + "gpusched-monitor"
AS = "system:serviceaccount:%s:%s" % (NS, SA)


def raw_patch(token, path, patch):
    """PATCH (merge patch) as the bearer of token; (status, body)."""
    ctx = ssl.create_default_context(cafile=env("GS_CA_FILE"))
    rq = urllib.request.Request(env("GS_APISERVER_URL") + path, data=json.dumps(patch).encode(),
                                method="PATCH", headers={
                                    "Authorization": "Bearer " + token,
                                    "Content-Type": "application/merge-patch+json"})
    try:
        with urllib.request.urlopen(rq, context=ctx, timeout=30) as rs:
            return rs.status, rs.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def overlay(work):
    return gslive.overlay(work, "monitor", NS, PREFIX)


EXPECTED = {"serviceaccount/" + SA, "role.rbac.authorization.k8s.io/" + SA + "-leader-election",
            "clusterrole.rbac.authorization.k8s.io/" + SA,
            "rolebinding.rbac.authorization.k8s.io/" + SA + "-leader-election",
            "clusterrolebinding.rbac.authorization.k8s.io/" + SA, "service/" + SA,
            "deployment.apps/" + SA, "servicemonitor.monitoring.coreos.com/" + SA}


def run_checks(work):
    cache = os.path.join(work, "kube-cache")  # fresh discovery: the CRD was just added
    crd = os.path.join(SRC, "tests", "data", "crds", "servicemonitor-crd.yaml")
    r = kubectl("apply", "-f", crd)
    check(r.returncode == 0, "ServiceMonitor CRD applied: " + (r.stdout + r.stderr).strip())
    r = kubectl("wait", "--for=condition=Established", "--timeout=60s",
                "crd/servicemonitors.monitoring.coreos.com")
    check(r.returncode == 0, "CRD established " + r.stderr.strip())
    r = kubectl("create", "namespace", NS)
    check(r.returncode == 0, "namespace %s created %s" % (NS, r.stderr.strip()))
    ov = overlay(work)

    # the dry run: the API server validates and admits every object, stores none
    r = kubectl("apply", "--dry-run=server", "-k", ov, cache=cache)
    check(r.returncode == 0, "apply --dry-run=server -k deploy/monitor: rc 0 %s" % r.stderr.strip())
    got = applied_names(r.stdout)
    check(got == EXPECTED, "dry run covers every object: %s" % sorted(got ^ EXPECTED or got))
    check(all(l.endswith("(server dry run)") for l in r.stdout.splitlines() if l.strip()),
          "each line says (server dry run)")
    r = kubectl("get", "deployments,serviceaccounts,servicemonitors", "-n", NS, "-o", "name", cache=cache)
    check(r.returncode == 0 and SA not in r.stdout, "the dry run stored nothing: %r" % r.stdout)
    bad = ("apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: %sbad}\n"
           "spec:\n  selector: {matchLabels: {a: b}}\n  endpoints: [{port: metrics, interval: 30 seconds}]\n"
           % PREFIX)
    r = kubectl("apply", "--dry-run=server", "-n", NS, "-f", "-", input=bad, cache=cache)
    check(r.returncode != 0 and "interval" in r.stderr,
          "a ServiceMonitor with interval '30 seconds' is refused: %s" % r.stderr.strip()[:200])

    # the real apply
    r = kubectl("apply", "-k", ov, cache=cache)
    check(r.returncode == 0 and applied_names(r.stdout) == EXPECTED,
          "apply -k: every object created %s" % r.stderr.strip())
    r = kubectl("get", "clusterrolebinding", SA, "-o", "json")
    subj = json.loads(r.stdout)["subjects"] if r.returncode == 0 else []
    check(subj == [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
          "ClusterRoleBinding subject is the overlay's service account: %s" % subj)
    r = kubectl("get", "deployment", SA, "-n", NS, "-o", "json")
    if check(r.returncode == 0, "Deployment stored"):
        spec = json.loads(r.stdout)["spec"]["template"]["spec"]
        c = spec["containers"][0]
        check(spec["serviceAccountName"] == SA, "Deployment runs as " + SA)
        check(c["securityContext"].get("readOnlyRootFilesystem") is True
              and c["securityContext"].get("capabilities", {}).get("drop") == ["ALL"],
              "container: read-only root, drops ALL")

    # what the service account may do (impersonation: SubjectAccessReview of each)
    yes = [("list", "pods", "-A"), ("watch", "pods", "-A"), ("list", "nodes"), ("watch", "nodes"),
           ("watch", "namespaces"), ("list", "priorityclasses.scheduling.k8s.io"),
           ("watch", "resourcequotas", "-A"), ("watch", "poddisruptionbudgets.policy", "-A"),
           ("watch", "daemonsets.apps", "-A"), ("watch", "events", "-A"),
           ("watch", "events.events.k8s.io", "-A"),
           ("create", "events.events.k8s.io", "-n", "default"),
           ("patch", "events.events.k8s.io", "-n", "kube-system"),
           ("get", "leases.coordination.k8s.io", "-n", NS),
           ("create", "leases.coordination.k8s.io", "-n", NS),
           ("update", "leases.coordination.k8s.io", "-n", NS)]
    no = [("delete", "pods", "-A"), ("delete", "pods", "-n", NS), ("create", "pods", "-n", NS),
          ("list", "secrets", "-A"), ("get", "secrets", "-n", NS), ("list", "configmaps", "-A"),
          ("update", "leases.coordination.k8s.io", "-n", "default"),
          ("delete", "leases.coordination.k8s.io", "-n", NS),
          ("create", "events", "-n", "default"), ("delete", "events.events.k8s.io", "-A"),
          ("patch", "nodes"), ("update", "nodes", "--subresource=status"),
          ("create", "pods", "--subresource=binding", "-n", NS),
          ("create", "pods", "--subresource=eviction", "-A"), ("update", "deployments.apps", "-n", NS)]
    for v in yes:
        check(gslive.can_i(AS, *v), "%s can %s" % (SA, " ".join(v)))
    for v in no:
        check(not gslive.can_i(AS, *v), "%s cannot %s" % (SA, " ".join(v)))

    # the same with the service account's own token (TokenRequest), not impersonation
    r = kubectl("create", "token", SA, "-n", NS, "--duration=10m")
    if check(r.returncode == 0, "token for %s %s" % (SA, r.stderr.strip())):
        token = r.stdout.strip()
        as_sa = ["--server", env("GS_APISERVER_URL"), "--certificate-authority", env("GS_CA_FILE"),
                 "--token", token]

        def sa(*args, input=None):
            return kubectl(*as_sa, *args, input=input, kubeconfig=False, cache=cache)
        r = sa("get", "pods", "-A", "-o", "name")
        check(r.returncode == 0, "as the token: list pods -A %s" % r.stderr.strip())
        r = sa("get", "secrets", "-n", NS)
        check(r.returncode != 0 and "forbidden" in r.stderr.lower(),
              "as the token: list secrets forbidden: %s" % r.stderr.strip()[:160])
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": SA, "namespace": NS},
                 "spec": {"holderIdentity": "replica-a", "leaseDurationSeconds": 15}}
        r = sa("create", "-f", "-", input=json.dumps(lease))
        check(r.returncode == 0, "as the token: create Lease in %s %s" % (NS, r.stderr.strip()))
        lease["spec"]["holderIdentity"] = "replica-b"
        r = sa("replace", "-f", "-", input=json.dumps(lease))
        check(r.returncode == 0, "as the token: update the Lease %s" % r.stderr.strip())
        event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                 "metadata": {"name": PREFIX + "pending", "namespace": NS},
                 "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "gpusched.io/monitor",
                 "reportingInstance": "replica-a", "action": "Explain", "reason": "GPUPending",
                 "type": "Warning", "note": "test", "regarding": {"kind": "Pod", "namespace": NS, "name": "p"}}
        r = sa("create", "-f", "-", input=json.dumps(event))
        check(r.returncode == 0, "as the token: create an events.k8s.io Event %s" % r.stderr.strip())
        # kubectl patch GETs first; the monitor PATCHes directly (it has no get): do as it does
        code, body = raw_patch(token, "/apis/events.k8s.io/v1/namespaces/%s/events/%s"
                               % (NS, PREFIX + "pending"),
                               {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}})
        check(code == 200 and json.loads(body).get("series", {}).get("count") == 2,
              "as the token: PATCH the Event's series (merge patch): %d %s" % (code, body[:160]))
        r = sa("delete", "pod", "anything", "-n", NS)
        check(r.returncode != 0 and "forbidden" in r.stderr.lower(),
              "as the token: delete a pod forbidden: %s" % r.stderr.strip()[:160])


def cleanup(work):
    ov = os.path.join(work, "overlay")
    if os.path.isdir(ov):
        kubectl("delete", "-k", ov, "--ignore-not-found", "--wait=false")
    gslive.delete_namespace(NS)


def main():
    gslive.main("deploy-monitor-test", 300, run_checks, cleanup, CHECKS)
    return CHECKS.done("ok: deploy/monitor applies and its service account has exactly what it "
                       "needs")


if __name__ == "__main__":
    sys.exit(main())
