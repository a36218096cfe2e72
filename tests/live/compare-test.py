#!/usr/bin/env python3
"""compare-test.py GPUSCHED - every command on a live cluster says what it says on a kubectl
dump of that cluster, byte for byte.

Run under the shared control plane (`controlplane.py exec STATE -- compare-test.py GPUSCHED`,
the ctest fixture gs_live); without one it skips (77). It builds a small GPU cluster in the
API server with the real kubectl, all names carrying one unique prefix so it can share the
plane with the other live tests:

  - nodes with GFD labels, capacity and allocatable set through the status subresource, a
    Ready condition and taints: an H100 node (8 whole GPUs, nvidia.com/gpu taint), an A100
    in MIG mixed strategy (1g.10gb and 3g.40gb instances), a T4 node time-sliced into
    nvidia.com/gpu.shared replicas, a HAMi vGPU node (hami.io/node-nvidia-register) and an
    L4 node without the GPU taint (a hygiene finding);
  - two namespaces, two PriorityClasses, ResourceQuotas (created after the pods: the
    quota admission plugin refuses pods while no controller has computed a quota's
    status), a PodDisruptionBudget;
  - pods of several conventions: whole GPUs, MIG resources, nvidia.com/gpu.shared, HAMi
    gpumem/gpucores, bound ones (spec.nodeName, phase Running through the status
    subresource: one a preemption victim), pending ones (one too big, one without the GPU
    toleration, a non-GPU pod on the untainted GPU node);
  - DRA objects of resource.k8s.io/v1 (the NVIDIA DRA driver's conventions): a DeviceClass,
    a ResourceSlice of the H100 node, a ResourceClaimTemplate and a ResourceClaim, and a
    pending pod whose container uses a claim made from the template.

Each node carries the taint gpusched.io/compare=<prefix>:NoSchedule and each of the test's
pods tolerates it and selects the nodes by label, so no other test's pod is placed on them.

Then, for schedule, explain, check and simulate, in text and JSON (check also SARIF and
JUnit; with -n on the test's namespace and without), it runs the command once on the
cluster (--kubeconfig of the admin user) and once on `kubectl get nodes,namespaces,
priorityclasses,resourcequotas,poddisruptionbudgets,pods,deviceclasses,resourceclaims,
resourceclaimtemplates,resourceslices -A -o json` (the kinds and order of a live read), and
compares exit status and stdout byte for byte. check's outputs may
differ in the objects' locations only: the dump's findings carry `cluster.json:LINE:COL`,
the cluster's `context NAME` and no line; both are cut out before the comparison, which is
exact on everything else (order included). simulate's JSON differs only in the sweep
fingerprint's input (`manifest=cluster.json` / `cluster=context NAME`).

Other live tests create and delete objects in the same plane meanwhile: the dump is taken
right before and right after each live run, and the comparison is made only when both
dumps are identical (every object and its resourceVersion): the cluster did not change
during the live read. Otherwise it retries (up to GS_COMPARE_TRIES, default 30).

Also: the RBAC-restricted user (nodes only) gets exit 2, the API server's "forbidden"
message on stderr and nothing on stdout, from every command; a kubeconfig pointing at a
closed port, or naming a CA that did not sign the server's certificate, fails within 15 s
with exit 2 and nothing on stdout; a server that never answers is given up after
--request-timeout; an unknown --context is exit 2.
Exit 0 pass, 1 fail, 77 skipped.
"""
import base64
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gslive  # noqa: E402
from gslive import env  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check
FAILS = CHECKS.fails
KIND_LIST = ("nodes,namespaces,priorityclasses,resourcequotas,poddisruptionbudgets,pods,"
             "deviceclasses,resourceclaims,resourceclaimtemplates,resourceslices")


GPUSCHED = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
KUBECTL = None
ADMIN = None
U = "gscmp-" + secrets.token_hex(3)
NS_ML = U + "-ml"
NS_BATCH = U + "-batch"
TAINT = {"key": "gpusched.io/compare", "value": U, "effect": "NoSchedule"}
SELECT = {"gpusched.io/compare": U}


