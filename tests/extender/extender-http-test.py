#!/usr/bin/env python3
"""extender-http-test.py - `gpusched extender` as a process against the real control plane.

Run as `controlplane.py exec STATE -- python3 extender-http-test.py GPUSCHED` (ctest
live/extender-http, fixture gs_live); without a plane it skips (77). It plays kube-scheduler
(the JSON it sends, cache mode: NodeNames) on loopback:

- a GPU node (8 nvidia.com/gpu set through the status subresource) and a pending share pod
  (gpusched.io/gpu-milli: 500, a scheduler name no scheduler serves) are created;
- /readyz 200 once synced; POST /filter passes the GPU node and fails a node that is not
  in the cache (FailedAndUnresolvableNodes); /prioritize scores it 0..10; a body that is not
  JSON: filter answers 200 with Error, prioritize 400;
- POST /bind (under a urlPrefix path, /gpusched/bind): Error "" and the pod gets the
  gpusched.io/assignment annotation naming the node and its UID, and spec.nodeName;
- a second bind of the same pod: Error "" again (idempotent); a bind with a wrong UID:
  Error set;
- /metrics: gpusched_extender_requests_total per verb, binds_total{result="bound"} 1,
  the latency histogram; SIGTERM: exit 0.

Exit 0 pass, 1 fail, 77 skipped.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "live"))
import gslive  # noqa: E402

CHECKS = gslive.Checks(quiet=True)
check = CHECKS.check
BIN = gslive.usage("GPUSCHED")
ADMIN, KUBECTL = gslive.plane("GS_KUBECONFIG_ADMIN", "GS_KUBECTL")

SUFFIX = "%d" % os.getpid()
NS = "gs-ext-" + SUFFIX
NODE = "gs-ext-gpu-" + SUFFIX
POD = "share-0"


def kubectl(*args, input=None):
    return gslive.kubectl(*args, input=input, timeout=60)


def must(r, what):
    """Not gslive.must: this script runs top to bottom, a set-up step that fails ends it."""
    if r.returncode != 0:
        print("FAIL: %s: %s" % (what, r.stderr.strip()), flush=True)
        sys.exit(1)
    return r


must(kubectl("create", "namespace", NS), "create namespace")
node = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                              "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81920"}}}
must(kubectl("create", "-f", "-", input=json.dumps(node)), "create node")
status = {"status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
                     "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
                     "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "message": "ok", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
must(kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p", json.dumps(status)),
     "node status")
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": POD, "namespace": NS, "annotations": {"gpusched.io/gpu-milli": "500"}},
       "spec": {"schedulerName": "gs-extender-test-none",
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
must(kubectl("create", "-f", "-", input=json.dumps(pod)), "create pod")
r = must(kubectl("-n", NS, "get", "pod", POD, "-o", "json"), "get pod")
POD_OBJ = json.loads(r.stdout)
UID = POD_OBJ["metadata"]["uid"]


class Ext:
    """Not gslive.Extender: --listen 127.0.0.1:0, the port read from its "serving on" line."""

    def __init__(self):
        self.p = subprocess.Popen([BIN, "extender", "--kubeconfig", ADMIN, "--listen", "127.0.0.1:0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = ""
        self.port = None
        os.set_blocking(self.p.stderr.fileno(), False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.port is None and self.p.poll() is None:
            self.read_err()
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", self.err)
            if m:
                self.port = int(m.group(1))
            time.sleep(0.05)

    def read_err(self):
        try:
            chunk = self.p.stderr.read()
            if chunk:
                self.err += chunk
        except (BlockingIOError, TypeError):
            pass
        return self.err

    def req(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        out = (r.status, r.getheader("Content-Type"), r.read())
        c.close()
        return out


e = Ext()
try:
    if not check(e.port, "the extender did not start: %s" % e.read_err()):
        raise SystemExit(1)
    st, _, body = e.req("GET", "/healthz")
    check(st == 200, "/healthz: %d" % st)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st, _, body = e.req("GET", "/readyz")
        if st == 200:
            break
        time.sleep(0.1)
    check(st == 200 and body == b"ok\n", "/readyz: %d %r" % (st, body))
    # the pod and node may take a moment to reach the informer
    args = {"Pod": POD_OBJ, "Nodes": None, "NodeNames": [NODE, "gs-ext-absent-" + SUFFIX]}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st, ct, body = e.req("POST", "/filter", args)
        fr = json.loads(body) if st == 200 else {}
        if fr.get("NodeNames") == [NODE]:
            break
        time.sleep(0.2)
    check(st == 200 and ct == "application/json", "/filter: %d %s" % (st, ct))
    check(fr.get("NodeNames") == [NODE] and fr.get("Error") == "", "/filter passes the GPU node: %r" % fr)
    check(fr.get("Nodes", 1) is None, "/filter in cache mode: Nodes null: %r" % fr)
    check("gs-ext-absent-" + SUFFIX in (fr.get("FailedAndUnresolvableNodes") or {}),
          "/filter: a node not in the cache is unresolvable: %r" % fr)
    st, _, body = e.req("POST", "/prioritize", {"Pod": POD_OBJ, "Nodes": None, "NodeNames": [NODE]})
    pl = json.loads(body) if st == 200 else None
    check(st == 200 and isinstance(pl, list) and len(pl) == 1 and pl[0]["Host"] == NODE
          and 0 <= pl[0]["Score"] <= 10, "/prioritize: %d %r" % (st, body))
    st, _, body = e.req("POST", "/filter", b"{not json")
    check(st == 200 and json.loads(body).get("Error"), "/filter with a bad body: 200 with Error: %d %r" % (st, body))
    st, _, body = e.req("POST", "/prioritize", b"{not json")
    check(st == 400, "/prioritize with a bad body: 400: %d %r" % (st, body))
    st, _, body = e.req("GET", "/filter")
    check(st == 405, "GET /filter: 405: %d" % st)
    st, _, body = e.req("POST", "/nothing", {})
    check(st == 404, "POST /nothing: 404: %d" % st)

    bind = {"PodName": POD, "PodNamespace": NS, "PodUID": UID, "Node": NODE}
    st, _, body = e.req("POST", "/gpusched/bind", bind)
    check(st == 200 and json.loads(body) == {"Error": ""}, "/gpusched/bind: %d %r" % (st, body))
    r = must(kubectl("-n", NS, "get", "pod", POD, "-o", "json"), "get pod after bind")
    got = json.loads(r.stdout)
    check(got["spec"].get("nodeName") == NODE, "bound to the node: %r" % got["spec"].get("nodeName"))
    rec = got["metadata"].get("annotations", {}).get("gpusched.io/assignment")
    if check(rec, "the assignment annotation: %r" % got["metadata"].get("annotations")):
        rj = json.loads(rec)
        check(rj.get("node") == NODE and rj.get("uid") == UID and rj.get("kind") == "share",
              "the record names the node, the UID, a share: %r" % rj)
        devs = [d for c in rj.get("containers", []) for d in c.get("devices", [])]
        check(len(devs) == 1 and devs[0].get("milli") == 500, "one device, 500 milli: %r" % rj)
    st, _, body = e.req("POST", "/bind", bind)
    check(st == 200 and json.loads(body) == {"Error": ""}, "second bind (idempotent): %d %r" % (st, body))
    bad = dict(bind, PodUID="00000000-0000-0000-0000-000000000000")
    st, _, body = e.req("POST", "/bind", bad)
    check(st == 200 and json.loads(body).get("Error"), "bind with another UID: Error: %d %r" % (st, body))

    st, ct, body = e.req("GET", "/metrics")
    text = body.decode()
    check(st == 200 and ct.startswith("text/plain; version=0.0.4"), "/metrics: %d %s" % (st, ct))
    m = re.search(r'^gpusched_extender_requests_total\{verb="filter",result="ok"\} (\d+)$', text, re.M)
    check(m and int(m.group(1)) >= 1, "filter ok counted")
    m = re.search(r'^gpusched_extender_requests_total\{verb="bind",result="ok"\} (\d+)$', text, re.M)
    check(m and int(m.group(1)) == 2, "two binds ok: %s" % (m and m.group(0)))
    check(re.search(r'^gpusched_extender_binds_total\{result="bound"\} 1$', text, re.M), "one bound")
    check(re.search(r'^gpusched_extender_binds_total\{result="failed"\} 1$', text, re.M), "one bind failed")
    check(re.search(r'^gpusched_extender_request_duration_seconds_bucket\{verb="filter",le="0.0001"\} \d+$', text,
                    re.M), "sub-millisecond latency buckets")
    check(re.search(r'^gpusched_extender_requests_total\{verb="prioritize",result="bad_request"\} 1$', text, re.M),
          "prioritize bad_request counted")
    check("# HELP gpusched_extender_connections " in text, "transport series under the extender's prefix")
    check("gpusched_webhook_" not in text, "no webhook series")
finally:
    if e.p.poll() is None:
        e.p.send_signal(signal.SIGTERM)
        try:
            rc = e.p.wait(timeout=10)
            check(rc == 0, "SIGTERM: exit %d: %s" % (rc, e.read_err()))
        except subprocess.TimeoutExpired:
            e.p.kill()
            check(False, "SIGTERM: still running after 10 s")
    kubectl("delete", "namespace", NS, "--wait=false")
    kubectl("delete", "node", NODE, "--wait=false")

sys.exit(CHECKS.done("ok", failed="%d failure(s)"))
