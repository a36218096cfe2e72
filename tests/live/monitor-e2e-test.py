#!/usr/bin/env python3
"""monitor-e2e-test.py - `gpusched monitor` end to end, as deployed, on the live control plane.

Run as `controlplane.py exec STATE -- python3 monitor-e2e-test.py GPUSCHED` (ctest
live/monitor-e2e, fixture gs_live); without a plane it skips (77). In a namespace of its own
(`gs-e2e-<hex>`), every name unique:

1. RBAC by running it: deploy/monitor applied through a kustomize overlay (that namespace, a
   name prefix, the ServiceMonitor left out: no CRD needed), a kubeconfig holding the
   ServiceAccount's real token (TokenRequest), and `gpusched monitor` run with that
   kubeconfig and the args of deploy/monitor's Deployment (--listen moved to 127.0.0.1:0,
   POD_NAME/POD_NAMESPACE as the Deployment sets them): /readyz 200, every informer synced,
   no RBAC "forbidden" on stderr, no failed Event write (but into namespaces other tests are
   deleting at the same time: NamespaceLifecycle refuses those).
2. Two GPU nodes (GFD labels, a GKE pool label each, 8 nvidia.com/gpu through the status
   subresource): A tainted nvidia.com/gpu=present:NoSchedule, B without the GPU taint (both
   carry a taint of this test so no other test's pod lands there). A GPU pod without the GPU
   toleration, pinned to A, for the real kube-scheduler: the scrape shows
   gpusched_gpu_pods_pending{namespace,reason="untolerated_taint"} 1 within seconds;
   /pending (text, ?format=json) names it with reason, why and fix.
3. Events: the Lease holder writes a Warning GPUPending Event (events.k8s.io/v1, regarding
   the pod) whose note is "<why>; fix: <fix>" (kubectl get events). A second replica (another
   identity, same Lease): exactly one has gpusched_monitor_leader 1; SIGTERM to the leader:
   exit 0 within 5 s, the other takes the Lease, and a second pending pod gets its Event from
   the new leader.
4. A real Prometheus (Debian's `prometheus`) scrapes the monitor (honor_labels, 1 s, the
   target labelled namespace/pool as Kubernetes service discovery would) with
   deploy/monitor/alerts.yaml loaded: GPUNodeUntainted's expression (read from alerts.yaml)
   returns B's pool and not A's; gpusched_gpu_pods_pending keeps the pod's namespace
   (honor_labels); the alert is pending in ALERTS and /api/v1/rules. Skipped with one line
   without prometheus (scripts/deps.sh monitor installs it).
5. DRA: a DeviceClass and a ResourceSlice (2 GPUs on node A) of this test's driver, a pod
   whose claim names a DeviceClass that does not exist and one whose claim asks 4 devices:
   gpusched_claims_pending{namespace} counts claim_class_missing 1 and
   claim_too_many_devices 1, the pods are pending by those reasons, /pending lists each
   pod's claim with explain's finding and fix.
6. Cleanup: processes, pods, claims, the DeviceClass and ResourceSlice, the overlay's objects, Leases and Events, the namespace
   (finalized by hand: no namespace controller), the nodes.

Exit 0 pass, 1 fail, 77 skipped.
"""
import ctypes
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gslive  # noqa: E402
from gslive import free_port, kubectl, log, must  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check

BIN = gslive.usage("GPUSCHED")
ENV_NAMES = ("GS_KUBECTL", "GS_KUBECONFIG_ADMIN", "GS_APISERVER_URL", "GS_CA_FILE",
             "GS_SCHEDULER_NAME")
ENV = dict(zip(ENV_NAMES, gslive.plane(*ENV_NAMES)))

