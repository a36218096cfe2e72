#!/usr/bin/env python3
"""controlplane-test.py - the live test bed itself, checked with the real kubectl.

Starts one control plane (controlplane.py: etcd + kube-apiserver built by scripts/peers.sh)
and checks that:
  - each user authenticates as itself (`kubectl auth whoami -o json`: SelfSubjectReview),
    with the groups the harness promised, also through certificate files, tokenFile and an
    exec credential plugin (which kubectl is seen to run);
  - a wrong token is refused (401 Unauthorized);
  - the RBAC-restricted user may list nodes but is forbidden to list pods, with the API
    server's message (`cannot list resource "pods"`);
  - the token and service-account users can read pods in every namespace;
  - a GPU Node (GFD labels, nvidia.com/gpu capacity and allocatable, a taint) created by the
    admin reads back as the API server stores it (its not-ready taint added, quantities in
    canonical form: 2097152Mi -> 2Ti), identically through every user allowed to read nodes;
  - the real kube-scheduler (profile gs-kube-scheduler) binds a pod asking for 6 of 8
    nvidia.com/gpu, marks a second one asking for 4 Unschedulable ("Insufficient
    nvidia.com/gpu"), and leaves a pod for the default scheduler alone;
  - teardown leaves no etcd, kube-apiserver or kube-scheduler process behind.

Run alone it starts (and checks the teardown of) its own control plane; under
`controlplane.py exec STATE -- ...` (the ctest fixture) it uses the shared one.
Exit 0 pass, 1 fail, 77 skipped (one line why: the peers are not built).
Bounded: the whole test stops itself after GS_LIVE_TIMEOUT seconds (default 300).
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controlplane  # noqa: E402
import gslive  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check
FAILS = CHECKS.fails


def whoami(cp, user):
    r = cp.kubectl(user, "auth", "whoami", "-o", "json")
    if r.returncode != 0:
        return None, r.stderr.strip()
    info = json.loads(r.stdout).get("status", {}).get("userInfo", {})
    return info, ""


GPU_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-node-a1",
        "labels": {
            "kubernetes.io/hostname": "gpu-node-a1",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.family": "hopper",
            "nvidia.com/cuda.driver.major": "550",
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "single",
        },
    },
    "spec": {
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    },
    "status": {
        "capacity": {"cpu": "192", "memory": "2097152Mi", "pods": "110", "nvidia.com/gpu": "8"},
        "allocatable": {"cpu": "191", "memory": "2000000Mi", "pods": "110",
                        "nvidia.com/gpu": "8"},
    },
}


def run_checks(cp):
    expect = {
        "admin": ("gs-admin", "system:masters"),
        "token": ("gs-token-user", "gs-readers"),
        "rbac": ("gs-rbac-user", "gs-restricted"),
        "sa": ("system:serviceaccount:%s:%s" % (controlplane.SA_NAMESPACE, controlplane.SA_NAME),
               "system:serviceaccounts:" + controlplane.SA_NAMESPACE),
        "admin-files": ("gs-admin", "system:masters"),
        "tokenfile": ("gs-token-user", "gs-readers"),
        "exec": ("gs-token-user", "gs-readers"),
    }
    calls_before = len(open(cp.env["GS_EXEC_CALLS"]).readlines()) \
        if os.path.exists(cp.env["GS_EXEC_CALLS"]) else 0
    for user, (name, group) in expect.items():
        info, err = whoami(cp, user)
        ok = info is not None
        check(ok, "%s authenticates (%s)" % (user, err or "whoami answered"))
        if ok:
            check(info.get("username") == name,
                  "%s is user %s (got %r)" % (user, name, info.get("username")))
            groups = info.get("groups", [])
            check(group in groups and "system:authenticated" in groups,
                  "%s has groups %s, system:authenticated (got %r)" % (user, group, groups))

    calls = len(open(cp.env["GS_EXEC_CALLS"]).readlines()) \
        if os.path.exists(cp.env["GS_EXEC_CALLS"]) else 0
    check(calls > calls_before, "kubectl ran the exec plugin (%d call(s))" % (calls - calls_before))
    with open(cp.kubeconfig["admin-files"]) as f:
        text = f.read()
    check("-data:" not in text and "client-certificate: " in text,
          "admin-files names files, embeds nothing")

    # A bare kubectl (no kubeconfig) with the cluster's CA and a token the server never issued.
    bad = dict(os.environ)
    bad.pop("KUBECONFIG", None)
    r = subprocess.run([cp.env["GS_KUBECTL"], "--server", cp.url, "--certificate-authority",
                        cp.env["GS_CA_FILE"], "--token", "not-a-valid-token",
                        "--kubeconfig", os.devnull, "get", "--raw", "/api"],
                       capture_output=True, text=True, timeout=60, env=bad)
    check(r.returncode != 0 and "Unauthorized" in r.stderr,
          "a wrong token is refused with Unauthorized (rc %d, %s)" % (r.returncode,
                                                                      r.stderr.strip()[:120]))

    r = cp.kubectl("rbac", "get", "nodes", "-o", "name")
    check(r.returncode == 0, "rbac user lists nodes (rc %d %s)" % (r.returncode, r.stderr.strip()))
    r = cp.kubectl("rbac", "get", "pods", "-A")
    check(r.returncode != 0 and "forbidden" in r.stderr
          and 'cannot list resource "pods"' in r.stderr and "gs-rbac-user" in r.stderr,
          "rbac user is forbidden to list pods (%s)" % r.stderr.strip()[:160])
    r = cp.kubectl("rbac", "auth", "can-i", "list", "pods")
    check(r.returncode != 0 and r.stdout.strip() == "no", "rbac: auth can-i list pods -> no")
    r = cp.kubectl("rbac", "create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sneaky"}}))
    check(r.returncode != 0 and "forbidden" in r.stderr, "rbac user cannot create nodes")

    for user in ("token", "sa"):
        r = cp.kubectl(user, "get", "pods", "-A", "-o", "json")
        check(r.returncode == 0 and json.loads(r.stdout or "{}").get("kind") == "List",
              "%s lists pods in all namespaces (rc %d %s)" % (user, r.returncode,
                                                              r.stderr.strip()[:120]))
        r = cp.kubectl(user, "create", "namespace", "nope-" + user)
        check(r.returncode != 0 and "forbidden" in r.stderr, "%s cannot create" % user)

    r = cp.kubectl("admin", "create", "-f", "-", input=json.dumps(GPU_NODE))
    check(r.returncode == 0, "admin creates a GPU node (%s)" % r.stderr.strip())
    got = None
    r = cp.kubectl("admin", "get", "node", "gpu-node-a1", "-o", "json")
    if check(r.returncode == 0, "admin reads the node back"):
        got = json.loads(r.stdout)
    if got is not None and "nvidia.com/gpu" not in got.get("status", {}).get("capacity", {}):
        # A kubelet sets status at registration; should the API server drop it on create, the
        # status subresource carries it (as kubelet's node status updates do).
        r = cp.kubectl("admin", "patch", "node", "gpu-node-a1", "--subresource=status",
                       "--type=merge", "-p", json.dumps({"status": GPU_NODE["status"]}))
        check(r.returncode == 0, "admin patches the node status (%s)" % r.stderr.strip())
        got = json.loads(cp.kubectl("admin", "get", "node", "gpu-node-a1", "-o", "json").stdout)
    if got is not None:
        check(got["metadata"]["labels"] == GPU_NODE["metadata"]["labels"],
              "GFD labels read back exactly")
        # The TaintNodesByCondition admission plugin taints every new node not-ready until a
        # kubelet reports Ready (none runs here).
        want = GPU_NODE["spec"]["taints"] + [{"key": "node.kubernetes.io/not-ready",
                                              "effect": "NoSchedule"}]
        check(got["spec"].get("taints") == want,
              "taints read back, plus the API server's not-ready taint (%r)"
              % got["spec"].get("taints"))
        # Quantities come back canonical: 2097152Mi is 2Ti (a client must compare values).
        want = dict(GPU_NODE["status"]["capacity"], memory="2Ti")
        check(got["status"].get("capacity") == want,
              "status.capacity read back canonical (%r)" % got["status"].get("capacity"))
        check(got["status"].get("allocatable") == GPU_NODE["status"]["allocatable"],
              "status.allocatable read back exactly (%r)" % got["status"].get("allocatable"))
        for user in ("token", "rbac", "sa"):
            r = cp.kubectl(user, "get", "node", "gpu-node-a1", "-o", "json")
            same = r.returncode == 0 and json.loads(r.stdout) == got
            check(same, "%s reads the same node object" % user)


def pod(name, gpus, scheduler):
    spec = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                             "effect": "NoSchedule"}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "gs-live-sched"}, "spec": spec}


def scheduler_checks(cp):
    """The real kube-scheduler binds pods that ask for its profile, by nvidia.com/gpu."""
    sched = cp.env["GS_SCHEDULER_NAME"]
    node = json.loads(json.dumps(GPU_NODE))
    node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = \
        "gpu-node-sched"
    r = cp.kubectl("admin", "create", "-f", "-", input=json.dumps(node))
    check(r.returncode == 0, "admin creates node gpu-node-sched (%s)" % r.stderr.strip())
    # No kubelet reports Ready here: lift the admission plugin's not-ready taint by hand.
    r = cp.kubectl("admin", "taint", "node", "gpu-node-sched",
                   "node.kubernetes.io/not-ready:NoSchedule-")
    check(r.returncode == 0, "admin removes the not-ready taint (%s)" % r.stderr.strip())
    r = cp.kubectl("admin", "create", "namespace", "gs-live-sched")
    check(r.returncode == 0, "admin creates namespace gs-live-sched")
    pods = {"apiVersion": "v1", "kind": "List", "items": [
        pod("fits-6", 6, sched), pod("too-big-4", 4, sched), pod("default-sched", 1, None)]}
    r = cp.kubectl("admin", "create", "-f", "-", input=json.dumps(pods))
    check(r.returncode == 0, "admin creates three GPU pods (%s)" % r.stderr.strip())
    got = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = cp.kubectl("admin", "get", "pods", "-n", "gs-live-sched", "-o", "json")
        items = json.loads(r.stdout)["items"] if r.returncode == 0 else []
        got = {p["metadata"]["name"]: p for p in items}
        conds = {n: {c["type"]: c for c in p.get("status", {}).get("conditions", [])}
                 for n, p in got.items()}
        if (got.get("fits-6", {}).get("spec", {}).get("nodeName")
                and "PodScheduled" in conds.get("too-big-4", {})):
            break
        time.sleep(0.5)
    check(got.get("fits-6", {}).get("spec", {}).get("nodeName") == "gpu-node-sched",
          "kube-scheduler binds fits-6 (6 of 8 GPUs) to gpu-node-sched")
    c = conds.get("too-big-4", {}).get("PodScheduled", {})
    check(c.get("status") == "False" and c.get("reason") == "Unschedulable"
          and "Insufficient nvidia.com/gpu" in c.get("message", ""),
          "too-big-4 (4 more GPUs) is Unschedulable: %r" % c.get("message"))
    check(not got.get("default-sched", {}).get("spec", {}).get("nodeName")
          and not conds.get("default-sched"),
          "a pod for the default scheduler is left alone (pending, untouched)")


def main():
    limit = int(os.environ.get("GS_LIVE_TIMEOUT", "300"))

    def on_alarm(_s, _f):
        raise TimeoutError("controlplane-test: over %d s" % limit)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    t0 = time.monotonic()
    if "GS_APISERVER_URL" in os.environ:
        # The shared plane of the ctest fixture (controlplane.py exec): live/stop checks its
        # teardown.
        try:
            cp = controlplane.ControlPlane.attach(os.environ)
            run_checks(cp)
            scheduler_checks(cp)
        except TimeoutError as e:
            check(False, str(e))
        print("%d failure(s), %.1fs" % (len(FAILS), time.monotonic() - t0))
        return 1 if FAILS else 0
    try:
        cp = controlplane.ControlPlane()
    except controlplane.PeersMissing as e:
        print("SKIP: %s" % e)
        return 77
    pids = {}
    try:
        with cp:
            pids = cp.pids()
            run_checks(cp)
            scheduler_checks(cp)
    except (controlplane.ControlPlaneError, TimeoutError) as e:
        check(False, str(e))
    signal.alarm(0)
    for name, pid in pids.items():
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        check(not alive, "%s (pid %d) stopped at teardown" % (name, pid))
    check(cp.dir is None or not os.path.exists(cp.dir) or cp.keep,
          "temporary directory removed")
    print("%d failure(s), %.1fs" % (len(FAILS), time.monotonic() - t0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
