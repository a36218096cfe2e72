#!/usr/bin/env python3
"""agent-labels-test.py - `gpusched agent` against the real API server of the live tests:
its GFD-compatible labels, its health Events, and the engine reading the node it describes.

Run as `controlplane.py exec STATE -- python3 agent-labels-test.py GPUSCHED FAKE_NVML` (ctest
live/agent-labels, fixture gs_live). In a namespace of its own (`gs-agent-<hex>`):
  - a Node `gs-agent-<hex>` (an API object: no kubelet), Ready, tainted for this run only,
    its capacity set through the status subresource as the kubelet would after the device
    plugin registered; a label of another field manager (`kubectl label`) on it;
  - deploy/agent through a kustomize overlay (namespace, name prefix): the bindings name the
    overlay's ServiceAccount; `gpusched agent` runs under that account's own token with the
    fake NVML (tests/fake-nvml), `--labels apply`, `--no-register`;
  - MIG mixed (tests/data/nvml/a100-mig-mixed.scn, --mig-strategy mixed): the node carries
    exactly the labels `agent discover` prints (product, count, memory, family, compute,
    driver, cuda, mig.strategy, mig-<profile>.count ...), each owned by field manager
    gpusched-agent (managedFields, operation Apply); the other manager's label untouched;
  - the engine (`gpusched schedule -o json --kubeconfig`, live) places a pending pod asking
    nvidia.com/mig-3g.40gb and selecting the agent's product label on the node, on a 3g.40gb
    instance;
  - the agent restarted on two whole H100s: the MIG labels it no longer sends are gone
    (server-side apply removes what the manager owned), product/count/memory follow, the
    other manager's labels stay; the engine places a pod asking 2 nvidia.com/gpu there and
    no longer a MIG one;
  - health: the scenario replaced (rename) with GPU 1 lost and an XID 79: an events.k8s.io
    Event GPUUnhealthy regarding the Node (reportingController gpusched.io/agent); the GPU
    back: GPUHealthy (--probe-interval 1s --recover-after 2s);
  - --labels nodefeature: a minimal NodeFeature CRD (nfd.k8s-sigs.io/v1alpha1) installed
    when absent, the object gpusched-features-for-<node> in the namespace holds the labels;
  - no 403/forbidden in any agent log (deploy/agent's RBAC is enough).
Cleanup: the agent, the pods, the node, the Events, the overlay's cluster objects, the CRD
(only when this test created it), the namespace (finalized by hand). Exit 0 pass, 1 fail,
77 without a control plane.
"""
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gslive  # noqa: E402
from gslive import env, kubectl, log, must, wait_for  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check
if len(sys.argv) != 3:
    print("usage: agent-labels-test.py GPUSCHED FAKE_NVML_LIBRARY", file=sys.stderr)
    sys.exit(2)
GPUSCHED, FAKE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
KUBECTL = env("GS_KUBECTL")
ADMIN = env("GS_KUBECONFIG_ADMIN")
TAG = secrets.token_hex(3)
NS = "gs-agent-" + TAG
NODE = "gs-agent-" + TAG
PREFIX = "gsag-%s-" % TAG
SA = PREFIX + "gpusched-agent"
KEY = "gs-agent-test"                  # the run's own label and taint
MIG_SCN = os.path.join(SRC, "tests", "data", "nvml", "a100-mig-mixed.scn")
CRD = "nodefeatures.nfd.k8s-sigs.io"
STATE = {"agents": [], "crd": False}
H100 = ["GPU-4100a9e0-0000-4000-8000-00000000000%d" % i for i in range(2)]


def h100_scenario(lost=(), xids=()):
    lines = ["# two whole H100s (agent-labels-test.py)", "driver 550.107.02", "cuda 12040"]
    for i, u in enumerate(H100):
        lines.append("gpu uuid=%s memory=81559 pci=00000000:%02X:00.0 minor=%d cc=9.0 mig=0%s "
                     "name=NVIDIA H100 80GB HBM3" % (u, 0x18 + 0x12 * i, i, " lost" if i in lost else ""))
    for g, code in xids:
        lines.append("xid gpu=%d code=%d" % (g, code))
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def sa_kubeconfig(work, token):
    path = os.path.join(work, "kubeconfig-agent")
    for args in (["config", "set-cluster", "gs", "--server", env("GS_APISERVER_URL"),
                  "--certificate-authority", env("GS_CA_FILE"), "--embed-certs=true"],
                 ["config", "set-credentials", "agent", "--token", token],
                 ["config", "set-context", "agent", "--cluster", "gs", "--user", "agent"],
                 ["config", "use-context", "agent"]):
        subprocess.run([KUBECTL, "--kubeconfig", path] + args, check=True, capture_output=True)
    return path


