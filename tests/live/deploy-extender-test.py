#!/usr/bin/env python3
"""deploy-extender-test.py - deploy/extender against the real API server and kube-scheduler
of the live tests.

Run as `controlplane.py exec STATE -- python3 deploy-extender-test.py` (ctest
live/deploy-extender, fixture gs_live). In a namespace of its own (`gs-ext-<hex>`), through a
kustomize overlay of deploy/extender that sets that namespace and a unique name prefix:
  - `kubectl apply --dry-run=server -k` admits every object and stores none;
  - gen-certs.sh creates the Secret gpusched-extender-tls (tls.crt, tls.key, ca.crt; the
    leaf verifies against the CA for the name kube-scheduler checks);
  - the real apply; the bindings name the overlay's ServiceAccount; the Deployment's pod runs
    kube-scheduler (its Lease namespace from POD_NAMESPACE) and the extender (TLS flags);
  - the ServiceAccount may do what the extender and a second kube-scheduler need, and not
    more (kubectl auth can-i as the account);
  - the KubeSchedulerConfiguration of the ConfigMap, its urlPrefix moved to a loopback port,
    its caFile to the generated CA and its kubeconfig to the ServiceAccount's own token, runs
    in the real kube-scheduler (`controlplane.py scheduler`): it starts and serves /healthz
    (the configuration parsed and validated), takes the Lease gpusched-scheduler in the test
    namespace, logs no `forbidden`; with no extender listening, a pod asking a managed
    resource stays Pending with a FailedScheduling event naming the extender's URL
    (`ignorable: false`), while a pod asking none is bound without the extender; then a
    stub extender on that port (HTTPS with the generated pair) is reached through the CA
    and serverName check, gets the names only (nodeCacheCapable), and its filter message
    reaches the pod's event.
Cleanup: the scheduler, the pods, the node, the overlay's objects, the namespace (finalized
by hand). Exit 0 pass, 1 fail, 77 without a control plane.
"""
import http.server
import json
import os
import re
import secrets
import ssl
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gslive  # noqa: E402
from gslive import applied_names, env, free_port, kubectl, wait_for  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check
FAILS = CHECKS.fails
KUBECTL = env("GS_KUBECTL")
ADMIN = env("GS_KUBECONFIG_ADMIN")
TAG = secrets.token_hex(3)
NS = "gs-ext-" + TAG
PREFIX = "gsext-%s-" % TAG
SA = PREFIX + "gpusched-scheduler"
AS = "system:serviceaccount:%s:%s" % (NS, SA)
NODE = "gs-ext-node-" + TAG
SCHED = gslive.ExtraScheduler("ext-" + TAG)
STATE = {}


def overlay(work):
    return gslive.overlay(work, "extender", NS, PREFIX)


EXPECTED = {"serviceaccount/" + SA,
            "role.rbac.authorization.k8s.io/" + SA + "-leader-election",
            "rolebinding.rbac.authorization.k8s.io/" + SA + "-leader-election",
            "clusterrole.rbac.authorization.k8s.io/" + PREFIX + "gpusched-extender",
            "clusterrolebinding.rbac.authorization.k8s.io/" + PREFIX + "gpusched-extender",
            "clusterrolebinding.rbac.authorization.k8s.io/" + SA + "-as-kube-scheduler",
            "clusterrolebinding.rbac.authorization.k8s.io/" + SA + "-as-volume-scheduler",
            "configmap/" + SA + "-config", "service/" + PREFIX + "gpusched-extender",
            "deployment.apps/" + SA, "poddisruptionbudget.policy/" + SA,
            "networkpolicy.networking.k8s.io/" + SA}


def catalog_profiles():
    with open(os.path.join(SRC, "lib", "gpu", "catalog.c")) as f:
        return set(re.findall(r'"(\d+g\.\d+gb)"', f.read()))