def kubectl(*args, kubeconfig=None, input=None, check_rc=True):
    r = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig or ADMIN] + list(args), input=input,
                       capture_output=True, text=True, timeout=120)
    if check_rc and r.returncode != 0:
        raise RuntimeError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def create(objs):
    kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))


# ---------------------------------------------------------------- the cluster
def gfd(product, count, memory, **extra):
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
              "nvidia.com/gpu.count": str(count), "nvidia.com/gpu.memory": str(memory),
              "nvidia.com/cuda.driver.major": "550", "nvidia.com/gpu.deploy.device-plugin": "true"}
    labels.update(extra)
    return labels


def node(name, labels, taints, capacity, annotations=None):
    full = dict(labels)
    full.update(SELECT)
    full["kubernetes.io/hostname"] = U + "-" + name
    full["node.kubernetes.io/instance-type"] = name.split("-")[0]
    meta = {"name": U + "-" + name, "labels": full}
    if annotations:
        meta["annotations"] = annotations
    cap = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    cap.update(capacity)
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"taints": [TAINT] + taints}}, cap


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
HAMI_REGISTER = json.dumps([
    {"id": "GPU-%s-0000-4000-8000-00000000000%d" % (secrets.token_hex(4), i), "count": 10,
     "devmem": 24576, "devcore": 100, "type": "NVIDIA-NVIDIA A10", "health": True}
    for i in range(2)], separators=(",", ":"))

NODES = [
    node("h100-a", gfd("NVIDIA-H100-80GB-HBM3", 8, 81559, **{"nvidia.com/gpu.family": "hopper",
                                                            "nvidia.com/mig.capable": "true"}),
         [GPU_TAINT], {"nvidia.com/gpu": "8", "cpu": "192", "memory": "2Ti"}),
    node("a100-mig", gfd("NVIDIA-A100-SXM4-80GB", 2, 81920, **{
        "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "custom", "nvidia.com/mig-1g.10gb.count": "7",
        "nvidia.com/mig-3g.40gb.count": "2"}),
        [GPU_TAINT], {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "7",
                      "nvidia.com/mig-3g.40gb": "2"}),
    node("t4-shared", gfd("Tesla-T4", 2, 15360, **{"nvidia.com/gpu.replicas": "4",
                                                   "nvidia.com/gpu.sharing-strategy": "time-slicing"}),
         [GPU_TAINT], {"nvidia.com/gpu.shared": "8"}),
    node("a10-hami", {"gpu": "on"}, [GPU_TAINT], {"nvidia.com/gpu": "20"},
         annotations={"hami.io/node-nvidia-register": HAMI_REGISTER,
                      "hami.io/node-handshake": "Requesting_2026-01-01 00:00:00"}),
    node("l4-open", gfd("NVIDIA-L4", 1, 23034), [], {"nvidia.com/gpu": "1"}),
]


