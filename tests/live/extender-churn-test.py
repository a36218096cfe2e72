#!/usr/bin/env python3
"""extender-churn-test.py - seeded churn through `gpusched extender` and the real kube-scheduler:
the assignments the extender records always equal what the offline `gpusched schedule` holds.

Run as `controlplane.py exec STATE -- python3 extender-churn-test.py GPUSCHED` (ctest
live/extender-churn, fixture gs_live); without a plane it skips (77). As live/extender-e2e:
the extender as a process on a loopback port, a second kube-scheduler (`controlplane.py
scheduler`, profile `gpusched-churn-<tag>`) calling it (all four verbs, nodeCacheCapable,
managedResources `alibabacloud.com/gpu-milli` and `nvidia.com/mig-1g.10gb`). Nodes of the run
(label and taint of its tag, capacity through the status subresource):

  share-1, share-2, share-4   openb, 1, 2 and 4 GPUs (alibabacloud.com/gpu-count, gpu-milli)
  mig                         A100-SXM4-80GB, MIG mixed: 4 x mig-1g.10gb, 1 x mig-3g.40gb
  whole                       H100, 2 nvidia.com/gpu (not managed: the default binder)

Each of GS_CHURN_ROUNDS rounds (default 6; GS_CHURN_SEED, printed) creates a random batch
of pods (shares of 100..1000 milli, MIG 1g.10gb, whole GPUs), force-deletes a random
subset of the bound ones (and a few pending ones), waits until the run is quiet (no pod
bound, created or gone for 3 s), then checks:

  a. every bound managed pod has a gpusched.io/assignment record naming its UID and node;
  b. no device is over-committed by the records (milli <= 1000 per GPU, distinct MIG
     instances), every index within the node's inventory;
  c. `gpusched schedule --all -o json -n NS` on the cluster as it is: every bound pod of the
     run holds exactly the devices its record names (gpu, milli, MIG profile and start),
     whole-GPU pods distinct devices, and no warning names the run's pods or nodes;
  d. every pending GPU pod of the run is unschedulable offline too (a pod the offline run
     would schedule is given up to 20 s for kube-scheduler to retry it before it fails).

Exit 0 pass, 1 fail, 77 skipped.
"""
import json
import os
import random
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True
import gslive  # noqa: E402
from gslive import bound, kubectl, log, must, record, wait_for  # noqa: E402

CHECKS = gslive.Checks(quiet=True)    # the failures only: a round checks hundreds of pods
check = CHECKS.check
FAILS = CHECKS.fails

BIN = os.path.abspath(gslive.usage("GPUSCHED"))
ADMIN, _, _ = gslive.plane("GS_KUBECONFIG_ADMIN", "GS_KUBECTL", "GS_KUBECONFIG_SCHEDULER")
RUN = gslive.ExtenderRun(BIN, "gs-churn-", "gpusched-churn-", "gpusched.io/churn")
NS = RUN.ns
ROUNDS = int(os.environ.get("GS_CHURN_ROUNDS", "6"))
SEED = int(os.environ.get("GS_CHURN_SEED", str(random.randrange(1 << 30))))
NODES = {}  # name -> (pool, number of GPUs)
FIG = {"bound": 0, "compared": 0, "pending": 0, "retried": 0, "deleted": 0, "created": 0}
pods_now = RUN.pods_now


# ---------------------------------------------------------------- objects
def make_node(short, pool, gpus, labels, resources):
    NODES[RUN.make_node(short, pool, labels, resources)] = (pool, gpus)


def openb_node(short, gpus):
    NODES[RUN.openb_node(short, "share", gpus)] = ("share", gpus)


def pod(name, pool, limits):
    return RUN.pod(name, pool, dict(limits, cpu="10m", memory="16Mi"),
                   {"labels": {"pool": pool}})

def pool(p):
    return p["metadata"].get("labels", {}).get("pool")


def rec_devices(rec):
    """The record's devices as comparable tuples (gpu, milli, MIG profile, MIG start)."""
    out = []
    for c in rec.get("containers", []):
        for d in c.get("devices", []):
            m = d.get("mig")
            out.append((d["gpu"], None if m else d.get("milli", 0),
                        m and m.get("profile"), m and m.get("start")))
    return sorted(out, key=repr)


def offline_devices(dec):
    return sorted(((d["gpu"], d["milli"], d["mig"], d.get("migStart"))
                   for d in dec.get("devices") or []), key=repr)


