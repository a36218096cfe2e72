#!/usr/bin/env python3
"""bench-dra.py - DRA allocation, the judge's workload at scale: the real kube-scheduler
and `gpusched schedule` side by side on the same cluster.

    bench/bench-dra.py [--nodes 500] [--gpus 8] [--pods 2000] [--variants one,pair]
                       [--qps 1000] [--runs 1] [--gpusched build/gpusched]

Starts the test control plane of tests/live (etcd + kube-apiserver from scripts/peers.sh)
and one kube-scheduler of its own (profile gs-bench-dra, percentageOfNodesToScore default,
clientConnection qps/burst --qps so the API client's rate limit is not what is measured;
--qps 50 is kube-scheduler's default), then builds --nodes fake nodes, each with one
ResourceSlice of --gpus NVIDIA H100s (driver gpu.nvidia.com, devices gpu-0..gpu-N as the
driver publishes them, tests/live/gsdra.py) and the DeviceClass gpu.nvidia.com (type ==
'gpu'). Per variant and run:
  one    --pods pods, each with its own ResourceClaim for 1 GPU;
  pair   --pods pods, each with its own claim for 2 GPUs under one PCIe root
         (matchAttribute resource.kubernetes.io/pcieRoot);
the claims are created first, then the pods as fast as the API server takes them; timed
from the first pod created to the last one bound: pods/s and claims/s. The scheduler's own
metrics (its /metrics on its secure port, read with the admin certificate) give the
attempts, the mean algorithm time per pod (scheduler_scheduling_algorithm_duration_seconds:
PreFilter to Score, binding excluded), the mean attempt with binding, and the
DynamicResources plugin's time per extension point (sampled by the scheduler).

gpusched's side: the cluster dumped with kubectl right before the pods were created (nodes,
namespaces, pods, deviceclasses, resourceclaims, resourceslices, ...) plus the pods as a
file, `gpusched schedule -o json DUMP PODS` timed with its peak RSS (wait4) - only when the
binary reports `claims` in its decisions (else a line says it was skipped).

Prints one markdown table (docs/performance.md, "DRA allocation (judge workload)").
Exit 77 when the peers are not built.
"""
import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "tests", "live"))
from controlplane import ControlPlane, PeersMissing  # noqa: E402
import gsdra  # noqa: E402

NS = "gs-bench-dra"
SCHED = "gs-bench-dra"
KEY = "gpusched.io/bench-dra"
KINDS = ("nodes,namespaces,priorityclasses,resourcequotas,poddisruptionbudgets,pods,"
         "deviceclasses,resourceclaims,resourceclaimtemplates,resourceslices")


def run_rss(argv, stdout_path):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(stdout_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    return time.monotonic() - t0, ru.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status)


def parallel(fn, items, threads=16):
    with ThreadPoolExecutor(threads) as ex:
        return list(ex.map(fn, items))


def scheduler_config(path, kubeconfig, qps):
    with open(path, "w") as f:
        f.write("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                "clientConnection:\n  kubeconfig: %s\n  qps: %d\n  burst: %d\n"
                "leaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: %s\n"
                % (json.dumps(kubeconfig), qps, qps, SCHED))


def metrics(cp, port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cp.path("admin.crt"), cp.path("admin.key"))
    with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % port, timeout=30, context=ctx) as r:
        return r.read().decode()


def sample(text, name, labels=None):
    """Sum of the samples of NAME whose labels include LABELS."""
    total = 0.0
    for m in re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M):
        lab = m.group(1) or ""
        if all('%s="%s"' % kv in lab for kv in (labels or {}).items()):
            total += float(m.group(2))
    return total


def claim(name, variant, cls):
    ex = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1 if variant == "one" else 2}
    devices = {"requests": [{"name": "gpu", "exactly": ex}]}
    if variant == "pair":
        devices["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    return {"apiVersion": gsdra.RESOURCE, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS}, "spec": {"devices": devices}}


def pod(name, claim_name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulerName": SCHED, "nodeSelector": {KEY: "1"},
                     "tolerations": [{"key": KEY, "operator": "Exists"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                   "claims": [{"name": "gpu"}]}}]}}