TAG = secrets.token_hex(3)
NS = "gs-e2e-" + TAG
PREFIX = "gse2e-%s-" % TAG
SA = PREFIX + "gpusched-monitor"
LEASE = "gpusched-monitor"           # the command's default: the Deployment names none
NODE_A = "gs-e2e-%s-tainted" % TAG
NODE_B = "gs-e2e-%s-open" % TAG
POOL_A = "gs-e2e-%s-pool-a" % TAG
POOL_B = "gs-e2e-%s-pool-b" % TAG
PROMETHEUS = os.environ.get("GS_PROMETHEUS", "prometheus")   # Debian's package
KEEP_OFF = {"key": "gpusched.io/e2e", "value": TAG, "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DRA_DRIVER = "gs-e2e-%s.gpu.nvidia.com" % TAG      # names a GPU driver: GPU claims (one rule)
DRA_CLASS = DRA_DRIVER
DRA_MISSING = "gs-e2e-%s-missing.gpu.nvidia.com" % TAG
DRA_SLICE = "gs-e2e-%s-gpus" % TAG


def die_with_us():
    """In the child before exec: SIGKILL when this test dies, even by SIGKILL (a ctest
    timeout), so no monitor or Prometheus outlives it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def wait_for(fn, timeout, step=0.25):
    """fn() until truthy or timeout; (value, seconds). Not gslive.wait_for: the checks here
    report how long each wait took."""
    t0 = time.monotonic()
    while True:
        v = fn()
        if v or time.monotonic() - t0 > timeout:
            return v, time.monotonic() - t0
        time.sleep(step)


# ---------------------------------------------------------------- metrics text
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if m:
            labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                      for k, v in LABEL.findall(m.group(2) or "")}
            out.append((m.group(1), labels, float(m.group(3))))
    return out


def select(samples, name, **want):
    return [(l, v) for n, l, v in samples if n == name and all(l.get(k) == x for k, x in want.items())]


# ---------------------------------------------------------------- the monitor process
def deployment_args():
    """The container args of deploy/monitor/deployment.yaml (a list of `- --flag=value`)."""
    args, inside = [], False
    with open(os.path.join(SRC, "deploy", "monitor", "deployment.yaml")) as f:
        for line in f:
            s = line.strip()
            if s == "args:":
                inside = True
                continue
            if inside:
                if not s.startswith("- "):
                    break
                args.append(s[2:].strip())
    return args


class Monitor:
    def __init__(self, name, kubeconfig, work):
        self.name = name
        self.errfile = os.path.join(work, name + ".stderr")   # a file: a pipe could fill up
        args = [a for a in deployment_args() if not a.startswith("--listen")]
        self.argv = [BIN] + args[:1] + ["--kubeconfig", kubeconfig, "--listen=127.0.0.1:0"] + args[1:]
        env = dict(os.environ, POD_NAME=name, POD_NAMESPACE=NS)
        env.pop("KUBECONFIG", None)
        with open(self.errfile, "w") as errf:
            self.p = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=errf,
                                      env=env, start_new_session=True,
                                      preexec_fn=die_with_us)
        self.err = ""
        self.port = self.identity = None
        self.rc = None

        def started():
            self.read_err()
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", self.err)
            if m:
                self.port = int(m.group(1))
            m = re.search(r"leader election on Lease %s/%s as (\S+)" % (NS, LEASE), self.err)
            if m:
                self.identity = m.group(1)
            return (self.port and self.identity) or self.p.poll() is not None
        wait_for(started, 30, 0.05)

    def read_err(self):
        with open(self.errfile, errors="replace") as f:
            self.err = f.read()
        return self.err

    def get(self, path):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            c.request("GET", path)
            r = c.getresponse()
            body = r.read().decode()
            c.close()
            return r.status, body
        except OSError as e:
            return 0, str(e)

    def metrics(self):
        st, body = self.get("/metrics")
        return parse_metrics(body) if st == 200 else []

    def leader(self):
        v = select(self.metrics(), "gpusched_monitor_leader")
        return v[0][1] if v else None

    def stop(self, timeout=10):
        if self.rc is not None:
            return self.rc, 0.0
        t0 = time.monotonic()
        self.p.send_signal(signal.SIGTERM)
        try:
            self.rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.rc = self.p.wait()
        took = time.monotonic() - t0
        self.read_err()
        return self.rc, took


# ---------------------------------------------------------------- cluster objects
def overlay(work):
    """deploy/monitor without its ServiceMonitor (no CRD needed)."""
    return gslive.overlay(work, "monitor", NS, PREFIX,
                          "patches:\n  - patch: |-\n      $patch: delete\n"
                          "      apiVersion: monitoring.coreos.com/v1\n      kind: ServiceMonitor\n"
                          "      metadata:\n        name: gpusched-monitor\n")


def sa_kubeconfig(work, token):
    path = os.path.join(work, "sa.kubeconfig")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "sa",
                   "clusters": [{"name": "plane", "cluster": {
                       "server": ENV["GS_APISERVER_URL"], "certificate-authority": ENV["GS_CA_FILE"]}}],
                   "users": [{"name": "sa", "user": {"token": token}}],
                   "contexts": [{"name": "sa", "context": {"cluster": "plane", "user": "sa",
                                                           "namespace": NS}}]}, f)
    os.chmod(path, 0o600)
    return path


def gpu_node(name, pool, taints):
    """Not gslive.ExtenderRun.make_node: GFD labels, a pool label, taints of the caller's
    choice (the GPU taint on one), the current time in its Ready condition."""
    labels = {"kubernetes.io/hostname": name, "cloud.google.com/gke-nodepool": pool,
              "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
              "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81559",
              "nvidia.com/gpu.family": "hopper", "nvidia.com/cuda.driver.major": "550",
              "nvidia.com/gpu.deploy.device-plugin": "true"}
    must(kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints}})), "create node " + name)
    # TaintNodesByCondition added not-ready at creation: the taints as written
    must(kubectl("patch", "node", name, "--type=merge", "-p", json.dumps({"spec": {"taints": taints}})),
         "taint node " + name)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cap = {"cpu": "192", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": "8"}
    must(kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps({
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status",
                                   "lastHeartbeatTime": now, "lastTransitionTime": now}]}})),
         "node status " + name)


def gpu_pod(name, gpus):
    """A GPU pod for the real kube-scheduler, pinned to node A, tolerating this test's taint
    but not the GPU taint."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulerName": ENV["GS_SCHEDULER_NAME"],
                     "nodeSelector": {"kubernetes.io/hostname": NODE_A},
                     "tolerations": [dict(KEEP_OFF, operator="Equal")],
                     "containers": [{"name": "train", "image": "registry.example/train:1",
                                     "resources": {"requests": {"cpu": "4", "memory": "16Gi",
                                                                "nvidia.com/gpu": str(gpus)},
                                                   "limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def dra_objects():
    """A DeviceClass of this test's driver and a ResourceSlice publishing 2 of its GPUs on
    node A; claims: `nocls` names a DeviceClass that does not exist, `big` asks 4 devices."""
    def claim(name, cls, count):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                    "deviceClassName": cls, "count": count}}]}}}
    gpu = [{"name": "gpu-%d" % i, "attributes": {"type": {"string": "gpu"},
                                                  "uuid": {"string": "GPU-%s-%d" % (TAG, i)}}}
           for i in range(2)]
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRA_CLASS},
             "spec": {"selectors": [{"cel": {"expression": 'device.driver == "%s"' % DRA_DRIVER}}]}},
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": DRA_SLICE},
             "spec": {"driver": DRA_DRIVER, "nodeName": NODE_A,
                      "pool": {"name": NODE_A, "generation": 1, "resourceSliceCount": 1}, "devices": gpu}},
            claim("nocls", DRA_MISSING, 1), claim("big", DRA_CLASS, 4)]