class Agent:
    """`gpusched agent` with the fake NVML on scenario SCN, stderr to a file."""

    def __init__(self, work, kubeconfig, scn, args):
        dp = tempfile.mkdtemp(prefix="dp.", dir=work)
        self.errf = tempfile.TemporaryFile(mode="w+")
        e = dict(os.environ, GS_FAKE_NVML=scn, HOME=work)
        e.pop("KUBECONFIG", None)
        e.pop("KUBERNETES_SERVICE_HOST", None)
        self.argv = [GPUSCHED, "agent", "--node", NODE, "--nvml-library", FAKE, "--no-register",
                     "--device-plugin-dir", dp, "--pod-resources-socket", "", "--listen",
                     "127.0.0.1:0", "--kubeconfig", kubeconfig] + list(args)
        self.p = subprocess.Popen(self.argv, env=e, stdout=subprocess.DEVNULL, stderr=self.errf,
                                  text=True)
        STATE["agents"].append(self)

    def err(self):
        self.errf.seek(0)
        return self.errf.read()

    def wait_published(self, timeout=30):
        return wait_for(lambda: self.p.poll() is not None or "labels published" in self.err(),
                        timeout, 0.1) and self.p.poll() is None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                return self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                return None
        return self.p.returncode


def discover(scn, args):
    """The labels `agent discover -o json` prints for the scenario (a dict)."""
    e = dict(os.environ, GS_FAKE_NVML=scn)
    r = subprocess.run([GPUSCHED, "agent", "discover", "-o", "json", "--nvml-library", FAKE] + list(args),
                       env=e, capture_output=True, text=True, timeout=60)
    must(r, "agent discover")
    doc = json.loads(r.stdout)
    labels = doc.get("labels")
    if isinstance(labels, list):   # [{"key":..., "value":...}] or a map
        labels = {x.get("key", x.get("name")): x["value"] for x in labels}
    return labels or {}


def node():
    r = kubectl("get", "node", NODE, "-o", "json", "--show-managed-fields")
    return json.loads(must(r, "get node").stdout)


def nvidia_labels(n):
    return {k: v for k, v in (n["metadata"].get("labels") or {}).items() if k.startswith("nvidia.com/")}


def agent_owned(n):
    """The label keys field manager gpusched-agent owns (Apply), from managedFields."""
    keys = set()
    for mf in n["metadata"].get("managedFields") or []:
        if mf.get("manager") == "gpusched-agent" and mf.get("operation") == "Apply":
            labels = ((mf.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
            keys |= {k[2:] for k in labels if k.startswith("f:")}
    return keys


def owner_of(n, key):
    return sorted(mf.get("manager") for mf in n["metadata"].get("managedFields") or []
                  if "f:" + key in (((mf.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}))


def set_capacity(resources, drop=()):
    q = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    q.update(resources)
    for k in drop:
        q[k] = None
    must(kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"capacity": q, "allocatable": q,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                    "message": "agent-labels test", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})), "node status")


def make_node():
    must(kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {KEY: TAG}}})),
        "create node")
    # the run's own taint only (this drops the not-ready taint the admission added)
    must(kubectl("patch", "node", NODE, "--type=merge", "-p", json.dumps(
        {"spec": {"taints": [{"key": KEY, "value": TAG, "effect": "NoSchedule"}]}})), "taint node")
    # labels of another field manager: one of ours, one in nvidia.com/ (as the GPU Operator's)
    must(kubectl("label", "node", NODE, "gs-agent-test/owner=kubectl",
                 "nvidia.com/gpu.deploy.device-plugin=false"), "kubectl label")
    # and one of the agent's own keys, stale: the agent's apply (force) takes it over
    must(kubectl("label", "node", NODE, "nvidia.com/gpu.product=stale-by-kubectl"), "kubectl label")


def pod(name, product, limits):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulerName": "gs-agent-none-" + TAG,   # no scheduler binds it
                     "nodeSelector": {KEY: TAG, "nvidia.com/gpu.product": product},
                     "tolerations": [{"key": KEY, "operator": "Exists"}],
                     "containers": [{"name": "c", "image": "registry.example.com/none",
                                     "resources": {"limits": limits, "requests": {"cpu": "1"}}}]}}


