#!/usr/bin/env python3
"""extender-e2e-test.py - `gpusched extender` behind the real kube-scheduler, end to end.

Run as `controlplane.py exec STATE -- python3 extender-e2e-test.py GPUSCHED` (ctest
live/extender-e2e, fixture gs_live); without a plane it skips (77). The extender runs as a
process on a loopback port (plain HTTP, admin kubeconfig); a second kube-scheduler
(`controlplane.py scheduler`, profile `gpusched-e2e-<tag>`) calls it with all four verbs,
weight 5, nodeCacheCapable, ignorable false, managedResources open-gpu-share's
`alibabacloud.com/gpu-milli` (a node total kube-scheduler counts) and `nvidia.com/mig-1g.10gb`.
Nodes of the run only (label and taint of its tag, capacity through the status subresource):

  share-a (2 GPUs), share-b (1 GPU)   openb: alibabacloud.com/gpu-count, gpu-milli
  mig                                 A100-SXM4-80GB, MIG mixed, 7 x nvidia.com/mig-1g.10gb
  whole                               H100, 2 nvidia.com/gpu
  load-0..3 (4 GPUs each)             openb, for the burst

1. two 500-milli pods share one GPU (same device index in their gpusched.io/assignment
   records, 500 milli each); a third goes to another GPU or node; every record names the
   pod's UID and its spec.nodeName;
2. three MIG pods get three distinct instances (placement starts) of the one GPU;
3. two whole-GPU pods (not managed: kube-scheduler's default binder) are bound, one GPU each;
4. a burst of share pods (300 or 400 milli, a seeded mix: 4 per GPU by NodeResourcesFit's
   node total for 400s, but only 2 fit a device) on the load nodes: per device the recorded
   milli never exceed 1000, indices are within the node's inventory, every bound pod has
   its record;
5. during the burst the extender is stopped (SIGTERM, exit 0) and started again on the same
   port: the pods bound before keep their records, the new process counts them
   (`gpusched_extender_state_pods{source="recorded"}`), its filter for a 600-milli pod fails
   exactly the share node whose devices the records fill, and a real 600-milli pod goes to
   the other one;
6. extender down: a new pod stays Pending with a FailedScheduling event naming
   http://127.0.0.1:PORT/filter, and is bound (with its record) once the extender is back.

7. GPU-aware preemption (PriorityClasses low 100 and high 1000; victims have grace 0, as
   no kubelet runs; the test plays the kubelet's status.startTime): (a) a node's total is
   short: kube-scheduler's dry run and the preempt verb agree, the low share is deleted and
   the high one takes its GPU; (b) the dry run picks a victim that frees too little on its
   device: the preempt verb adds the other share of that GPU, the high share gets that GPU
   and the share on the other GPU stays; (c) only devices are short (the node total fits):
   no victim, nothing preempted, the pod stays pending with the scheduler's event (the
   documented limit).

Exit 0 pass, 1 fail, 77 skipped. GS_E2E_BURST (default 200) sets the burst's size,
GS_E2E_SEED its mix.
"""

import json
import os
import random
import sys
import threading
import time

sys.dont_write_bytecode = True
import gslive  # noqa: E402
from gslive import bound, devices, kubectl, log, metric, must, record, wait_for  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check
FAILS = CHECKS.fails
ANN = gslive.ANN

BIN = os.path.abspath(gslive.usage("GPUSCHED"))
gslive.plane("GS_KUBECONFIG_ADMIN", "GS_KUBECTL", "GS_KUBECONFIG_SCHEDULER")
RUN = gslive.ExtenderRun(BIN, "gs-e2e-ext-", "gpusched-e2e-", "gpusched.io/e2e-ext")
TAG, NS, URL = RUN.tag, RUN.ns, RUN.url
BURST = int(os.environ.get("GS_E2E_BURST", "200"))
SEED = int(os.environ.get("GS_E2E_SEED", str(random.randrange(1 << 30))))
PCS = []        # the run's PriorityClasses
NODES = RUN.nodes  # name -> pool
make_node = RUN.make_node
openb_node = RUN.openb_node
create = RUN.create
pods_now = RUN.pods_now


