"""gslive.py - the pieces the Python live tests share (standard library only).

A test under tests/live imports it directly (`import gslive`: its own folder is on sys.path);
one elsewhere first adds tests/live to sys.path, as bench/bench-live.py does. Set
`sys.dont_write_bytecode = True` before the import: no __pycache__ in the source tree.

  checks      Checks: check(cond, what) prints "ok  <what>" / "FAIL  <what>" (quiet: the
              failures only) and keeps the failures; done(ok_line) ends the run.
  environment skip(why) (exit 77), usage(script_args) (exit 2), env(NAME) and
              plane(NAME, ...): the GS_* variables of `controlplane.py exec`, or a skip line.
  frame       main(name, timeout, run, cleanup, checks): the GS_LIVE_TIMEOUT deadline, a
              work directory, cleanup always; deadline(name, default) alone.
  kubectl     kubectl(*args) as the admin (or another kubeconfig), must(r, what),
              wait_for(pred, timeout), free_port(), log(msg) with the seconds since start,
              delete_namespace(ns) (finalized by hand: no namespace controller runs in the
              plane), can_i(user, ...); overlay(...) of a deploy/ folder, applied_names(out).
  extender    Extender (the `gpusched extender` process on a loopback port), req(port, ...),
              metric(text, name, labels), scheduler_config(...) (a KubeSchedulerConfiguration
              calling the extender), ExtraScheduler (a second kube-scheduler through
              controlplane.py), ExtenderRun (the run's namespace, labelled and tainted fake
              nodes with capacity through the status subresource, pods, records, cleanup).
"""
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
T0 = time.monotonic()
ANN = "gpusched.io/assignment"
NO_PLANE = "no control plane (run under tests/live/controlplane.py exec)"


# ---------------------------------------------------------------- checks and output
class Checks:
    """check(cond, what): one "ok  " or "FAIL" line per check (quiet: the failures only);
    the failures' texts in .fails."""

    def __init__(self, quiet=False):
        self.quiet = quiet
        self.fails = []

    def check(self, cond, what):
        if cond and not self.quiet:
            print("ok    %s" % what, flush=True)
        elif not cond:
            print("FAIL  %s" % what, flush=True)
            self.fails.append(what)
        return cond

    def done(self, ok_line, failed="%d check(s) failed"):
        """Print the summary; the exit status (0 pass, 1 fail)."""
        if self.fails:
            print(failed % len(self.fails))
            return 1
        print(ok_line)
        return 0


def log(msg):
    print("[%5.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


# ---------------------------------------------------------------- environment
def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def usage(args):
    """The one argument (GPUSCHED) of `SCRIPT GPUSCHED`, else the usage line and exit 2."""
    if len(sys.argv) != 2:
        print("usage: %s %s" % (os.path.basename(sys.argv[0]), args), file=sys.stderr)
        sys.exit(2)
    return sys.argv[1]


def env(name):
    """A variable of the plane, or skip naming it."""
    v = os.environ.get(name)
    if not v:
        skip("%s not set: run under tests/live/controlplane.py exec STATE -- ..." % name)
    return v


def plane(*names):
    """The values of the named variables, or skip: no control plane."""
    vals = [os.environ.get(n) for n in names]
    if not all(vals):
        skip(NO_PLANE)
    return vals


def deadline(name, default):
    """SIGALRM after GS_LIVE_TIMEOUT (default) seconds raises TimeoutError; the seconds."""
    limit = int(os.environ.get("GS_LIVE_TIMEOUT", str(default)))

    def expired(_signum, _frame):
        raise TimeoutError("%s: no result after %d s (GS_LIVE_TIMEOUT)" % (name, limit))
    signal.signal(signal.SIGALRM, expired)
    signal.alarm(limit)
    return limit


def main(name, timeout, run, cleanup, checks, catch=()):
    """The frame of a live test: the deadline (GS_LIVE_TIMEOUT, else TIMEOUT), a work
    directory gs-<name less -test>.XXXX, run(work) (an exception of CATCH is a failed check),
    then always cleanup(work) and the directory removed."""
    deadline(name, timeout)
    work = tempfile.mkdtemp(prefix="gs-%s." % re.sub(r"-test$", "", name))
    try:
        run(work)
    except catch as e:
        checks.check(False, str(e))
    finally:
        signal.alarm(0)
        cleanup(work)
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- kubectl and waiting
def kubectl(*args, input=None, kubeconfig=None, cache=None, timeout=120):
    """GS_KUBECTL as the admin (kubeconfig: another; False: none, the args say who)."""
    argv = [os.environ["GS_KUBECTL"]]
    if kubeconfig is not False:
        argv += ["--kubeconfig", kubeconfig or os.environ["GS_KUBECONFIG_ADMIN"]]
    if cache:
        argv += ["--cache-dir", cache]
    return subprocess.run(argv + list(args), input=input, capture_output=True, text=True,
                          timeout=timeout)


def must(r, what):
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (what, r.stderr.strip()))
    return r


