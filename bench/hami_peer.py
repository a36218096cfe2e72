#!/usr/bin/env python3
"""hami_peer.py - HAMi's scheduler extender as a side-by-side peer (issue 13 section 3).

Importable (standard library only) by other bench code:

    build()                                   -> (path, None) or (None, why)
    start(binary, kubeconfig, port, scheduler_name, workdir=None, node_selector=None,
          node_lock_timeout=None)              -> subprocess.Popen (HAMi's scheduler)
    wait_ready(port, proc, timeout)           -> None or why it is not ready
    annotate_node(kubectl, node, gpus, mem_mib, split=10, cores=100, model=...)
    extender_config(url)                      -> the `extenders:` entry (YAML text)
    pod_resources(cores_pct, mem_mib, gpus=1) -> the container's limits (dict)
    release_node_locks(kubectl, namespace)    -> how many locks it released (the device
                                                 plugin's part, for fake nodes)

Standalone: `bench/hami_peer.py --smoke [--nodes 4 --gpus 4 --pods 40]` builds HAMi
(scripts/peer-hami.sh; 77 when it cannot), starts the control plane of tests/live (77 without
its peers), HAMi's scheduler on a loopback port (plain HTTP, admin kubeconfig), a second
kube-scheduler whose profile calls it with HAMi chart's extender entry, creates fake nodes
(no kubelet, no device plugin) carrying HAMi's device register annotation, and pods asking
for half a GPU each; reports pods bound and pods/s.

What a fake node carries (HAMi v2.10.0, pkg/device/nvidia/device.go, pkg/device/devices.go):
  - annotation hami.io/node-nvidia-register: JSON list, one object per GPU
    {"id": UUID, "index": i, "count": split, "devmem": MiB, "devcore": 100, "type": model,
     "numa": 0, "mode": "hami-core", "health": true}  (what the device plugin writes);
  - annotation hami.io/node-handshake: "Requesting_<local time YYYY-MM-DD HH:MM:SS>" (the
    scheduler writes this itself every 15 s cycle; after 60 s without an answer it drops the
    node's devices UNLESS status.allocatable[nvidia.com/gpu] > 0, which is why the node also
    carries)
  - status capacity/allocatable nvidia.com/gpu = gpus x split (the device plugin's count).
Binds: HAMi's bind takes the node lock hami.io/mutex.lock ("<RFC3339>,<ns>,<pod>") and the
device plugin's Allocate releases it; on a fake node nothing does, so every further bind to
that node fails ("has been locked within 5m0s") until the lock expires. The smoke plays the
device plugin's part (release_node_locks: sets hami.io/bind-phase=success and removes the
lock once the pod is bound) unless --no-release is given.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SKIP_RC = 77

REGISTER = "hami.io/node-nvidia-register"
HANDSHAKE = "hami.io/node-handshake"
NODE_LOCK = "hami.io/mutex.lock"
BIND_PHASE = "hami.io/bind-phase"
ASSIGNED_NODE = "hami.io/vgpu-node"
DEVICES_ALLOCATED = "hami.io/vgpu-devices-allocated"
RES_GPU = "nvidia.com/gpu"
RES_MEM = "nvidia.com/gpumem"
RES_CORES = "nvidia.com/gpucores"
# HAMi chart's managedResources for NVIDIA (charts/hami/templates/_helpers.tpl), all
# ignoredByScheduler: true.
MANAGED = (RES_GPU, RES_MEM, RES_CORES, "nvidia.com/gpumem-percentage", "nvidia.com/priority")

# The NVIDIA part of the chart's device ConfigMap (what --device-config-file reads; the
# scheduler exits when the file is missing or every vendor section is empty).
DEVICE_CONFIG = """nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  memoryFactor: 1
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build():
    """Run scripts/peer-hami.sh: (binary path, None), or (None, the reason)."""
    script = os.path.join(ROOT, "scripts", "peer-hami.sh")
    try:
        r = subprocess.run([script], capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "scripts/peer-hami.sh: %s" % e
    path = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if r.returncode == 0 and path and os.access(path, os.X_OK):
        return path, None
    why = [ln for ln in r.stderr.splitlines() if "cannot build" in ln]
    return None, (why[0] if why else r.stderr.strip()[-600:] or "exit %d" % r.returncode)


def start(binary, kubeconfig, port, scheduler_name, workdir=None, node_selector=None,
          node_lock_timeout=None, verbosity=2, log=None):
    """Start HAMi's scheduler (the extender): plain HTTP on 127.0.0.1:PORT (routes /filter,
    /bind, /healthz, /readyz), client credentials from KUBECONFIG (its client reads only the
    KUBECONFIG variable, then ~/.kube/config, then in-cluster), metrics on a free loopback
    port, the NVIDIA device config written to WORKDIR. NODE_SELECTOR ({label: value}) limits
    the nodes it registers. Returns the Popen (its own process group; stdout+stderr to LOG,
    default WORKDIR/hami-scheduler.log)."""
    workdir = workdir or tempfile.mkdtemp(prefix="gs-hami.")
    cfg = os.path.join(workdir, "hami-device-config.yaml")
    with open(cfg, "w") as f:
        f.write(DEVICE_CONFIG)
    argv = [binary, "--http_bind=127.0.0.1:%d" % port,
            "--scheduler-name=%s" % scheduler_name,
            "--device-config-file=%s" % cfg,
            "--metrics-bind-address=127.0.0.1:%d" % _free_port(),
            "--leader-elect=false",
            "--v=%d" % verbosity]
    if node_selector:
        argv.append("--node-label-selector=" + ",".join("%s=%s" % kv for kv in node_selector.items()))
    if node_lock_timeout is not None:
        argv.append("--node-lock-timeout=%s" % node_lock_timeout)
    env = dict(os.environ)
    env["KUBECONFIG"] = os.path.abspath(kubeconfig)
    log = log or os.path.join(workdir, "hami-scheduler.log")
    out = open(log, "ab")
    try:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True, cwd=workdir)
    finally:
        out.close()
    p.log = log
    return p