def req(method, path, body=None):
    return gslive.req(RUN.port, method, path, body)


# ---------------------------------------------------------------- objects
def pod(name, pool, limits, annotations=None, priority_class=None):
    spec_extra = {}
    if priority_class:
        # no kubelet here: a victim's deletion completes at once only with grace 0
        spec_extra = {"priorityClassName": priority_class, "terminationGracePeriodSeconds": 0}
    return RUN.pod(name, pool, limits, {"annotations": annotations or {}}, spec_extra)


def share_limits(milli):
    return {"alibabacloud.com/gpu-milli": str(milli), "cpu": "10m", "memory": "16Mi"}


def wait_bound(names, timeout):
    def all_bound():
        ps = pods_now()
        return ps if all(bound(ps.get(n, {"spec": {}})) for n in names) else None
    return wait_for(all_bound, timeout) or pods_now()

def check_records(ps, names, what, quiet=False):
    """Every named pod bound, with a record of its UID and its node (quiet: one line)."""
    bad = []
    for n in names:
        p = ps.get(n)
        rec = record(p) if p else None
        ok = bool(p and bound(p) and rec is not None and rec.get("node") == bound(p)
                  and rec.get("uid") == p["metadata"]["uid"])
        if not ok:
            bad.append((n, p and bound(p), rec and (rec.get("node"), rec.get("uid"))))
        if not quiet:
            check(ok, "%s: %s bound to %s, its record names its UID and that node"
                  % (what, n, p and bound(p)))
    if quiet:
        check(not bad, "%s: all %d pods bound, each record names its UID and spec.nodeName%s"
              % (what, len(names), (": " + str(bad[:5])) if bad else ""))
    return not bad


def usage(ps, pool):
    """node -> gpu index -> [milli, ...], from the records of the bound pods of a pool."""
    out = {}
    for p in ps.values():
        node = bound(p)
        rec = record(p)
        if not node or NODES.get(node) != pool or not rec:
            continue
        for d in devices(rec):
            out.setdefault(node, {}).setdefault(d["gpu"], []).append(d.get("milli", 0))
    return out


def events_failed(name, needle):
    r = kubectl("get", "events", "-n", NS, "--field-selector", "involvedObject.name=" + name,
                "-o", "json")
    if r.returncode != 0:
        return None
    for e in json.loads(r.stdout)["items"]:
        if e.get("reason") == "FailedScheduling" and needle in e.get("message", ""):
            return e["message"]
    return None