def pod(ns, name, resources=None, node_name=None, priority_class=None, gpu_toleration=True,
        labels=None, annotations=None, scheduler=None):
    tolerations = [dict(TAINT, operator="Equal")]
    if gpu_toleration:
        tolerations.append({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
    container = {"name": "main", "image": "registry.example/train:1",
                 "resources": {"requests": dict({"cpu": "1", "memory": "1Gi"}, **(resources or {})),
                               "limits": dict(resources or {})}}
    if not container["resources"]["limits"]:
        del container["resources"]["limits"]
    spec = {"containers": [container], "tolerations": tolerations, "nodeSelector": dict(SELECT)}
    if node_name:
        spec["nodeName"] = U + "-" + node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    if scheduler:
        spec["schedulerName"] = scheduler
    meta = {"name": name, "namespace": ns, "labels": labels or {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


HIGH = U + "-high"
LOW = U + "-low"
PODS = [
    # bound: 4 + 2 of the H100's 8 GPUs; the low-priority one is a preemption victim
    pod(NS_ML, "train-bound", {"nvidia.com/gpu": "4"}, node_name="h100-a", priority_class=HIGH),
    pod(NS_ML, "low-bound", {"nvidia.com/gpu": "2"}, node_name="h100-a", priority_class=LOW,
        labels={"app": "low"}),
    pod(NS_ML, "web-on-gpu-node", None, node_name="l4-open", gpu_toleration=False),
    pod(NS_BATCH, "mig-bound", {"nvidia.com/mig-1g.10gb": "1"}, node_name="a100-mig"),
    # pending
    pod(NS_ML, "train-pending", {"nvidia.com/gpu": "4"}, priority_class=HIGH),
    pod(NS_ML, "train-huge", {"nvidia.com/gpu": "16"}, priority_class=HIGH),
    pod(NS_ML, "no-toleration", {"nvidia.com/gpu": "1"}, gpu_toleration=False),
    pod(NS_ML, "mig-small", {"nvidia.com/mig-1g.10gb": "2"}),
    pod(NS_BATCH, "mig-3g", {"nvidia.com/mig-3g.40gb": "1"}, priority_class=LOW),
    pod(NS_BATCH, "shared-1", {"nvidia.com/gpu.shared": "1"}),
    pod(NS_BATCH, "hami-1", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "8000",
                             "nvidia.com/gpucores": "30"}, scheduler="hami-scheduler"),
    pod(NS_BATCH, "over-quota", {"nvidia.com/gpu": "8"}, priority_class=LOW),
]


DRA_CLASS = U + "-gpu"
DRA = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRA_CLASS},
     "spec": {"selectors": [{"cel": {"expression":
                                     "device.driver == 'gpu.nvidia.com' && "
                                     "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": U + "-h100-a-gpu"},
     "spec": {"driver": "gpu.nvidia.com", "nodeName": U + "-h100-a",
              "pool": {"name": U + "-h100-a", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-%d" % i,
                           "attributes": {"type": {"string": "gpu"},
                                          "productName": {"string": "NVIDIA H100 80GB HBM3"},
                                          "cudaComputeCapability": {"version": "9.0.0"},
                                          "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x18 + i)}},
                           "capacity": {"memory": {"value": "81559Mi"}}} for i in range(2)]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "single-gpu", "namespace": NS_ML},
     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRA_CLASS}}]}}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "shared-gpu", "namespace": NS_BATCH},
     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRA_CLASS, "count": 2}}]}}},
]


def dra_pod():
    p = pod(NS_ML, "dra-pending")
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return p


