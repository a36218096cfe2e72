#!/usr/bin/env python3
"""controlplane.py - a real Kubernetes control plane (etcd, kube-apiserver, kube-scheduler)
on loopback.

The peers are the upstream binaries scripts/peers.sh builds into its cache (never a fake).
One control plane serves one test run: it is started, used, and torn down (also on an
exception, SIGINT, SIGTERM or SIGHUP; its processes also die with this one, PR_SET_PDEATHSIG).

What it sets up (in a fresh temporary directory, removed at the end unless GS_CP_KEEP=1):
  - a CA (openssl), the API server's serving certificate for 127.0.0.1/localhost/kubernetes*,
    a service-account signing key pair;
  - etcd on 127.0.0.1 (a free port, plain HTTP on loopback, --unsafe-no-fsync);
  - kube-apiserver on https://127.0.0.1:<free port>, authorization RBAC, the ServiceAccount
    admission plugin off (no kube-controller-manager creates `default` service accounts);
  - kube-scheduler as system:kube-scheduler, one profile "gs-kube-scheduler": it binds only
    pods with spec.schedulerName gs-kube-scheduler (GS_SCHEDULER_NAME), leaves others pending;
  - users, each with a kubeconfig written by the real `kubectl config` (certificates embedded):
      admin  client certificate CN=gs-admin, O=system:masters             (can do anything)
      token  static token (--token-auth-file), user gs-token-user,
             group gs-readers                                             (read everything)
      rbac   client certificate CN=gs-rbac-user, O=gs-restricted          (get/list/watch nodes only)
      sa     service account gs-system/gs-sa, a token from the TokenRequest API
             (`kubectl create token`), group system:serviceaccounts       (read everything)
      admin-files  as admin, certificate and key (and CA) as file paths, nothing embedded
      tokenfile    as token, through `tokenFile:` (GS_TOKEN_FILE)
      exec         as token, through an exec plugin (exec-credential.py, ExecCredential v1,
                   reads GS_TOKEN_FILE; appends a line to GS_EXEC_CALLS per call)
    "read everything" is the ClusterRole gs-cluster-reader (get/list/watch on every resource).

Library:
    from controlplane import ControlPlane, PeersMissing
    with ControlPlane() as cp:
        cp.kubectl("admin", "get", "nodes")          # CompletedProcess, text
        cp.env                                       # the GS_* variables below
CLI:
    controlplane.py check                 exit 0 when the peers are built, else 77 + one line
    controlplane.py run [--keep] -- CMD   start, run CMD with the environment, tear down;
                                          exit status of CMD (77 + one line without peers)
    controlplane.py up                    start, print `export` lines, wait for Ctrl-C
  One plane shared by many tests (the ctest fixture gs_live: live/start ... live/stop):
    controlplane.py start STATE_DIR       start it in the background; 77 + one line without peers
    controlplane.py exec STATE_DIR -- CMD run CMD with its environment (77 + one line without)
    controlplane.py stop STATE_DIR        stop it; exit 1 when a peer process survived
    controlplane.py restart-apiserver STATE_DIR   restart kube-apiserver (same port, certs,
                                          flags; its watch cache starts anew), wait until ready
    controlplane.py compact STATE_DIR     compact etcd at its current revision
    controlplane.py scheduler STATE_DIR --config FILE --name NAME [--kubeconfig KC] [--arg A]...
                                          start one more kube-scheduler against the plane with
                                          that KubeSchedulerConfiguration, owned by the plane
                                          (stopped with it); waits for /healthz, prints
                                          `port PORT pid PID log FILE`; --stop ends it
Environment given to CMD (and in cp.env):
    GS_KUBECONFIG_ADMIN GS_KUBECONFIG_TOKEN GS_KUBECONFIG_RBAC GS_KUBECONFIG_SA
    GS_KUBECONFIG_ADMIN_FILES GS_KUBECONFIG_TOKENFILE GS_KUBECONFIG_EXEC GS_TOKEN_FILE GS_EXEC_CALLS
    GS_APISERVER_URL GS_KUBECTL GS_CA_FILE GS_STATIC_TOKEN GS_SA_TOKEN GS_ETCD_URL GS_CP_DIR
    GS_KUBECONFIG_SCHEDULER (system:kube-scheduler), GS_CP_STATE (STATE_DIR, under `exec` only)
    GS_PEER_* (the peer binaries and versions, from scripts/peers.sh --print-env)
Settings: GS_CP_KEEP=1 keeps the directory; GS_CP_START_TIMEOUT (default 180 s).
"""
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_SH = os.path.join(HERE, "..", "..", "scripts", "peers.sh")
SKIP_RC = 77