def check_config(text):
    """The extender stanza, read as text (the file is YAML; no YAML parser needed)."""
    def field(name):
        m = re.findall(r"^[\s-]*%s:\s*(\S+)\s*$" % re.escape(name), text, re.M)
        return m
    check(field("apiVersion") == ["kubescheduler.config.k8s.io/v1"], "config: kubescheduler.config.k8s.io/v1")
    check(field("schedulerName") == ["gpusched-scheduler"], "config: one profile, gpusched-scheduler")
    check(field("resourceName") == ["gpusched-scheduler"], "config: its own Lease name")
    for k, v in (("filterVerb", "filter"), ("prioritizeVerb", "prioritize"),
                 ("preemptVerb", "preempt"), ("bindVerb", "bind"), ("enableHTTPS", "true"),
                 ("nodeCacheCapable", "true"), ("ignorable", "false"), ("httpTimeout", "3s"),
                 ("percentageOfNodesToScore", "100"), ("urlPrefix", "https://127.0.0.1:8888")):
        check(field(k) == [v], "config: %s %s (%s)" % (k, v, field(k)))
    managed = re.findall(r"\{name: ([^,]+), ignoredByScheduler: (true|false)\}", text)
    names = [n for n, _ in managed]
    check(len(names) == len(set(names)), "config: managedResources unique")
    ign = {n for n, i in managed if i == "true"}
    check(ign == {"nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"},
          "config: ignoredByScheduler true only for the HAMi share keys: %s" % sorted(ign))
    mig = {n[len("nvidia.com/mig-"):] for n in names if n.startswith("nvidia.com/mig-")}
    prof = catalog_profiles()
    check(mig == prof, "config: a MIG resource for every catalog profile (missing %s, extra %s)"
          % (sorted(prof - mig), sorted(mig - prof)))
    check("nvidia.com/gpu" not in names, "config: whole nvidia.com/gpu is not managed")


def rewrite(text, port, ca, kubeconfig):
    out = text.replace("urlPrefix: https://127.0.0.1:8888", "urlPrefix: https://127.0.0.1:%d" % port)
    out = out.replace("caFile: /etc/gpusched/tls/ca.crt", "caFile: %s" % json.dumps(ca))
    out = out.replace('kubeconfig: ""', "kubeconfig: %s" % json.dumps(kubeconfig))
    return out


def sa_kubeconfig(work, token):
    path = os.path.join(work, "kubeconfig-sa")
    for args in (["config", "set-cluster", "gs", "--server", env("GS_APISERVER_URL"),
                  "--certificate-authority", env("GS_CA_FILE"), "--embed-certs=true"],
                 ["config", "set-credentials", "sa", "--token", token],
                 ["config", "set-context", "sa", "--cluster", "gs", "--user", "sa"],
                 ["config", "use-context", "sa"]):
        subprocess.run([KUBECTL, "--kubeconfig", path] + args, check=True, capture_output=True)
    return path


class Stub(http.server.BaseHTTPRequestHandler):
    """A stand-in extender: filter says no to every node, with a message of its own."""
    seen = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            args = json.loads(body)
        except ValueError:
            args = {}
        Stub.seen.append((self.path, args))
        names = args.get("NodeNames") or []
        out = {"Nodes": None, "NodeNames": [], "FailedNodes": None,
               "FailedAndUnresolvableNodes": {n: "stub-extender-" + TAG for n in names},
               "Error": ""}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def pod(name, resources):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulerName": "gpusched-scheduler",
                     "nodeSelector": {"gpusched.io/test": TAG},
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "c", "image": "registry.example.com/none",
                                     "resources": {"limits": resources}}]}}


def events_of(name):
    r = kubectl("get", "events", "-n", NS, "--field-selector", "involvedObject.name=" + name,
                "-o", "json")
    return json.loads(r.stdout)["items"] if r.returncode == 0 else []


