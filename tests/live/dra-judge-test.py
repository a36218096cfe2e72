#!/usr/bin/env python3
"""dra-judge-test.py GPUSCHED - gpusched's DRA allocation judged against the real
kube-scheduler, pod by pod.

    dra-judge-test.py GPUSCHED            the judge (exit 0 pass, 1 fail, 77 skipped)
    dra-judge-test.py --upstream-only     kube-scheduler's side alone: every round's
                                          decisions and allocations printed and kept

Run under the shared control plane (`controlplane.py exec STATE -- ...`, the ctest fixture
gs_live); without one it skips (77). Before touching the plane it asks GPUSCHED, on a small
dump of its own, whether `schedule -o json` reports `claims` per decision; when it does not,
it exits 77 with the one line "gpusched has no DRA allocation yet".

Preflight: the plane serves resource.k8s.io/v1 (else skip); whether its API server keeps
partitionable devices (a server-side dry run of a slice with sharedCounters: when the field
is dropped the generator leaves partitionable nodes out and says so).

Rounds: first the fixtures of tests/data/dra-judge/ (NVIDIA's dra-driver-nvidia-gpu demo
scenarios rebuilt with direct ResourceClaims), then GS_DRA_JUDGE_ROUNDS (default 8) random
ones from a seeded generator (the seed is printed; GS_DRA_JUDGE_SEED replays it). Each round
lives in its own namespace gsdra-<run>-<round> with nodes, device classes and slices named
after it, so it shares the plane with other tests:

  - fake Nodes (kubernetes.io/hostname, the label and NoSchedule taint
    gpusched.io/dra-judge=<round>, Ready, allocatable cpu/memory/pods through the status
    subresource), as compare-test.py builds them;
  - ResourceSlices of driver gpu.nvidia.com shaped as NVIDIA's driver publishes them
    (tests/live/gsdra.py): whole GPUs gpu-<minor> of several models, pre-created MIG devices,
    layouts with one slice, two slices in a pool, two pools, or partitionable GPUs (a
    sharedCounters slice and devices consuming counters);
  - DeviceClasses <round>.gpu.nvidia.com (type == 'gpu'), <round>.mig.nvidia.com
    (type == 'mig'), <round>.large.gpu.nvidia.com (memory >= 40Gi);
  - ResourceClaims of varied shapes: count 1..4, allocationMode All, selectors on
    productName, memory quantities, cudaComputeCapability semver, architecture, MIG profile;
    matchAttribute constraints (productName, resource.kubernetes.io/pcieRoot), firstAvailable
    alternatives, a claim shared by two pods, adminAccess (in a namespace labelled
    resource.kubernetes.io/admin-access), now and then a missing class or a selector that
    fails at runtime;
  - pods (schedulerName gs-kube-scheduler, selecting and tolerating the round's nodes)
    created ONE AT A TIME in name order, each waited for until kube-scheduler bound it or
    marked it not schedulable (PodScheduled=False: Unschedulable, or SchedulerError when a
    plugin failed, as a CEL runtime error in a selector makes DynamicResources fail).

Step by step, before each pod is created: a dump (`kubectl get nodes,namespaces,
priorityclasses,resourcequotas,poddisruptionbudgets,pods,deviceclasses,resourceclaims,
resourceclaimtemplates,resourceslices -A -o json`, the round's earlier unschedulable pods
left out: each was judged at its own step) and the pod's manifest; `GPUSCHED schedule -o json
DUMP POD` runs on them. Compared (docs/live-tests.md, "DRA judge"):
  - scheduled vs unschedulable;
  - the unschedulable message, equal (skipped, and counted, when the plane's nodes changed
    while the pod was scheduled, or kube-scheduler's node count is not the dump's: other
    tests' nodes are in the message's counts);
  - when both scheduled, per pod claim in spec order, the results (request, driver, pool,
    device, in order) equal to the claim's status.allocation: everywhere, since
    kube-scheduler v1.37's allocator sorts pools and slices by name as gpusched does
    (GS_DRA_JUDGE_ORDER=loose: exactly only where the node's devices of the driver are in
    one pool with one slice; elsewhere the devices per request are counted and each of
    gpusched's must be one it could choose: on the node, in a slice of that pool, not held
    by another claim, not twice, matchAttribute constraints kept); a claim gpusched made
    from a template itself (`generated`, the pod not created yet in the dump) is judged by
    its results;
  - when the nodes differ (kube-scheduler breaks score ties at random), gpusched again with
    the pod pinned to upstream's node (nodeSelector kubernetes.io/hostname), compared there.
Every step's files are in the work directory; it is kept and printed when a check failed
(GS_DRA_JUDGE_KEEP=1 keeps it anyway); mismatches.txt lists each mismatch with both answers.
"""
import copy
import glob
import json
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gslive  # noqa: E402
import gsdra  # noqa: E402
from gsdra import ApiError, MODELS, PROFILES, MIG_LAYOUTS  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "data", "dra-judge")
KEY = "gpusched.io/dra-judge"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
KINDS = ("nodes,namespaces,priorityclasses,resourcequotas,poddisruptionbudgets,pods,"
         "deviceclasses,resourceclaims,resourceclaimtemplates,resourceslices")
NO_DRA = "gpusched has no DRA allocation yet"
WAIT_S = 30
SETTLE_S = float(os.environ.get("GS_DRA_JUDGE_SETTLE", "3"))

CHECKS = gslive.Checks(quiet=True)
check = CHECKS.check


def log(msg):
    gslive.log(msg)


# ---------------------------------------------------------------- gpusched
def run_gpusched(binary, files, cwd):
    """(exit status, parsed JSON or None, stderr) of `schedule -o json FILES`."""
    r = subprocess.run([binary, "schedule", "-o", "json"] + files, capture_output=True,
                       text=True, cwd=cwd, timeout=300)
    try:
        doc = json.loads(r.stdout) if r.returncode in (0, 1) else None
    except ValueError:
        doc = None
    return r.returncode, doc, r.stderr, r.stdout