def wait_ready(port, proc=None, timeout=60):
    """Wait for HAMi's /healthz and /readyz (readyz: its node registration ran once).
    None when ready, else why not."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return "hami-scheduler exited with %s" % proc.returncode
        try:
            for route in ("/healthz", "/readyz"):
                with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, route),
                                            timeout=3) as r:
                    if r.status != 200:
                        raise OSError("%s %d" % (route, r.status))
            return None
        except OSError as e:
            last = str(e)
        time.sleep(0.3)
    return "not ready after %ds: %s" % (timeout, last)


def stop(proc, timeout=15):
    """SIGTERM (SIGKILL after TIMEOUT) the process group START made; its exit status."""
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    return proc.returncode


def _kubectl(kubectl, *args, input=None):
    """KUBECTL is a callable (ControlPlane.kubectl bound to a user) or an argv prefix."""
    if callable(kubectl):
        return kubectl(*args, input=input)
    argv = [kubectl] if isinstance(kubectl, str) else list(kubectl)
    return subprocess.run(argv + list(args), input=input, capture_output=True, text=True,
                          timeout=60)


def _must(r, what):
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (what, (r.stderr or r.stdout).strip()[-400:]))
    return r


def register_value(node, gpus, mem_mib, split=10, cores=100, model="NVIDIA-A100-SXM4-80GB"):
    """The hami.io/node-nvidia-register JSON the device plugin would write for NODE."""
    devs = []
    for i in range(gpus):
        uuid = "GPU-%08x-0000-4000-8000-%012d" % (zlib.crc32(node.encode()), i)
        devs.append({"id": uuid, "index": i, "count": split, "devmem": mem_mib,
                     "devcore": cores, "type": model, "numa": 0, "mode": "hami-core",
                     "health": True})
    return json.dumps(devs, separators=(",", ":"))


def annotate_node(kubectl, node, gpus, mem_mib, split=10, cores=100,
                  model="NVIDIA-A100-SXM4-80GB"):
    """Make the existing (fake) NODE count for HAMi as GPUS GPUs of MEM_MIB MiB each: the
    register annotation, a fresh handshake timestamp, and status capacity/allocatable
    nvidia.com/gpu = GPUS x SPLIT (merged into what the status already has)."""
    stamp = "Requesting_" + datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    _must(_kubectl(kubectl, "annotate", "node", node, "--overwrite",
                   "%s=%s" % (REGISTER, register_value(node, gpus, mem_mib, split, cores, model)),
                   "%s=%s" % (HANDSHAKE, stamp)), "annotate node " + node)
    q = {RES_GPU: str(gpus * split)}
    _must(_kubectl(kubectl, "patch", "node", node, "--subresource=status", "--type=merge", "-p",
                   json.dumps({"status": {"capacity": q, "allocatable": q}})),
          "status of node " + node)


def extender_config(url, http_timeout="30s"):
    """The `extenders:` entry HAMi's chart gives kube-scheduler (configmap.yaml, K8s >= 1.22),
    at URL (the chart: http://127.0.0.1:80 or https://127.0.0.1:443 with insecure TLS)."""
    lines = ["extenders:",
             "  - urlPrefix: %s" % json.dumps(url),
             "    enableHTTPS: %s" % ("true" if url.startswith("https:") else "false")]
    if url.startswith("https:"):
        lines += ["    tlsConfig:", "      insecure: true"]
    lines += ["    filterVerb: filter",
              "    bindVerb: bind",
              "    nodeCacheCapable: true",
              "    weight: 1",
              "    httpTimeout: %s" % http_timeout,
              "    managedResources:"]
    lines += ["      - {name: %s, ignoredByScheduler: true}" % r for r in MANAGED]
    return "\n".join(lines) + "\n"


def pod_resources(cores_pct, mem_mib, gpus=1):
    """A container's limits for a HAMi share: GPUS vGPUs, each MEM_MIB MiB and CORES_PCT % of
    the SMs (HAMi reads limits; requests of extended resources must equal them)."""
    return {RES_GPU: str(gpus), RES_MEM: str(mem_mib), RES_CORES: str(cores_pct)}


def release_node_locks(kubectl, namespace):
    """The device plugin's part after a bind, for fake nodes: for every node lock held by a
    pod of NAMESPACE that is bound, set the pod's hami.io/bind-phase=success and remove the
    lock. Returns the number released."""
    r = _kubectl(kubectl, "get", "nodes", "-o", "json")
    if r.returncode != 0:
        return 0
    n = 0
    for node in json.loads(r.stdout)["items"]:
        lock = (node["metadata"].get("annotations") or {}).get(NODE_LOCK)
        if not lock:
            continue
        parts = lock.split(",")
        if len(parts) != 3 or parts[1] != namespace:
            continue
        p = _kubectl(kubectl, "get", "pod", "-n", namespace, parts[2], "-o",
                     "jsonpath={.spec.nodeName}")
        if p.returncode != 0 or not p.stdout.strip():
            continue
        _kubectl(kubectl, "annotate", "pod", "-n", namespace, parts[2], "--overwrite",
                 "%s=success" % BIND_PHASE)
        if _kubectl(kubectl, "annotate", "node", node["metadata"]["name"],
                    NODE_LOCK + "-").returncode == 0:
            n += 1
    return n


# ---------------------------------------------------------------------------- smoke
def _say(msg):
    print("hami-smoke: " + msg, flush=True)


def smoke(a):
    binary, why = build()
    if binary is None:
        print("SKIP: HAMi's scheduler cannot be built here: %s" % why)
        return SKIP_RC
    _say("HAMi scheduler: %s" % binary)
    sys.path.insert(0, os.path.join(ROOT, "tests", "live"))
    from controlplane import ControlPlane, ControlPlaneError, PeersMissing
    try:
        cp = ControlPlane(scheduler=False)
        cp.__enter__()
    except PeersMissing as e:
        print("SKIP: %s" % e)
        return SKIP_RC
    work = tempfile.mkdtemp(prefix="gs-hami-smoke.")
    hami = None
    tag = "%06x" % (os.getpid() & 0xffffff)
    sched = "hami-smoke-" + tag
    ns = "hami-smoke-" + tag
    ok = True

    def admin(*args, input=None):
        return cp.kubectl("admin", *args, input=input)
    try:
        port = _free_port()
        hami = start(binary, cp.kubeconfig["admin"], port, sched, workdir=work,
                     node_selector={"gpusched.io/hami-smoke": tag})
        nodes = []
        for i in range(a.nodes):
            name = "hami-smoke-%s-%d" % (tag, i)
            _must(admin("create", "-f", "-", input=json.dumps(
                {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": name, "labels": {"gpusched.io/hami-smoke": tag}}})),
                "create node " + name)
            q = {"cpu": "64", "memory": "512Gi", "pods": "110"}
            _must(admin("patch", "node", name, "--subresource=status", "--type=merge", "-p",
                        json.dumps({"status": {"capacity": q, "allocatable": q, "conditions": [
                            {"type": "Ready", "status": "True", "reason": "KubeletReady",
                             "message": "fake", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})),
                  "status of " + name)
            _must(admin("patch", "node", name, "--type=merge", "-p",
                        json.dumps({"spec": {"taints": []}})), "untaint " + name)
            annotate_node(admin, name, a.gpus, a.mem_mib)
            nodes.append(name)
        _say("%d fake nodes x %d GPUs of %d MiB (register + handshake annotations)"
             % (a.nodes, a.gpus, a.mem_mib))
        why = wait_ready(port, hami, timeout=60)
        if why:
            _say("FAIL: HAMi's scheduler: %s" % why)
            ok = False
            raise RuntimeError(why)
        _say("HAMi's scheduler ready on 127.0.0.1:%d" % port)
        # HAMi registers nodes every 15 s (or on a node event): wait until its metrics or log
        # say the nodes are known, at most 20 s.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(hami.log, errors="replace") as f:
                if sum(1 for ln in f if "Node device added" in ln) >= len(nodes):
                    break
            time.sleep(0.5)
        with open(hami.log, errors="replace") as f:
            added = sum(1 for ln in f if "Node device added" in ln)
        _say("HAMi registered the devices of %d/%d nodes" % (added, len(nodes)))

        cfg = os.path.join(work, "kube-scheduler-hami.yaml")
        with open(cfg, "w") as f:
            f.write("apiVersion: kubescheduler.config.k8s.io/v1\n"
                    "kind: KubeSchedulerConfiguration\n"
                    "clientConnection:\n  kubeconfig: %s\n"
                    "leaderElection:\n  leaderElect: false\n"
                    "profiles:\n  - schedulerName: %s\n"
                    % (json.dumps(cp.kubeconfig["scheduler"]), sched))
            f.write(extender_config("http://127.0.0.1:%d" % port))
        try:
            info = cp.start_extra_scheduler(sched, cfg)
        except ControlPlaneError as e:
            _say("FAIL: kube-scheduler with HAMi's extender entry: %s" % e)
            ok = False
            raise RuntimeError(str(e))
        _say("kube-scheduler profile %s -> HAMi's extender (pid %d)" % (sched, info["pid"]))

        _must(admin("create", "namespace", ns), "namespace")
        half = a.mem_mib // 2
        pods = [{"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "half-%03d" % i, "namespace": ns},
                 "spec": {"schedulerName": sched,
                          "nodeSelector": {"gpusched.io/hami-smoke": tag},
                          "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                          "resources": {"limits": pod_resources(50, half)}}]}}
                for i in range(a.pods)]
        releaser_stop = threading.Event()
        released = [0]

        def releaser():
            while not releaser_stop.is_set():
                try:
                    released[0] += release_node_locks(admin, ns)
                except Exception:  # the next round tries again
                    pass
                releaser_stop.wait(0.2)
        if not a.no_release:
            threading.Thread(target=releaser, daemon=True).start()
        t0 = time.monotonic()
        _must(admin("create", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": pods})), "create pods")
        bound, last_change, last_n = {}, time.monotonic(), -1
        while time.monotonic() - t0 < a.timeout:
            r = admin("get", "pods", "-n", ns, "-o", "json")
            if r.returncode == 0:
                items = json.loads(r.stdout)["items"]
                for p in items:
                    if p["spec"].get("nodeName") and p["metadata"]["name"] not in bound:
                        bound[p["metadata"]["name"]] = (time.monotonic() - t0, p)
            if len(bound) != last_n:
                last_n, last_change = len(bound), time.monotonic()
            if len(bound) == a.pods or time.monotonic() - last_change > a.stall:
                break
            time.sleep(0.25)
        releaser_stop.set()
        if bound:
            t_last = max(t for t, _ in bound.values())
            _say("pods bound: %d/%d in %.2f s (%.1f pods/s, first at %.2f s)%s"
                 % (len(bound), a.pods, t_last, len(bound) / t_last if t_last > 0 else 0,
                    min(t for t, _ in bound.values()),
                    "" if a.no_release else "; node locks released by the smoke: %d"
                    % released[0]))
        else:
            _say("pods bound: 0/%d after %.0f s" % (a.pods, time.monotonic() - t0))
        # what HAMi recorded: per-GPU usage from hami.io/vgpu-devices-allocated
        per_dev, per_node = {}, {}
        for _, p in bound.values():
            ann = p["metadata"].get("annotations") or {}
            per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
            for ctr in ann.get(DEVICES_ALLOCATED, "").split(";"):
                for dev in ctr.split(":"):
                    f = dev.split(",")
                    if len(f) >= 4 and f[0]:
                        per_dev[f[0]] = per_dev.get(f[0], 0) + int(f[2])
        over = [u for u, m in per_dev.items() if m > a.mem_mib]
        _say("per node: %s" % ", ".join("%s=%d" % (n[-1:], c) for n, c in sorted(per_node.items())))
        _say("devices used: %d, max MiB on one device %d of %d%s"
             % (len(per_dev), max(per_dev.values()) if per_dev else 0, a.mem_mib,
                ", OVER-COMMITTED: %s" % over if over else ""))
        if len(bound) < a.pods:
            ok = False
            ev = admin("get", "events", "-n", ns, "--field-selector", "reason=FailedScheduling",
                       "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
            msgs = sorted(set(ev.stdout.splitlines()))[:5]
            _say("NOT all bound; FailedScheduling events (up to 5 distinct):")
            for m in msgs:
                print("    " + m[:300])
            with open(hami.log, errors="replace") as f:
                errs = [ln.rstrip() for ln in f if "locked within" in ln or ln.startswith("E")]
            if errs:
                _say("HAMi's log (last errors):")
                for ln in errs[-5:]:
                    print("    " + ln[:300])
        if over:
            ok = False
    except RuntimeError as e:
        ok = False
        _say("stopped: %s" % e)
    finally:
        if hami is not None:
            stop(hami)
            if not ok:
                _say("last lines of HAMi's log %s:" % hami.log)
                with open(hami.log, errors="replace") as f:
                    for ln in f.readlines()[-15:]:
                        print("    " + ln.rstrip()[:300])
        cp.__exit__(None, None, None)
        if a.keep:
            _say("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    _say("works" if ok else "does NOT fully work (see above)")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="run the side-by-side smoke")
    ap.add_argument("--build", action="store_true", help="only build; print the path or why not")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--mem-mib", type=int, default=81920)
    ap.add_argument("--pods", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=180, help="seconds to wait for binds")
    ap.add_argument("--stall", type=float, default=45,
                    help="stop waiting when no pod was bound for this long")
    ap.add_argument("--no-release", action="store_true",
                    help="do not play the device plugin's part (node locks stay 5 min)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    a = ap.parse_args()
    if a.build:
        path, why = build()
        print(path or "cannot: %s" % why)
        return 0 if path else SKIP_RC
    if a.smoke:
        return smoke(a)
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