# ---------------------------------------------------------------- rounds
def quiet(hold=3.0, timeout=60):
    """Pods of the run once nothing changed for `hold` seconds: no pod bound, created or gone,
    no bind half done (a record without nodeName)."""
    last, since, deadline = None, time.monotonic(), time.monotonic() + timeout
    while True:
        ps = pods_now()
        sig = sorted((n, bound(p), p["metadata"].get("deletionTimestamp") is not None)
                     for n, p in ps.items())
        half = any(record(p) and not bound(p) for p in ps.values())
        now = time.monotonic()
        if sig != last or half:
            last, since = sig, now
        elif now - since >= hold:
            return ps
        if now > deadline:
            log("not quiet after %d s; checking as it is" % timeout)
            return ps
        time.sleep(0.5)


def offline():
    r = subprocess.run([BIN, "schedule", "--all", "-o", "json", "--kubeconfig", ADMIN,
                        "-n", NS], capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 1):
        raise RuntimeError("gpusched schedule: exit %d: %s" % (r.returncode, r.stderr[-800:]))
    doc = json.loads(r.stdout)
    return {d["name"]: d for d in doc["decisions"] if d["namespace"] == NS}, doc["warnings"]


def check_round(rnd, ps):
    what = "round %d" % rnd
    nfails = len(FAILS)
    boundp = {n: p for n, p in ps.items() if bound(p)}
    managed = {n: p for n, p in boundp.items() if pool(p) in ("share", "mig")}
    # a. records
    bad = [(n, bound(p), record(p) and (record(p).get("node"), record(p).get("uid")))
           for n, p in managed.items()
           if not record(p) or record(p).get("uid") != p["metadata"]["uid"]
           or record(p).get("node") != bound(p)]
    check(not bad, "%s a: every bound managed pod has a record of its UID and node: %s"
          % (what, bad[:5]))
    # b. over-commit by the records
    milli, inst, idx = {}, {}, []
    for n, p in managed.items():
        rec = record(p)
        if not rec:
            continue
        for g, m, prof, start in rec_devices(rec):
            if not 0 <= g < NODES[bound(p)][1]:
                idx.append((n, g))
            if prof:
                inst.setdefault((bound(p), g, start), []).append(n)
            else:
                milli.setdefault((bound(p), g), []).append(m)
    over = {k: v for k, v in milli.items() if sum(v) > 1000}
    dup = {k: v for k, v in inst.items() if len(v) > 1}
    check(not over and not dup and not idx,
          "%s b: no device over-committed by the records: over 1000 milli %s, MIG instance "
          "shared %s, index out of the inventory %s" % (what, over, dup, idx))
    # c. the offline engine holds what the records name
    dec, warns = offline()
    ours = [w for w in warns if NS in w or any(n in w for n in NODES)]
    check(not ours, "%s c: no warning of the offline run on the run's pods or nodes: %s"
          % (what, ours[:3]))
    diff = []
    for n, p in boundp.items():
        d = dec.get(n)
        if not d or d["result"] != "bound" or d["node"] != bound(p):
            diff.append((n, bound(p), d and (d["result"], d["node"])))
        elif n in managed and record(p):
            want, got = rec_devices(record(p)), offline_devices(d)
            if want != got:
                diff.append((n, bound(p), "record", want, "offline", got))
    check(not diff, "%s c: offline, each bound pod is bound where it is and holds exactly "
          "its record's devices: %s" % (what, diff[:4]))
    FIG["compared"] += len(managed)
    whole = [(bound(p), g) for n, p in boundp.items() if pool(p) == "whole" and n in dec
             for g, _, _, _ in offline_devices(dec[n])]
    check(len(whole) == len(set(whole)) == sum(1 for p in boundp.values() if pool(p) == "whole"),
          "%s c: whole-GPU pods hold one distinct GPU each offline: %s" % (what, whole))
    # d. pending pods are unschedulable offline too
    pending = [n for n, p in ps.items() if not bound(p)]
    sched = [n for n in pending if dec.get(n, {}).get("result") != "unschedulable"]
    if sched:
        log("%s: offline would place %s; waiting for kube-scheduler to retry"
            % (what, [(n, dec.get(n, {}).get("result"), dec.get(n, {}).get("node")) for n in sched]))
        FIG["retried"] += 1

        def settled():
            ps2 = quiet()
            dec2, _ = offline()
            left = [n for n, p in ps2.items() if not bound(p)
                    and dec2.get(n, {}).get("result") != "unschedulable"]
            return (ps2, dec2, left) if not left else None
        got = wait_for(settled, 20, 0)
        if got:
            check_round(rnd, got[0])
            return
        ps2 = pods_now()
        dec2, _ = offline()
        left = [(n, dec2.get(n, {}).get("result"), dec2.get(n, {}).get("node"),
                 offline_devices(dec2.get(n, {})), pool(p)) for n, p in ps2.items()
                if not bound(p) and dec2.get(n, {}).get("result") != "unschedulable"]
        check(not left, "%s d: pending pods that the offline run would schedule after 20 s: %s"
              % (what, left[:4]))
    FIG["bound"] += len(boundp)
    FIG["pending"] += len(pending)
    log("%s: %d bound (%d with records), %d pending; %s"
        % (what, len(boundp), len(managed), len(pending),
           "offline agrees" if len(FAILS) == nfails else "%d failure(s)" % (len(FAILS) - nfails)))


