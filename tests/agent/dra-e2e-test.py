#!/usr/bin/python3
"""dra-e2e-test.py - `gpusched agent --dra` against the kubelet's plugin watcher and DRA
manager played by python3-grpcio (drakubelet.py) and a small API server double.

Usage: dra-e2e-test.py GPUSCHED FAKE_NVML_LIBRARY

The agent runs with the fake NVML (GPU 0 whole, GPU 1 in MIG mode with a 1g.10gb and a
3g.40gb instance), its registry, plugin and CDI directories of its own, and a kubeconfig
pointing at the double (HTTP on loopback: ResourceSlice apply/get/delete, ResourceClaim
get, Events). Steps, each asserted:
  1. the registration socket <registry>/gpu.nvidia.com-reg.sock answers GetInfo (DRAPlugin,
     the driver, the endpoint dra.sock, v1 and v1beta1); /readyz 503 until
     NotifyRegistrationStatus(true), then 200;
  2. the ResourceSlice is applied (field manager gpusched-agent-dra) with gpu-0 and the two
     MIG devices, pool = node, generation 1;
  3. NodePrepareResources (v1): the claim's CDI spec in the CDI directory, the answer's CDI
     id; a retry over v1beta1 gets the same answer without reading the claim again; an
     unallocated claim and a claim of another UID get per-claim errors;
  4. XID 79 on GPU 0 (off the bus): the slice is applied again without gpu-0, generation
     2; back on the bus: gpu-0 returns, generation 3;
  5. SIGTERM: exit 0, the slice deleted, the sockets removed; a restart answers the
     prepared claim from its checkpoint (the claim is gone from the API by then);
  6. NodeUnprepareResources: the CDI spec removed; again: success.
Exit 77 (skip) without python3-grpcio.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import grpc  # noqa: F401
    import grpc_tools  # noqa: F401
except ImportError:
    print("SKIP: python3-grpcio / python3-grpc-tools not installed (scripts/deps.sh grpc-peer)")
    sys.exit(77)
import drakubelet  # noqa: E402
from agenttest import FAILED, check, http_get, wait_for, write_atomic  # noqa: E402

NODE = "gpu-node-1"
SLICE = NODE + "-gpu.nvidia.com"
U0 = "GPU-aaaaaaaa-0000-4000-8000-000000000000"
U1 = "GPU-aaaaaaaa-0000-4000-8000-000000000001"
M0 = "MIG-bbbbbbbb-0000-4000-8000-000000000000"
M1 = "MIG-bbbbbbbb-0000-4000-8000-000000000001"
CLAIM_UID = "6a1d2c3b-0000-4000-8000-00000000c1a1"


def scenario(lost=False, xid=False):
    lines = ["driver 550.107.02", "cuda 12040",
             "gpu uuid=%s memory=81559 pci=00000000:18:00.0 minor=0 cc=9.0 mig=0 arch=9%s "
             "name=NVIDIA H100 80GB HBM3" % (U0, " lost" if lost else ""),
             "gpu uuid=%s memory=81559 pci=00000000:2A:00.0 minor=1 cc=9.0 mig=1 arch=9 "
             "name=NVIDIA H100 80GB HBM3" % U1,
             "mig uuid=%s gi=9 ci=0 memory=9856 gi-slices=1 ci-slices=1 sms=16 ce=1 dec=1 enc=0 jpg=1 ofa=0" % M0,
             "mig uuid=%s gi=2 ci=0 memory=40192 gi-slices=3 ci-slices=3 sms=60 ce=3 dec=2 enc=0 jpg=2 ofa=0" % M1]
    if xid:
        lines.append("xid gpu=0 code=79")
    return "\n".join(lines) + "\n"


class Api:
    """The API server double: one ResourceSlice by name, claims by namespace/name."""

    def __init__(self):
        self.lock = threading.Lock()
        self.slices = {}
        self.claims = {}
        self.log = []  # (method, path, query)
        api = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _not_found(self, what):
                self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                                 "code": 404, "message": "%s not found" % what})

            def _handle(self):
                path, _, query = self.path.partition("?")
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with api.lock:
                    api.log.append((self.command, path, query))
                m = re.fullmatch(r"/apis/resource\.k8s\.io/v1/resourceslices/([^/]+)", path)
                if m:
                    name = m.group(1)
                    with api.lock:
                        if self.command == "GET":
                            obj = api.slices.get(name)
                        elif self.command == "PATCH":
                            obj = json.loads(body)
                            obj["_query"] = query
                            obj["_content_type"] = self.headers.get("Content-Type")
                            api.slices[name] = obj
                        elif self.command == "DELETE":
                            obj = api.slices.pop(name, None)
                        else:
                            obj = None
                    return self._send(200, obj) if obj else self._not_found("resourceslices " + name)
                m = re.fullmatch(r"/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)", path)
                if m and self.command == "GET":
                    with api.lock:
                        obj = api.claims.get((m.group(1), m.group(2)))
                    return self._send(200, obj) if obj else self._not_found("resourceclaims " + m.group(2))
                if "/events" in path and self.command in ("POST", "PATCH"):
                    return self._send(201, json.loads(body or b"{}"))
                return self._not_found(path)

            do_GET = do_PATCH = do_DELETE = do_POST = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def slice(self):
        with self.lock:
            return self.slices.get(SLICE)

    def count(self, method, part):
        with self.lock:
            return sum(1 for m, p, _ in self.log if m == method and part in p)


def claim(name, uid, results):
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": name, "namespace": "ml", "uid": uid}, "spec": {}, "status": {}}
    if results is not None:
        c["status"]["allocation"] = {"devices": {"results": results}}
    return c


def device_names(s):
    return sorted(d["name"] for d in (s or {}).get("spec", {}).get("devices", []))


def generation(s):
    return (s or {}).get("spec", {}).get("pool", {}).get("generation")


class Agent:
    def __init__(self, args, env):
        self.p = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.port = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stderr:
            self.log.append(line)
            m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                self.port = int(m.group(1))

    def base(self):
        return "http://127.0.0.1:%d" % (self.port or 0)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


def main():
    if len(sys.argv) != 3:
        print("usage: dra-e2e-test.py GPUSCHED FAKE_NVML_LIBRARY", file=sys.stderr)
        return 2
    gpusched, fake = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="gs-dra-e2e.")
    api = Api()
    kc = os.path.join(work, "kubeconfig")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: t\n  cluster:\n"
                "    server: http://127.0.0.1:%d\ncontexts:\n- name: t\n  context: {cluster: t, user: t}\n"
                "users:\n- name: t\n  user: {token: test}\n" % api.port)
    scn = os.path.join(work, "node.scn")
    write_atomic(scn, scenario())
    dp = os.path.join(work, "dp")
    regdir = os.path.join(work, "plugins_registry")
    plugdir = os.path.join(work, "plugins", "gpu.nvidia.com")
    cdidir = os.path.join(work, "cdi")
    os.mkdir(dp)
    env = dict(os.environ, GS_FAKE_NVML=scn, HOME=work)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    args = [gpusched, "agent", "--dra", "--node", NODE, "--nvml-library", fake, "--device-plugin-dir", dp,
            "--pod-resources-socket", "", "--listen", "127.0.0.1:0", "--probe-interval", "1s",
            "--recover-after", "2s", "--kubeconfig", kc, "--plugins-registry-dir", regdir,
            "--dra-plugin-dir", plugdir, "--cdi-dir", cdidir]
    reg_sock = os.path.join(regdir, "gpu.nvidia.com-reg.sock")
    dra_sock = os.path.join(plugdir, "dra.sock")
    agent = Agent(args, env)
    cdi_file = os.path.join(cdidir, "gpusched.io-claim_%s.json" % CLAIM_UID)
    c1 = {"namespace": "ml", "name": "c1", "uid": CLAIM_UID}
    try:
        # 1. registration
        check(wait_for(lambda: agent.port and os.path.exists(reg_sock), 10), "the agent started, registration socket "
              "at <registry>/gpu.nvidia.com-reg.sock")
        info = drakubelet.info(reg_sock)
        check(info == {"type": "DRAPlugin", "name": "gpu.nvidia.com", "endpoint": dra_sock,
                       "supported_versions": ["v1.DRAPlugin", "v1beta1.DRAPlugin"]}, "GetInfo: %s" % info)
        code, body = http_get(agent.base() + "/readyz")
        check(code == 503 and "not registered" in body, "/readyz 503 before the kubelet's verdict (%d)" % code)
        drakubelet.notify(reg_sock, True)
        check(wait_for(lambda: http_get(agent.base() + "/readyz")[0] == 200, 3), "/readyz 200 once registered")

        # 2. the slice
        s = wait_for(api.slice, 5)
        check(device_names(s) == ["gpu-0", "gpu-1-mig-1g10gb-9-0", "gpu-1-mig-3g40gb-2-0"],
              "ResourceSlice %s: gpu-0 and the two MIG devices (%s)" % (SLICE, device_names(s)))
        spec = (s or {}).get("spec", {})
        check(spec.get("driver") == "gpu.nvidia.com" and spec.get("nodeName") == NODE
              and spec.get("pool", {}).get("name") == NODE and generation(s) == 1,
              "driver gpu.nvidia.com, nodeName and pool %s, generation 1" % NODE)
        check("fieldManager=gpusched-agent-dra" in (s or {}).get("_query", "") and "force=true" in s.get("_query", "")
              and s.get("_content_type") == "application/apply-patch+yaml",
              "server-side apply, field manager gpusched-agent-dra")
        g0 = [d for d in spec.get("devices", []) if d["name"] == "gpu-0"]
        attrs = g0[0]["attributes"] if g0 else {}
        check(attrs.get("uuid") == {"string": U0} and attrs.get("driverVersion") == {"version": "550.107.2"}
              and attrs.get("cudaComputeCapability") == {"version": "9.0.0"}
              and attrs.get("pcieBusID") == {"string": "0000:18:00.0"}
              and g0[0]["capacity"]["memory"] == {"value": "81559Mi"}, "gpu-0's attributes and memory")

        # 3. prepare
        api.claims[("ml", "c1")] = claim("c1", CLAIM_UID, [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": NODE, "device": "gpu-1-mig-1g10gb-9-0"}])
        api.claims[("ml", "c2")] = claim("c2", "uid-c2", None)
        r = drakubelet.prepare(dra_sock, [c1])
        want = {"devices": [{"request_names": ["gpu"], "pool_name": NODE, "device_name": "gpu-1-mig-1g10gb-9-0",
                             "cdi_device_ids": ["gpusched.io/claim=%s-gpu-1-mig-1g10gb-9-0" % CLAIM_UID]}],
                "error": ""}
        check(r.get(CLAIM_UID) == want, "NodePrepareResources: %s" % r)
        spec_ok = False
        if os.path.exists(cdi_file):
            with open(cdi_file) as f:
                cdi = json.load(f)
            spec_ok = (cdi["kind"] == "gpusched.io/claim"
                       and cdi["devices"][0]["name"] == CLAIM_UID + "-gpu-1-mig-1g10gb-9-0"
                       and "NVIDIA_VISIBLE_DEVICES=" + M0 in cdi["containerEdits"]["env"])
        check(spec_ok, "the CDI spec names the MIG device and NVIDIA_VISIBLE_DEVICES=<its UUID>")
        reads = api.count("GET", "/resourceclaims/c1")
        r2 = drakubelet.prepare(dra_sock, [c1], version="v1beta1")
        check(r2 == r and api.count("GET", "/resourceclaims/c1") == reads,
              "a retry over v1beta1: the same answer, the claim not read again")
        r = drakubelet.prepare(dra_sock, [{"namespace": "ml", "name": "c2", "uid": "uid-c2"},
                                          {"namespace": "ml", "name": "c1", "uid": "other-uid"}])
        check("not allocated" in r.get("uid-c2", {}).get("error", "")
              and "has UID " + CLAIM_UID in r.get("other-uid", {}).get("error", ""),
              "per-claim errors: not allocated, another UID (%s)" % r)

        # 4. health: GPU 0 off the bus, then back
        write_atomic(scn, scenario(lost=True, xid=True))
        s = wait_for(lambda: (lambda x: x if x and "gpu-0" not in device_names(x) else None)(api.slice()), 5)
        check(s is not None and generation(s) == 2, "XID 79: the slice without gpu-0, generation 2 (%s, %s)"
              % (device_names(s), generation(s)))
        write_atomic(scn, scenario())
        s = wait_for(lambda: (lambda x: x if x and "gpu-0" in device_names(x) else None)(api.slice()), 10)
        check(s is not None and generation(s) == 3, "back: gpu-0 returns, generation 3")
        code, body = http_get(agent.base() + "/metrics")
        check('gpusched_agent_dra_prepare_total{result="ok"} 2' in body
              and "gpusched_agent_dra_prepared_claims 1" in body, "/metrics: the DRA counters")

        # 5. SIGTERM, restart from the checkpoint
        rc = agent.stop()
        check(rc == 0 and api.slice() is None and not os.path.exists(reg_sock) and not os.path.exists(dra_sock),
              "SIGTERM: exit 0, the slice deleted, the sockets removed (rc %s)" % rc)
        del api.claims[("ml", "c1")]
        agent = Agent(args, env)
        check(wait_for(lambda: os.path.exists(dra_sock) and os.path.exists(reg_sock), 10), "restarted")
        r = drakubelet.prepare(dra_sock, [c1])
        check(r.get(CLAIM_UID) == want, "after a restart: the same answer from the checkpoint (%s)" % r)
        s = wait_for(api.slice, 5)
        check(generation(s) == 1, "the slice published again (generation %s)" % generation(s))

        # 6. unprepare
        r = drakubelet.unprepare(dra_sock, [c1])
        check(r == {CLAIM_UID: {"error": ""}} and not os.path.exists(cdi_file),
              "NodeUnprepareResources: the CDI spec removed")
        r = drakubelet.unprepare(dra_sock, [c1])
        check(r == {CLAIM_UID: {"error": ""}}, "again: success")
    finally:
        agent.stop()
        api.server.shutdown()
        if FAILED:
            sys.stdout.write("agent log:\n" + "".join(agent.log))
        shutil.rmtree(work, True)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
