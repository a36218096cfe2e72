#!/usr/bin/env python3
"""bench-extender-e2e.py - issue 13 section 3: pods per second scheduled end to end through the
real kube-scheduler, alone and with `gpusched extender`, on the same control plane in one run;
the extender's verb latencies, peak RSS and binds per second.

    bench/bench-extender-e2e.py [--nodes 100] [--pods 1000] [--runs 1] [--gpus 8]
                                [--create-threads 8] [--scheduler-qps Q] [--extender-qps Q]
                                [--bind-pods M] [--bind-threads K] [--ext-arg=FLAG]...
                                [--gpusched build/gpusched] [--timeout 300] [--seed 1]

Starts the test control plane of tests/live (etcd + kube-apiserver from scripts/peers.sh) with
no kubelet: --nodes fake nodes (created through the API, capacity through the status
subresource), openb share nodes of --gpus GPUs each (alibabacloud.com/gpu-count,
alibabacloud.com/gpu-milli = 1000 per GPU). Two kube-schedulers run against it the whole time,
same KubeSchedulerConfiguration but for the extender:

  plain  profile bench-plain: kube-scheduler alone (NodeResourcesFit counts gpu-milli as a
         node total)
  ext    profile bench-ext: the same plus `gpusched extender` on a loopback port (filter,
         prioritize, bind, preempt; weight 5; nodeCacheCapable; managedResources
         alibabacloud.com/gpu-milli, ignoredByScheduler false). The extender is started for
         each run of this mode (fresh counters and peak RSS) and stopped after it.

Each run of each mode (interleaved: plain 1, ext 1, plain 2, ...) creates --pods pods in a
namespace of its own (a seeded mix of 250/500/1000 milli, the same shapes in both modes),
from --create-threads API connections at once, and watches them: the time from the first
create to the last pod bound (spec.nodeName set; no kubelet ever runs them) gives pods/s.
The pods are then deleted (grace period 0), so every run starts on empty nodes.

After the runs, a direct bind load: --bind-pods pending pods of a scheduler name nobody
serves, a fresh extender, and --bind-threads clients POSTing ExtenderBindingArgs to /bind
(keep-alive connections, nodes round robin): binds/s and client-side latency of the bind
path (record patch + Binding create against the real API server).

--scheduler-qps sets clientConnection.qps (burst 2x) of both schedulers (default: not set,
kube-scheduler's 50/100); --extender-qps passes --kube-api-qps (burst 2x) to the extender
(default: not passed). --ext-arg passes any other flag to the extender.

Prints the per-run lines on stderr, then one markdown table (median over --runs) for
docs/performance.md and the exact command. Exit 77 when the peers are not built.
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "live"))
sys.dont_write_bytecode = True
from controlplane import ControlPlane, PeersMissing  # noqa: E402

ANN = "gpusched.io/assignment"
SHAPES = (250, 250, 500, 500, 1000)


def log(msg):
    print("bench-extender-e2e: " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- a small API client
class Api:
    def __init__(self, cp):
        u = urllib.parse.urlparse(cp.url)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=cp.path("ca.crt"))
        self.ctx.load_cert_chain(cp.path("admin.crt"), cp.path("admin.key"))
        self.local = threading.local()

    def conn(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        c = getattr(self.local, "c", None)
        for attempt in range(3):
            if c is None:
                c = self.local.c = self.conn()
            try:
                data = None if body is None else json.dumps(body).encode()
                c.request(method, path, body=data,
                          headers={"Content-Type": ctype} if data is not None else {})
                r = c.getresponse()
                text = r.read()
                if r.status not in ok:
                    raise RuntimeError("%s %s: %d %s" % (method, path, r.status, text[:300]))
                return json.loads(text) if text else None
            except (OSError, http.client.HTTPException):
                c.close()
                c = self.local.c = None
                if attempt == 2:
                    raise


def parallel(n, items, fn):
    """fn(item) for every item, from n threads; re-raises the first error."""
    items = list(items)
    errs = []
    lock = threading.Lock()
    it = iter(items)

    def work():
        while not errs:
            with lock:
                try:
                    x = next(it)
                except StopIteration:
                    return
            try:
                fn(x)
            except Exception as e:  # noqa: BLE001 - reported to the caller
                errs.append(e)
    ts = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(n, len(items))))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]


# ---------------------------------------------------------------- objects
def make_nodes(api, n, gpus, threads):
    def one(i):
        name = "bench-node-%04d" % i
        api.call("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"gpusched.io/bench": "e2e",
                                                  "alibabacloud.com/gpu-card-model": "A100"}}})
        q = {"cpu": "64", "memory": "512Gi", "pods": "110",
             "alibabacloud.com/gpu-count": str(gpus), "alibabacloud.com/gpu-milli": str(1000 * gpus)}
        api.call("PATCH", "/api/v1/nodes/%s/status" % name, {"status": {
            "capacity": q, "allocatable": q,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "bench", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
            ctype="application/merge-patch+json")
        # drops the not-ready taint the admission put on the new node
        api.call("PATCH", "/api/v1/nodes/%s" % name, {"spec": {"taints": None}},
                 ctype="application/merge-patch+json")
    parallel(threads, range(n), one)
    return ["bench-node-%04d" % i for i in range(n)]


def pod(ns, name, sched, milli):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": sched,
                     "nodeSelector": {"gpusched.io/bench": "e2e"},
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                                   "limits": {"cpu": "10m", "memory": "16Mi",
                                                              "alibabacloud.com/gpu-milli": str(milli)}}}]}}


def namespace(api, ns):
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": ns}})


def delete_pods(api, ns):
    api.call("DELETE", "/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % ns)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not api.call("GET", "/api/v1/namespaces/%s/pods?limit=1" % ns)["items"]:
            return
        time.sleep(0.2)


# ---------------------------------------------------------------- the watcher
class Watch(threading.Thread):
    """Watches the pods of a namespace from resourceVersion RV: the monotonic time each pod
    was first seen with spec.nodeName, and whether it then carried the assignment record."""

    def __init__(self, api, ns, rv):
        super().__init__(daemon=True)
        self.api, self.ns, self.rv = api, ns, rv
        self.bound = {}
        self.records = set()
        self.cond = threading.Condition()
        self.stop = False
        self.err = None

    def run(self):
        while not self.stop:
            c = self.api.conn(timeout=5)
            try:
                c.request("GET", "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s"
                          "&allowWatchBookmarks=true" % (self.ns, self.rv))
                r = c.getresponse()
                while not self.stop:
                    try:
                        line = r.readline()
                    except socket.timeout:
                        continue
                    if not line:
                        break
                    t = time.monotonic()
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    rv = obj.get("metadata", {}).get("resourceVersion")
                    if rv:
                        self.rv = rv
                    if ev.get("type") not in ("ADDED", "MODIFIED"):
                        continue
                    name = obj["metadata"]["name"]
                    if (obj["metadata"].get("annotations") or {}).get(ANN):
                        self.records.add(name)
                    if obj.get("spec", {}).get("nodeName") and name not in self.bound:
                        with self.cond:
                            self.bound[name] = t
                            self.cond.notify_all()
            except (OSError, http.client.HTTPException, ValueError) as e:
                self.err = e
                time.sleep(0.1)
            finally:
                c.close()

    def wait(self, n, deadline):
        with self.cond:
            while len(self.bound) < n and time.monotonic() < deadline:
                self.cond.wait(0.5)
        return len(self.bound)


# ---------------------------------------------------------------- the extender
class Extender:
    def __init__(self, binary, kubeconfig, port, args):
        self.port = port
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([binary, "extender", "--kubeconfig", kubeconfig, "--listen",
                                   "127.0.0.1:%d" % port] + list(args),
                                  stdout=subprocess.DEVNULL, stderr=self.errf, text=True)

    def req(self, method, path, body=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body).encode(),
                      headers={"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def wait_ready(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                raise RuntimeError("the extender exited (%s): %s" % (self.p.returncode, self.err()[-600:]))
            try:
                if self.req("GET", "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the extender was not ready after %d s: %s" % (timeout, self.err()[-600:]))

    def err(self):
        self.errf.seek(0)
        return self.errf.read()

    def metrics(self):
        st, body = self.req("GET", "/metrics")
        return body.decode() if st == 200 else ""

    def vmhwm_mib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) / 1024.0 if m else float("nan")

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def histogram(text, verb):
    """[(le, cumulative)] of gpusched_extender_request_duration_seconds for VERB."""
    out = []
    for m in re.finditer(r'^gpusched_extender_request_duration_seconds_bucket\{verb="%s",le="([^"]+)"\} (\d+)$'
                         % verb, text, re.M):
        out.append((float("inf") if m.group(1) == "+Inf" else float(m.group(1)), int(m.group(2))))
    return out


def quantile(buckets, q):
    """Prometheus histogram_quantile: linear within the bucket that holds the q-th
    observation (seconds); None without observations."""
    if not buckets or buckets[-1][1] == 0:
        return None
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_c = 0.0, 0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * ((rank - prev_c) / (c - prev_c) if c > prev_c else 1.0)
        prev_le, prev_c = le, c
    return prev_le


def metric(text, name, labels=""):
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else 0.0


def ms(s):
    return "-" if s is None else ("%.2f ms" % (s * 1000) if s < 0.1 else "%.0f ms" % (s * 1000))


# ---------------------------------------------------------------- one run of one mode
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """CPU seconds (user + system) a process has used so far; 0 when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def run_mode(api, mode, run, a, sizes, ext_factory, pids):
    ns = "bench-%s-r%d" % (mode, run)
    sched = "bench-" + mode
    namespace(api, ns)
    ext = None
    if mode == "ext":
        ext = ext_factory()
        ext.wait_ready()
    who = {"kube-apiserver": pids["kube-apiserver"], "etcd": pids["etcd"],
           "kube-scheduler": pids["scheduler-" + sched]}
    if ext:
        who["extender"] = ext.p.pid
    cpu0 = {k: cpu_s(v) for k, v in who.items()}
    rv = api.call("GET", "/api/v1/namespaces/%s/pods?limit=1" % ns)["metadata"]["resourceVersion"]
    w = Watch(api, ns, rv)
    w.start()
    time.sleep(0.3)  # the watch is open
    pods = [pod(ns, "p-%05d" % i, sched, sizes[i]) for i in range(a.pods)]
    t0 = time.monotonic()
    parallel(a.create_threads, pods, lambda p: api.call("POST", "/api/v1/namespaces/%s/pods" % ns, p))
    t_created = time.monotonic()
    n = w.wait(a.pods, t0 + a.timeout)
    w.stop = True
    cpu = {k: cpu_s(v) - cpu0[k] for k, v in who.items()}
    times = sorted(w.bound.values())
    res = {"mode": mode, "run": run, "bound": n, "create_s": t_created - t0,
           "e2e_s": (times[-1] - t0) if times else float("nan"),
           "first_s": (times[0] - t0) if times else float("nan"),
           "half_s": (times[len(times) // 2] - t0) if times else float("nan")}
    res["pods_per_s"] = n / res["e2e_s"] if times else 0.0
    for k, v in cpu.items():
        res["cpu_" + k] = v
    res["bind_rate"] = (n - 1) / (times[-1] - times[0]) if n > 1 and times[-1] > times[0] else 0.0
    if ext:
        text = ext.metrics()
        res["vmhwm_mib"] = ext.vmhwm_mib()
        for v in ("filter", "prioritize", "bind"):
            h = histogram(text, v)
            res[v + "_p50"], res[v + "_p99"] = quantile(h, 0.5), quantile(h, 0.99)
            res[v + "_n"] = h[-1][1] if h else 0
        res["binds_bound"] = metric(text, "gpusched_extender_binds_total", '{result="bound"}')
        res["binds_failed"] = metric(text, "gpusched_extender_binds_total", '{result="failed"}')
        res["errors"] = sum(metric(text, "gpusched_extender_requests_total",
                                   '{verb="%s",result="error"}' % v) for v in ("filter", "prioritize", "bind", "preempt"))
        res["records"] = len(w.records & set(w.bound))
        ext.stop()
    delete_pods(api, ns)
    log("%s run %d: %d/%d bound, created in %.2f s, first bound %.2f s, half %.2f s, last %.2f s: "
        "%.1f pods/s (bind rate %.1f/s)%s" % (
            mode, run, n, a.pods, res["create_s"], res["first_s"], res["half_s"], res["e2e_s"],
            res["pods_per_s"], res["bind_rate"],
            "" if not ext else "; extender: filter p50/p99 %s/%s, bind p50/p99 %s/%s, %d binds "
            "(%d failed), %d errors, %d of the bound with records, VmHWM %.1f MiB" % (
                ms(res["filter_p50"]), ms(res["filter_p99"]), ms(res["bind_p50"]), ms(res["bind_p99"]),
                res["binds_bound"], res["binds_failed"], res["errors"], res["records"], res["vmhwm_mib"])))
    return res


# ---------------------------------------------------------------- the direct bind load
def bind_load(api, a, nodes, ext_factory):
    ns = "bench-bind"
    namespace(api, ns)
    pods = [pod(ns, "b-%05d" % i, "bench-nobody", 250) for i in range(a.bind_pods)]
    uids = {}

    def create(p):
        o = api.call("POST", "/api/v1/namespaces/%s/pods" % ns, p)
        uids[o["metadata"]["name"]] = o["metadata"]["uid"]
    parallel(a.create_threads, pods, create)
    ext = ext_factory()  # lists the pending pods at its start
    ext.wait_ready()
    work = [(p["metadata"]["name"], nodes[i % len(nodes)]) for i, p in enumerate(pods)]
    lat, errs = [], []
    lock = threading.Lock()
    local = threading.local()

    def bind(item):
        name, node = item
        c = getattr(local, "c", None) or http.client.HTTPConnection("127.0.0.1", ext.port, timeout=60)
        local.c = c
        body = json.dumps({"PodName": name, "PodNamespace": ns, "PodUID": uids[name], "Node": node}).encode()
        t = time.monotonic()
        try:
            c.request("POST", "/bind", body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            ans = json.loads(r.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError) as e:
            c.close()
            local.c = None
            ans = {"Error": str(e)}
        dt = time.monotonic() - t
        with lock:
            lat.append(dt)
            if ans.get("Error"):
                errs.append(ans["Error"])
    t0 = time.monotonic()
    parallel(a.bind_threads, work, bind)
    wall = time.monotonic() - t0
    text = ext.metrics()
    h = histogram(text, "bind")
    lat.sort()
    res = {"n": len(work), "errors": len(errs), "wall_s": wall,
           "binds_per_s": (len(work) - len(errs)) / wall,
           "p50": lat[len(lat) // 2], "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
           "srv_p50": quantile(h, 0.5), "srv_p99": quantile(h, 0.99), "vmhwm_mib": ext.vmhwm_mib()}
    ext.stop()
    got = api.call("GET", "/api/v1/namespaces/%s/pods" % ns)["items"]
    res["bound"] = sum(1 for p in got if p["spec"].get("nodeName"))
    res["records"] = sum(1 for p in got if (p["metadata"].get("annotations") or {}).get(ANN))
    delete_pods(api, ns)
    log("bind load: %d binds from %d threads in %.2f s: %.1f binds/s, client p50/p99 %s/%s, server "
        "p50/p99 %s/%s, %d errors%s; %d bound, %d records; VmHWM %.1f MiB" % (
            res["n"], a.bind_threads, wall, res["binds_per_s"], ms(res["p50"]), ms(res["p99"]),
            ms(res["srv_p50"]), ms(res["srv_p99"]), len(errs), (" (" + errs[0][:200] + ")") if errs else "",
            res["bound"], res["records"], res["vmhwm_mib"]))
    return res


def scheduler_config(path, kubeconfig, name, qps, ext_url):
    text = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "clientConnection:\n  kubeconfig: %s\n" % json.dumps(kubeconfig))
    if qps:
        text += "  qps: %g\n  burst: %d\n" % (qps, int(2 * qps))
    text += ("leaderElection:\n  leaderElect: false\npercentageOfNodesToScore: 100\n"
             "profiles:\n  - schedulerName: %s\n" % name)
    if ext_url:
        text += ("extenders:\n  - urlPrefix: %s\n    filterVerb: filter\n    prioritizeVerb: prioritize\n"
                 "    bindVerb: bind\n    preemptVerb: preempt\n    weight: 5\n    httpTimeout: 10s\n"
                 "    nodeCacheCapable: true\n    ignorable: false\n    managedResources:\n"
                 "      - {name: alibabacloud.com/gpu-milli, ignoredByScheduler: false}\n" % ext_url)
    with open(path, "w") as f:
        f.write(text)


def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--create-threads", type=int, default=8)
    ap.add_argument("--scheduler-qps", type=float, default=0,
                    help="clientConnection.qps of both schedulers, burst 2x (default: kube-scheduler's 50/100)")
    ap.add_argument("--extender-qps", type=float, default=0,
                    help="--kube-api-qps of the extender, burst 2x (default: not passed)")
    ap.add_argument("--bind-pods", type=int, default=1000, help="pods of the direct bind load (0: none)")
    ap.add_argument("--bind-threads", type=int, default=16)
    ap.add_argument("--ext-arg", action="append", default=[], metavar="FLAG",
                    help="one more extender flag (repeatable), e.g. --ext-arg=--threads=32")
    ap.add_argument("--gpusched", default=os.path.join(HERE, "..", "build", "gpusched"))
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run for all pods to be bound")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    binary = os.path.abspath(a.gpusched)
    if not os.access(binary, os.X_OK):
        raise SystemExit("bench-extender-e2e: %s not built (cmake --build build --target gpusched-cli)" % binary)
    rnd = random.Random(a.seed)
    sizes = [rnd.choice(SHAPES) for _ in range(a.pods)]
    load = sum(sizes) / (1000.0 * a.gpus * a.nodes)
    if load > 0.75:
        log("warning: the pods ask for %.0f%% of the GPU milli: device-level packing may leave some pending" % (100 * load))
    ext_args = list(a.ext_arg)
    if a.extender_qps:
        ext_args += ["--kube-api-qps", "%g" % a.extender_qps, "--kube-api-burst", str(int(2 * a.extender_qps))]
    try:
        cp = ControlPlane(scheduler=False)
        cp.__enter__()
    except PeersMissing as e:
        print("SKIP: %s" % e)
        return 77
    rows, bl = [], None
    try:
        api = Api(cp)
        t = time.monotonic()
        nodes = make_nodes(api, a.nodes, a.gpus, a.create_threads)
        log("%d nodes of %d GPUs in %.1f s; pods ask for %.0f%% of the GPU milli"
            % (a.nodes, a.gpus, time.monotonic() - t, 100 * load))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = "http://127.0.0.1:%d" % port
        kc = cp.env["GS_KUBECONFIG_SCHEDULER"]
        for mode in ("plain", "ext"):
            cfg = cp.path("bench-%s.yaml" % mode)
            scheduler_config(cfg, kc, "bench-" + mode, a.scheduler_qps, url if mode == "ext" else None)
            cp.start_extra_scheduler("bench-" + mode, cfg)
        pids = cp.pids()
        log("schedulers bench-plain and bench-ext up; extender on %s" % url)

        def ext_factory():
            return Extender(binary, cp.env["GS_KUBECONFIG_ADMIN"], port, ext_args)
        for run in range(1, a.runs + 1):
            for mode in ("plain", "ext"):
                rows.append(run_mode(api, mode, run, a, sizes, ext_factory, pids))
        if a.bind_pods:
            bl = bind_load(api, a, nodes, ext_factory)
    finally:
        cp.__exit__(None, None, None)

    plain = [r for r in rows if r["mode"] == "plain"]
    ext = [r for r in rows if r["mode"] == "ext"]
    pp, pe = med(plain, "pods_per_s"), med(ext, "pods_per_s")
    print("| | kube-scheduler alone | + gpusched extender |")
    print("|---|---|---|")
    print("| pods bound (of %d), worst run | %d | %d |" % (a.pods, min(r["bound"] for r in plain),
                                                           min(r["bound"] for r in ext)))
    print("| first create -> last bound | %.2f s | %.2f s |" % (med(plain, "e2e_s"), med(ext, "e2e_s")))
    print("| **pods/s end to end** | **%.1f** | **%.1f** (%+.0f %%) |" % (pp, pe, 100.0 * (pe - pp) / pp if pp else 0))
    print("| bind rate, first to last bound | %.1f /s | %.1f /s |" % (med(plain, "bind_rate"), med(ext, "bind_rate")))
    print("| creating the pods (%d threads) | %.2f s | %.2f s |" % (a.create_threads, med(plain, "create_s"),
                                                                    med(ext, "create_s")))
    print("| extender filter p50 / p99 (its /metrics) | | %s / %s |" % (ms(med(ext, "filter_p50")), ms(med(ext, "filter_p99"))))
    print("| extender prioritize p50 / p99 | | %s / %s |" % (ms(med(ext, "prioritize_p50")), ms(med(ext, "prioritize_p99"))))
    print("| extender bind p50 / p99 | | %s / %s |" % (ms(med(ext, "bind_p50")), ms(med(ext, "bind_p99"))))
    print("| extender binds bound / failed, verb errors | | %d / %d, %d |" % (
        med(ext, "binds_bound"), med(ext, "binds_failed"), med(ext, "errors")))
    print("| bound pods with the assignment record | | %d |" % med(ext, "records"))
    print("| extender peak RSS (VmHWM) | | %.1f MiB |" % med(ext, "vmhwm_mib"))
    for k in ("kube-apiserver", "etcd", "kube-scheduler", "extender"):
        cp_, ce = (med(plain, "cpu_" + k) if k != "extender" else None), med(ext, "cpu_" + k)
        print("| CPU s of %s, first create to last bound | %s | %.2f |" % (
            k, "" if cp_ is None else "%.2f" % cp_, ce))
    if bl:
        print("| direct bind load: %d binds, %d threads | | %.1f binds/s, client p50 / p99 %s / %s, "
              "server p50 / p99 %s / %s, %d errors, peak RSS %.1f MiB |" % (
                  bl["n"], a.bind_threads, bl["binds_per_s"], ms(bl["p50"]), ms(bl["p99"]),
                  ms(bl["srv_p50"]), ms(bl["srv_p99"]), bl["errors"], bl["vmhwm_mib"]))
    print()
    print("`%s` (median of %d run%s)" % (
        " ".join(["bench/bench-extender-e2e.py"] + sys.argv[1:]), a.runs, "" if a.runs == 1 else "s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