def run_checks(work):
    cache = os.path.join(work, "kube-cache")
    r = kubectl("create", "namespace", NS)
    check(r.returncode == 0, "namespace %s created %s" % (NS, r.stderr.strip()))
    ov = overlay(work)

    r = kubectl("apply", "--dry-run=server", "-k", ov, cache=cache)
    check(r.returncode == 0, "apply --dry-run=server -k deploy/extender: rc 0 %s" % r.stderr.strip())
    got = applied_names(r.stdout)
    check(got == EXPECTED, "dry run covers every object: %s" % sorted(got ^ EXPECTED or got))
    check(all(l.endswith("(server dry run)") for l in r.stdout.splitlines() if l.strip()),
          "each line says (server dry run)")
    r = kubectl("get", "deployments,serviceaccounts,configmaps", "-n", NS, "-o", "name")
    check(r.returncode == 0 and SA not in r.stdout, "the dry run stored nothing: %r" % r.stdout)

    # certificates: gen-certs.sh creates the Secret the pod mounts
    certs = os.path.join(work, "certs")
    r = subprocess.run(["sh", os.path.join(SRC, "deploy", "extender", "gen-certs.sh"), NS, certs],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, KUBECTL="%s --kubeconfig %s" % (KUBECTL, ADMIN)))
    check(r.returncode == 0, "gen-certs.sh %s: rc 0 %s" % (NS, r.stderr.strip()[-300:]))
    r = kubectl("get", "secret", "gpusched-extender-tls", "-n", NS, "-o", "json")
    if check(r.returncode == 0, "Secret gpusched-extender-tls stored"):
        sec = json.loads(r.stdout)
        check(sec["type"] == "kubernetes.io/tls" and set(sec["data"]) == {"tls.crt", "tls.key", "ca.crt"},
              "Secret: kubernetes.io/tls with tls.crt, tls.key, ca.crt: %s" % sorted(sec["data"]))
    r = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(certs, "ca.crt"),
                        "-verify_hostname", "gpusched-extender", os.path.join(certs, "tls.crt")],
                       capture_output=True, text=True)
    check(r.returncode == 0, "leaf verifies against the CA for gpusched-extender: %s" % r.stdout.strip())

    r = kubectl("apply", "-k", ov, cache=cache)
    check(r.returncode == 0 and applied_names(r.stdout) == EXPECTED,
          "apply -k: every object created %s" % r.stderr.strip())
    for crb in (PREFIX + "gpusched-extender", SA + "-as-kube-scheduler", SA + "-as-volume-scheduler"):
        r = kubectl("get", "clusterrolebinding", crb, "-o", "json")
        subj = json.loads(r.stdout)["subjects"] if r.returncode == 0 else []
        check(subj == [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
              "ClusterRoleBinding %s names the overlay's service account: %s" % (crb, subj))
    r = kubectl("get", "deployment", SA, "-n", NS, "-o", "json")
    if check(r.returncode == 0, "Deployment stored"):
        spec = json.loads(r.stdout)["spec"]["template"]["spec"]
        cs = {c["name"]: c for c in spec["containers"]}
        check(spec["serviceAccountName"] == SA, "Deployment runs as " + SA)
        check(set(cs) == {"kube-scheduler", "extender", "cert-reloader"}, "containers: %s" % sorted(cs))
        sched = cs.get("kube-scheduler", {})
        cmd = sched.get("command", [])
        check("--leader-elect-resource-namespace=$(POD_NAMESPACE)" in cmd,
              "kube-scheduler's Lease namespace is the pod's")
        # its flags, for the run below: all but the config and the serving address
        STATE["sched_args"] = [a.replace("$(POD_NAMESPACE)", NS) for a in cmd[1:]
                               if not a.startswith(("--config=", "--bind-address=",
                                                    "--secure-port="))]
        check({v["name"]: v.get("configMap", {}).get("name") for v in spec["volumes"]}.get("config")
              == SA + "-config", "the config volume is the overlay's ConfigMap")
        ext = cs.get("extender", {})
        check("--tls-cert-file=/etc/gpusched/tls/tls.crt" in ext.get("args", [])
              and "--tls-private-key-file=/etc/gpusched/tls/tls.key" in ext.get("args", []),
              "extender serves HTTPS with the mounted pair")
        check(all(c["securityContext"].get("readOnlyRootFilesystem") is True
                  and c["securityContext"].get("capabilities", {}).get("drop") == ["ALL"]
                  for c in spec["containers"]), "every container: read-only root, drops ALL")

    yes = [("list", "pods", "-A"), ("watch", "pods", "-A"), ("get", "pods", "-n", "default"),
           ("list", "nodes"), ("watch", "nodes"), ("get", "nodes"),
           ("create", "pods", "--subresource=binding", "-n", "default"),
           ("create", "events.events.k8s.io", "-n", "default"),
           ("patch", "events.events.k8s.io", "-n", "kube-system"),
           ("get", "leases.coordination.k8s.io", "-n", NS),
           ("create", "leases.coordination.k8s.io", "-n", NS),
           ("update", "leases.coordination.k8s.io", "-n", NS),
           # the second kube-scheduler (system:kube-scheduler, system:volume-scheduler)
           ("delete", "pods", "-n", "default"),
           ("patch", "pods", "--subresource=status", "-n", "default"),
           ("watch", "poddisruptionbudgets.policy", "-A"), ("list", "persistentvolumeclaims", "-A"),
           ("watch", "csinodes.storage.k8s.io"), ("create", "tokenreviews.authentication.k8s.io"),
           ("create", "subjectaccessreviews.authorization.k8s.io")]
    no = [("list", "secrets", "-A"), ("get", "secrets", "-n", NS), ("update", "pods", "-n", "default"),
          ("patch", "pods", "-n", "default"),
          ("create", "pods", "-n", NS), ("patch", "nodes"), ("update", "nodes"),
          ("update", "nodes", "--subresource=status"), ("delete", "nodes"),
          ("create", "pods", "--subresource=eviction", "-A"),
          ("get", "configmaps", "-n", "kube-system"),
          ("update", "leases.coordination.k8s.io", "-n", "default"),
          ("delete", "leases.coordination.k8s.io", "-n", NS),
          ("delete", "events.events.k8s.io", "-A"), ("update", "deployments.apps", "-n", NS),
          ("update", "configmaps", "-n", NS), ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
          ("update", "leases.coordination.k8s.io/gpusched-scheduler", "-n", "kube-system")]
    for v in yes:
        check(gslive.can_i(AS, *v), "%s can %s" % (SA, " ".join(v)))
    for v in no:
        check(not gslive.can_i(AS, *v), "%s cannot %s" % (SA, " ".join(v)))

    # the configuration in the real kube-scheduler
    r = kubectl("get", "configmap", SA + "-config", "-n", NS, "-o", "json")
    if not check(r.returncode == 0, "ConfigMap stored"):
        return
    text = json.loads(r.stdout)["data"]["config.yaml"]
    check_config(text)
    r = kubectl("create", "token", SA, "-n", NS, "--duration=30m")
    if not check(r.returncode == 0, "token for %s %s" % (SA, r.stderr.strip())):
        return
    kc = sa_kubeconfig(work, r.stdout.strip())
    port = free_port()
    cfg = os.path.join(work, "scheduler-config.yaml")
    with open(cfg, "w") as f:
        f.write(rewrite(text, port, os.path.join(certs, "ca.crt"), kc))
    t0 = time.monotonic()
    info, why = SCHED.start(cfg, kc, STATE.get("sched_args", []))
    if not check(info is not None, "kube-scheduler runs the configuration and serves /healthz "
                 "(%.1fs) %s" % (time.monotonic() - t0, why.strip()[-800:])):
        return
    # the same harness refuses a configuration kube-scheduler's validation refuses
    bad = os.path.join(work, "scheduler-config-bad.yaml")
    with open(bad, "w") as f:
        f.write(rewrite(text, port, os.path.join(certs, "ca.crt"), kc).replace("weight: 5", "weight: 0"))
    bad_sched = gslive.ExtraScheduler(SCHED.name + "-bad")
    binfo, bwhy = bad_sched.start(bad, kc, STATE.get("sched_args", []))
    if binfo:
        bad_sched.stop()
    check(binfo is None and "must have a positive weight" in bwhy,
          "weight 0 is refused by kube-scheduler's validation: %r" % bwhy.strip()[-160:])
    lease = wait_for(lambda: (lambda r: r.returncode == 0 and json.loads(r.stdout))(
        kubectl("get", "lease", "gpusched-scheduler", "-n", NS, "-o", "json")), 30)
    check(bool(lease) and lease["spec"].get("holderIdentity"),
          "it holds the Lease gpusched-scheduler in %s (as the ServiceAccount)" % NS)

    # a node for the pods of this test only (its label and a taint of the test); not
    # gslive.ExtenderRun.make_node: each step here is a check, and no GPU capacity is needed
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "labels": {"gpusched.io/test": TAG}}}
    r = kubectl("create", "-f", "-", input=json.dumps(node))
    check(r.returncode == 0, "node %s created %s" % (NODE, r.stderr.strip()))
    q = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    r = kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"capacity": q, "allocatable": q,
                                       "conditions": [{"type": "Ready", "status": "True",
                                                       "reason": "KubeletReady", "message": "test",
                                                       "lastHeartbeatTime": None}]}}))
    check(r.returncode == 0, "node status set %s" % r.stderr.strip())
    r = kubectl("taint", "node", NODE, "gpusched.io/test=%s:NoSchedule" % TAG)

    # extender down: a share pod stays Pending with the scheduler's event; a plain pod binds
    r = kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        pod("share", {"nvidia.com/gpumem": "1000"}), pod("plain", {"cpu": "100m"})]}))
    check(r.returncode == 0, "pods created %s" % r.stderr.strip())
    url = "https://127.0.0.1:%d/filter" % port

    def failed_event(needle):
        for e in events_of("share"):
            if e.get("reason") == "FailedScheduling" and needle in e.get("message", ""):
                return e["message"]
        return None
    msg = wait_for(lambda: failed_event(url), 40)
    check(bool(msg) and "connection refused" in msg,
          "extender down: FailedScheduling event names %s: %r" % (url, msg))
    r = kubectl("get", "pod", "share", "-n", NS, "-o", "jsonpath={.spec.nodeName}")
    check(r.returncode == 0 and r.stdout == "", "extender down: the share pod is not bound")
    bound = wait_for(lambda: kubectl("get", "pod", "plain", "-n", NS, "-o",
                                     "jsonpath={.spec.nodeName}").stdout, 30)
    check(bound == NODE, "a pod asking no managed resource is bound without the extender: %r" % bound)

    # a stub extender on the port: TLS verified with caFile + serverName, names only
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(certs, "tls.crt"), os.path.join(certs, "tls.key"))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Stub)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        msg = wait_for(lambda: failed_event("stub-extender-" + TAG), 40)
        check(bool(msg), "stub extender over HTTPS reached, its filter message in the event: %r" % msg)
        calls = [(p, a) for p, a in Stub.seen if p == "/filter"]
        check(bool(calls) and calls[0][1].get("Nodes") is None
              and calls[0][1].get("NodeNames") == [NODE],
              "filter got NodeNames only (nodeCacheCapable): %s"
              % [(p, a.get("NodeNames"), a.get("Nodes")) for p, a in calls[:1]])
    finally:
        srv.shutdown()
        srv.server_close()
    with open(info["log"], errors="replace") as f:
        log = f.read()
    forb = [l for l in log.splitlines() if "forbidden" in l.lower()]
    check(not forb, "kube-scheduler as the ServiceAccount: no forbidden in its log %s" % forb[:3])


def cleanup(work):
    try:
        SCHED.stop()
    except Exception as e:  # cleanup goes on
        print("cleanup: stopping the scheduler: %s" % e)
    kubectl("delete", "pods", "--all", "-n", NS, "--force", "--grace-period=0", "--wait=false")
    kubectl("delete", "node", NODE, "--ignore-not-found", "--wait=false")
    ov = os.path.join(work, "overlay")
    if os.path.isdir(ov):
        kubectl("delete", "-k", ov, "--ignore-not-found", "--wait=false")
    gslive.delete_namespace(NS)


def main():
    gslive.main("deploy-extender-test", 300, run_checks, cleanup, CHECKS)
    return CHECKS.done("ok: deploy/extender applies, its ServiceAccount has what it needs, and "
                       "the real kube-scheduler runs its configuration")


if __name__ == "__main__":
    sys.exit(main())