def schedule(work, pods):
    """`gpusched schedule -o json -n NS` on the live cluster (admin): decisions by pod name."""
    for p in pods:
        must(kubectl("apply", "-f", "-", input=json.dumps(p)), "pod " + p["metadata"]["name"])
    r = subprocess.run([GPUSCHED, "schedule", "-o", "json", "-n", NS, "--kubeconfig", ADMIN],
                       capture_output=True, text=True, timeout=120, cwd=work)
    for p in pods:
        kubectl("delete", "pod", "-n", NS, p["metadata"]["name"], "--wait=false")
    if r.returncode not in (0, 1):
        check(False, "gpusched schedule live: rc %d %s" % (r.returncode, r.stderr.strip()[-300:]))
        return {}
    doc = json.loads(r.stdout)
    return {d["name"]: d for d in doc.get("decisions", []) if d.get("namespace") == NS}


def agent_events(reason):
    r = kubectl("get", "events.v1.events.k8s.io", "-A", "-o", "json")
    if r.returncode != 0:
        return []
    return [e for e in json.loads(r.stdout)["items"]
            if (e.get("regarding") or {}).get("name") == NODE and e.get("reason") == reason]


def tail(ok, a):
    """The agent's log tail for a failed check's line."""
    return "" if ok else ": " + a.err().strip()[-400:]


def no_forbidden(a, what):
    text = a.err()
    bad = [l for l in text.splitlines() if re.search(r"\b403\b|forbidden", l, re.I)]
    check(not bad, "%s: no 403/forbidden in the agent's log %s" % (what, bad[:2]))


def expect_labels(what, want, expected_subset):
    n = node()
    got = nvidia_labels(n)
    got.pop("nvidia.com/gpu.deploy.device-plugin", None)
    check(got == want, "%s: the node's nvidia.com/ labels are exactly discover's (%d): %s"
          % (what, len(want), {k: (got.get(k), want.get(k)) for k in set(got) | set(want)
                               if got.get(k) != want.get(k)}))
    for k, v in expected_subset.items():
        check(got.get(k) == v, "%s: %s=%s (%r)" % (what, k, v, got.get(k)))
    owned = agent_owned(n)
    check(owned == set(want), "%s: field manager gpusched-agent (Apply) owns exactly those labels: %s"
          % (what, sorted(owned ^ set(want))))
    others = n["metadata"]["labels"]
    check(others.get("gs-agent-test/owner") == "kubectl" and
          others.get("nvidia.com/gpu.deploy.device-plugin") == "false" and others.get(KEY) == TAG,
          "%s: the labels of other managers untouched" % what)
    check(owner_of(n, "nvidia.com/gpu.deploy.device-plugin") == ["kubectl-label"],
          "%s: nvidia.com/gpu.deploy.device-plugin still owned by kubectl-label only (%s)"
          % (what, owner_of(n, "nvidia.com/gpu.deploy.device-plugin")))
    return n


MINIMAL_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD},
    "spec": {"group": "nfd.k8s-sigs.io", "scope": "Namespaced",
             "names": {"kind": "NodeFeature", "listKind": "NodeFeatureList", "plural": "nodefeatures",
                       "singular": "nodefeature"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object",
                               "properties": {"spec": {"type": "object",
                                                       "x-kubernetes-preserve-unknown-fields": True}},
                               "x-kubernetes-preserve-unknown-fields": True}}}]}}


