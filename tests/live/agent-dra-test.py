#!/usr/bin/env python3
"""agent-dra-test.py - `gpusched agent --dra` against the real API server and kube-scheduler of
the live tests: the node side of DRA from the ResourceSlice to the prepared claim.

Run as `controlplane.py exec STATE -- python3 agent-dra-test.py GPUSCHED FAKE_NVML` (ctest
live/agent-dra, fixture gs_live). In a namespace of its own (`gs-dra-<hex>`):
  - a Node `gs-dra-<hex>` (an API object, no kubelet), Ready, tainted for this run only;
  - deploy/agent through a kustomize overlay; `gpusched agent --dra` runs under that
    ServiceAccount's token (deploy/agent's RBAC) with the fake NVML: GPU 0 a whole H100,
    GPU 1 in MIG mode with a 1g.10gb and a 3g.40gb instance; the kubelet's plugin watcher
    and DRA manager are played by tests/agent/drakubelet.py (python3-grpcio);
  - the ResourceSlice <node>-gpu.nvidia.com is accepted by the API server (its validation
    checks our device names, attribute names and types, capacities) with the 3 devices;
  - two DeviceClasses of this run: type == "gpu", and type == "mig" with profile
    "1g.10gb" (CEL over our attributes, evaluated by kube-scheduler);
  - two ResourceClaims and a pod using both, schedulerName gs-kube-scheduler: the real
    kube-scheduler allocates gpu-0 and the 1g.10gb device from our slice and binds the pod;
  - NodePrepareResources for both claims: the answer's devices and CDI ids, the CDI spec
    files, the same answer on a retry (v1beta1) and after an agent restart (checkpoint);
  - XID 79 on GPU 0: the slice is updated without gpu-0 (generation +1), and back;
  - NodeUnprepareResources removes the CDI specs; SIGTERM deletes the slice;
  - no 403/forbidden in the agent's log.
Exit 0 pass, 1 fail, 77 without a control plane or python3-grpcio.
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
sys.path.insert(0, os.path.join(SRC, "tests", "agent"))
import gslive  # noqa: E402
from gslive import env, kubectl, log, must, wait_for  # noqa: E402

try:
    import grpc  # noqa: F401
    import grpc_tools  # noqa: F401
    import drakubelet  # noqa: E402
except ImportError:
    gslive.skip("python3-grpcio / python3-grpc-tools not installed (scripts/deps.sh grpc-peer)")

CHECKS = gslive.Checks()
check = CHECKS.check
if len(sys.argv) != 3:
    print("usage: agent-dra-test.py GPUSCHED FAKE_NVML_LIBRARY", file=sys.stderr)
    sys.exit(2)
GPUSCHED, FAKE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
KUBECTL = env("GS_KUBECTL")
TAG = secrets.token_hex(3)
NS = "gs-dra-" + TAG
NODE = "gs-dra-" + TAG
PREFIX = "gsdra-%s-" % TAG
SA = PREFIX + "gpusched-agent"
KEY = "gs-dra-test"
DRIVER = "gpu.nvidia.com"
SLICE = NODE + "-" + DRIVER
CLASS_GPU = "gs-dra-%s-gpu" % TAG
CLASS_MIG = "gs-dra-%s-mig-1g10gb" % TAG
U0 = "GPU-d7a00000-0000-4000-8000-000000000000"
U1 = "GPU-d7a00000-0000-4000-8000-000000000001"
M0 = "MIG-d7a00000-0000-4000-8000-00000000000a"
M1 = "MIG-d7a00000-0000-4000-8000-00000000000b"
STATE = {"agents": []}


def scenario(lost=False, xid=False):
    lines = ["# agent-dra-test.py", "driver 550.107.02", "cuda 12040",
             "gpu uuid=%s memory=81559 pci=00000000:18:00.0 minor=0 cc=9.0 mig=0 arch=9%s "
             "name=NVIDIA H100 80GB HBM3" % (U0, " lost" if lost else ""),
             "gpu uuid=%s memory=81559 pci=00000000:2A:00.0 minor=1 cc=9.0 mig=1 arch=9 "
             "name=NVIDIA H100 80GB HBM3" % U1,
             "mig uuid=%s gi=9 ci=0 memory=9856 gi-slices=1 ci-slices=1 sms=16 ce=1 dec=1 enc=0 jpg=1 ofa=0" % M0,
             "mig uuid=%s gi=2 ci=0 memory=40192 gi-slices=3 ci-slices=3 sms=60 ce=3 dec=2 enc=0 jpg=2 ofa=0" % M1]
    if xid:
        lines.append("xid gpu=0 code=79")
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
    def __init__(self, work, kubeconfig, scn, args=()):
        dp = tempfile.mkdtemp(prefix="dp.", dir=work)
        self.errf = tempfile.TemporaryFile(mode="w+")
        e = dict(os.environ, GS_FAKE_NVML=scn, HOME=work)
        e.pop("KUBECONFIG", None)
        e.pop("KUBERNETES_SERVICE_HOST", None)
        self.argv = [GPUSCHED, "agent", "--dra", "--node", NODE, "--nvml-library", FAKE,
                     "--device-plugin-dir", dp, "--pod-resources-socket", "", "--listen", "127.0.0.1:0",
                     "--kubeconfig", kubeconfig, "--probe-interval", "1s", "--recover-after", "2s",
                     "--plugins-registry-dir", os.path.join(work, "plugins_registry"),
                     "--dra-plugin-dir", os.path.join(work, "plugins", DRIVER),
                     "--cdi-dir", os.path.join(work, "cdi")] + list(args)
        self.p = subprocess.Popen(self.argv, env=e, stdout=subprocess.DEVNULL, stderr=self.errf, text=True)
        STATE["agents"].append(self)

    def err(self):
        self.errf.seek(0)
        return self.errf.read()

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


def tail(ok, a):
    return "" if ok else ": " + a.err().strip()[-600:]


def no_forbidden(a, what):
    bad = [line for line in a.err().splitlines() if re.search(r"\b403\b|forbidden", line, re.I)]
    check(not bad, "%s: no 403/forbidden in the agent's log %s" % (what, bad[:2]))


def get_json(*args):
    r = kubectl("get", *args, "-o", "json")
    return json.loads(r.stdout) if r.returncode == 0 else None


def the_slice():
    return get_json("resourceslices.v1.resource.k8s.io", SLICE)


def device_names(s):
    return sorted(d["name"] for d in ((s or {}).get("spec") or {}).get("devices") or [])


def generation(s):
    return (((s or {}).get("spec") or {}).get("pool") or {}).get("generation")


def make_node():
    must(kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {KEY: TAG}}})), "create node")
    must(kubectl("patch", "node", NODE, "--type=merge", "-p", json.dumps(
        {"spec": {"taints": [{"key": KEY, "value": TAG, "effect": "NoSchedule"}]}})), "taint node")
    q = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    must(kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"capacity": q, "allocatable": q,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                    "message": "agent-dra test", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})), "node status")


def device_class(name, expr):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expr}}]}}


def resource_claim(name, cls):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": cls,
                                                                            "count": 1}}]}}}


def run_checks(work):
    t0 = time.monotonic()
    must(kubectl("create", "namespace", NS), "namespace")
    make_node()
    ov = gslive.overlay(work, "agent", NS, PREFIX)
    r = kubectl("apply", "-k", ov, cache=os.path.join(work, "kube-cache"))
    check(r.returncode == 0, "apply -k deploy/agent (overlay %s) %s" % (NS, r.stderr.strip()))
    tok = must(kubectl("create", "token", SA, "-n", NS, "--duration", "1h"), "token").stdout.strip()
    kc = sa_kubeconfig(work, tok)
    scn = os.path.join(work, "node.scn")
    write_atomic(scn, scenario())
    reg_sock = os.path.join(work, "plugins_registry", DRIVER + "-reg.sock")
    dra_sock = os.path.join(work, "plugins", DRIVER, "dra.sock")
    cdidir = os.path.join(work, "cdi")

    # 1. the agent, its registration, its slice as the API server validates it
    a = Agent(work, kc, scn)
    ok = wait_for(lambda: a.p.poll() is not None or "ResourceSlice published" in a.err(), 30, 0.1) \
        and a.p.poll() is None
    check(ok, "agent --dra publishes its ResourceSlice as the ServiceAccount%s" % tail(ok, a))
    s = the_slice()
    check(device_names(s) == ["gpu-0", "gpu-1-mig-1g10gb-9-0", "gpu-1-mig-3g40gb-2-0"] and generation(s) == 1,
          "ResourceSlice %s accepted by the API server: %s, generation %s" % (SLICE, device_names(s), generation(s)))
    spec = (s or {}).get("spec") or {}
    check(spec.get("driver") == DRIVER and spec.get("nodeName") == NODE and spec["pool"]["name"] == NODE,
          "driver %s, nodeName and pool %s" % (DRIVER, NODE))
    info = drakubelet.info(reg_sock)
    check(info.get("type") == "DRAPlugin" and info.get("endpoint") == dra_sock, "GetInfo: %s" % info)
    drakubelet.notify(reg_sock, True)

    # 2. classes, claims, a pod: kube-scheduler allocates from our slice
    for c in (device_class(CLASS_GPU, 'device.driver == "%s" && device.attributes["%s"].type == "gpu"'
                           % (DRIVER, DRIVER)),
              device_class(CLASS_MIG, 'device.driver == "%s" && device.attributes["%s"].type == "mig" && '
                           'device.attributes["%s"].profile == "1g.10gb" && '
                           'device.capacity["%s"].memory.compareTo(quantity("9Gi")) >= 0'
                           % (DRIVER, DRIVER, DRIVER, DRIVER)),
              resource_claim("c-gpu", CLASS_GPU), resource_claim("c-mig", CLASS_MIG)):
        must(kubectl("create", "-f", "-", input=json.dumps(c)), "create " + c["metadata"]["name"])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": NS},
           "spec": {"schedulerName": "gs-kube-scheduler", "nodeSelector": {KEY: TAG},
                    "tolerations": [{"key": KEY, "operator": "Exists"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": "c-gpu"},
                                       {"name": "mig", "resourceClaimName": "c-mig"}],
                    "containers": [{"name": "c", "image": "registry.example.com/none",
                                    "resources": {"claims": [{"name": "gpu"}, {"name": "mig"}]}}]}}
    must(kubectl("create", "-f", "-", input=json.dumps(pod)), "create pod")
    bound = wait_for(lambda: ((get_json("pod", "trainer", "-n", NS) or {}).get("spec") or {}).get("nodeName"), 60)
    if not check(bound == NODE, "kube-scheduler binds the pod to %s (%s)" % (NODE, bound)):
        p = get_json("pod", "trainer", "-n", NS) or {}
        log("pod status: %s" % json.dumps(p.get("status"))[:800])
        return
    claims = {n: get_json("resourceclaim", n, "-n", NS) for n in ("c-gpu", "c-mig")}
    res = {n: (((c or {}).get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
           for n, c in claims.items()}
    check([(x["driver"], x["pool"], x["device"]) for x in res["c-gpu"]] == [(DRIVER, NODE, "gpu-0")],
          "claim c-gpu allocated gpu-0 from our pool: %s" % res["c-gpu"])
    check([(x["driver"], x["pool"], x["device"]) for x in res["c-mig"]] == [(DRIVER, NODE, "gpu-1-mig-1g10gb-9-0")],
          "claim c-mig allocated the 1g.10gb device (CEL over our attributes and capacity): %s" % res["c-mig"])
    uid = {n: c["metadata"]["uid"] for n, c in claims.items() if c}
    req = [{"namespace": NS, "name": n, "uid": uid.get(n, "")} for n in ("c-gpu", "c-mig")]

    # 3. the kubelet prepares the claims
    r = drakubelet.prepare(dra_sock, req)
    g = r.get(uid.get("c-gpu"), {})
    m = r.get(uid.get("c-mig"), {})
    check(g.get("error") == "" and [d["device_name"] for d in g.get("devices", [])] == ["gpu-0"]
          and g["devices"][0]["cdi_device_ids"] == ["gpusched.io/claim=%s-gpu-0" % uid.get("c-gpu")]
          and g["devices"][0]["request_names"] == ["dev"] and g["devices"][0]["pool_name"] == NODE,
          "NodePrepareResources c-gpu: %s" % g)
    check(m.get("error") == "" and [d["device_name"] for d in m.get("devices", [])] == ["gpu-1-mig-1g10gb-9-0"],
          "NodePrepareResources c-mig: %s" % m)
    specs = {}
    for n in ("c-gpu", "c-mig"):
        path = os.path.join(cdidir, "gpusched.io-claim_%s.json" % uid.get(n))
        if os.path.exists(path):
            with open(path) as f:
                specs[n] = json.load(f)
    check("NVIDIA_VISIBLE_DEVICES=" + U0 in (specs.get("c-gpu") or {}).get("containerEdits", {}).get("env", [])
          and "NVIDIA_VISIBLE_DEVICES=" + M0 in (specs.get("c-mig") or {}).get("containerEdits", {}).get("env", []),
          "CDI specs written with the devices' UUIDs")
    r2 = drakubelet.prepare(dra_sock, req, version="v1beta1")
    check(r2 == r, "a retry (v1beta1) gets the same answer")

    # 4. health: the slice follows, the generation moves
    write_atomic(scn, scenario(lost=True, xid=True))
    s = wait_for(lambda: (lambda x: x if x and "gpu-0" not in device_names(x) else None)(the_slice()), 20)
    check(s is not None and generation(s) == 2, "XID 79: the slice without gpu-0, generation 2 (%s %s)"
          % (device_names(s), generation(s)))
    write_atomic(scn, scenario())
    s = wait_for(lambda: (lambda x: x if x and "gpu-0" in device_names(x) else None)(the_slice()), 30)
    check(s is not None and generation(s) == 3, "back on the bus: gpu-0 returns, generation 3")

    # 5. restart: the checkpoint answers
    check(a.stop() == 0, "agent stops on SIGTERM with 0")
    check(wait_for(lambda: the_slice() is None, 5), "the slice deleted at shutdown")
    no_forbidden(a, "first agent")
    b = Agent(work, kc, scn)
    ok = wait_for(lambda: b.p.poll() is not None or "ResourceSlice published" in b.err(), 30, 0.1)
    check(ok and b.p.poll() is None, "agent restarted, slice published again%s" % tail(ok, b))
    r3 = drakubelet.prepare(dra_sock, req)
    check(r3 == r, "after the restart: the same answer (checkpoint)")

    # 6. unprepare
    r = drakubelet.unprepare(dra_sock, req)
    check(all(v.get("error") == "" for v in r.values()) and len(r) == 2
          and not any(os.path.exists(os.path.join(cdidir, "gpusched.io-claim_%s.json" % u)) for u in uid.values()),
          "NodeUnprepareResources: both CDI specs removed (%s)" % r)
    no_forbidden(b, "second agent")
    check(b.stop() == 0, "agent stops on SIGTERM with 0")
    log("done in %.1f s" % (time.monotonic() - t0))


def cleanup(work):
    for a in STATE["agents"]:
        a.stop()
    kubectl("delete", "pod", "trainer", "-n", NS, "--ignore-not-found", "--wait=false", "--grace-period=0",
            "--force")
    for n in ("c-gpu", "c-mig"):
        # no controller removes the scheduler's reservation: drop it so the claim can go
        kubectl("patch", "resourceclaim", n, "-n", NS, "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"reservedFor": None, "allocation": None}}))
        kubectl("delete", "resourceclaim", n, "-n", NS, "--ignore-not-found", "--wait=false")
    for c in (CLASS_GPU, CLASS_MIG):
        kubectl("delete", "deviceclass", c, "--ignore-not-found", "--wait=false")
    kubectl("delete", "resourceslices.v1.resource.k8s.io", SLICE, "--ignore-not-found", "--wait=false")
    kubectl("delete", "node", NODE, "--ignore-not-found", "--wait=false")
    for kind in ("clusterrolebinding", "clusterrole"):
        kubectl("delete", kind, PREFIX + "gpusched-agent", "--ignore-not-found", "--wait=false")
    gslive.delete_namespace(NS)


def main():
    gslive.main("agent-dra-test", 240, run_checks, cleanup, CHECKS,
                catch=(RuntimeError, subprocess.SubprocessError, ValueError, KeyError))
    return CHECKS.done("agent-dra: all checks passed")


if __name__ == "__main__":
    sys.exit(main())