def decision_of(doc, ns, name):
    for d in (doc or {}).get("decisions", []):
        if d.get("namespace") == ns and d.get("name") == name:
            return d
    return None


def probe(binary, work):
    """Whether GPUSCHED's schedule JSON reports claims: a one-node, one-GPU dump of its own."""
    node, status = gsdra.node_objects("probe-n", {KEY: "probe"},
                                      {"key": KEY, "value": "probe", "effect": "NoSchedule"},
                                      {"cpu": "8", "memory": "8Gi", "pods": "110"})
    node["status"] = status["status"]
    slices = gsdra.node_slices("probe-n", {"gpus": [{"model": "L4"}]}, 1)
    items = [node, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}]
    items += gsdra.device_classes("probe") + slices
    items.append(claim_obj("probe", "c", [exactly("gpu", "probe.gpu.nvidia.com")]))
    pod = pod_obj("p00", [("gpu", "c")])
    pod["metadata"]["namespace"] = "probe"
    pod["spec"]["nodeSelector"] = {KEY: "probe"}
    pod["spec"]["tolerations"] = [{"key": KEY, "operator": "Exists"}]
    items.append(pod)
    path = os.path.join(work, "probe.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f, indent=1)
    rc, doc, _err, _out = run_gpusched(binary, [path], work)
    d = decision_of(doc, "probe", "p00")
    return d is not None and "claims" in d


# ---------------------------------------------------------------- object builders
def exactly(name, cls, count=1, mode="ExactCount", sels=(), admin=False):
    ex = {"deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        ex["count"] = count
    if sels:
        ex["selectors"] = [{"cel": {"expression": s}} for s in sels]
    if admin:
        ex["adminAccess"] = True
    return {"name": name, "exactly": ex}


def sub(name, cls, count=1, sels=()):
    s = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if sels:
        s["selectors"] = [{"cel": {"expression": e}} for e in sels]
    return s


def claim_obj(ns, name, requests, constraints=None):
    devices = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": gsdra.RESOURCE, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": {"devices": devices}}


def pod_obj(name, claims, containers=1):
    """A pause pod; CLAIMS: [(pod claim name, ResourceClaim name)], each container using
    all of them."""
    ctrs = []
    for i in range(containers):
        c = {"name": "ctr%d" % i, "image": "registry.k8s.io/pause:3.10",
             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
        if claims:
            c["resources"]["claims"] = [{"name": pc} for pc, _ in claims]
        ctrs.append(c)
    spec = {"containers": ctrs}
    if claims:
        spec["resourceClaims"] = [
            {"name": pc, "resourceClaimTemplateName": rc["template"]} if isinstance(rc, dict)
            else {"name": pc, "resourceClaimName": rc} for pc, rc in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


# ---------------------------------------------------------------- the random generator
def q(attr):
    return "device.attributes['gpu.nvidia.com'].%s" % attr


def cap(name):
    return "device.capacity['gpu.nvidia.com'].%s" % name


def gpu_selector(rng, products):
    r = rng.randrange(7)
    if r == 0:
        p = rng.choice(products) if rng.random() > 0.1 else "NVIDIA B200"
        return "%s == '%s'" % (q("productName"), p)
    if r == 1:
        return "%s.compareTo(quantity('%s')) >= 0" % (cap("memory"), rng.choice(["16Gi", "40Gi", "80Gi"]))
    if r == 2:
        return "%s.isGreaterThan(semver('%s'))" % (q("cudaComputeCapability"),
                                                   rng.choice(["7.5.0", "8.0.0", "8.9.0"]))
    if r == 3:
        return "%s.compareTo(semver('%s')) >= 0" % (q("cudaComputeCapability"),
                                                    rng.choice(["8.0.0", "8.9.0", "9.0.0"]))
    if r == 4:
        return "%s in ['Hopper', 'Ampere']" % q("architecture")
    if r == 5:
        return "%s.startsWith('NVIDIA A100')" % q("productName")
    return "%s.isLessThan(quantity('40Gi'))" % cap("memory")


def mig_selector(rng, profiles):
    r = rng.randrange(3)
    if r == 0:
        return "%s == '%s'" % (q("profile"), rng.choice(profiles) if profiles else "1g.10gb")
    if r == 1:
        return "%s.compareTo(quantity('%s')) >= 0" % (cap("memory"), rng.choice(["9Gi", "19Gi", "39Gi"]))
    return "%s.compareTo(quantity('28')) >= 0" % cap("multiprocessors")


def gen_nodes(rng, partitionable):
    nodes = []
    for k in range(rng.randint(1, 3)):
        if partitionable and rng.random() < 0.15:
            model = rng.choice(["A100-80", "H100", "A100-40"])
            gpus = [{"model": model, "partitionable": True} for _ in range(rng.randint(1, 2))]
            layout = "partitionable"
        else:
            ngpu = rng.choice([1, 2, 4, 4, 8, 8])
            models = rng.sample(sorted(MODELS), rng.randint(1, 2))
            gpus = []
            for m in range(ngpu):
                g = {"model": models[m * len(models) // ngpu]}
                if MODELS[g["model"]][4] and rng.random() < 0.25:
                    g["mig"] = rng.choice(sorted(MIG_LAYOUTS))
                gpus.append(g)
            layout = rng.choice(["single", "single", "single", "split", "two-pools"])
        nodes.append({"name": "n%d" % k, "gpus": gpus, "layout": layout,
                      "cpu": "64" if rng.random() > 0.08 else "1", "memory": "256Gi",
                      "pods": "110"})
    return nodes


def gen_claim(rng, name, nodes, admin_ns):
    products = sorted({MODELS[g["model"]][0] for n in nodes for g in n["gpus"]})
    profiles = sorted({PROFILES[MODELS[g["model"]][4]][pidx][0] for n in nodes for g in n["gpus"]
                       if g.get("mig") for pidx, _ in MIG_LAYOUTS[g["mig"]]})
    shapes = ["one", "one", "one", "sel", "sel", "large", "all", "mig", "pair", "match",
              "first", "mixed"] + (["admin"] if admin_ns else [])
    shape = rng.choice(shapes)
    if rng.random() < 0.03:
        shape = "noclass"
    if rng.random() < 0.03:
        shape = "rterror"
    G, M, L = "gpu.nvidia.com", "mig.nvidia.com", "large.gpu.nvidia.com"
    cons = None
    if shape == "one":
        reqs = [exactly("gpu", G, rng.randint(1, 4))]
    elif shape == "sel":
        reqs = [exactly("gpu", G, rng.randint(1, 3), sels=[gpu_selector(rng, products)])]
    elif shape == "large":
        reqs = [exactly("gpu", L, rng.randint(1, 2))]
    elif shape == "all":
        sels = [gpu_selector(rng, products)] if rng.random() < 0.6 else []
        reqs = [exactly("gpus", G, mode="All", sels=sels)]
    elif shape == "mig":
        sels = [mig_selector(rng, profiles)] if rng.random() < 0.7 else []
        reqs = [exactly("mig", M, rng.randint(1, 2), sels=sels)]
    elif shape == "pair":
        reqs = [exactly("a", G), exactly("b", G, rng.randint(1, 2))]
        cons = [{"requests": ["a", "b"], "matchAttribute": rng.choice(
            ["gpu.nvidia.com/productName", "resource.kubernetes.io/pcieRoot"])}]
    elif shape == "match":
        reqs = [exactly("gpus", G, rng.randint(2, 4))]
        cons = [{"matchAttribute": rng.choice(["resource.kubernetes.io/pcieRoot",
                                               "gpu.nvidia.com/productName"])}]
    elif shape == "first":
        alts = [sub("big", G, 2, ["%s.compareTo(quantity('80Gi')) >= 0" % cap("memory")]),
                sub("mig", M, 1), sub("one", G, 1), sub("two", L, 2)]
        rng.shuffle(alts)
        reqs = [{"name": "gpu", "firstAvailable": alts[:rng.randint(2, 3)]}]
    elif shape == "mixed":
        reqs = [exactly("gpu", G), exactly("mig", M)]
    elif shape == "admin":
        reqs = [exactly("gpu", G, 1, mode=rng.choice(["ExactCount", "All"]), admin=True)]
    elif shape == "noclass":
        reqs = [exactly("gpu", "absent.nvidia.com")]
    else:  # a GPU has no 'profile': a CEL runtime error on every device the class passes
        reqs = [exactly("gpu", G, sels=["%s == '1g.10gb'" % q("profile")])]
    return claim_obj(None, name, reqs, cons), shape


def gen_round(rng, partitionable):
    nodes = gen_nodes(rng, partitionable)
    admin_ns = rng.random() < 0.3
    claims, pods, shapes = [], [], []
    once = []  # claims used by exactly one pod so far (one of them may be shared)
    for i in range(rng.randint(3, 8)):
        r = rng.random()
        refs = []
        if r < 0.05:
            pass  # no claims
        elif r < 0.15 and once:
            shared = once.pop(rng.randrange(len(once)))
            refs.append(("gpu", shared))
        else:
            for j in range(2 if rng.random() < 0.15 else 1):
                cname = "claim-%02d-%d" % (i, j)
                c, shape = gen_claim(rng, cname, nodes, admin_ns)
                shapes.append(shape)
                if rng.random() < 0.2:  # through a template: the claim generated per pod
                    c = {"apiVersion": gsdra.RESOURCE, "kind": "ResourceClaimTemplate",
                         "metadata": {"name": "tpl-%02d-%d" % (i, j)}, "spec": {"spec": c["spec"]}}
                    claims.append(c)
                    refs.append(("c%d" % j, {"template": c["metadata"]["name"]}))
                    continue
                claims.append(c)
                refs.append(("c%d" % j, cname))
                once.append(cname)
        if rng.random() < 0.03:
            refs.append(("lost", "missing-claim"))
        pods.append(pod_obj("p%02d" % i, refs, containers=2 if rng.random() < 0.15 else 1))
    return {"name": "random", "nodes": nodes, "adminAccess": admin_ns, "claims": claims,
            "pods": pods, "shapes": shapes}


# ---------------------------------------------------------------- fixtures
def load_fixtures():
    """tests/data/dra-judge/*.yaml (PyYAML): a JudgeCluster document (nodes, adminAccess)
    then ResourceClaims and Pods without namespaces; [] (and a note) without PyYAML."""
    try:
        import yaml
    except ImportError:
        print("note: PyYAML missing, the fixtures of tests/data/dra-judge are not run")
        return []
    out = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.yaml"))):
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        head = [d for d in docs if d.get("kind") == "JudgeCluster"]
        if len(head) != 1:
            raise ValueError("%s: exactly one JudgeCluster document" % path)
        out.append({"name": os.path.basename(path)[:-5], "nodes": head[0]["nodes"],
                    "adminAccess": bool(head[0].get("adminAccess")),
                    "claims": [d for d in docs if d.get("kind") in ("ResourceClaim", "ResourceClaimTemplate")],
                    "pods": [d for d in docs if d.get("kind") == "Pod"], "shapes": []})
    return out


# ---------------------------------------------------------------- the plane side
def kubectl(*args, **kw):
    return gslive.kubectl(*args, **kw)


def preflight(api, work):
    """Skip without resource.k8s.io/v1; whether partitionable devices survive the API."""
    try:
        res = api.get("/apis/resource.k8s.io/v1")
    except ApiError as e:
        gslive.skip("the plane does not serve resource.k8s.io/v1 (%s)" % e)
    kinds = {r["name"] for r in res.get("resources", [])}
    need = {"deviceclasses", "resourceclaims", "resourceslices"}
    if not need <= kinds:
        gslive.skip("resource.k8s.io/v1 lacks %s" % sorted(need - kinds))
    s = gsdra.node_slices("gsdra-preflight", {"gpus": [{"model": "A100-80", "partitionable": True}]}, 1)
    try:
        got = [api.req("POST", "/apis/resource.k8s.io/v1/resourceslices?dryRun=All", x) for x in s]
    except ApiError as e:
        print("note: the API server refuses partitionable slices (%s): none generated" % e)
        return False
    kept = bool(got[0]["spec"].get("sharedCounters")) and bool(
        got[1]["spec"]["devices"][0].get("consumesCounters"))
    if not kept:
        print("note: the API server drops sharedCounters/consumesCounters (DRAPartitionableDevices "
              "off): no partitionable nodes generated")
    return kept


class Round:
    def __init__(self, api, run_tag, idx, scn, work, binary):
        self.api, self.scn, self.binary = api, scn, binary
        self.p = "gsdra-%s-%02d" % (run_tag, idx)
        self.idx = idx
        self.ns = self.p
        self.dir = os.path.join(work, "%02d-%s" % (idx, scn["name"]))
        os.makedirs(self.dir)
        self.taint = {"key": KEY, "value": self.p, "effect": "NoSchedule"}
        self.nodes = [self.p + "-" + n["name"] for n in scn["nodes"]]
        self.slices, self.classes, self.claims, self.pods = [], [], [], []
        self.records = []
        self.steps_unstable = 0
        self.transient = []

    # names
    def cls(self, short):
        return gsdra.class_name(self.p, short)

    def localize_claim(self, c):
        """A ResourceClaim or ResourceClaimTemplate in the round's namespace, its classes
        the round's."""
        c = copy.deepcopy(c)
        c["metadata"]["namespace"] = self.ns
        c.setdefault("apiVersion", gsdra.RESOURCE)
        spec = c["spec"]["spec"] if c["kind"] == "ResourceClaimTemplate" else c["spec"]
        for r in spec["devices"]["requests"]:
            for e in ([r["exactly"]] if "exactly" in r else []) + r.get("firstAvailable", []):
                e["deviceClassName"] = self.cls(e["deviceClassName"])
        return c

    def localize_pod(self, p):
        p = copy.deepcopy(p)
        p["metadata"]["namespace"] = self.ns
        p.setdefault("apiVersion", "v1")
        sp = p["spec"]
        sp["schedulerName"] = os.environ.get("GS_SCHEDULER_NAME", "gs-kube-scheduler")
        sp.setdefault("nodeSelector", {})[KEY] = self.p
        sp.setdefault("tolerations", []).append(dict(self.taint, operator="Equal"))
        for c in sp["containers"]:
            c.setdefault("image", "registry.k8s.io/pause:3.10")
        return p

    # building
    def build(self):
        api, scn = self.api, self.scn
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}}
        if scn["adminAccess"]:
            ns["metadata"]["labels"] = {ADMIN_LABEL: "true"}
        api.create("/api/v1/namespaces", ns)
        for n, name in zip(scn["nodes"], self.nodes):
            gsdra.create_node(api, name, {KEY: self.p}, self.taint,
                              {"cpu": n.get("cpu", "64"), "memory": n.get("memory", "256Gi"),
                               "pods": n.get("pods", "110")})
        for c in gsdra.device_classes(self.p):
            api.create(gsdra.path_of(c), c)
            self.classes.append(c["metadata"]["name"])
        seed = self.idx + 1  # the UUIDs: the same on a replay
        for i, (n, name) in enumerate(zip(scn["nodes"], self.nodes)):
            for s in gsdra.node_slices(name, n, seed + 101 * i):
                api.create(gsdra.path_of(s), s)
                self.slices.append(s["metadata"]["name"])
        for c in scn["claims"]:
            c = self.localize_claim(c)
            api.create(gsdra.path_of(c), c)
            if c["kind"] == "ResourceClaim":
                self.claims.append(c["metadata"]["name"])

    def cleanup(self):
        api = self.api
        for p in self.pods:
            api.delete("/api/v1/namespaces/%s/pods/%s" % (self.ns, p),
                       body={"gracePeriodSeconds": 0})
        for c in self.claims:
            path = "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (self.ns, c)
            try:
                api.patch(path, {"metadata": {"finalizers": None}})
            except ApiError:
                pass
            api.delete(path)
        api.delete("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates" % self.ns)
        for s in self.slices:
            api.delete("/apis/resource.k8s.io/v1/resourceslices/" + s)
        for c in self.classes:
            api.delete("/apis/resource.k8s.io/v1/deviceclasses/" + c)
        for n in self.nodes:
            api.delete("/api/v1/nodes/" + n)
        gslive.delete_namespace(self.ns)

    # one step
    def dump(self):
        r = gslive.must(kubectl("get", KINDS, "-A", "-o", "json"), "kubectl get (dump)")
        doc = json.loads(r.stdout)
        # the round's earlier unschedulable pods were judged at their own step
        doc["items"] = [o for o in doc["items"] if not (
            o["kind"] == "Pod" and o["metadata"].get("namespace") == self.ns
            and not o["spec"].get("nodeName"))]
        return doc

    def node_print(self):
        """What of the plane's nodes enters kube-scheduler's message (all nodes count)."""
        out = []
        for n in self.api.get("/api/v1/nodes")["items"]:
            out.append((n["metadata"]["name"], json.dumps(n["metadata"].get("labels")),
                        json.dumps(n["spec"].get("taints")), n["spec"].get("unschedulable"),
                        json.dumps((n.get("status") or {}).get("allocatable"))))
        return sorted(out)

    def wait(self, name, seconds):
        """(node, message, reason) once kube-scheduler decided (bound, or PodScheduled=False:
        reason Unschedulable, or SchedulerError when a plugin failed, as a CEL runtime error
        in a selector makes DynamicResources fail); (None, None, None) after SECONDS. A
        verdict of not scheduled is watched for SETTLE_S more: kube-scheduler's informers
        (pods, slices, claims, classes: separate watches) may give it the pod before the
        round's last objects, and it then retries on their events; the later binding wins
        (counted in self.transient)."""
        deadline = time.monotonic() + seconds
        path = "/api/v1/namespaces/%s/pods/%s" % (self.ns, name)
        first = None

        def not_scheduled(p):
            for c in (p.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason"):
                    return c.get("message", ""), c["reason"]
            return None
        while time.monotonic() < deadline:
            p = self.api.get(path)
            if p["spec"].get("nodeName"):
                if first is not None:
                    self.transient.append((name, first[0]))
                return p["spec"]["nodeName"], None, None
            if first is None:
                first = not_scheduled(p)
                if first is not None:
                    deadline = min(deadline, time.monotonic() + SETTLE_S)
            time.sleep(0.05)
        if first is not None:
            last = not_scheduled(self.api.get(path)) or first
            return None, last[0], last[1]
        return None, None, None

    def claims_from_templates(self, pod):
        """What the resourceclaim controller does for the pod's template claims (none runs
        in the plane): a claim `<pod>-<pod claim>-<5 random>` owned by the pod (controller,
        blockOwnerDeletion), annotated resource.kubernetes.io/pod-claim-name, with the
        template's spec; then pod.status.resourceClaimStatuses. {pod claim: claim name}."""
        out = {}
        pcs = [pc for pc in pod["spec"].get("resourceClaims", []) if pc.get("resourceClaimTemplateName")]
        if not pcs:
            return out
        ns, name = self.ns, pod["metadata"]["name"]
        live = self.api.get("/api/v1/namespaces/%s/pods/%s" % (ns, name))
        base = "/apis/resource.k8s.io/v1/namespaces/%s/" % ns
        for pc in pcs:
            tpl = self.api.get(base + "resourceclaimtemplates/" + pc["resourceClaimTemplateName"])
            claim = {"apiVersion": gsdra.RESOURCE, "kind": "ResourceClaim",
                     "metadata": {"generateName": "%s-%s-" % (name, pc["name"]), "namespace": ns,
                                  "annotations": {"resource.kubernetes.io/pod-claim-name": pc["name"]},
                                  "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name,
                                                       "uid": live["metadata"]["uid"], "controller": True,
                                                       "blockOwnerDeletion": True}]},
                     "spec": tpl["spec"]["spec"]}
            made = self.api.create(base + "resourceclaims", claim)
            out[pc["name"]] = made["metadata"]["name"]
            self.claims.append(made["metadata"]["name"])
        self.api.patch("/api/v1/namespaces/%s/pods/%s/status" % (ns, name), {"status": {
            "resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in out.items()]}})
        return out

    def claim_states(self):
        items = self.api.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % self.ns)["items"]
        return {c["metadata"]["name"]: c for c in items}

    def run(self, judge):
        self.build()
        for raw in self.scn["pods"]:
            pod = self.localize_pod(raw)
            name = pod["metadata"]["name"]
            step = os.path.join(self.dir, name)
            nodes_before = self.node_print()  # before the dump: a change during it is seen
            dump = self.dump() if judge else None
            before_claims = self.claim_states()
            if judge:
                with open(step + ".dump.json", "w") as f:
                    json.dump(dump, f, indent=1)
            with open(step + ".pod.json", "w") as f:
                json.dump(pod, f, indent=1)
            try:
                self.api.create(gsdra.path_of(pod), pod)
            except ApiError as e:
                check(False, "%s/%s: create: %s" % (self.ns, name, e))
                continue
            self.pods.append(name)
            generated = self.claims_from_templates(pod)
            # a pod naming a claim that does not exist waits in PreEnqueue: no attempt, no
            # condition; a short wait shows it stays so
            gated = any(pc.get("resourceClaimName") and pc["resourceClaimName"] not in before_claims
                        for pc in pod["spec"].get("resourceClaims", []))
            node, msg, reason = self.wait(name, 3 if gated else WAIT_S)
            nodes_after = self.node_print()
            stable = nodes_after == nodes_before
            after = self.claim_states()
            rec = {"pod": name, "node": node, "message": msg, "reason": reason, "gated": gated,
                   "claims": []}
            for pc in pod["spec"].get("resourceClaims", []):
                cname = pc.get("resourceClaimName") or generated.get(pc["name"])
                c = after.get(cname)
                st = (c or {}).get("status") or {}
                rec["claims"].append({
                    "name": pc["name"], "claim": cname,
                    "template": pc.get("resourceClaimTemplateName"),
                    "existed": c is not None,
                    "allocatedBefore": bool(((before_claims.get(cname) or {})
                                             .get("status") or {}).get("allocation")),
                    "allocation": st.get("allocation"),
                    "reservedFor": [r["name"] for r in st.get("reservedFor", [])]})
            if not stable:
                rec["planeChanged"] = sorted({n[0] for n in set(nodes_before) ^ set(nodes_after)})
            if self.transient and self.transient[-1][0] == name:
                rec["transient"] = self.transient[-1][1]
            self.records.append(rec)
            print(describe(self.p, rec), flush=True)
            if gated:
                check(node is None and msg is None, "%s/%s: names a missing claim, yet kube-scheduler "
                      "decided (%s)" % (self.ns, name, node or msg))
            else:
                check(node is not None or msg is not None,
                      "%s/%s: kube-scheduler decided within %d s" % (self.ns, name, WAIT_S))
            if judge and (node is not None or msg is not None or gated):
                if not stable:
                    self.steps_unstable += 1
                judge.step(self, pod, step, dump, rec, stable)
        final = self.claim_states()
        with open(os.path.join(self.dir, "upstream.json"), "w") as f:
            json.dump({"scenario": self.scn, "prefix": self.p, "records": self.records,
                       "claims": {k: v.get("status") for k, v in final.items()}}, f, indent=1)
        # nothing decided earlier changed afterwards (the state only fills up)
        late = [r["pod"] for r in self.records if r["node"] is None and r["message"] is not None
                and self.api.get("/api/v1/namespaces/%s/pods/%s" % (self.ns, r["pod"]))["spec"].get("nodeName")]
        if late:
            print("note: %s: bound after being reported unschedulable: %s" % (self.p, late))
        return self.records


def results_of(alloc):
    if not alloc:
        return []
    return [{k: r.get(k) for k in ("request", "driver", "pool", "device")}
            for r in alloc.get("devices", {}).get("results", [])]


def describe(prefix, rec):
    head = "[%s] %s" % (prefix, rec["pod"])
    if rec["node"]:
        parts = []
        for c in rec["claims"]:
            res = ",".join("%s:%s/%s" % (r["request"], r["pool"][len(prefix) + 1:], r["device"])
                           for r in results_of(c["allocation"]))
            parts.append("%s=%s{%s}" % (c["name"], c["claim"], res))
        return "%s -> %s %s%s" % (head, rec["node"][len(prefix) + 1:], " ".join(parts),
                                  " (after a transient Unschedulable: %s)" % rec["transient"]
                                  if rec.get("transient") else "")
    if rec["message"] is not None:
        return "%s -> %s: %s" % (head, "unschedulable" if rec.get("reason") == "Unschedulable"
                                 else "not scheduled (%s)" % rec.get("reason"), rec["message"])
    if rec.get("gated"):
        return "%s -> not attempted (a claim it names does not exist: PreEnqueue)" % head
    return "%s -> no decision within %d s" % (head, WAIT_S)


# ---------------------------------------------------------------- the comparison
def attr_of(dev, qualified, driver):
    dom, _, ident = qualified.partition("/")
    attrs = dev.get("attributes") or {}
    v = attrs.get(ident) if dom == driver else None
    if v is None:
        v = attrs.get(qualified)
    return json.dumps(v, sort_keys=True) if v is not None else None


class Judge:
    def __init__(self, binary, work, exact_everywhere):
        self.bin = binary
        self.work = work
        self.exact_everywhere = exact_everywhere
        self.mismatches = []
        self.compared = {"steps": 0, "exact": 0, "loose": 0, "pinned": 0, "messages": 0,
                         "messages_skipped": 0}

    def mismatch(self, rnd, pod, what, step, up, gs):
        line = "%s/%s: %s" % (rnd.ns, pod["metadata"]["name"], what)
        check(False, line)
        self.mismatches.append({"what": line, "dump": step + ".dump.json", "pod": step + ".pod.json",
                                "upstream": up, "gpusched": gs})

    def step(self, rnd, pod, step, dump, rec, stable):
        self.compared["steps"] += 1
        ns, name = rnd.ns, pod["metadata"]["name"]
        rc, doc, err, out = run_gpusched(self.bin, [step + ".dump.json", step + ".pod.json"], rnd.dir)
        with open(step + ".gpusched.json", "w") as f:
            f.write(out)
        d = decision_of(doc, ns, name)
        if d is None:
            self.mismatch(rnd, pod, "gpusched gave no decision (exit %d: %s)" % (rc, err.strip()[-300:]),
                          step, rec, out[-2000:])
            return
        up_sched = rec["node"] is not None
        gs_sched = d.get("result") == "scheduled"
        if rec.get("gated"):
            # kube-scheduler never tries it; gpusched must not place it (its words are its own)
            if gs_sched:
                self.mismatch(rnd, pod, "names a missing claim (kube-scheduler: not attempted), "
                              "gpusched scheduled it on %s" % d.get("node"), step, rec, d)
            return
        if up_sched != gs_sched:
            self.mismatch(rnd, pod, "kube-scheduler %s, gpusched %s (%s)" % (
                "bound it to " + rec["node"] if up_sched else "found it unschedulable: " + rec["message"],
                d.get("result"), d.get("message") or d.get("node")), step, rec, d)
            return
        if not up_sched:
            # kube-scheduler counted the nodes of its cache when it decided: when that is not
            # the dump's count, another test's node came or went in between (the shared plane)
            m = re.match(r"0/(\d+) nodes", rec["message"] or "")
            ndump = sum(1 for o in dump["items"] if o.get("kind") == "Node")
            if m and int(m.group(1)) != ndump:
                stable = False
            if not stable:
                self.compared["messages_skipped"] += 1
            else:
                self.compared["messages"] += 1
                # a claim the resourceclaim controller made from a template carries a random
                # suffix gpusched cannot know (it names the claim it makes <pod>-<claim>)
                up_msg = rec["message"] or ""
                for c in d.get("claims") or []:
                    if c.get("generated") and c.get("claim"):
                        up_msg = re.sub(re.escape(c["claim"]) + r"-[a-z0-9]{5}\b", c["claim"], up_msg)
                gs_msg = d.get("message") or ""
                if up_msg.startswith('running "DynamicResources" filter plugin:'):
                    # the device a filter error names is the one kube-scheduler's parallel,
                    # rotating Filter reached first: any node's device with the same error
                    dev = re.compile(r"on device [^ :]+/[^ :]+/[^ :]+:")
                    up_msg, gs_msg = dev.sub("on device *:", up_msg), dev.sub("on device *:", gs_msg)
                if gs_msg != up_msg:
                    self.mismatch(rnd, pod, "unschedulable messages differ:\n    kube-scheduler: %s\n"
                                  "    gpusched:       %s" % (rec["message"], d.get("message")),
                                  step, rec, d)
            for c in d.get("claims", []):
                if c.get("allocated") or c.get("results"):
                    self.mismatch(rnd, pod, "unschedulable, yet gpusched allocated %s" % c.get("name"),
                                  step, rec, d)
            return
        if d.get("node") != rec["node"]:
            pinned = copy.deepcopy(pod)
            pinned["spec"].setdefault("nodeSelector", {})["kubernetes.io/hostname"] = rec["node"]
            with open(step + ".pinned.pod.json", "w") as f:
                json.dump(pinned, f, indent=1)
            rc, doc, err, out = run_gpusched(self.bin, [step + ".dump.json", step + ".pinned.pod.json"],
                                             rnd.dir)
            with open(step + ".pinned.gpusched.json", "w") as f:
                f.write(out)
            self.compared["pinned"] += 1
            d = decision_of(doc, ns, name)
            if d is None or d.get("result") != "scheduled" or d.get("node") != rec["node"]:
                self.mismatch(rnd, pod, "gpusched chose %s; pinned to kube-scheduler's %s it says %s" % (
                    d and d.get("node"), rec["node"], d and (d.get("message") or d.get("result"))),
                    step, rec, d)
                return
        self.claims(rnd, pod, step, dump, rec, d)

    def claims(self, rnd, pod, step, dump, rec, d):
        gsc = d.get("claims")
        pcs = pod["spec"].get("resourceClaims", [])
        if not isinstance(gsc, list) or len(gsc) != len(pcs):
            self.mismatch(rnd, pod, "gpusched's claims: %d entries for %d pod claims" % (
                len(gsc or []), len(pcs)), step, rec, d)
            return
        slices = [o for o in dump["items"] if o["kind"] == "ResourceSlice"]
        held = set()  # devices allocated to other claims in the dump (adminAccess aside)
        for o in dump["items"]:
            if o["kind"] == "ResourceClaim":
                for r in (((o.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results", []):
                    if not r.get("adminAccess"):
                        held.add((r["driver"], r["pool"], r["device"]))
        for pc, g, up in zip(pcs, gsc, rec["claims"]):
            label = "claim %s (%s)" % (pc["name"], up["claim"])
            # a template's claim does not exist yet for the pod about to be created: null
            want = "%s/%s" % (rnd.ns, pc["resourceClaimName"]) if pc.get("resourceClaimName") else None
            if want is None and g.get("generated") and g.get("claim") == "%s/%s-%s" % (
                    rnd.ns, pod["metadata"]["name"], pc["name"]):
                want = g.get("claim")  # gpusched made the template's claim as the controller would
            if g.get("name") != pc["name"] or g.get("claim") != want:
                self.mismatch(rnd, pod, "%s: gpusched names it %r / %r" % (label, g.get("name"), g.get("claim")),
                              step, rec, d)
                continue
            upr = results_of(up["allocation"])
            gsr = [{k: r.get(k) for k in ("request", "driver", "pool", "device")} for r in g.get("results") or []]
            if up["allocatedBefore"]:
                if gsr and gsr != upr:
                    self.mismatch(rnd, pod, "%s was allocated already: gpusched reports %s, the claim says %s"
                                  % (label, gsr, upr), step, rec, d)
                continue
            if not g.get("allocated"):
                self.mismatch(rnd, pod, "%s: kube-scheduler allocated %s, gpusched nothing" % (label, upr),
                              step, rec, d)
                continue
            if self.exact_everywhere or determined(slices, rec["node"], upr):
                self.compared["exact"] += 1
                if gsr != upr:
                    self.mismatch(rnd, pod, "%s: devices differ:\n    kube-scheduler: %s\n    gpusched:       %s"
                                  % (label, fmt(upr), fmt(gsr)), step, rec, d)
                continue
            self.compared["loose"] += 1
            why = loose(slices, rec["node"], upr, gsr, held, claim_spec(dump, rnd.ns, pc))
            if why:
                self.mismatch(rnd, pod, "%s: %s\n    kube-scheduler: %s\n    gpusched:       %s"
                              % (label, why, fmt(upr), fmt(gsr)), step, rec, d)


def fmt(results):
    return " ".join("%s:%s/%s" % (r["request"], r["pool"], r["device"]) for r in results) or "-"


def node_slices_of(slices, node, driver):
    return [s for s in slices if s["spec"].get("driver") == driver and (
        s["spec"].get("nodeName") == node or s["spec"].get("allNodes"))]


def determined(slices, node, results):
    """Upstream's order fixes the devices: for every driver in the results, the node's
    devices of that driver are in one pool with one slice."""
    for drv in {r["driver"] for r in results}:
        mine = [s for s in node_slices_of(slices, node, drv) if s["spec"].get("devices")]
        pools = {s["spec"]["pool"]["name"] for s in node_slices_of(slices, node, drv)}
        if len(mine) != 1 or len(pools) != 1:
            return False
    return True


def claim_spec(dump, ns, pc):
    """The spec of the pod claim PC: its ResourceClaim's, or its template's."""
    kind, name = ("ResourceClaim", pc["resourceClaimName"]) if pc.get("resourceClaimName") else \
        ("ResourceClaimTemplate", pc.get("resourceClaimTemplateName"))
    for o in dump["items"]:
        if o["kind"] == kind and o["metadata"]["namespace"] == ns and o["metadata"]["name"] == name:
            return o["spec"]["spec"] if kind == "ResourceClaimTemplate" else o["spec"]
    return {}


def loose(slices, node, upr, gsr, held, spec):
    """Why gsr is not an allocation gpusched could choose where upstream chose upr (None:
    it could): the devices per request counted, each on the node, free (unless its request
    has adminAccess), once; constraints."""
    def count(rs):
        out = {}
        for r in rs:
            out[r["request"]] = out.get(r["request"], 0) + 1
        return out
    if count(upr) != count(gsr):
        return "devices per request differ (%s vs %s)" % (count(upr), count(gsr))
    devs = {}
    for s in slices:
        if s["spec"].get("nodeName") != node and not s["spec"].get("allNodes"):
            continue
        for dev in s["spec"].get("devices") or []:
            devs[(s["spec"]["driver"], s["spec"]["pool"]["name"], dev["name"])] = dev
    admin = set()  # requests with adminAccess: their devices may be held by others
    for q_ in spec.get("devices", {}).get("requests", []):
        if (q_.get("exactly") or {}).get("adminAccess"):
            admin.add(q_["name"])
        for sq in q_.get("firstAvailable") or []:
            if sq.get("adminAccess"):
                admin.add("%s/%s" % (q_["name"], sq["name"]))
    seen = set()
    for r in gsr:
        k = (r["driver"], r["pool"], r["device"])
        if k not in devs:
            return "%s/%s is not a device of %s" % (r["pool"], r["device"], node)
        if k in seen:
            return "%s/%s chosen twice" % (r["pool"], r["device"])
        if k in held and r["request"] not in admin:
            return "%s/%s is held by another claim" % (r["pool"], r["device"])
        seen.add(k)
    for c in spec.get("devices", {}).get("constraints", []) or []:
        attr = c.get("matchAttribute")
        if not attr:
            continue
        reqs = c.get("requests")
        vals = {attr_of(devs[(r["driver"], r["pool"], r["device"])], attr, r["driver"])
                for r in gsr if not reqs or r["request"].split("/")[0] in reqs}
        if len(vals) > 1 or None in vals:
            return "matchAttribute %s not kept (%s)" % (attr, sorted(str(v) for v in vals))
    return None


# ---------------------------------------------------------------- main
def main():
    upstream_only = len(sys.argv) == 2 and sys.argv[1] == "--upstream-only"
    if not upstream_only:
        binary = os.path.abspath(gslive.usage("GPUSCHED | --upstream-only"))
    gslive.plane("GS_KUBECONFIG_ADMIN", "GS_KUBECTL", "GS_APISERVER_URL", "GS_CP_DIR")
    work = tempfile.mkdtemp(prefix="gs-dra-judge.")
    keep = os.environ.get("GS_DRA_JUDGE_KEEP") == "1" or upstream_only
    if not upstream_only and not probe(binary, work):
        shutil.rmtree(work, ignore_errors=True)
        print("SKIP: " + NO_DRA)
        return 77
    gslive.deadline("dra-judge", 900)
    api = gsdra.Api()
    partitionable = preflight(api, work)
    seed = int(os.environ.get("GS_DRA_JUDGE_SEED") or secrets.randbits(32))
    rounds = int(os.environ.get("GS_DRA_JUDGE_ROUNDS", "8"))
    # kube-scheduler v1.37's allocator sorts pools and slices by name, as gpusched does:
    # devices compare exactly everywhere (GS_DRA_JUDGE_ORDER=loose: only one pool, one slice)
    exact = os.environ.get("GS_DRA_JUDGE_ORDER", "exact") == "exact"
    print("seed %d (GS_DRA_JUDGE_SEED=%d replays it), %d random rounds, partitionable devices %s"
          % (seed, seed, rounds, "on" if partitionable else "off"), flush=True)
    rng = random.Random(seed)
    scenarios = load_fixtures() + [gen_round(rng, partitionable) for _ in range(rounds)]
    judge = None if upstream_only else Judge(binary, work, exact)
    run_tag = secrets.token_hex(3)
    totals = {"pods": 0, "bound": 0, "unschedulable": 0, "claims_allocated": 0}
    try:
        for i, scn in enumerate(scenarios):
            rnd = Round(api, run_tag, i, scn, work, None if upstream_only else binary)
            log("round %d (%s): %d nodes, %d claims, %d pods" % (
                i, scn["name"], len(scn["nodes"]), len(scn["claims"]), len(scn["pods"])))
            try:
                recs = rnd.run(judge)
            except (ApiError, RuntimeError, OSError) as e:
                check(False, "round %d (%s): %s" % (i, rnd.p, e))
                recs = rnd.records
            finally:
                rnd.cleanup()
            totals["pods"] += len(recs)
            totals["bound"] += sum(1 for r in recs if r["node"])
            totals["unschedulable"] += sum(1 for r in recs if r["message"] is not None)
            totals["claims_allocated"] += sum(1 for r in recs if r["node"] for c in r["claims"]
                                              if c["allocation"] and not c["allocatedBefore"])
    except TimeoutError as e:
        check(False, str(e))
    check(totals["claims_allocated"] > 0,
          "kube-scheduler allocated claims (DynamicResources on): %d" % totals["claims_allocated"])
    print("upstream: %(pods)d pods, %(bound)d bound, %(unschedulable)d unschedulable, "
          "%(claims_allocated)d claims allocated" % totals)
    if judge:
        print("compared: %s" % json.dumps(judge.compared, sort_keys=True))
        if judge.mismatches:
            with open(os.path.join(work, "mismatches.txt"), "w") as f:
                for m in judge.mismatches:
                    f.write("%s\n  dump %s\n  pod %s\n  upstream %s\n  gpusched %s\n\n" % (
                        m["what"], m["dump"], m["pod"], json.dumps(m["upstream"]),
                        json.dumps(m["gpusched"])))
    if CHECKS.fails or keep:
        print("work directory kept: %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    if upstream_only:
        return 1 if CHECKS.fails else 0
    return CHECKS.done("the DRA judge agrees with kube-scheduler (seed %d)" % seed)


if __name__ == "__main__":
    sys.exit(main())