def build_cluster():
    create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
            for n in (NS_ML, NS_BATCH)])
    create([{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value, "globalDefault": False,
             "description": "compare-test"} for name, value in ((HIGH, 100000), (LOW, 10))])
    create([n for n, _ in NODES])
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for n, cap in NODES:
        name = n["metadata"]["name"]
        # the API server's TaintNodesByCondition added not-ready: the taints as written
        kubectl("patch", "node", name, "--type=merge", "-p",
                json.dumps({"spec": {"taints": n["spec"]["taints"]}}))
        kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps({
            "status": {"capacity": cap, "allocatable": cap,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}]}}))
    create(DRA)
    create(PODS + [dra_pod()])
    for p in PODS:
        if p["spec"].get("nodeName"):
            kubectl("patch", "pod", "-n", p["metadata"]["namespace"], p["metadata"]["name"],
                    "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"phase": "Running"}}))
    create([{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": "low", "namespace": NS_ML},
             "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "low"}}}}])
    create([{"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "gpus", "namespace": ns},
             "spec": {"hard": {"requests.nvidia.com/gpu": hard, "pods": "20"}}}
            for ns, hard in ((NS_ML, "24"), (NS_BATCH, "4"))])


def delete_namespaces(names):
    """Delete namespaces and their objects for good. No kube-controller-manager runs: a deleted
    namespace would stay Terminating with its objects, and a bound pod would wait for a
    kubelet. So the objects go first (forced), then the namespace, finalized by hand."""
    for ns in names:
        kubectl("delete", "pods,poddisruptionbudgets,resourcequotas,resourceclaims,resourceclaimtemplates",
                "--all", "-n", ns,
                "--grace-period=0", "--force", "--wait=false", check_rc=False)
    kubectl("delete", "namespace", *names, "--wait=false", "--ignore-not-found", check_rc=False)
    for ns in names:
        kubectl("replace", "--raw", "/api/v1/namespaces/%s/finalize" % ns, "-f", "-",
                input=json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": ns}, "spec": {"finalizers": []}}),
                check_rc=False)


def delete_cluster():
    delete_namespaces([NS_ML, NS_BATCH])
    kubectl("delete", "node", *[n["metadata"]["name"] for n, _ in NODES], "--ignore-not-found",
            check_rc=False)
    kubectl("delete", "priorityclass", HIGH, LOW, "--ignore-not-found", check_rc=False)
    kubectl("delete", "resourceslice", U + "-h100-a-gpu", "--ignore-not-found", check_rc=False)
    kubectl("delete", "deviceclass", DRA_CLASS, "--ignore-not-found", check_rc=False)


# ---------------------------------------------------------------- comparing
def dump():
    r = kubectl("get", KIND_LIST, "-A", "-o", "json")
    return r.stdout


def gpusched(args, cwd, kubeconfig=None, timeout=120):
    t0 = time.monotonic()
    argv = [GPUSCHED] + args + (["--kubeconfig", kubeconfig] if kubeconfig else [])
    r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    r.seconds = time.monotonic() - t0
    return r


def live_and_dump(args, work):
    """(live run, file run) over one unchanged cluster, or (None, None)."""
    tries = int(os.environ.get("GS_COMPARE_TRIES", "30"))
    for attempt in range(tries):
        before = dump()
        live = gpusched(args, work, ADMIN)
        after = dump()
        if before == after:
            with open(os.path.join(work, "cluster.json"), "w") as f:
                f.write(before)
            return live, gpusched(args + ["cluster.json"], work)
        time.sleep(min(0.2 * (attempt + 1), 2))
    return None, None


def compare(label, args, work, normalize=None):
    live, files = live_and_dump(args, work)
    if not check(live is not None, "%s: the cluster held still during a live read" % label):
        return None
    out_live, out_file = live.stdout, files.stdout
    if normalize:
        try:
            out_live, out_file = normalize(out_live, "live"), normalize(out_file, "file")
        except Exception as e:  # a shape the normaliser did not expect is a failure
            check(False, "%s: normalise: %r" % (label, e))
            return None
    same = live.returncode == files.returncode and out_live == out_file
    if not same:
        for name, text in (("live", live.stdout), ("dump", files.stdout)):
            with open(os.path.join(work, "%s.%s.out" % (label.replace(" ", "_"), name)), "w") as f:
                f.write(text)
        print("--- stderr live:\n%s--- stderr dump:\n%s" % (live.stderr, files.stderr))
    check(same, "%s: exit %d and %d bytes, identical on the cluster and on its dump (%s)" % (
        label, live.returncode, len(live.stdout),
        "ok" if same else "differ: exit %d vs %d; outputs kept in %s" % (
            live.returncode, files.returncode, work)))
    check(live.returncode in (0, 1) and live.stdout, "%s: an answer (exit %d, %s)" % (
        label, live.returncode, live.stderr.strip()[-200:]))
    return live


SOURCE = None  # "context gs-admin"


def check_text(out, which):
    """check's text: 'cluster.json:L:C: ' or 'context NAME: ' before each finding."""
    lines = []
    for line in out.splitlines(True):
        if which == "file":
            m = re.match(r"cluster\.json:\d+:\d+: ", line)
        else:
            m = re.match(re.escape(SOURCE) + ": ", line)
            assert not re.match(re.escape(SOURCE) + r":\d", line), "a live finding has a line"
        assert m, "no location: %r" % line
        lines.append("@: " + line[m.end():])
    return "".join(lines)


def check_json(out, which):
    doc = json.loads(out)
    for f in doc["findings"]:
        if which == "live":
            assert (f["file"], f["line"], f["column"]) == (SOURCE, 0, 0), f
        else:
            assert f["file"] == "cluster.json" and f["line"] > 0, f
        f["file"] = f["line"] = f["column"] = None
    return json.dumps(doc, indent=1)


def check_sarif(out, which):
    doc = json.loads(out)
    for r in doc["runs"][0]["results"]:
        loc = r["locations"][0]["physicalLocation"]
        if which == "live":
            assert "region" not in loc, loc
            assert loc["artifactLocation"]["uri"] == SOURCE.replace(" ", "%20"), loc
        else:
            assert loc["region"]["startLine"] > 0, loc
        del r["locations"][0]["physicalLocation"]
    return json.dumps(doc, indent=1)


def check_junit(out, which):
    if which == "live":
        assert ' line="' not in out, "a live testcase has a line"
        out = out.replace(' file="%s"' % SOURCE, ' file="@"')
        out = re.sub(r'(^|">)' + re.escape(SOURCE) + ": ", r"\1@: ", out, flags=re.M)
    else:
        out = re.sub(r' file="cluster\.json" line="\d+"', ' file="@"', out)
        out = re.sub(r'(^|">)cluster\.json:\d+:\d+: ', r"\1@: ", out, flags=re.M)
    return out


def simulate_json(out, which):
    doc = json.loads(out)
    fp = doc["sweep"]["fingerprint"]
    token = "cluster=" + SOURCE if which == "live" else "manifest=cluster.json"
    assert token in fp, fp
    doc["sweep"]["fingerprint"] = fp.replace(token, "@")
    return json.dumps(doc, indent=1)


def run_checks(work):
    global SOURCE
    ctx = kubectl("config", "current-context").stdout.strip()
    SOURCE = "context " + ctx
    build_cluster()
    check(True, "cluster built: %d nodes, %d pods, prefix %s" % (len(NODES), len(PODS) + 1, U))
    kinds = [it["kind"] for it in json.loads(dump())["items"] if U in json.dumps(it["metadata"])]
    dra = [k for k in kinds if k in ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")]
    check(dra == ["DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"],
          "the dump holds the DRA objects, in the live read's order (%s)" % ", ".join(dra))

    ml = ["-n", NS_ML]
    r = compare("schedule -n", ["schedule", "--all"] + ml, work)
    if r is not None:
        check("train-pending" in r.stdout and "preempted" in r.stdout and NS_BATCH not in r.stdout,
              "schedule -n: the namespace's pods only, a preemption among them")
    compare("schedule -n json", ["schedule", "-o", "json"] + ml, work)
    r = compare("schedule", ["schedule"], work)
    if r is not None:
        for name in ("mig-small", "mig-3g", "shared-1", "hami-1", "train-huge", "over-quota"):
            check(re.search(r"\b%s\b" % name, r.stdout) is not None,
                  "schedule: %s is listed" % name)
    compare("schedule yaml", ["schedule", "-o", "yaml", "--all"], work)
    r = compare("explain -n", ["explain"] + ml, work)
    if r is not None:
        check("train-huge" in r.stdout and "mig-3g" not in r.stdout and U + "-l4-open" in r.stdout,
              "explain -n: the namespace's pending GPU pods, hygiene of every node")
    compare("explain json", ["explain", "-o", "json"], work)
    compare("check text -n", ["check", "--fail-on", "never"] + ml, work, check_text)
    compare("check text", ["check", "--fail-on", "never"], work, check_text)
    r = compare("check json", ["check", "-o", "json"], work, check_json)
    if r is not None:
        check('"file": "%s"' % SOURCE in r.stdout, "check json: findings name the cluster")
    compare("check sarif -n", ["check", "-o", "sarif"] + ml, work, check_sarif)
    compare("check junit", ["check", "-o", "junit"], work, check_junit)
    compare("simulate", ["simulate", "--workload", "cmp", "-q"], work)
    compare("simulate json", ["simulate", "--workload", "cmp", "-q", "-o", "json",
                              "--policy", "default,binpack"], work, simulate_json)

    # the RBAC-restricted user may list nodes only: the API server's refusal, nothing else
    rbac = os.environ.get("GS_KUBECONFIG_RBAC")
    if check(bool(rbac), "GS_KUBECONFIG_RBAC set"):
        for cmd in ("schedule", "explain", "check", "simulate"):
            r = gpusched([cmd], work, rbac)
            check(r.returncode == 2 and r.stdout == "" and
                  re.match(r'gpusched: error: \w+ is forbidden: User "gs-rbac-user" cannot list '
                           r'resource "\w+" in API group "[\w.]*" at the cluster scope\n$', r.stderr)
                  is not None,
                  "%s as the RBAC user: exit 2, the server's message only (rc %d, %r)" % (
                      cmd, r.returncode, r.stderr[:200]))

    # a closed port: refused at once, never the request timeout
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with open(ADMIN) as f:
        text = f.read()
    closed = os.path.join(work, "closed.kubeconfig")
    with open(closed, "w") as f:
        f.write(re.sub(r"server: https://[^\s]+", "server: https://127.0.0.1:%d" % port, text))
    for cmd in ("schedule", "check"):
        r = gpusched([cmd], work, closed, timeout=60)
        check(r.returncode == 2 and r.stdout == "" and r.stderr.startswith("gpusched: error: ")
              and r.seconds < 15,
              "%s on a closed port: exit 2 in %.1f s (%r)" % (cmd, r.seconds, r.stderr[:160]))
    # a CA that did not sign the server's certificate: refused at the handshake
    other = os.path.join(work, "other-ca")
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                           "-subj", "/CN=not-the-cluster-ca", "-keyout", other + ".key",
                           "-out", other + ".crt"], capture_output=True, text=True, timeout=60)
    if check(made.returncode == 0, "openssl makes another CA%s" % (
            "" if made.returncode == 0 else " (%s)" % made.stderr.strip()[-200:])):
        with open(other + ".crt", "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        wrong = os.path.join(work, "wrong-ca.kubeconfig")
        with open(wrong, "w") as f:
            f.write(re.sub(r"certificate-authority-data: \S+", "certificate-authority-data: " + ca, text))
        r = gpusched(["explain"], work, wrong, timeout=60)
        check(r.returncode == 2 and r.stdout == "" and r.stderr.startswith("gpusched: error: ")
              and r.seconds < 15 and "certificate" in r.stderr.lower(),
              "explain with a wrong CA: exit 2 in %.1f s (%r)" % (r.seconds, r.stderr[:200]))

    # a server that accepts the connection and never answers: --request-timeout bounds it
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    hung = os.path.join(work, "silent.kubeconfig")
    with open(hung, "w") as f:
        f.write(re.sub(r"server: https://[^\s]+",
                       "server: https://127.0.0.1:%d" % silent.getsockname()[1], text))
    r = gpusched(["schedule", "--request-timeout", "2s"], work, hung, timeout=60)
    silent.close()
    check(r.returncode == 2 and r.stdout == "" and r.stderr.startswith("gpusched: error: ")
          and 1.5 < r.seconds < 10,
          "a silent server with --request-timeout 2s: exit 2 in %.1f s (%r)" % (
              r.seconds, r.stderr[:200]))

    r = gpusched(["explain", "--context", "no-such-context"], work, ADMIN)
    check(r.returncode == 2 and r.stdout == "" and 'context "no-such-context" does not exist' in r.stderr,
          "an unknown --context: exit 2 (%r)" % r.stderr[:160])


def main():
    global KUBECTL, ADMIN
    ADMIN = env("GS_KUBECONFIG_ADMIN")
    KUBECTL = env("GS_KUBECTL")
    if len(sys.argv) > 2 and sys.argv[2] == "--delete-namespaces":  # tidy a plane by hand
        delete_namespaces(sys.argv[3:])
        return 0
    if not GPUSCHED or not os.access(GPUSCHED, os.X_OK):
        print("usage: compare-test.py GPUSCHED")
        return 2
    deadline = int(os.environ.get("GS_LIVE_TIMEOUT", "300"))
    signal_alarm(deadline)
    work = tempfile.mkdtemp(prefix="gs-compare.")
    try:
        run_checks(work)
    except Exception as e:
        check(False, "unexpected: %r" % e)
    finally:
        delete_cluster()
    if FAILS:
        print("%d check(s) failed; outputs in %s" % (len(FAILS), work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("all checks passed")
    return 0


def signal_alarm(seconds):
    import signal

    def expired(signum, frame):
        raise TimeoutError("compare-test: no result after %d s (GS_LIVE_TIMEOUT)" % seconds)
    signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)


if __name__ == "__main__":
    sys.exit(main())