def run_checks(work):
    t0 = time.monotonic()
    must(kubectl("create", "namespace", NS), "namespace")
    make_node()
    ov = gslive.overlay(work, "agent", NS, PREFIX)
    r = kubectl("apply", "-k", ov, cache=os.path.join(work, "kube-cache"))
    check(r.returncode == 0, "apply -k deploy/agent (overlay %s) %s" % (NS, r.stderr.strip()))
    for kind, name in (("clusterrolebinding", PREFIX + "gpusched-agent"),
                       ("rolebinding", PREFIX + "gpusched-agent-nodefeatures")):
        r = kubectl("get", kind, name, "-n", NS, "-o", "json")
        subj = json.loads(r.stdout)["subjects"] if r.returncode == 0 else []
        check(subj == [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
              "%s %s names the overlay's ServiceAccount %s/%s: %s" % (kind, name, NS, SA, subj))
    tok = must(kubectl("create", "token", SA, "-n", NS, "--duration", "1h"), "token").stdout.strip()
    kc = sa_kubeconfig(work, tok)

    # 1. MIG mixed A100s
    mig_args = ["--mig-strategy", "mixed"]
    want = discover(MIG_SCN, mig_args)
    set_capacity({"nvidia.com/mig-3g.40gb": "2", "nvidia.com/mig-2g.20gb": "1", "nvidia.com/mig-1g.10gb": "2"})
    a = Agent(work, kc, MIG_SCN, mig_args + ["--labels", "apply", "--labels-interval", "1h"])
    ok = a.wait_published()
    check(ok, "agent (MIG mixed) publishes the labels as the ServiceAccount%s" % tail(ok, a))
    log("MIG labels published")
    expect_labels("MIG mixed", want, {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.memory": "81920", "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-3g.40gb.count": "2", "nvidia.com/mig-2g.20gb.count": "1",
        "nvidia.com/mig-1g.10gb.count": "2", "nvidia.com/gpu.family": "ampere"})
    n = node()
    check(owner_of(n, "nvidia.com/gpu.product") == ["gpusched-agent"],
          "a stale nvidia.com/gpu.product of kubectl-label is taken over (forced apply): owners %s"
          % owner_of(n, "nvidia.com/gpu.product"))
    d = schedule(work, [pod("mig-3g", "NVIDIA-A100-SXM4-80GB", {"nvidia.com/mig-3g.40gb": "1"}),
                        pod("whole-h100", "NVIDIA-H100-80GB-HBM3", {"nvidia.com/gpu": "1"})])
    m = d.get("mig-3g", {})
    devs = m.get("devices") or []
    check(m.get("result") == "scheduled" and m.get("node") == NODE and len(devs) == 1 and
          devs[0].get("mig") == "3g.40gb",
          "engine (live): the 3g.40gb pod selecting the agent's product goes to %s on a 3g.40gb "
          "instance: %s %s %s" % (NODE, m.get("result"), m.get("node"), devs))
    check(d.get("whole-h100", {}).get("result") == "unschedulable",
          "engine (live): a pod selecting H100 does not fit the A100 node: %s"
          % d.get("whole-h100", {}).get("result"))
    no_forbidden(a, "MIG mixed")
    check(a.stop() == 0, "agent stops on SIGTERM with 0")

    # 2. restart on two whole H100s: labels no longer sent disappear
    scn = os.path.join(work, "h100.scn")
    write_atomic(scn, h100_scenario())
    want2 = discover(scn, [])
    set_capacity({"nvidia.com/gpu": "2"},
                 drop=("nvidia.com/mig-3g.40gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"))
    b = Agent(work, kc, scn, ["--labels", "apply", "--probe-interval", "1s", "--recover-after", "2s",
                              "--labels-interval", "1h"])
    ok = b.wait_published()
    check(ok, "agent (H100) restarted, labels published%s" % tail(ok, b))
    # the publication is one apply; the node is read after it
    n = expect_labels("H100 after restart", want2, {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper"})
    gone = [k for k in want if k not in want2]
    check(gone and not any(k in n["metadata"]["labels"] for k in gone),
          "labels the agent no longer sends are removed (server-side apply): %s" % gone)
    check(not any(k.startswith("nvidia.com/mig-") for k in n["metadata"]["labels"]),
          "no nvidia.com/mig-<profile>.* label left")
    d = schedule(work, [pod("two-h100", "NVIDIA-H100-80GB-HBM3", {"nvidia.com/gpu": "2"}),
                        pod("mig-3g-again", "NVIDIA-H100-80GB-HBM3", {"nvidia.com/mig-3g.40gb": "1"})])
    w = d.get("two-h100", {})
    check(w.get("result") == "scheduled" and w.get("node") == NODE and len(w.get("devices") or []) == 2,
          "engine (live): 2 nvidia.com/gpu selecting H100 placed on %s on 2 GPUs: %s %s %s"
          % (NODE, w.get("result"), w.get("node"), w.get("devices")))
    check(d.get("mig-3g-again", {}).get("result") == "unschedulable",
          "engine (live): a 3g.40gb pod no longer fits the node: %s" % d.get("mig-3g-again", {}).get("result"))

    # 3. health Events: GPU 1 falls off the bus with an XID 79, then returns
    write_atomic(scn, h100_scenario(lost=(1,), xids=((1, 79),)))
    ev = wait_for(lambda: agent_events("GPUUnhealthy"), 30)
    check(bool(ev), "GPUUnhealthy Event regarding Node %s recorded%s" % (NODE, tail(ev, b)))
    if ev:
        e = ev[0]
        check(e.get("reportingController") == "gpusched.io/agent" and e.get("type") == "Warning" and
              (e.get("regarding") or {}).get("kind") == "Node" and H100[1] in (e.get("note") or ""),
              "GPUUnhealthy: Warning, reportingController gpusched.io/agent, kind Node, note names "
              "GPU 1: %s %s %r" % (e.get("reportingController"), e.get("type"), e.get("note")))
    write_atomic(scn, h100_scenario())
    ev = wait_for(lambda: agent_events("GPUHealthy"), 30)
    check(bool(ev) and ev[0].get("type") == "Normal" and
          ev[0].get("reportingController") == "gpusched.io/agent" and H100[1] in (ev[0].get("note") or ""),
          "GPUHealthy Event after the GPU returns%s" % (": " + ev[0].get("note", "") if ev else tail(ev, b)))
    no_forbidden(b, "H100")
    check(b.stop() == 0, "agent stops on SIGTERM with 0")
    log("labels and health done")

    # 4. --labels nodefeature, with a minimal NodeFeature CRD
    if kubectl("get", "crd", CRD).returncode != 0:
        r = kubectl("create", "-f", "-", input=json.dumps(MINIMAL_CRD))
        STATE["crd"] = r.returncode == 0
    est = wait_for(lambda: kubectl("get", "crd", CRD, "-o",
                                   "jsonpath={.status.conditions[?(@.type==\"Established\")].status}"
                                   ).stdout.strip() == "True", 30)
    if not est:
        print("SKIP nodefeature: the NodeFeature CRD could not be installed")
        return
    c = Agent(work, kc, scn, ["--labels", "nodefeature", "--labels-namespace", NS])
    ok = c.wait_published()
    check(ok, "agent --labels nodefeature publishes%s" % tail(ok, c))
    name = "gpusched-features-for-" + NODE
    r = kubectl("get", "nodefeatures.nfd.k8s-sigs.io", name, "-n", NS, "-o", "json", "--show-managed-fields")
    if check(r.returncode == 0, "NodeFeature %s/%s created %s" % (NS, name, r.stderr.strip())):
        nf = json.loads(r.stdout)
        check((nf["spec"].get("labels") or {}) == want2,
              "NodeFeature spec.labels are discover's labels (%d)" % len(want2))
        check(nf["metadata"].get("labels", {}).get("nfd.node.kubernetes.io/node-name") == NODE,
              "NodeFeature labelled nfd.node.kubernetes.io/node-name=%s" % NODE)
        check(any(mf.get("manager") == "gpusched-agent" for mf in nf["metadata"].get("managedFields") or []),
              "NodeFeature written by field manager gpusched-agent")
    no_forbidden(c, "nodefeature")
    check(c.stop() == 0, "agent (nodefeature) stops on SIGTERM with 0")
    log("done in %.1f s" % (time.monotonic() - t0))


def cleanup(work):
    for a in STATE["agents"]:
        a.stop()
    kubectl("delete", "node", NODE, "--ignore-not-found", "--wait=false")
    r = kubectl("get", "events.v1.events.k8s.io", "-A", "-o", "json")
    if r.returncode == 0:
        for e in json.loads(r.stdout)["items"]:
            if (e.get("regarding") or {}).get("name") == NODE:
                kubectl("delete", "events.v1.events.k8s.io", "-n", e["metadata"]["namespace"],
                        e["metadata"]["name"], "--ignore-not-found", "--wait=false")
    for kind in ("clusterrolebinding", "clusterrole"):
        kubectl("delete", kind, PREFIX + "gpusched-agent", "--ignore-not-found", "--wait=false")
    if STATE["crd"]:
        kubectl("delete", "crd", CRD, "--ignore-not-found", "--wait=false")
    gslive.delete_namespace(NS)


def main():
    gslive.main("agent-labels-test", 240, run_checks, cleanup, CHECKS,
                catch=(RuntimeError, subprocess.SubprocessError, ValueError, KeyError))
    return CHECKS.done("agent-labels: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