def wait_for(pred, timeout, step=0.5):
    """pred() until truthy or timeout; its last value."""
    deadline_ = time.monotonic() + timeout
    while time.monotonic() < deadline_:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def delete_namespace(ns):
    """Delete and finalize by hand: no namespace controller runs in the plane."""
    kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found")
    kubectl("replace", "--raw", "/api/v1/namespaces/%s/finalize" % ns, "-f", "-",
            input=json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                              "spec": {"finalizers": []}}))


# ---------------------------------------------------------------- deploy/ through kustomize
def overlay(work, base, ns, prefix, extra=""):
    """WORK/overlay/kustomization.yaml: deploy/BASE in namespace NS, names prefixed PREFIX,
    then EXTRA (more kustomization lines); the overlay's folder."""
    d = os.path.join(work, "overlay")
    os.makedirs(d)
    rel = os.path.relpath(os.path.join(HERE, "..", "..", "deploy", base), d)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                "resources:\n  - %s\nnamespace: %s\nnamePrefix: %s\n%s" % (rel, ns, prefix, extra))
    return d


def applied_names(out):
    """The objects `kubectl apply` names (kind/name), one a line."""
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def can_i(user, verb, resource, *where):
    """`kubectl auth can-i` as USER (impersonated by the admin)."""
    r = kubectl("auth", "can-i", verb, resource, "--as", user, *where)
    return r.stdout.strip() == "yes"


# ---------------------------------------------------------------- the extender
def req(port, method, path, body=None, timeout=20):
    """(status, body bytes) of one plain-HTTP request to 127.0.0.1:port; body as JSON."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=None if body is None else json.dumps(body).encode(),
                  headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def metric(text, name, labels=""):
    """The value of one sample of a Prometheus text exposition (labels exactly as printed)."""
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


class Extender:
    """`GPUSCHED extender --kubeconfig KUBECONFIG --listen 127.0.0.1:PORT`, stderr to a file."""

    def __init__(self, binary, port, kubeconfig):
        self.port = port
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([binary, "extender", "--kubeconfig", kubeconfig, "--listen",
                                   "127.0.0.1:%d" % port], stdout=subprocess.DEVNULL,
                                  stderr=self.errf, text=True)

    def err(self):
        self.errf.seek(0)
        return self.errf.read()

    def wait_ready(self, timeout=60):
        def ready():
            if self.p.poll() is not None:
                return "exited"
            try:
                st, _ = req(self.port, "GET", "/readyz")
                return "ready" if st == 200 else None
            except OSError:
                return None
        return wait_for(ready, timeout, 0.1) == "ready"

    def stop(self):
        """SIGTERM (SIGKILL after 15 s); its exit status (None: killed)."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                return self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                return None
        return self.p.returncode