USERS = ("admin", "token", "rbac", "sa", "admin-files", "tokenfile", "exec")
EXEC_PLUGIN = os.path.join(HERE, "exec-credential.py")
SA_NAMESPACE = "gs-system"
SA_NAME = "gs-sa"
# kube-scheduler runs with this profile only: it binds the pods that ask for it
# (spec.schedulerName) and leaves every other pod alone (pending), so tests that want
# unscheduled pods are undisturbed.
SCHEDULER_NAME = "gs-kube-scheduler"
STATIC_TOKEN_USER = "gs-token-user"


class PeersMissing(Exception):
    """The peer binaries are not built (message: one line saying why)."""


class ControlPlaneError(Exception):
    pass


def peers():
    """GS_PEER_* -> path/version, from `scripts/peers.sh --print-env` (builds nothing)."""
    try:
        out = subprocess.run(["bash", PEERS_SH, "--print-env"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PeersMissing("control plane peers not usable (%s): run scripts/peers.sh" % e)
    if out.returncode != 0:
        check = subprocess.run(["bash", PEERS_SH, "--check"], capture_output=True, text=True,
                               timeout=60)
        line = (check.stdout.strip() or check.stderr.strip()).splitlines()
        raise PeersMissing(line[0] if line else
                           "control plane peers not built: run scripts/peers.sh")
    env = {}
    for line in out.stdout.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            env[k] = v
    for k in ("GS_PEER_ETCD", "GS_PEER_KUBE_APISERVER", "GS_PEER_KUBECTL"):
        if not os.access(env.get(k, ""), os.X_OK):
            raise PeersMissing("control plane peers not built (%s missing): run scripts/peers.sh"
                               % k)
    if not shutil.which("openssl"):
        raise PeersMissing("openssl not found: the control plane needs it for its certificates")
    return env


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pdeathsig():
    # Runs in the child between fork and exec: SIGKILL it when this process dies (even by
    # SIGKILL, as a ctest timeout does), so no peer outlives its harness.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _die_with_parent():
    # ... and a process group of its own, so teardown can signal everything a peer started.
    _pdeathsig()
    os.setpgrp()


def _sweep_stale():
    """Remove the directories of earlier harnesses that were killed (SIGKILL leaves them)."""
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        d = os.path.join(tmp, name)
        if not name.startswith("gs-controlplane.") or not os.path.isdir(d):
            continue
        try:
            with open(os.path.join(d, "harness.pid")) as f:
                pid = int(f.read())
            os.kill(pid, 0)
            continue  # its harness is alive
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            continue  # not ours to judge
        shutil.rmtree(d, ignore_errors=True)


def _openssl(*args, cwd):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise ControlPlaneError("openssl %s failed: %s" % (" ".join(args[:2]), r.stderr.strip()))


class ControlPlane:
    def __init__(self, keep=None, start_timeout=None, log=None, scheduler=True):
        self.scheduler = scheduler
        self.peer = peers()
        self.keep = keep if keep is not None else os.environ.get("GS_CP_KEEP") == "1"
        self.start_timeout = float(start_timeout or os.environ.get("GS_CP_START_TIMEOUT", 180))
        self.log = log or (lambda msg: print("controlplane: " + msg, file=sys.stderr, flush=True))
        self.dir = None
        self.procs = {}
        self.env = {}
        self.kubeconfig = {}
        self._old_handlers = {}

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _on_signal(self, signum, _frame):
        raise SystemExit(128 + signum)

    def start(self):
        t0 = time.monotonic()
        _sweep_stale()
        self.dir = tempfile.mkdtemp(prefix="gs-controlplane.")
        with open(self.path("harness.pid"), "w") as f:
            f.write("%d\n" % os.getpid())
        self._certs()
        self._retry_port(self._start_etcd, "etcd")
        self._retry_port(self._start_apiserver, "kube-apiserver")
        self._bootstrap()
        if self.scheduler:
            self._retry_port(self._start_scheduler, "kube-scheduler")
        self.log("kubernetes %s ready in %.1fs: %s (dir %s)" % (
            self.peer.get("GS_PEER_KUBERNETES_VERSION", "?"), time.monotonic() - t0, self.url,
            self.dir))

    def _retry_port(self, start, name):
        # A free port found by binding port 0 can be taken by someone else before the peer
        # binds it: try again with other ports.
        for attempt in range(3):
            try:
                return start()
            except ControlPlaneError as e:
                if attempt == 2 or "address already in use" not in str(e):
                    raise
                self.procs.pop(name, None)
                self.log("%s: port taken, retrying" % name)

    def stop(self):
        # Teardown is not interrupted by a second signal.
        for sig in self._old_handlers:
            signal.signal(sig, signal.SIG_IGN)
        # The schedulers and the API server first (they hold etcd connections), then etcd.
        extra = sorted(n for n in self.procs if n.startswith("scheduler-"))
        for name in extra + ["kube-scheduler", "kube-apiserver", "etcd"]:
            p = self.procs.pop(name, None)
            if p is None:
                continue
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait(timeout=15)
        if self.dir and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.dir:
            try:
                os.unlink(self.path("harness.pid"))  # kept on purpose: no sweep removes it
            except OSError:
                pass
            self.log("kept %s" % self.dir)
        for sig, h in self._old_handlers.items():
            signal.signal(sig, h)
        self._old_handlers = {}

    # ---------------------------------------------------------------- pieces
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _certs(self):
        d = self.dir
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
                 "-out", "ca.crt", "-days", "2", "-subj", "/CN=gpusched-test-ca", cwd=d)
        self._leaf("apiserver", "/CN=kube-apiserver",
                   "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
                   "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
                   "DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth")
        self._leaf("admin", "/O=system:masters/CN=gs-admin", "extendedKeyUsage=clientAuth")
        self._leaf("rbac", "/O=gs-restricted/CN=gs-rbac-user", "extendedKeyUsage=clientAuth")
        # kube-scheduler's own identity: the bootstrap RBAC binds system:kube-scheduler to it.
        self._leaf("scheduler", "/CN=system:kube-scheduler", "extendedKeyUsage=clientAuth")
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)
        self.static_token = os.urandom(16).hex()
        with open(self.path("tokens.csv"), "w") as f:
            f.write('%s,%s,gs-token-uid,"gs-readers"\n' % (self.static_token, STATIC_TOKEN_USER))

    def _leaf(self, name, subj, ext):
        d = self.dir
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                    + ext + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out",
                 name + ".csr", "-subj", subj, cwd=d)
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile",
                 name + ".ext", cwd=d)

    def _spawn(self, name, argv):
        logf = open(self.path(name + ".log"), "wb")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf,
                                 stderr=subprocess.STDOUT, cwd=self.dir,
                                 preexec_fn=_die_with_parent)
        finally:
            logf.close()
        self.procs[name] = p
        return p

    def log_tail(self, name, lines=30):
        try:
            with open(self.path(name + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def _wait(self, name, probe, timeout):
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            p = self.procs[name]
            if p.poll() is not None:
                raise ControlPlaneError("%s exited with status %s during start-up; log tail:\n%s"
                                        % (name, p.returncode, self.log_tail(name)))
            try:
                if probe():
                    return
            except Exception as e:  # not up yet
                last = str(e)
            time.sleep(0.25)
        raise ControlPlaneError("%s not ready after %.0fs (%s); log tail:\n%s"
                                % (name, timeout, last, self.log_tail(name)))

    def _start_etcd(self):
        cport, pport = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % cport
        peer_url = "http://127.0.0.1:%d" % pport
        self._spawn("etcd", [
            self.peer["GS_PEER_ETCD"], "--name", "gs", "--data-dir", self.path("etcd-data"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", "gs=" + peer_url, "--initial-cluster-state", "new",
            "--unsafe-no-fsync", "--log-level", "warn",
        ])

        def healthy():
            with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as r:
                return json.load(r).get("health") == "true"
        self._wait("etcd", healthy, self.start_timeout)

    def _start_apiserver(self):
        port = free_port()
        self.url = "https://127.0.0.1:%d" % port
        self.apiserver_argv = [
            self.peer["GS_PEER_KUBE_APISERVER"],
            "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            # the kubernetes Service endpoints may not be loopback: no reconciler for them
            "--endpoint-reconciler-type", "none",
            "--secure-port", str(port),
            "--tls-cert-file", self.path("apiserver.crt"),
            "--tls-private-key-file", self.path("apiserver.key"),
            "--client-ca-file", self.path("ca.crt"),
            "--token-auth-file", self.path("tokens.csv"),
            "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", self.path("sa.pub"),
            "--service-account-signing-key-file", self.path("sa.key"),
            "--service-cluster-ip-range", "10.0.0.0/24",
            "--disable-admission-plugins", "ServiceAccount",
            "--cert-dir", self.path("apiserver-certs"),
            "--profiling=false",
            "--v", "1",
        ]
        self._spawn("kube-apiserver", self.apiserver_argv)
        self._wait_apiserver()

    def restart_apiserver(self):
        """Stop kube-apiserver (SIGTERM) and start it again: same port, certificates and
        flags, same etcd (its watch cache starts empty at etcd's current revision)."""
        p = self.procs.pop("kube-apiserver")
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=10)  # open watches may hold a graceful shutdown for longer
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=15)
        os.rename(self.path("kube-apiserver.log"), self.path("kube-apiserver.log.%d" % time.time()))
        for attempt in range(40):  # the port may linger for a moment
            self._spawn("kube-apiserver", self.apiserver_argv)
            try:
                self._wait_apiserver()
                return
            except ControlPlaneError as e:
                if attempt == 39 or "address already in use" not in str(e) + self.log_tail("kube-apiserver"):
                    raise
                time.sleep(0.5)

    def compact(self):
        """Compact etcd at its current revision (the v3 HTTP/JSON gateway): the revision."""
        return etcd_compact(self.etcd_url)

    def _wait_apiserver(self):
        ctx = ssl.create_default_context(cafile=self.path("ca.crt"))
        ctx.load_cert_chain(self.path("admin.crt"), self.path("admin.key"))

        def ready():
            with urllib.request.urlopen(self.url + "/readyz", timeout=5, context=ctx) as r:
                return r.status == 200
        self._wait("kube-apiserver", ready, self.start_timeout)

    def _kubeconfig(self, user, cred_args, embed=True, extra=()):
        path = self.path("kubeconfig-" + user)
        kc = self.peer["GS_PEER_KUBECTL"]
        steps = [
            ["config", "set-cluster", "gs", "--server", self.url,
             "--certificate-authority", self.path("ca.crt"), "--embed-certs=%s" % str(embed).lower()],
            ["config", "set-credentials", "gs-" + user] + cred_args,
        ] + list(extra) + [
            ["config", "set-context", "gs-" + user, "--cluster", "gs", "--user", "gs-" + user],
            ["config", "use-context", "gs-" + user],
        ]
        for args in steps:
            r = subprocess.run([kc, "--kubeconfig", path] + args, capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 0:
                raise ControlPlaneError("kubectl %s: %s" % (" ".join(args[:2]), r.stderr.strip()))
        self.kubeconfig[user] = path

    def _bootstrap(self):
        # kube-scheduler's identity (system:kube-scheduler): the shared scheduler and the
        # extra ones of start_extra_scheduler
        self._kubeconfig("scheduler", ["--client-certificate", self.path("scheduler.crt"),
                                       "--client-key", self.path("scheduler.key"),
                                       "--embed-certs=true"])
        for user in ("admin", "rbac"):
            self._kubeconfig(user, ["--client-certificate", self.path(user + ".crt"),
                                    "--client-key", self.path(user + ".key"),
                                    "--embed-certs=true"])
        self._kubeconfig("token", ["--token", self.static_token])
        objects = {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SA_NAMESPACE}},
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": SA_NAME, "namespace": SA_NAMESPACE}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "gs-cluster-reader"},
             "rules": [{"apiGroups": ["*"], "resources": ["*"],
                        "verbs": ["get", "list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "gs-cluster-reader"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "gs-cluster-reader"},
             "subjects": [
                 {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "gs-readers"},
                 {"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NAMESPACE}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "gs-node-reader"},
             "rules": [{"apiGroups": [""], "resources": ["nodes"],
                        "verbs": ["get", "list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "gs-node-reader"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "gs-node-reader"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": "gs-rbac-user"}]},
        ]}
        r = self.kubectl("admin", "create", "-f", "-", input=json.dumps(objects))
        if r.returncode != 0:
            raise ControlPlaneError("creating the RBAC objects failed: " + r.stderr.strip())
        r = self.kubectl("admin", "create", "token", SA_NAME, "-n", SA_NAMESPACE,
                         "--duration", "2h")
        if r.returncode != 0 or not r.stdout.strip():
            raise ControlPlaneError("kubectl create token failed: " + r.stderr.strip())
        self.sa_token = r.stdout.strip()
        self._kubeconfig("sa", ["--token", self.sa_token])
        # The same credentials in the other forms a kubeconfig has: files instead of data,
        # tokenFile (re-read by clients when it rotates), an exec credential plugin.
        self._kubeconfig("admin-files", ["--client-certificate", self.path("admin.crt"),
                                         "--client-key", self.path("admin.key"),
                                         "--embed-certs=false"], embed=False)
        with open(self.path("token-file"), "w") as f:
            f.write(self.static_token + "\n")
        self._kubeconfig("tokenfile", [], extra=[
            ["config", "set", "users.gs-tokenfile.tokenFile", self.path("token-file")]])
        self._kubeconfig("exec", [
            "--exec-api-version", "client.authentication.k8s.io/v1",
            "--exec-command", sys.executable, "--exec-arg", EXEC_PLUGIN,
            "--exec-arg", self.path("token-file"), "--exec-arg", self.path("exec-calls"),
            "--exec-interactive-mode", "Never"])
        self.env = dict(self.peer)
        self.env.update({
            "GS_KUBECONFIG_ADMIN": self.kubeconfig["admin"],
            "GS_KUBECONFIG_TOKEN": self.kubeconfig["token"],
            "GS_KUBECONFIG_RBAC": self.kubeconfig["rbac"],
            "GS_KUBECONFIG_SA": self.kubeconfig["sa"],
            "GS_KUBECONFIG_ADMIN_FILES": self.kubeconfig["admin-files"],
            "GS_KUBECONFIG_TOKENFILE": self.kubeconfig["tokenfile"],
            "GS_KUBECONFIG_EXEC": self.kubeconfig["exec"],
            "GS_TOKEN_FILE": self.path("token-file"),
            "GS_EXEC_CALLS": self.path("exec-calls"),
            "GS_APISERVER_URL": self.url,
            "GS_KUBECTL": self.peer["GS_PEER_KUBECTL"],
            "GS_CA_FILE": self.path("ca.crt"),
            "GS_STATIC_TOKEN": self.static_token,
            "GS_SA_TOKEN": self.sa_token,
            "GS_ETCD_URL": self.etcd_url,
            "GS_CP_DIR": self.dir,
            "GS_SCHEDULER_NAME": SCHEDULER_NAME,
        })
        if "scheduler" in self.kubeconfig:
            self.env["GS_KUBECONFIG_SCHEDULER"] = self.kubeconfig["scheduler"]

    def _start_scheduler(self):
        if not os.access(self.peer.get("GS_PEER_KUBE_SCHEDULER", ""), os.X_OK):
            raise ControlPlaneError("kube-scheduler not built: run scripts/peers.sh")
        with open(self.path("scheduler-config.yaml"), "w") as f:
            f.write("apiVersion: kubescheduler.config.k8s.io/v1\n"
                    "kind: KubeSchedulerConfiguration\n"
                    "clientConnection:\n  kubeconfig: %s\n"
                    "leaderElection:\n  leaderElect: false\n"
                    "profiles:\n- schedulerName: %s\n"
                    % (json.dumps(self.kubeconfig["scheduler"]), SCHEDULER_NAME))
        port = free_port()
        self._spawn("kube-scheduler", [
            self.peer["GS_PEER_KUBE_SCHEDULER"], "--config", self.path("scheduler-config.yaml"),
            "--bind-address", "127.0.0.1", "--secure-port", str(port),
            "--authentication-kubeconfig", self.kubeconfig["scheduler"],
            "--authorization-kubeconfig", self.kubeconfig["scheduler"], "--v", "1",
        ])
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # its own self-signed serving certificate

        def ready():
            with urllib.request.urlopen("https://127.0.0.1:%d/readyz" % port, timeout=5,
                                        context=ctx) as r:
                return r.status == 200
        self._wait("kube-scheduler", ready, self.start_timeout)

    def start_extra_scheduler(self, name, config, kubeconfig=None, args=()):
        """Start one more kube-scheduler against this plane: `--config CONFIG` (a
        KubeSchedulerConfiguration naming its own clientConnection.kubeconfig), serving on a
        free loopback --secure-port, delegating authentication and authorization through
        KUBECONFIG (default: the system:kube-scheduler identity), plus ARGS. Waits for
        /healthz 200 (the configuration parsed, validated, and the scheduler runs; with
        leader election on, /healthz includes its check). Stopped with the plane, or by
        stop_extra_scheduler. Returns {"name", "pid", "port", "log"}."""
        if not os.access(self.peer.get("GS_PEER_KUBE_SCHEDULER", ""), os.X_OK):
            raise ControlPlaneError("kube-scheduler not built: run scripts/peers.sh")
        if not name or not all(c.isalnum() or c in "-_." for c in name):
            raise ControlPlaneError("scheduler name %r: letters, digits, - _ . only" % name)
        key = "scheduler-" + name
        if key in self.procs and self.procs[key].poll() is None:
            raise ControlPlaneError("scheduler %s is already running" % name)
        kc = kubeconfig or self.kubeconfig["scheduler"]
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # its own self-signed serving certificate
        for attempt in range(3):
            port = free_port()
            self._spawn(key, [
                self.peer["GS_PEER_KUBE_SCHEDULER"], "--config", os.path.abspath(config),
                "--bind-address", "127.0.0.1", "--secure-port", str(port),
                "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
                "--v", "2"] + list(args))

            def healthy():
                with urllib.request.urlopen("https://127.0.0.1:%d/healthz" % port, timeout=5,
                                            context=ctx) as r:
                    return r.status == 200
            try:
                self._wait(key, healthy, self.start_timeout)
                break
            except ControlPlaneError as e:
                if attempt == 2 or "address already in use" not in str(e):
                    self.stop_extra_scheduler(name)
                    raise
        p = self.procs[key]
        return {"name": name, "pid": p.pid, "port": port, "log": self.path(key + ".log")}

    def stop_extra_scheduler(self, name):
        """SIGTERM (SIGKILL after 15 s) an extra scheduler; its exit status (None: none)."""
        p = self.procs.pop("scheduler-" + name, None)
        if p is None:
            return None
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=15)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=15)
        return p.returncode

    @classmethod
    def attach(cls, env):
        """A handle on a control plane started elsewhere (`start`), from its GS_* variables."""
        cp = cls.__new__(cls)
        cp.peer = {k: v for k, v in env.items() if k.startswith("GS_PEER_")}
        cp.keep, cp.procs, cp._old_handlers = True, {}, {}
        cp.dir = env["GS_CP_DIR"]
        cp.url, cp.etcd_url = env["GS_APISERVER_URL"], env["GS_ETCD_URL"]
        cp.static_token, cp.sa_token = env["GS_STATIC_TOKEN"], env["GS_SA_TOKEN"]
        cp.kubeconfig = {u: env["GS_KUBECONFIG_" + u.upper().replace("-", "_")] for u in USERS}
        cp.env = {k: v for k, v in env.items() if k.startswith("GS_")}
        cp.log = lambda msg: print("controlplane: " + msg, file=sys.stderr, flush=True)
        return cp

    # ---------------------------------------------------------------- helpers for tests
    def kubectl(self, user, *args, input=None, timeout=60):
        """Run the real kubectl as USER (admin/token/rbac/sa); CompletedProcess (text)."""
        argv = [self.peer["GS_PEER_KUBECTL"], "--kubeconfig", self.kubeconfig[user],
                "--request-timeout", "30s"] + list(args)
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        return subprocess.run(argv, input=input, capture_output=True, text=True,
                              timeout=timeout, env=env)

    def pids(self):
        return {name: p.pid for name, p in self.procs.items()}


# ---------------------------------------------------------------- one plane for many tests
# STATE_DIR/serve.pid   the background harness     STATE_DIR/env   its GS_* variables (JSON)
# STATE_DIR/peers.json  the peer pids               STATE_DIR/skip  why there is none
# STATE_DIR/serve.log   the background harness's output

def etcd_compact(etcd_url):
    """POST /v3/kv/compaction at the current revision (read by a range request's header)."""
    def post(path, body):
        rq = urllib.request.Request(etcd_url + path, data=json.dumps(body).encode(), method="POST",
                                    headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(rq, timeout=30) as r:
            return json.load(r)
    rev = int(post("/v3/kv/range", {"key": "YQ=="})["header"]["revision"])  # key "a"
    post("/v3/kv/compaction", {"revision": str(rev), "physical": True})
    return rev


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _stop_state(state, quiet=False):
    """Stop the background harness of STATE (if any); 0, or 1 when a peer survived."""
    pid = _read(os.path.join(state, "serve.pid"))
    rc = 0
    if pid and pid.strip().isdigit() and _alive(int(pid)):
        os.kill(int(pid), signal.SIGTERM)
        deadline = time.monotonic() + 45
        while _alive(int(pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(int(pid)):
            print("controlplane: harness %s ignored SIGTERM for 45 s; killing it" % pid)
            os.kill(int(pid), signal.SIGKILL)
    peer_pids = json.loads(_read(os.path.join(state, "peers.json")) or "{}")
    for name, p in peer_pids.items():
        if _alive(p):
            rc = 1
            print("FAIL  %s (pid %d) survived the harness; killing it" % (name, p))
            try:
                os.killpg(p, signal.SIGKILL)
            except OSError:
                pass
        elif not quiet:
            print("ok    %s (pid %d) stopped" % (name, p))
    for f in ("serve.pid", "env", "peers.json", "skip", "restarts"):
        try:
            os.unlink(os.path.join(state, f))
        except OSError:
            pass
    shutil.rmtree(os.path.join(state, SCHED_REQ_DIR), ignore_errors=True)
    return rc


SCHED_REQ_DIR = "scheduler-requests"


def _scheduler_request(state, a):
    """`scheduler STATE --config FILE --name NAME`: ask the background harness (SIGUSR2 and
    a request file) to start an extra kube-scheduler it owns, or to stop one (--stop)."""
    envtext = _read(os.path.join(state, "env"))
    pid = (_read(os.path.join(state, "serve.pid")) or "").strip()
    if envtext is None or not pid.isdigit():
        print("SKIP: no control plane running in %s" % state)
        return SKIP_RC
    if not a.stop and not a.config:
        print("controlplane: scheduler needs --config FILE (or --stop)", file=sys.stderr)
        return 2
    d = os.path.join(state, SCHED_REQ_DIR)
    os.makedirs(d, exist_ok=True)
    rid = "%d-%s" % (os.getpid(), os.urandom(4).hex())
    req = {"name": a.name, "stop": bool(a.stop),
           "config": os.path.abspath(a.config) if a.config else None,
           "kubeconfig": os.path.abspath(a.kubeconfig) if a.kubeconfig else None,
           "args": list(a.arg or [])}
    with open(os.path.join(d, rid + ".tmp"), "w") as f:
        json.dump(req, f)
    os.rename(os.path.join(d, rid + ".tmp"), os.path.join(d, rid + ".json"))
    done = os.path.join(d, rid + ".done")
    deadline = time.monotonic() + float(os.environ.get("GS_CP_START_TIMEOUT", 180)) + 30
    last_sig = 0.0
    while time.monotonic() < deadline:
        text = _read(done)
        if text is not None:
            os.unlink(done)
            res = json.loads(text)
            if res.get("error"):
                print("controlplane: scheduler %s: %s" % (a.name, res["error"]), file=sys.stderr)
                return 1
            if a.stop:
                print("stopped %s (exit status %s)" % (a.name, res.get("status")))
            else:
                print("port %d pid %d log %s" % (res["port"], res["pid"], res["log"]))
            return 0
        if not _alive(int(pid)):
            break
        if time.monotonic() - last_sig > 1.0:  # again each second: a signal may land
            os.kill(int(pid), signal.SIGUSR2)   # between the harness's check and its pause
            last_sig = time.monotonic()
        time.sleep(0.05)
    print("controlplane: the harness did not answer the scheduler request", file=sys.stderr)
    return 1


def _serve_scheduler_requests(cp, state):
    d = os.path.join(state, SCHED_REQ_DIR)
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not fn.endswith(".json"):
            continue
        path = os.path.join(d, fn)
        req = json.loads(_read(path) or "{}")
        os.unlink(path)
        try:
            if req.get("stop"):
                res = {"status": cp.stop_extra_scheduler(req["name"])}
            else:
                res = cp.start_extra_scheduler(req["name"], req["config"], req.get("kubeconfig"),
                                               req.get("args") or ())
        except (ControlPlaneError, OSError, KeyError) as e:
            res = {"error": str(e)}
        with open(os.path.join(state, "peers.json"), "w") as f:
            json.dump(cp.pids(), f)
        with open(os.path.join(d, fn[:-5] + ".tmp"), "w") as f:
            json.dump(res, f)
        os.rename(os.path.join(d, fn[:-5] + ".tmp"), os.path.join(d, fn[:-5] + ".done"))


def shared(a, ap):
    state = os.path.abspath(a.state)
    os.makedirs(state, exist_ok=True)
    if a.cmd == "stop":
        return _stop_state(state)
    if a.cmd == "scheduler":
        return _scheduler_request(state, a)
    if a.cmd in ("restart-apiserver", "compact"):
        envtext = _read(os.path.join(state, "env"))
        if envtext is None:
            print("SKIP: no control plane running in %s" % state)
            return SKIP_RC
        if a.cmd == "compact":
            rev = etcd_compact(json.loads(envtext)["GS_ETCD_URL"])
            print("etcd compacted at revision %d" % rev)
            return 0
        pid = int(_read(os.path.join(state, "serve.pid")))
        done = os.path.join(state, "restarts")
        before = int((_read(done) or "0").split()[0])
        t0 = time.monotonic()
        os.kill(pid, signal.SIGUSR1)
        deadline = t0 + float(os.environ.get("GS_CP_START_TIMEOUT", 180))
        while time.monotonic() < deadline:
            text = _read(done) or "0"
            if int(text.split()[0]) > before:
                ok = text.split()[1:2] == ["ok"]
                print("kube-apiserver restarted in %.1fs%s" % (time.monotonic() - t0,
                                                             "" if ok else ": " + text))
                return 0 if ok else 1
            if not _alive(pid):
                break
            time.sleep(0.1)
        print("controlplane: kube-apiserver was not restarted")
        return 1
    if a.cmd == "exec":
        cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not cmd:
            ap.error("exec needs a command after --")
        envtext = _read(os.path.join(state, "env"))
        if envtext is None:
            why = (_read(os.path.join(state, "skip")) or "").strip()
            print("SKIP: %s" % (why or "no control plane running (start it: controlplane.py "
                                "start %s)" % state))
            return SKIP_RC
        env = dict(os.environ)
        env.update(json.loads(envtext))
        return subprocess.run(cmd, env=env).returncode
    if a.cmd == "start":
        _stop_state(state, quiet=True)  # a plane left by an interrupted run
        try:
            peers()
        except PeersMissing as e:
            with open(os.path.join(state, "skip"), "w") as f:
                f.write(str(e) + "\n")
            print("SKIP: %s" % e)
            return SKIP_RC
        log = open(os.path.join(state, "serve.log"), "wb")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", state],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        log.close()
        with open(os.path.join(state, "serve.pid"), "w") as f:
            f.write("%d\n" % p.pid)
        timeout = float(os.environ.get("GS_CP_START_TIMEOUT", 180)) + 60
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(os.path.join(state, "env")):
                env = json.loads(_read(os.path.join(state, "env")))
                print("control plane up: %s (state %s, dir %s)"
                      % (env["GS_APISERVER_URL"], state, env["GS_CP_DIR"]))
                return 0
            if p.poll() is not None:
                break
            time.sleep(0.2)
        print("controlplane: the background harness did not come up; its output:\n%s"
              % (_read(os.path.join(state, "serve.log")) or "")[-4000:])
        _stop_state(state, quiet=True)
        return 1
    # serve: the background harness. Bounded: it stops itself after GS_CP_MAX_LIFETIME seconds
    # (default 3600) should nobody run `stop` (an interrupted ctest).
    lifetime = int(os.environ.get("GS_CP_MAX_LIFETIME", 3600))
    def expire(_signum, _frame):
        raise SystemExit(0)
    signal.signal(signal.SIGALRM, expire)
    signal.alarm(lifetime)
    restart, sched = [], []
    signal.signal(signal.SIGUSR1, lambda _s, _f: restart.append(1))  # restart-apiserver
    signal.signal(signal.SIGUSR2, lambda _s, _f: sched.append(1))    # scheduler requests
    try:
        with ControlPlane() as cp:
            with open(os.path.join(state, "peers.json"), "w") as f:
                json.dump(cp.pids(), f)
            tmp = os.path.join(state, "env.tmp")
            with open(tmp, "w") as f:
                json.dump(dict(cp.env, GS_CP_STATE=state), f, indent=1, sort_keys=True)
            os.rename(tmp, os.path.join(state, "env"))
            restarts = 0
            while True:
                if not restart and not sched:
                    signal.pause()
                if sched:
                    del sched[:]
                    _serve_scheduler_requests(cp, state)
                if restart:
                    del restart[:]
                    try:
                        cp.restart_apiserver()
                        status = "ok"
                    except ControlPlaneError as e:
                        status = "failed " + str(e).replace("\n", " ")[:300]
                    restarts += 1
                    with open(os.path.join(state, "peers.json"), "w") as f:
                        json.dump(cp.pids(), f)
                    with open(os.path.join(state, "restarts.tmp"), "w") as f:
                        f.write("%d %s\n" % (restarts, status))
                    os.rename(os.path.join(state, "restarts.tmp"), os.path.join(state, "restarts"))
    except (PeersMissing, ControlPlaneError) as e:
        print("controlplane: %s" % e, file=sys.stderr)
        return 1


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="controlplane.py",
                                 description="a real etcd + kube-apiserver + kube-scheduler on loopback")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="exit 0 when the peers are built, else 77 with one line")
    r = sub.add_parser("run", help="start, run CMD with GS_* set, tear down")
    r.add_argument("--keep", action="store_true", help="keep the temporary directory")
    r.add_argument("command", nargs=argparse.REMAINDER)
    u = sub.add_parser("up", help="start, print export lines, wait for Ctrl-C")
    u.add_argument("--keep", action="store_true")
    for name, what in (("start", "start a shared control plane in the background (ctest "
                        "fixture setup); its state lives in STATE_DIR"),
                       ("serve", "(internal) the background process of start"),
                       ("stop", "stop the control plane of STATE_DIR (fixture cleanup)"),
                       ("exec", "run CMD against the control plane of STATE_DIR (77 without)"),
                       ("restart-apiserver", "restart kube-apiserver of STATE_DIR (same port, "
                        "certificates and flags); waits until it is ready"),
                       ("compact", "compact etcd of STATE_DIR at its current revision"),
                       ("scheduler", "start (or --stop) one more kube-scheduler of STATE_DIR "
                        "with a KubeSchedulerConfiguration; stopped with the plane")):
        x = sub.add_parser(name, help=what)
        x.add_argument("state")
        if name == "exec":
            x.add_argument("command", nargs=argparse.REMAINDER)
        if name == "scheduler":
            x.add_argument("--config", help="KubeSchedulerConfiguration file (it names its "
                           "clientConnection.kubeconfig)")
            x.add_argument("--name", required=True, help="a name for it (its log: "
                           "scheduler-NAME.log in the plane's directory)")
            x.add_argument("--kubeconfig", help="for authentication/authorization delegation "
                           "(default: the system:kube-scheduler identity)")
            x.add_argument("--arg", action="append", metavar="FLAG",
                           help="one more kube-scheduler flag (repeatable), e.g. "
                           "--arg=--leader-elect-resource-namespace=NS")
            x.add_argument("--stop", action="store_true", help="stop the scheduler NAME")
    a = ap.parse_args(argv)
    if a.cmd in ("start", "serve", "stop", "exec", "restart-apiserver", "compact", "scheduler"):
        return shared(a, ap)
    try:
        if a.cmd == "check":
            peers()
            return 0
        if a.cmd == "run":
            cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
            if not cmd:
                ap.error("run needs a command after --")
            with ControlPlane(keep=a.keep or None) as cp:
                env = dict(os.environ)
                env.update(cp.env)
                p = subprocess.Popen(cmd, env=env, preexec_fn=_pdeathsig)
                try:
                    return p.wait()
                finally:
                    if p.poll() is None:
                        p.terminate()
                        p.wait()
        with ControlPlane(keep=a.keep or None) as cp:
            for k, v in sorted(cp.env.items()):
                print("export %s=%s" % (k, v))
            sys.stdout.flush()
            signal.pause() if hasattr(signal, "pause") else time.sleep(1e9)
        return 0
    except PeersMissing as e:
        print("SKIP: %s" % e)
        return SKIP_RC
    except ControlPlaneError as e:
        print("controlplane: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