# ---------------------------------------------------------------- the checks
def run(work):
    must(kubectl("create", "namespace", NS), "create namespace")
    share_a = openb_node("share-a", "share", 2)
    share_b = openb_node("share-b", "share", 1)
    mig = make_node("mig", "mig", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                   "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "1"},
                    {"nvidia.com/mig-1g.10gb": "7"})
    whole = make_node("whole", "whole", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                         "nvidia.com/gpu.count": "2"}, {"nvidia.com/gpu": "2"})
    loads = [openb_node("load-%d" % i, "load", 4) for i in range(4)]
    log("nodes created")

    info = RUN.start(work, check)
    if not info:
        return
    log("extender and scheduler up")

    # 1. two halves share a GPU, a third goes elsewhere
    create(pod("half-0", "share", share_limits(500)))
    ps = wait_bound(["half-0"], 60)
    create(pod("half-1", "share", share_limits(500)))
    ps = wait_bound(["half-1"], 60)
    create(pod("half-2", "share", share_limits(500)))
    ps = wait_bound(["half-0", "half-1", "half-2"], 60)
    if check_records(ps, ["half-0", "half-1", "half-2"], "1. shares"):
        r = [record(ps[n]) for n in ("half-0", "half-1", "half-2")]
        d = [devices(x) for x in r]
        check(all(len(x) == 1 and x[0].get("milli") == 500 for x in d) and
              all(x.get("kind") == "share" for x in r),
              "1. each record: one device, 500 milli, kind share: %s" % d)
        places = [(x["node"], y[0]["gpu"]) for x, y in zip(r, d)]
        pairs = [(i, j) for i in range(3) for j in range(i + 1, 3) if places[i] == places[j]]
        check(len(pairs) == 1, "1. exactly two of the three halves share one GPU, the third "
              "is elsewhere: %s" % places)
        check(places[0] == places[1], "1. the first two (placed one after the other, best fit) "
              "share a GPU: %s" % places[:2])
    log("check 1 done")

    # 2. MIG instances
    create(*[pod("mig-%d" % i, "mig", {"nvidia.com/mig-1g.10gb": "1"}) for i in range(3)])
    ps = wait_bound(["mig-0", "mig-1", "mig-2"], 60)
    if check_records(ps, ["mig-0", "mig-1", "mig-2"], "2. MIG"):
        ds = [devices(record(ps["mig-%d" % i])) for i in range(3)]
        inst = [(d[0]["gpu"], d[0].get("mig", {}).get("start")) for d in ds if len(d) == 1]
        check(len(inst) == 3 and all(s is not None for _, s in inst) and len(set(inst)) == 3,
              "2. three distinct MIG instances (gpu, start): %s" % inst)
        check(all(d[0].get("mig", {}).get("profile") == "1g.10gb"
                  and d[0]["mig"].get("resource") == "nvidia.com/mig-1g.10gb" for d in ds),
              "2. records name profile 1g.10gb and its resource: %s" % ds)
    log("check 2 done")

    # 3. whole GPUs through kube-scheduler's default path
    create(*[pod("whole-%d" % i, "whole", {"nvidia.com/gpu": "1"}) for i in range(2)])
    ps = wait_bound(["whole-0", "whole-1"], 60)
    check(all(bound(ps.get("whole-%d" % i, {"spec": {}})) == whole for i in range(2)),
          "3. two whole-GPU pods bound to %s" % whole)
    create(pod("whole-2", "whole", {"nvidia.com/gpu": "1"}))
    time.sleep(3)
    check(not bound(pods_now()["whole-2"]), "3. a third whole GPU pod stays pending (2 GPUs)")
    log("check 3 done")

    # 4 + 5. a burst on the load nodes, the extender restarted in the middle of it
    rnd = random.Random(SEED)
    sizes = [rnd.choice((300, 400)) for _ in range(BURST)]
    burst = ["load-%03d" % i for i in range(BURST)]
    log("burst of %d (seed %d): %d x 400, %d x 300" % (BURST, SEED, sizes.count(400),
                                                        sizes.count(300)))

    # SIGTERM the extender from a thread once 10 binds of the burst are done (its own
    # counter, polled every 10 ms): the burst is then still going
    st, body = req("GET", "/metrics")
    base = metric(body.decode(), "gpusched_extender_binds_total", '{result="bound"}') or 0
    stopped = {}

    def stopper():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                _, b = req("GET", "/metrics")
                v = metric(b.decode(), "gpusched_extender_binds_total", '{result="bound"}') or 0
            except OSError:
                v = 0
            if v >= base + 10:
                stopped["binds"] = v - base
                stopped["rc"] = RUN.ext.stop()
                return
            time.sleep(0.01)
    th = threading.Thread(target=stopper, daemon=True)
    th.start()
    create(*[pod(n, "load", share_limits(s)) for n, s in zip(burst, sizes)])
    th.join(70)
    rc = stopped.get("rc")
    check(rc == 0, "5. SIGTERM after %s binds of the burst: the extender exits 0 (%s)"
          % (stopped.get("binds"), rc))
    before = pods_now()
    bound_before = {n: (bound(p), (p["metadata"].get("annotations") or {}).get(ANN))
                    for n, p in before.items() if bound(p)}
    n_rec_before = sum(1 for _, a in bound_before.values() if a)
    nb_stop = sum(1 for n in burst if n in bound_before)
    log("extender stopped with %d pods bound (%d with records, %d of the burst)"
        % (len(bound_before), n_rec_before, nb_stop))
    time.sleep(2)
    RUN.start_extender()
    check(RUN.ext.wait_ready(), "5. the extender starts again on %s and is ready" % URL)
    st, body = req("GET", "/metrics")
    text = body.decode()
    rec_m = metric(text, "gpusched_extender_state_pods", '{source="recorded"}')
    check(rec_m is not None and rec_m >= n_rec_before,
          "5. the new process counts the recorded pods: state_pods{recorded} %s >= %d"
          % (rec_m, n_rec_before))
    # the burst goes on while the new process starts: kube-scheduler binds through it as
    # soon as it is ready, so it may hold reservations of its own binds (done, or in flight
    # on its 16 workers), never one from before
    resv = metric(text, "gpusched_extender_reservations")
    binds = metric(text, "gpusched_extender_requests_total", '{verb="bind",result="ok"}') or 0
    binds += metric(text, "gpusched_extender_requests_total", '{verb="bind",result="error"}') or 0
    check(resv is not None and resv <= binds + 16,
          "5. the new process holds no reservation from before: %s reservations, %d binds "
          "of its own answered (plus at most 16 in flight)" % (resv, binds))

    # the new process's filter for 600 milli: the share node whose devices the records fill
    # fails, the other passes
    ps = pods_now()
    use = usage(ps, "share")
    free = {n: max(1000 - sum(use.get(n, {}).get(g, [])) for g in range(gpus))
            for n, gpus in ((share_a, 2), (share_b, 1))}
    probe = pod("probe", "share", share_limits(600))
    probe["metadata"]["uid"] = "00000000-0000-4000-8000-%012x" % int(TAG, 16)
    probe["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    st, body = req("POST", "/filter", {"Pod": probe, "Nodes": None,
                                       "NodeNames": [share_a, share_b]})
    fr = json.loads(body) if st == 200 else {}
    expect_pass = sorted(n for n in (share_a, share_b) if free[n] >= 600)
    check(st == 200 and sorted(fr.get("NodeNames") or []) == expect_pass
          and len(expect_pass) == 1
          and sorted(fr.get("FailedNodes") or {}) == sorted(set((share_a, share_b)) - set(expect_pass)),
          "5. after the restart, filter of a 600-milli pod passes %s only (largest free per "
          "node from the records: %s): %s" % (expect_pass, free, fr))
    create(pod("big-600", "share", share_limits(600)))
    ps = wait_bound(["big-600"], 60)
    check(bound(ps.get("big-600", {"spec": {}})) in expect_pass,
          "5. a real 600-milli pod goes to %s: %s" % (expect_pass, bound(ps.get("big-600", {"spec": {}}))))
    log("check 5 (restart) done")

    # the burst settles: no pod bound for 6 s
    def settled():
        seen = []
        for _ in range(4):
            ps = pods_now()
            seen.append(sum(1 for p in ps.values() if bound(p)))
            time.sleep(2)
        return ps if len(set(seen)) == 1 else None
    ps = wait_for(settled, 60, 0)
    ps = ps or pods_now()
    after = {n: (bound(p), (p["metadata"].get("annotations") or {}).get(ANN)) for n, p in ps.items() if bound(p)}
    check(all(after.get(n) == v for n, v in bound_before.items()),
          "5. every pod bound before the restart keeps its node and record: %s"
          % [n for n, v in bound_before.items() if after.get(n) != v][:5])
    nb = [n for n in burst if bound(ps.get(n, {"spec": {}}))]
    check_records(ps, nb, "4. burst", quiet=True)
    use = usage(ps, "load")
    over = {(n, g): m for n, gs in use.items() for g, m in gs.items() if sum(m) > 1000}
    check(not over, "4. no device over 1000 milli: %s" % over)
    bad_idx = {(n, g) for n, gs in use.items() for g in gs if not 0 <= g < 4}
    check(not bad_idx, "4. every GPU index within the node's inventory (4 GPUs): %s" % bad_idx)
    for n in loads:
        got = sum(sum(m) for m in use.get(n, {}).values())
        want = sum(int(record(p)["containers"][0]["devices"][0]["milli"]) if record(p) else 0
                   for p in ps.values() if bound(p) == n)
        check(got == want and got <= 4000 and got == sum(
            int(p["spec"]["containers"][0]["resources"]["limits"]["alibabacloud.com/gpu-milli"])
            for p in ps.values() if bound(p) == n),
            "4. %s: recorded milli %d = the bound pods' requests, <= 4000" % (n, got))
    pend = [n for n in burst if not bound(ps.get(n, {"spec": {}}))]
    freel = sorted(1000 - sum(m) for n in loads for m in
                   [use.get(n, {}).get(g, []) for g in range(4)])
    log("burst: %d bound, %d pending; free milli per GPU %s" % (len(nb), len(pend), freel))
    check(nb_stop < len(nb) <= 16 * 3, "4. %d burst pods bound, %d of them after the restart "
          "(at most 3 per GPU)" % (len(nb), len(nb) - nb_stop))
    if pend:
        smallest = min(sizes[burst.index(n)] for n in pend)
        stuck = [f for f in freel if f >= smallest]
        print("info  4. pending pods that a device could still take: %d GPU(s) with >= %d free"
              % (len(stuck), smallest))
    log("check 4 done")
    if pend:  # the burst's pending pods would be retried on every event from here on
        kubectl("delete", "pods", "-n", NS, "--force", "--grace-period=0", "--wait=false", *pend)

    # 6. extender down: pending with the scheduler's event, then bound
    rc = RUN.ext.stop()
    check(rc == 0, "6. SIGTERM: exit 0 (%s)" % rc)
    create(pod("late", "share", share_limits(100)))
    msg = wait_for(lambda: events_failed("late", URL + "/filter"), 40)
    check(bool(msg) and "connection refused" in msg,
          "6. extender down: FailedScheduling names %s/filter: %r" % (URL, msg))
    check(not bound(pods_now()["late"]), "6. extender down: the pod stays pending")
    RUN.start_extender()
    check(RUN.ext.wait_ready(), "6. the extender is back")
    ps = wait_bound(["late"], 60)
    check_records(ps, ["late"], "6. back")
    log("check 6 done")

    preemption()
    log("check 7 done")

    with open(info["log"], errors="replace") as f:
        slog = f.read()
    errs = [l for l in slog.splitlines() if "forbidden" in l.lower()]
    check(not errs, "the scheduler logs no forbidden: %s" % errs[:2])