def scheduler_config(path, kubeconfig, scheduler, url):
    """A KubeSchedulerConfiguration: one profile SCHEDULER, the extender at URL with all four
    verbs, weight 5, nodeCacheCapable, not ignorable, managing open-gpu-share's gpu-milli and
    nvidia.com/mig-1g.10gb."""
    with open(path, "w") as f:
        f.write("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 100
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
  - schedulerName: %s
extenders:
  - urlPrefix: %s
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    preemptVerb: preempt
    weight: 5
    httpTimeout: 10s
    nodeCacheCapable: true
    ignorable: false
    managedResources:
      - {name: alibabacloud.com/gpu-milli, ignoredByScheduler: false}
      - {name: nvidia.com/mig-1g.10gb, ignoredByScheduler: false}
""" % (json.dumps(kubeconfig), scheduler, url))


class ExtraScheduler:
    """A second kube-scheduler NAME on the plane: through `controlplane.py scheduler` on the
    shared plane (GS_CP_STATE), else the library on a plane handle."""

    def __init__(self, name):
        self.name = name
        self.how = None     # "state", "lib" or None (not running)
        self.cp = None

    def start(self, config, kubeconfig=None, args=()):
        """(info {"port", "pid", "log"}, output) or (None, why)."""
        state = os.environ.get("GS_CP_STATE")
        if state:
            argv = [sys.executable, os.path.join(HERE, "controlplane.py"), "scheduler", state,
                    "--config", config, "--name", self.name]
            if kubeconfig:
                argv += ["--kubeconfig", kubeconfig]
            r = subprocess.run(argv + ["--arg=" + a for a in args],
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                return None, r.stdout + r.stderr
            m = re.match(r"port (\d+) pid (\d+) log (\S+)", r.stdout.strip())
            self.how = "state"
            return {"port": int(m.group(1)), "pid": int(m.group(2)), "log": m.group(3)}, r.stdout
        sys.path.insert(0, HERE)
        import controlplane
        self.cp = controlplane.ControlPlane.attach(dict(os.environ))
        try:
            info = self.cp.start_extra_scheduler(self.name, config, kubeconfig, args)
        except controlplane.ControlPlaneError as e:
            return None, str(e)
        self.how = "lib"
        return info, ""

    def stop(self):
        if self.how == "state":
            subprocess.run([sys.executable, os.path.join(HERE, "controlplane.py"), "scheduler",
                            os.environ["GS_CP_STATE"], "--name", self.name, "--stop"],
                           capture_output=True, text=True, timeout=120)
        elif self.how == "lib":
            self.cp.stop_extra_scheduler(self.name)
        self.how = None


# ---------------------------------------------------------------- pods and records
def record(p):
    """The pod's gpusched.io/assignment record, parsed (None: none)."""
    text = (p["metadata"].get("annotations") or {}).get(ANN)
    return json.loads(text) if text else None


def devices(rec):
    return [d for c in rec.get("containers", []) for d in c.get("devices", [])]


def bound(p):
    return p["spec"].get("nodeName")


class ExtenderRun:
    """One run of an extender test on the shared plane: tag, namespace NS_PREFIX<tag>, the
    second scheduler SCHED_PREFIX<tag>, the label and taint KEY=<tag> (and KEY-pool=<pool>)
    on its nodes NS-<short>, the extender process on a free loopback port."""

    def __init__(self, binary, ns_prefix, sched_prefix, key):
        self.bin = os.path.abspath(binary)
        self.admin = os.environ["GS_KUBECONFIG_ADMIN"]
        self.tag = secrets.token_hex(3)
        self.ns = ns_prefix + self.tag
        self.sched = sched_prefix + self.tag
        self.key = key
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.nodes = {}     # name -> pool
        self.ext = None
        self.scheduler = ExtraScheduler(self.sched)
        self.log = None     # the scheduler's log file

    # nodes
    def node_name(self, short):
        return "%s-%s" % (self.ns, short)

    def make_node(self, short, pool, labels, resources):
        """A Node labelled and tainted for this run only, Ready, capacity (64 CPUs, 512Gi,
        110 pods, plus RESOURCES) through the status subresource; its name."""
        name = self.node_name(short)
        lab = {self.key: self.tag, self.key + "-pool": pool}
        lab.update(labels)
        must(kubectl("create", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab}})),
            "create node " + name)
        self.nodes[name] = pool
        q = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        q.update(resources)
        must(kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(
            {"status": {"capacity": q, "allocatable": q,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                        "message": "test", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})),
            "status of " + name)
        # the run's own taint only (this also drops the not-ready taint the admission added)
        must(kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(
            {"spec": {"taints": [{"key": self.key, "value": self.tag, "effect": "NoSchedule"}]}})),
            "taint " + name)
        return name

    def openb_node(self, short, pool, gpus):
        """An open-gpu-share node: GPUS A100s as alibabacloud.com/gpu-count and gpu-milli."""
        return self.make_node(short, pool, {"alibabacloud.com/gpu-card-model": "A100"},
                              {"alibabacloud.com/gpu-count": str(gpus),
                               "alibabacloud.com/gpu-milli": str(1000 * gpus)})

    # pods
    def pod(self, name, pool, limits, metadata=None, spec=None):
        """A pause pod for the run's scheduler on POOL's nodes (10m CPU, 16Mi requested),
        LIMITS as given; METADATA and SPEC add fields."""
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": dict({"name": name, "namespace": self.ns}, **(metadata or {})),
                "spec": {**(spec or {}), "schedulerName": self.sched,
                         "nodeSelector": {self.key: self.tag, self.key + "-pool": pool},
                         "tolerations": [{"key": self.key, "operator": "Equal", "value": self.tag,
                                          "effect": "NoSchedule"}],
                         "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                         "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                                       "limits": limits}}]}}

    def create(self, *pods):
        must(kubectl("create", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": list(pods)})), "create pods")

    def pods_now(self):
        r = must(kubectl("get", "pods", "-n", self.ns, "-o", "json"), "list pods")
        return {p["metadata"]["name"]: p for p in json.loads(r.stdout)["items"]}

    # the extender and the scheduler
    def start_extender(self):
        self.ext = Extender(self.bin, self.port, self.admin)
        return self.ext

    def start(self, work, check):
        """The extender (ready) and the second scheduler calling it, each a check; the
        scheduler's info, or None."""
        self.start_extender()
        if not check(self.ext.wait_ready(), "the extender serves and is ready on %s: %s"
                     % (self.url, self.ext.err()[-400:])):
            return None
        cfg = os.path.join(work, "scheduler.yaml")
        scheduler_config(cfg, os.environ["GS_KUBECONFIG_SCHEDULER"], self.sched, self.url)
        info, why = self.scheduler.start(cfg)
        if not check(info is not None, "kube-scheduler %s runs with the extender: %s"
                     % (self.sched, why.strip()[-600:])):
            return None
        self.log = info["log"]
        return info

    def report(self, fails):
        """On failure: the scheduler log's tail and the extender's stderr."""
        if fails and self.log:
            subprocess.run(["tail", "-n", "30", self.log])
        if fails and self.ext:
            print("extender stderr:", self.ext.err()[-2000:])

    def cleanup(self, priority_classes=()):
        try:
            self.scheduler.stop()
        except Exception as e:  # cleanup goes on
            print("cleanup: stopping the scheduler: %s" % e)
        if self.ext:
            self.ext.stop()
        kubectl("delete", "pods", "--all", "-n", self.ns, "--force", "--grace-period=0",
                "--wait=false")
        for n in self.nodes:
            kubectl("delete", "node", n, "--ignore-not-found", "--wait=false")
        for pc in priority_classes:
            kubectl("delete", "priorityclass", pc, "--ignore-not-found", "--wait=false")
        delete_namespace(self.ns)