def has_claims(binary, work):
    """gpusched reports claims per decision (a one-node probe)."""
    node, status = gsdra.node_objects("probe-n", {KEY: "1"}, {"key": KEY, "value": "1",
                                      "effect": "NoSchedule"}, {"cpu": "8", "memory": "8Gi", "pods": "110"})
    node["status"] = status["status"]
    items = [node, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    items += gsdra.device_classes("probe") + gsdra.node_slices("probe-n", {"gpus": [{"model": "H100"}]}, 1)
    items += [claim("c", "one", "probe.gpu.nvidia.com"), pod("p", "c")]
    path = os.path.join(work, "probe.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    r = subprocess.run([binary, "schedule", "-o", "json", path], capture_output=True, text=True)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return False
    return any("claims" in d for d in doc.get("decisions", []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--variants", default="one,pair")
    ap.add_argument("--qps", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--gpusched", default=os.path.join(HERE, "..", "build", "gpusched"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gs-bench-dra.")
    binary = os.path.abspath(a.gpusched)
    gs_ok = os.access(binary, os.X_OK) and has_claims(binary, work)
    if not gs_ok:
        print("gpusched: skipped (%s)" % ("no DRA allocation yet: its schedule JSON has no claims"
                                          if os.access(binary, os.X_OK) else binary + " not built"),
              file=sys.stderr)
    try:
        cp = ControlPlane(scheduler=False)
        cp.__enter__()
    except PeersMissing as e:
        print("SKIP: %s" % e)
        return 77
    rows = []
    try:
        api = gsdra.Api(cp.env)
        cfg = os.path.join(work, "scheduler.yaml")
        scheduler_config(cfg, cp.kubeconfig["scheduler"], a.qps)
        info = cp.start_extra_scheduler(SCHED, cfg)
        t0 = time.monotonic()
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for c in gsdra.device_classes("bench"):
            api.create(gsdra.path_of(c), c)
        cls = gsdra.class_name("bench", "gpu.nvidia.com")
        taint = {"key": KEY, "value": "1", "effect": "NoSchedule"}
        names = ["dra-node-%04d" % i for i in range(a.nodes)]
        spec = {"gpus": [{"model": "H100"}] * a.gpus}

        def mk(name):
            gsdra.create_node(api, name, {KEY: "1"}, taint,
                              {"cpu": "192", "memory": "2Ti", "pods": "110"})
            for s in gsdra.node_slices(name, spec, 1):
                api.create(gsdra.path_of(s), s)
        parallel(mk, names, a.threads)
        print("%d nodes with %d GPUs each (one ResourceSlice per node) in %.1f s"
              % (a.nodes, a.gpus, time.monotonic() - t0), file=sys.stderr)
        base = "/api/v1/namespaces/%s/pods" % NS
        cbase = "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % NS
        for variant in a.variants.split(","):
            for run in range(a.runs):
                tag = "%s-%d" % (variant, run)
                claims = [claim("c-%s-%05d" % (tag, i), variant, cls) for i in range(a.pods)]
                pods = [pod("p-%s-%05d" % (tag, i), c["metadata"]["name"]) for i, c in enumerate(claims)]
                parallel(lambda c: api.create(cbase, c), claims, a.threads)
                dump = os.path.join(work, "dump-%s.json" % tag)
                podsf = os.path.join(work, "pods-%s.json" % tag)
                if gs_ok:
                    r = subprocess.run([cp.env["GS_KUBECTL"], "--kubeconfig", cp.kubeconfig["admin"],
                                        "get", KINDS, "-A", "-o", "json"], capture_output=True, text=True,
                                       check=True)
                    with open(dump, "w") as f:
                        f.write(r.stdout)
                    with open(podsf, "w") as f:
                        json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, f)
                m0 = metrics(cp, info["port"])
                t0 = time.monotonic()
                parallel(lambda p: api.create(base, p), pods, a.threads)
                t_created = time.monotonic() - t0
                bound = 0
                deadline = time.monotonic() + 1800
                while time.monotonic() < deadline:
                    items = api.get(base + "?fieldSelector=spec.nodeName!%3D")["items"]
                    bound = sum(1 for p in items if p["metadata"]["name"].startswith("p-%s-" % tag))
                    if bound >= a.pods:
                        break
                    time.sleep(0.2)
                wall = time.monotonic() - t0
                m1 = metrics(cp, info["port"])

                def delta(name, labels=None):
                    return sample(m1, name, labels) - sample(m0, name, labels)
                attempts = delta("scheduler_schedule_attempts_total")
                sched = delta("scheduler_schedule_attempts_total", {"result": "scheduled"})
                cyc_n = delta("scheduler_scheduling_algorithm_duration_seconds_count")
                cyc_s = delta("scheduler_scheduling_algorithm_duration_seconds_sum")
                att_n = delta("scheduler_scheduling_attempt_duration_seconds_count")
                att_s = delta("scheduler_scheduling_attempt_duration_seconds_sum")
                dra = {}
                for ep in ("PreFilter", "Filter", "Score", "Reserve", "PreBind"):
                    n = delta("scheduler_plugin_execution_duration_seconds_count",
                              {"plugin": "DynamicResources", "extension_point": ep})
                    s = delta("scheduler_plugin_execution_duration_seconds_sum",
                              {"plugin": "DynamicResources", "extension_point": ep})
                    if n:
                        dra[ep] = s / n
                row = {"variant": variant, "run": run + 1, "pods": a.pods, "bound": bound,
                       "wall": wall, "create": t_created, "attempts": attempts, "scheduled": sched,
                       "cycle_ms": 1000 * cyc_s / cyc_n if cyc_n else float("nan"),
                       "attempt_ms": 1000 * att_s / att_n if att_n else float("nan"), "dra": dra}
                if gs_ok:
                    gt, grss, grc = run_rss([binary, "schedule", "-o", "json", dump, podsf],
                                            os.path.join(work, "gpusched-%s.json" % tag))
                    row.update(gs_s=gt, gs_rss=grss, gs_rc=grc)
                rows.append(row)
                print("%s run %d: %d/%d bound in %.2f s (created in %.2f s), %d attempts, algorithm %.2f ms, "
                      "attempt with binding %.2f ms, DynamicResources (sampled) %s" % (
                          variant, run + 1, bound, a.pods, wall, t_created, attempts,
                          row["cycle_ms"], row["attempt_ms"], {k: "%.3f ms" % (1000 * v) for k, v in dra.items()}),
                      file=sys.stderr)
                # clean for the next run: pods, then the claims (no controller removes the
                # scheduler's finalizer)
                parallel(lambda p: api.delete(base + "/" + p["metadata"]["name"],
                                              body={"gracePeriodSeconds": 0}), pods, a.threads)

                def drop(c):
                    path = cbase + "/" + c["metadata"]["name"]
                    api.patch(path, {"metadata": {"finalizers": None}})
                    api.delete(path)
                parallel(drop, claims, a.threads)
    finally:
        cp.__exit__(None, None, None)
    per = {"one": 1, "pair": 2}
    print("| workload (%d nodes x %d GPUs) | pods | kube-scheduler: first create -> last bound | pods/s "
          "| claims/s | devices/s | attempts | mean algorithm time (metrics) | gpusched schedule | its peak RSS |"
          % (a.nodes, a.gpus))
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        w = r["wall"]
        gs = ("%.2f s (exit %d)" % (r["gs_s"], r["gs_rc"]), "%.0f MiB" % r["gs_rss"]) if "gs_s" in r \
            else ("pending", "pending")
        print("| %s, run %d (qps %d) | %d (%d bound) | %.2f s | %.1f | %.1f | %.1f | %d | %.2f ms | %s | %s |" % (
            "1 GPU per claim" if r["variant"] == "one" else "2 GPUs per claim, matchAttribute pcieRoot",
            r["run"], a.qps, r["pods"], r["bound"], w, r["bound"] / w, r["bound"] / w,
            per[r["variant"]] * r["bound"] / w, r["attempts"], r["cycle_ms"], gs[0], gs[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