def kubelet_started(name, minute):
    """Play the kubelet: Running with a start time (kube-scheduler's reprieve order and the
    extender's both read status.startTime)."""
    must(kubectl("patch", "pod", name, "-n", NS, "--subresource=status", "--type=merge", "-p",
                 json.dumps({"status": {"phase": "Running",
                                        "startTime": "2026-01-01T00:%02d:00Z" % minute}})),
         "status of " + name)


def preemption():
    """7. GPU-aware preemption through kube-scheduler's DefaultPreemption and the preempt verb."""
    low, high = "gs-e2e-low-" + TAG, "gs-e2e-high-" + TAG
    for pc, v in ((low, 100), (high, 1000)):
        must(kubectl("create", "priorityclass", pc, "--value=%d" % v), "priorityclass " + pc)
        PCS.append(pc)
    a = openb_node("prio-a", "prio-a", 1)
    b = openb_node("prio-b", "prio-b", 2)
    c = openb_node("prio-c", "prio-c", 2)

    # 7a. the node total is short: kube-scheduler's own dry run finds the victim, the
    # extender agrees, the high-priority share takes its device
    create(pod("low-a", "prio-a", share_limits(600), priority_class=low))
    wait_bound(["low-a"], 60)
    kubelet_started("low-a", 0)
    create(pod("high-a", "prio-a", share_limits(600), priority_class=high))
    ps = wait_for(lambda: (lambda q: q if "low-a" not in q and bound(q.get("high-a", {"spec": {}}))
                           else None)(pods_now()), 60) or pods_now()
    check("low-a" not in ps, "7a. the low-priority share on %s is preempted (deleted)" % a)
    if check_records(ps, ["high-a"], "7a. preemptor"):
        d = devices(record(ps["high-a"]))
        check(bound(ps["high-a"]) == a and len(d) == 1 and d[0]["gpu"] == 0
              and d[0].get("milli") == 600,
              "7a. the preemptor holds GPU 0 of %s, 600 milli: %s" % (a, d))

    # 7b. the node total is short but kube-scheduler's victim (the latest started) does not
    # free one device: the preempt verb adds the low-priority share that does
    for n, milli, minute in (("b-2", 600, 1), ("b-0", 500, 2), ("b-1", 500, 3)):
        create(pod(n, "prio-b", share_limits(milli), priority_class=low))
        wait_bound([n], 60)
        kubelet_started(n, minute)
    ps = pods_now()
    gpu_of = {n: devices(record(ps[n]))[0]["gpu"] for n in ("b-0", "b-1", "b-2")
              if record(ps.get(n, {"metadata": {}}))}
    if not check(len(gpu_of) == 3 and gpu_of["b-0"] == gpu_of["b-1"] != gpu_of["b-2"],
                 "7b. set-up: b-0 and b-1 (500 each) share one GPU of %s, b-2 (600) the other: %s"
                 % (b, gpu_of)):
        return
    create(pod("high-b", "prio-b", share_limits(600), priority_class=high))
    ps = wait_for(lambda: (lambda q: q if bound(q.get("high-b", {"spec": {}})) else None)(pods_now()),
                  60) or pods_now()
    gone = sorted(n for n in ("b-0", "b-1", "b-2") if n not in ps)
    check(gone == ["b-0", "b-1"], "7b. the two shares of one GPU are preempted, b-2 stays "
          "(kube-scheduler's dry run alone picks b-1, which frees 500 of the 600 needed): gone %s"
          % gone)
    if check_records(ps, ["high-b"], "7b. preemptor"):
        d = devices(record(ps["high-b"]))
        check(len(d) == 1 and d[0]["gpu"] == gpu_of["b-0"] and d[0].get("milli") == 600,
              "7b. the preemptor holds the freed GPU %d: %s" % (gpu_of["b-0"], d))

    # 7c. the documented limit: the node total suffices (kube-scheduler sees no shortage),
    # no single device has room; the dry run finds no victim, so nothing is preempted
    for n, minute in (("c-0", 4), ("c-1", 5)):
        create(pod(n, "prio-c", share_limits(600), priority_class=low))
        wait_bound([n], 60)
        kubelet_started(n, minute)
    create(pod("high-c", "prio-c", share_limits(600), priority_class=high))
    msg = wait_for(lambda: events_failed("high-c", "preemption"), 30)
    ps = pods_now()
    check(not bound(ps["high-c"]) and "c-0" in ps and "c-1" in ps,
          "7c. fragmentation only (1200 of 2000 milli used, 400 free per GPU): the preemptor "
          "stays pending and nothing is preempted (documented)")
    check(bool(msg), "7c. its FailedScheduling event reports the preemption attempt: %r" % msg)


def main():
    def cleanup(_work):
        RUN.report(FAILS)
        RUN.cleanup(PCS)
    gslive.main("extender-e2e-test", 300, run, cleanup, CHECKS, (RuntimeError, TimeoutError))
    log("end (seed %d)" % SEED)
    return CHECKS.done("ok: the extender behind the real kube-scheduler: shares, MIG, whole "
                       "GPUs, a burst, a restart and an outage")


if __name__ == "__main__":
    sys.exit(main())