def run(work):
    must(kubectl("create", "namespace", NS), "create namespace")
    openb_node("share-1", 1)
    openb_node("share-2", 2)
    openb_node("share-4", 4)
    make_node("mig", "mig", 1, {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "1"},
              {"nvidia.com/mig-1g.10gb": "4", "nvidia.com/mig-3g.40gb": "1"})
    make_node("whole", "whole", 2, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                    "nvidia.com/gpu.count": "2"}, {"nvidia.com/gpu": "2"})
    info = RUN.start(work, check)
    if not info:
        return
    log("nodes, extender and scheduler up; seed %d, %d rounds" % (SEED, ROUNDS))

    rnd = random.Random(SEED)
    seq = 0
    for r in range(1, ROUNDS + 1):
        ps = pods_now()
        gone = sorted(n for n, p in ps.items() if (rnd.random() < 0.5 if bound(p)
                                                    else rnd.random() < 0.2))
        batch = []
        for _ in range(rnd.randint(9, 14)):
            k = rnd.random()
            if k < 0.65:
                m = rnd.randrange(100, 1001, 100)
                batch.append(pod("s%02d-%03d-%d" % (r, seq, m), "share",
                                 {"alibabacloud.com/gpu-milli": str(m)}))
            elif k < 0.85:
                batch.append(pod("m%02d-%03d" % (r, seq), "mig", {"nvidia.com/mig-1g.10gb": "1"}))
            else:
                batch.append(pod("w%02d-%03d" % (r, seq), "whole", {"nvidia.com/gpu": "1"}))
            seq += 1
        # creations and deletions at once: binds race with the releases
        RUN.create(*batch)
        if gone:
            must(kubectl("delete", "pods", "-n", NS, "--force", "--grace-period=0",
                         "--wait=false", *gone), "delete pods")
        FIG["created"] += len(batch)
        FIG["deleted"] += len(gone)
        log("round %d: %d pods created, %d deleted" % (r, len(batch), len(gone)))
        time.sleep(1)
        check_round(r, quiet())
    # binds that failed: figures, not failures (kube-scheduler retries them). The devices a
    # filter saw free may be taken by a bind in flight ("Insufficient ..."), a pod may be
    # deleted mid-bind; "not in the extender's cache" would be the extender's informer
    # lagging more than the 1 s its bind waits.
    with open(RUN.log, errors="replace") as f:
        why = [m.group(1) for m in (re.search(r'retrying" err="((?:[^"\\]|\\.)*)"', l) for l in f) if m]
    log("kube-scheduler retried %d pod(s) after an error, a failed bind mostly (%d not in the "
        "extender's cache): %s" % (len(why), sum("not in the extender's cache" in w for w in why),
                                   [w[:160] for w in why[:3]]))


def main():
    def cleanup(_work):
        RUN.report(FAILS)
        RUN.cleanup()
    gslive.main("extender-churn-test", 300, run, cleanup, CHECKS,
                (RuntimeError, TimeoutError, ValueError))
    log("end (seed %d): %d pods created, %d deleted; %d bound and %d pending pod checks, %d "
        "records compared with the offline run, %d round(s) waited for a retry"
        % (SEED, FIG["created"], FIG["deleted"], FIG["bound"], FIG["pending"], FIG["compared"],
           FIG["retried"]))
    return CHECKS.done("ok: after every round the extender's records equal what the offline "
                       "engine holds")


if __name__ == "__main__":
    sys.exit(main())