def claim_pod(name, claim):
    """A pod of one ResourceClaim for the real kube-scheduler, pinned to node A, tolerating
    both of its taints (only its claim keeps it pending)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulerName": ENV["GS_SCHEDULER_NAME"],
                     "nodeSelector": {"kubernetes.io/hostname": NODE_A},
                     "tolerations": [dict(KEEP_OFF, operator="Equal"),
                                     {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "resourceClaims": [{"name": "gpus", "resourceClaimName": claim}],
                     "containers": [{"name": "train", "image": "registry.example/train:1",
                                     "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpus"}]}}]}}


def claim_checks(b):
    """Claims that cannot be allocated: pending GPU pods with the claim reasons, counted in
    gpusched_claims_pending, listed with their claims in /pending."""
    for o in dra_objects():
        must(kubectl("create", "-f", "-", input=json.dumps(o)), "create %s %s" % (o["kind"], o["metadata"]["name"]))
    for name, claim in (("claim-nocls", "nocls"), ("claim-big", "big")):
        must(kubectl("create", "-f", "-", input=json.dumps(claim_pod(name, claim))), "create " + name)
    want = {"claim_class_missing": 1, "claim_too_many_devices": 1}

    def claims_series():
        v = select(b.metrics(), "gpusched_claims_pending", namespace=NS)
        return v if {l.get("reason"): x for l, x in v} == want else None
    v, took = wait_for(claims_series, 20, 0.2)
    v = v or select(b.metrics(), "gpusched_claims_pending", namespace=NS)
    check({l.get("reason"): x for l, x in v} == want,
          "gpusched_claims_pending{namespace=%s}: class missing 1, too many devices 1 (%.1f s): %s" % (NS, took, v))
    pods = select(b.metrics(), "gpusched_gpu_pods_pending", namespace=NS)
    check(sorted((l.get("reason"), x) for l, x in pods if l.get("reason", "").startswith("claim_")) ==
          [("claim_class_missing", 1), ("claim_too_many_devices", 1)],
          "gpusched_gpu_pods_pending{namespace=%s}: the claim pods by their claim reasons: %s" % (NS, pods))
    old = select(b.metrics(), "gpusched_claim_oldest_pending_seconds", namespace=NS)
    check(len(old) == 1 and 0 <= old[0][1] < 600, "gpusched_claim_oldest_pending_seconds{namespace=%s}: %s" % (NS, old))
    e = pending_entry(b, "claim-big")
    c = (e or {}).get("claims") or [{}]
    check(e is not None and c[0].get("claim") == NS + "/big" and c[0].get("reason") == "claim_too_many_devices"
          and "4 devices" in c[0].get("why", "") and "at most 2" in c[0].get("fix", ""),
          "/pending JSON: claim-big's claim %s/big, too many devices, why and fix: %s" % (NS, c))
    st, text = b.get("/pending")
    check(st == 200 and ("claim %s/nocls" % NS) in text and "claim_class_missing" in text,
          "/pending text: the claim line of %s/nocls" % NS)


def pod_events(pod, instance=None):
    """The monitor's events.k8s.io/v1 Events regarding pod (of one reporting instance), and
    the core/v1 view of them (what kubectl describe shows). The real kube-scheduler's
    FailedScheduling Events on the same pod are left out."""
    r = kubectl("get", "events.v1.events.k8s.io", "-n", NS, "-o", "json")
    new = [e for e in json.loads(r.stdout)["items"] if e.get("regarding", {}).get("name") == pod
           and e.get("reportingController") == "gpusched.io/monitor"
           and (instance is None or e.get("reportingInstance") == instance)] if r.returncode == 0 else []
    r = kubectl("get", "events", "-n", NS, "--field-selector", "involvedObject.name=" + pod, "-o", "json")
    core = [e for e in json.loads(r.stdout)["items"] if e.get("reportingComponent") == "gpusched.io/monitor"
            and (instance is None or e.get("reportingInstance") == instance)] if r.returncode == 0 else []
    return new, core


def pending_entry(mon, pod):
    st, body = mon.get("/pending?format=json")
    if st != 200:
        return None
    try:
        return next((p for p in json.loads(body)["pending"]
                     if p["namespace"] == NS and p["name"] == pod), None)
    except (ValueError, KeyError):
        return None


def check_event(pod, entry, identity, timeout=20):
    got, took = wait_for(lambda: (lambda ev: ev if ev[0] else None)(pod_events(pod, identity)), timeout, 0.5)
    new, core = got or ([], [])
    if not check(len(new) == 1, "one events.k8s.io Event of %s regarding %s within %.1f s: %d"
                 % (identity, pod, took, len(new))):
        return
    e = new[0]
    reg = e.get("regarding", {})
    check(e.get("type") == "Warning" and e.get("reason") == "GPUPending",
          "Event: Warning GPUPending (%s %s)" % (e.get("type"), e.get("reason")))
    check(reg.get("kind") == "Pod" and reg.get("namespace") == NS and reg.get("uid"),
          "Event regards the pod with its uid: %s" % reg)
    check(e.get("reportingController") == "gpusched.io/monitor" and e.get("reportingInstance") == identity,
          "Event reported by gpusched.io/monitor, instance %s: %s/%s"
          % (identity, e.get("reportingController"), e.get("reportingInstance")))
    if entry:
        want = "%s; fix: %s" % (entry["why"], entry["fix"])
        check(e.get("note") == want[:1024], "Event note is /pending's why and fix: %r" % e.get("note"))
        check(e.get("action") == entry["reason"], "Event action is the reason: %r" % e.get("action"))
    check(len(core) == 1 and core[0].get("reason") == "GPUPending" and core[0].get("type") == "Warning"
          and core[0].get("involvedObject", {}).get("kind") == "Pod",
          "kubectl get events (core/v1) shows it on the pod: %s"
          % [(c.get("type"), c.get("reason"), c.get("message", "")[:60]) for c in core])


# ---------------------------------------------------------------- Prometheus
def alert_expr(name):
    """The expr of an alert in deploy/monitor/alerts.yaml (one-line `expr:` after `- alert:`)."""
    cur = None
    with open(os.path.join(SRC, "deploy", "monitor", "alerts.yaml")) as f:
        for line in f:
            s = line.strip()
            if s.startswith("- alert:"):
                cur = s.split(":", 1)[1].strip()
            elif s.startswith("expr:") and cur == name:
                return s.split(":", 1)[1].strip()
    raise RuntimeError("no alert %s in alerts.yaml" % name)


class Prometheus:
    def __init__(self, work, target):
        self.dir = os.path.join(work, "prometheus")
        os.makedirs(os.path.join(self.dir, "data"))
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                                  "scrape_timeout": "1s"},
                       "rule_files": [os.path.join(SRC, "deploy", "monitor", "alerts.yaml")],
                       "scrape_configs": [{
                           "job_name": "gpusched-monitor", "honor_labels": True,
                           "static_configs": [{"targets": [target],
                                               # what Kubernetes service discovery would attach
                                               "labels": {"namespace": "gs-target-namespace",
                                                          "pool": "gs-target-pool"}}]}]}, f)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.p = subprocess.Popen([PROMETHEUS, "--config.file=" + cfg,
                                   "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                                   "--web.listen-address=127.0.0.1:%d" % self.port],
                                  stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=die_with_us)

    def api(self, path, **params):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            c.request("GET", path + ("?" + urllib.parse.urlencode(params) if params else ""))
            r = c.getresponse()
            body = r.read()
            c.close()
            return json.loads(body) if r.status == 200 else None
        except (OSError, ValueError):
            return None

    def query(self, q):
        r = self.api("/api/v1/query", query=q)
        return r["data"]["result"] if r and r.get("status") == "success" else None

    def log_tail(self):
        self.log.flush()
        with open(os.path.join(self.dir, "log")) as f:
            return "".join(f.readlines()[-15:])

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.log.close()


def prometheus_checks(work, mon):
    if not shutil.which(PROMETHEUS):
        print("SKIP (part 4): %s not found (scripts/deps.sh monitor installs it): no real scrape checked"
              % PROMETHEUS, flush=True)
        return
    prom = Prometheus(work, "127.0.0.1:%d" % mon.port)
    try:
        def target_up():
            r = prom.api("/api/v1/targets")
            act = r["data"]["activeTargets"] if r else []
            return act and act[0].get("health") == "up" and act[0]
        t, took = wait_for(target_up, 60, 0.5)
        if not check(bool(t), "Prometheus: the monitor's target is up within %.1f s: %s\n%s"
                     % (took, t, "" if t else prom.log_tail())):
            return
        expr = alert_expr("GPUNodeUntainted")

        def pools():
            res = prom.query(expr)
            return res and {r["metric"].get("pool"): float(r["value"][1]) for r in res}
        got, took = wait_for(lambda: (pools() or {}).get(POOL_B) and pools(), 20, 0.5)
        got = got or pools() or {}
        check(got.get(POOL_B) == 1.0, "Prometheus: %s returns pool %s = 1 (%.1f s): %s"
              % (expr, POOL_B, took, {k: v for k, v in got.items() if k and k.startswith("gs-")}))
        check(POOL_A not in got, "Prometheus: the tainted node's pool %s is not in it" % POOL_A)
        check("gs-target-pool" not in got, "Prometheus: pool is the monitor's label, not the target's")

        res = prom.query('gpusched_gpu_pods_pending{namespace="%s"}' % NS) or []
        series = [r["metric"] for r in res]
        check(len(res) == 1 and res[0]["value"][1] == "2"
              and series[0].get("reason") == "untolerated_taint" and "exported_namespace" not in series[0]
              and series[0].get("job") == "gpusched-monitor",
              "Prometheus: gpusched_gpu_pods_pending keeps namespace %s (honor_labels), value 2: %s"
              % (NS, [(r["metric"], r["value"][1]) for r in res]))
        res = prom.query('gpusched_gpu_pods_pending{namespace="gs-target-namespace"}') or []
        check(res == [], "Prometheus: no pending series took the target's namespace label: %s" % res)

        def alert_pending():
            res = prom.query('ALERTS{alertname="GPUNodeUntainted",pool="%s"}' % POOL_B) or []
            return res and res[0]
        a, took = wait_for(alert_pending, 20, 0.5)
        check(bool(a) and a["metric"].get("alertstate") == "pending" and a["metric"].get("severity") == "warning",
              "Prometheus: ALERTS{alertname=GPUNodeUntainted,pool=%s} pending (%.1f s): %s"
              % (POOL_B, took, a and a["metric"]))
        r = prom.api("/api/v1/rules", type="alert") or {}
        rules = [rl for g in r.get("data", {}).get("groups", []) for rl in g.get("rules", [])]
        names = sorted(rl["name"] for rl in rules)
        check({"GPUPodPendingTooLong", "GPUNodeUntainted", "NonGPUPodsOnGPUNodes", "DevicePluginDown",
               "GPUAllocatedIdle", "MIGConfigFailed", "GPUSchedMonitorDown"} <= set(names)
              and all(rl.get("health") == "ok" for rl in rules),
              "Prometheus: every alert of alerts.yaml loaded, health ok: %s"
              % [(rl["name"], rl.get("health"), rl.get("lastError")) for rl in rules])
        rule = next((rl for rl in rules if rl["name"] == "GPUNodeUntainted"), {})
        mine = [al for al in rule.get("alerts", []) if al.get("labels", {}).get("pool") == POOL_B]
        check(rule.get("state") in ("pending", "firing") and mine and mine[0].get("state") == "pending"
              and mine[0].get("annotations", {}).get("runbook_url") == "docs/runbook.md#gpunodeuntainted",
              "Prometheus: /api/v1/rules GPUNodeUntainted pending for %s, runbook_url: %s %s"
              % (POOL_B, rule.get("state"), mine))
        res = prom.query("gpusched_monitor_informer_synced") or []
        check(res and all(r["value"][1] == "1" for r in res),
              "Prometheus: every gpusched_monitor_informer_synced is 1 (GPUSchedMonitorDown silent): %d kinds"
              % len(res))
    finally:
        prom.stop()


# ---------------------------------------------------------------- the test
def run_checks(work, procs):
    must(kubectl("create", "namespace", NS), "create namespace")
    r = kubectl("apply", "-k", overlay(work))
    names = {l.split()[0] for l in r.stdout.splitlines() if l.strip()}
    check(r.returncode == 0 and "deployment.apps/" + SA in names and "clusterrole.rbac.authorization.k8s.io/" + SA
          in names and not any("servicemonitor" in n for n in names),
          "deploy/monitor applied in %s (ServiceMonitor left out): %s %s" % (NS, sorted(names), r.stderr.strip()))
    r = must(kubectl("create", "token", SA, "-n", NS, "--duration=15m"), "TokenRequest")
    kc = sa_kubeconfig(work, r.stdout.strip())
    r = kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=kc)
    check(r.stdout == "system:serviceaccount:%s:%s" % (NS, SA),
          "the kubeconfig authenticates as the ServiceAccount: %r %s" % (r.stdout, r.stderr.strip()))

    gpu_node(NODE_A, POOL_A, [GPU_TAINT, KEEP_OFF])
    gpu_node(NODE_B, POOL_B, [KEEP_OFF])
    log("nodes %s (tainted, %s) and %s (untainted, %s) created" % (NODE_A, POOL_A, NODE_B, POOL_B))

    # ---- 1. RBAC by running it
    a = Monitor("replica-a", kc, work)
    procs.append(a)
    log("replica A: %s" % " ".join(a.argv[1:]))
    if not check(a.port and a.identity, "replica A started as the ServiceAccount: %s" % a.read_err()):
        return
    ready, took = wait_for(lambda: a.get("/readyz")[0] == 200, 60)
    check(ready, "replica A /readyz 200 in %.1f s (%s)" % (took, a.get("/readyz")))

    def all_synced():
        v = select(a.metrics(), "gpusched_monitor_informer_synced")
        return len(v) >= 8 and all(x == 1 for _, x in v)
    # the metric is noted at each update (--update-interval, 200 ms): it may trail /readyz
    ok, took = wait_for(all_synced, 2, 0.05)
    synced = select(a.metrics(), "gpusched_monitor_informer_synced")
    check(ok, "gpusched_monitor_informer_synced 1 for every kind %.2f s after /readyz 200: %s"
          % (took, sorted((l["kind"], v) for l, v in synced)))

    # ---- 2. a pod pending because of the untolerated GPU taint
    t_create = time.monotonic()
    must(kubectl("create", "-f", "-", input=json.dumps(gpu_pod("train-1", 1))), "create train-1")

    def pending_series():
        v = select(a.metrics(), "gpusched_gpu_pods_pending", namespace=NS)
        return v if v and v[0][1] == 1 else None
    v, took = wait_for(pending_series, 20, 0.1)
    v = v or select(a.metrics(), "gpusched_gpu_pods_pending", namespace=NS)
    check(len(v) == 1 and v[0][0].get("reason") == "untolerated_taint" and v[0][1] == 1
          and v[0][0].get("request_kind") == "whole" and v[0][0].get("priority_class") == "",
          "gpusched_gpu_pods_pending{namespace=%s,reason=untolerated_taint,request_kind=whole} 1 "
          "%.1f s after the create: %s" % (NS, time.monotonic() - t_create, v))
    check(took < 10, "the series within 10 s: %.1f s" % took)
    old = select(a.metrics(), "gpusched_gpu_pod_oldest_pending_seconds", namespace=NS)
    check(len(old) == 1 and 0 <= old[0][1] < 120, "gpusched_gpu_pod_oldest_pending_seconds{namespace=%s}: %s"
          % (NS, old))
    r = kubectl("get", "pod", "train-1", "-n", NS, "-o", "json")
    conds = json.loads(r.stdout).get("status", {}).get("conditions", []) if r.returncode == 0 else []
    check(any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conds),
          "the real kube-scheduler left train-1 Unschedulable: %s"
          % [(c["type"], c.get("reason"), c.get("message", "")[:80]) for c in conds])

    e1 = pending_entry(a, "train-1")
    if check(e1 is not None, "/pending?format=json lists %s/train-1" % NS):
        check(e1["reason"] == "untolerated_taint" and e1["request_kind"] == "whole" and e1["uid"],
              "/pending JSON: reason untolerated_taint, kind whole: %s" % e1)
        check("nvidia.com/gpu" in e1["why"] and e1["fix"] and "tolerat" in e1["fix"].lower(),
              "/pending JSON: why names the taint, fix a toleration: why=%r fix=%r" % (e1["why"], e1["fix"]))
        check(isinstance(e1["wait_seconds"], int) and e1["wait_seconds"] >= 0, "wait_seconds %r" % e1["wait_seconds"])
    st, text = a.get("/pending")
    line = next((l for l in text.splitlines() if l.startswith(NS + " ") and " train-1 " in l), "")
    check(st == 200 and "untolerated_taint" in line and e1 is not None and e1["fix"] in text,
          "/pending text: the pod's row with its reason, and its fix: %r" % line)

    # ---- 3. Events by the leader; a second replica; failover
    check_event("train-1", e1, a.identity)
    b = Monitor("replica-b", kc, work)
    procs.append(b)
    if not check(b.port and b.identity and b.identity != a.identity,
                 "replica B started, identity %s != %s: %s" % (b.identity, a.identity, b.read_err())):
        return
    ready, took = wait_for(lambda: b.get("/readyz")[0] == 200, 60)
    check(ready, "replica B /readyz 200 in %.1f s" % took)
    wait_for(lambda: ("the leader is %s" % a.identity) in b.read_err(), 20)
    la, lb = a.leader(), b.leader()
    check((la, lb) == (1, 0), "exactly one leader: gpusched_monitor_leader A=%s B=%s" % (la, lb))
    r = kubectl("get", "lease", LEASE, "-n", NS, "-o", "jsonpath={.spec.holderIdentity}")
    check(r.stdout == a.identity, "Lease %s/%s held by A: %r" % (NS, LEASE, r.stdout))

    rc, took = a.stop()
    check(rc == 0 and took < 5, "SIGTERM to the leader A: exit %s in %.1f s" % (rc, took))
    t_term = time.monotonic()
    _, took = wait_for(lambda: b.leader() == 1, 25, 0.2)
    check(b.leader() == 1, "B took over: gpusched_monitor_leader 1 %.1f s after A's exit" % took)
    r = kubectl("get", "lease", LEASE, "-n", NS, "-o", "jsonpath={.spec.holderIdentity}")
    check(r.stdout == b.identity, "Lease held by B: %r" % r.stdout)
    must(kubectl("create", "-f", "-", input=json.dumps(gpu_pod("train-2", 2))), "create train-2")
    e2, _ = wait_for(lambda: pending_entry(b, "train-2"), 20)
    check(e2 is not None and e2["reason"] == "untolerated_taint", "B's /pending lists train-2: %s" % e2)
    check_event("train-2", e2, b.identity)
    log("failover and the second Event %.1f s after SIGTERM" % (time.monotonic() - t_term))
    # the new leader's recorder starts empty (as client-go's does after a restart): it may
    # record train-1 once more, as its own Event, but once only
    new, _ = pod_events("train-1")
    per = sorted((e.get("reportingInstance"), (e.get("series") or {}).get("count", 1)) for e in new)
    check(len(new) <= 2 and len({i for i, _ in per}) == len(per) and all(c == 1 for _, c in per),
          "train-1: at most one Event per replica, each occurring once: %s" % per)

    # ---- 4. a real Prometheus scrapes B
    prometheus_checks(work, b)

    # ---- train-1 tolerates the taint: the real kube-scheduler binds it, the kubelet's part
    # (phase Running) is played through the status subresource
    must(kubectl("patch", "pod", "train-1", "-n", NS, "--type=json", "-p", json.dumps(
        [{"op": "add", "path": "/spec/tolerations/-",
          "value": {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}])),
         "tolerate on train-1")
    bound, took = wait_for(lambda: kubectl("get", "pod", "train-1", "-n", NS, "-o",
                                           "jsonpath={.spec.nodeName}").stdout == NODE_A, 30, 0.5)
    if check(bound, "the kube-scheduler bound train-1 to %s %.1f s after the toleration" % (NODE_A, took)):
        must(kubectl("patch", "pod", "train-1", "-n", NS, "--subresource=status", "--type=merge",
                     "-p", json.dumps({"status": {"phase": "Running"}})), "train-1 Running")

        def settled():
            m = b.metrics()
            return (select(m, "gpusched_gpu_pods_pending", namespace=NS) == [
                ({"namespace": NS, "priority_class": "", "request_kind": "whole", "reason": "untolerated_taint"}, 1)]
                and select(m, "gpusched_pool_gpus_allocated", pool=POOL_A) == [({"pool": POOL_A}, 1)]) and m
        m, took = wait_for(settled, 10)
        m = m or b.metrics()
        check(bool(settled()), "B: pending{namespace=%s} 1 (train-2), gpusched_pool_gpus_allocated{pool=%s} 1 "
              "(%.1f s): %s %s" % (NS, POOL_A, took, select(m, "gpusched_gpu_pods_pending", namespace=NS),
                                   select(m, "gpusched_pool_gpus_allocated", pool=POOL_A)))
        hist = select(m, "gpusched_gpu_pod_scheduling_duration_seconds_count", namespace=NS)
        check(hist == [({"namespace": NS, "request_kind": "whole"}, 1)],
              "B: scheduling duration observed once for train-1: %s" % hist)
        inuse = select(m, "gpusched_pool_gpu_nodes_in_use", pool=POOL_A)
        check(inuse == [({"pool": POOL_A}, 1)], "B: gpusched_pool_gpu_nodes_in_use{pool=%s} 1: %s" % (POOL_A, inuse))
        e, _ = wait_for(lambda: pending_entry(b, "train-1") is None, 5)
        check(e, "B: /pending no longer lists train-1")

    # ---- 5. DRA: claims that cannot be allocated
    claim_checks(b)

    # ---- RBAC, all along. The monitor watches the whole cluster: pods of other tests running
    # on the same plane are pending too, and a write into a namespace being deleted is refused
    # by NamespaceLifecycle ("forbidden: ... because it is being terminated"): not RBAC, and
    # not counted against it here.
    def refused_by_lifecycle(line):
        return "being terminated" in line

    for m in (a, b):
        m.read_err()
        lines = m.err.splitlines()
        if m is b:
            w = select(m.metrics(), "gpusched_monitor_events_written_total")
            failed = sum(v for l, v in w if l.get("result") == "failed")
            lifecycle = sum(1 for l in lines if "event: error" in l and refused_by_lifecycle(l))
            check(any(l.get("result") == "created" and v >= 1 for l, v in w) and failed <= lifecycle,
                  "B: events created, none failed but for namespaces being deleted: %s (%d such)"
                  % ([(l.get("result"), v) for l, v in w], lifecycle))
        bad = [l for l in lines if "forbidden" in l.lower() and not refused_by_lifecycle(l)]
        check(not bad, "replica %s: no RBAC 'forbidden' on stderr: %r" % (m.name, bad[-3:]))


def cleanup(work, procs):
    for m in procs:
        m.stop()
    for ns_kind in ("pods", "leases.coordination.k8s.io", "events.events.k8s.io",
                    "resourceclaims.resource.k8s.io"):
        kubectl("delete", ns_kind, "--all", "-n", NS, "--grace-period=0", "--force", "--wait=false")
    ov = os.path.join(work, "overlay")
    if os.path.isdir(ov):
        kubectl("delete", "-k", ov, "--ignore-not-found", "--wait=false")
    gslive.delete_namespace(NS)
    kubectl("delete", "node", NODE_A, NODE_B, "--ignore-not-found")
    kubectl("delete", "deviceclass", DRA_CLASS, "--ignore-not-found")
    kubectl("delete", "resourceslice", DRA_SLICE, "--ignore-not-found")


def main():
    procs = []
    gslive.main("monitor-e2e-test", 240, lambda work: run_checks(work, procs),
                lambda work: cleanup(work, procs), CHECKS)
    log("done")
    return CHECKS.done("ok: gpusched monitor runs as deploy/monitor's ServiceAccount, reports, "
                       "writes Events, fails over, and a real Prometheus scrapes it")


if __name__ == "__main__":
    sys.exit(main())
