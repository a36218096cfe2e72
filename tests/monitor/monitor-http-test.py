#!/usr/bin/env python3
"""monitor-http-test.py - `gpusched monitor` as a process against the real control plane.

Run as `controlplane.py exec STATE -- python3 monitor-http-test.py GPUSCHED` (ctest
live/monitor-http, fixture gs_live); without a plane it skips (77). Checks the daemon around
the monitor core, not the core's numbers (the live tests of the core check those):

- --once: text and JSON on stdout, exit 0 or 1 (other tests' pending GPU pods may exist);
  the RBAC-restricted user: exit 2, the API server's "forbidden" message, nothing on stdout;
- the server on 127.0.0.1:0: /healthz, /readyz (200 once synced), /metrics (exposition
  content type), /pending /hygiene /idle as text and as JSON (?format=json and Accept),
  HEAD, 405 with Allow for POST, 404 elsewhere, a client that sends half a request does not
  block others;
- leader election: the first replica holds the Lease, a second sees it as the leader and
  does not take it; SIGTERM: exit 0 within 5 s and the Lease released (holder "").

Exit 0 pass, 1 fail, 77 skipped.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "live"))
import gslive  # noqa: E402

CHECKS = gslive.Checks(quiet=True)
check = CHECKS.check
BIN = gslive.usage("GPUSCHED")
ADMIN, RBAC, _ = gslive.plane("GS_KUBECONFIG_ADMIN", "GS_KUBECONFIG_RBAC", "GS_KUBECTL")
LEASE = "gs-monitor-test-%d" % os.getpid()


def run(*args, timeout=60):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def lease_spec():
    r = gslive.kubectl("-n", "default", "get", "lease", LEASE, "-o",
                       "jsonpath={.spec.holderIdentity}|{.spec.leaseDurationSeconds}", timeout=30)
    return r.stdout if r.returncode == 0 else None


# ---------------------------------------------------------------- --once
r = run("monitor", "--once", "--kubeconfig", ADMIN)
check(r.returncode in (0, 1), "--once text: exit %d (%s)" % (r.returncode, r.stderr.strip()))
r = run("monitor", "--once", "-o", "json", "--kubeconfig", ADMIN)
check(r.returncode in (0, 1), "--once json: exit %d (%s)" % (r.returncode, r.stderr.strip()))
try:
    json.loads(r.stdout)
except ValueError as e:
    check(False, "--once -o json: not JSON (%s): %r" % (e, r.stdout[:200]))
r = run("monitor", "--once", "--kubeconfig", RBAC)
check(r.returncode == 2, "--once as the RBAC user: exit %d, want 2" % r.returncode)
check("forbidden" in r.stderr and "cannot list resource" in r.stderr,
      "--once as the RBAC user: the server's message, got %r" % r.stderr)
check(r.stdout == "", "--once as the RBAC user: stdout %r, want nothing" % r.stdout)
# the server refuses to start the same way, before it listens
r = run("monitor", "--kubeconfig", RBAC, "--listen", "127.0.0.1:0", "--no-events", timeout=60)
check(r.returncode == 2 and "forbidden" in r.stderr, "server as the RBAC user: exit %d, %r" % (r.returncode, r.stderr))


# ---------------------------------------------------------------- the server
class Replica:
    def __init__(self, *extra):
        self.p = subprocess.Popen([BIN, "monitor", "--kubeconfig", ADMIN, "--listen", "127.0.0.1:0",
                                   "--lease-namespace", "default", "--lease-name", LEASE,
                                   "--dcgm-endpoints", "none", *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = ""
        self.port = None
        self.identity = None
        os.set_blocking(self.p.stderr.fileno(), False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (self.port is None or self.identity is None):
            self.read_err()
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", self.err)
            if m:
                self.port = int(m.group(1))
            m = re.search(r"leader election on Lease default/%s as (\S+)" % LEASE, self.err)
            if m:
                self.identity = m.group(1)
            if self.p.poll() is not None:
                break
            time.sleep(0.05)

    def read_err(self):
        try:
            chunk = self.p.stderr.read()
        except (BlockingIOError, TypeError):
            chunk = None
        if chunk:
            self.err += chunk
        return self.err

    def get(self, path, method="GET", headers=None, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Content-Type"), r.getheader("Allow"), data

    def stop(self):
        t0 = time.monotonic()
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.read_err()
        return rc, time.monotonic() - t0


a = Replica()
try:
    if not check(a.port and a.identity, "replica A did not start: %s" % a.read_err()):
        raise SystemExit
    st, ct, _, body = a.get("/healthz")
    check(st == 200 and body == b"ok\n", "/healthz: %d %r" % (st, body))
    deadline = time.monotonic() + 60
    while True:
        st, ct, _, body = a.get("/readyz")
        if st == 200 or time.monotonic() > deadline:
            break
        check(st == 503 and body.startswith(b"not synced: "), "/readyz before the sync: %d %r" % (st, body))
        time.sleep(0.2)
    check(st == 200 and body == b"ok\n", "/readyz: %d %r" % (st, body))
    st, ct, _, body = a.get("/metrics")
    check(st == 200 and ct and ct.startswith("text/plain; version=0.0.4"), "/metrics: %d %s" % (st, ct))
    for view in ("/pending", "/hygiene", "/idle"):
        st, ct, _, body = a.get(view)
        check(st == 200 and ct and ct.startswith("text/plain"), "%s: %d %s" % (view, st, ct))
        for path, hdr in ((view + "?format=json", {}), (view, {"Accept": "application/json"})):
            st, ct, _, body = a.get(path, headers=hdr)
            ok = st == 200 and ct == "application/json"
            try:
                json.loads(body)
            except ValueError:
                ok = False
            check(ok, "%s %s: %d %s %r" % (path, hdr, st, ct, body[:100]))
    st, ct, _, body = a.get("/metrics", method="HEAD")
    check(st == 200 and body == b"", "HEAD /metrics: %d %r" % (st, body))
    st, ct, allow, body = a.get("/metrics", method="POST", body=b"x" * 100,
                                headers={"Content-Type": "text/plain"})
    check(st == 405 and allow == "GET, HEAD", "POST /metrics: %d, Allow %r" % (st, allow))
    st, ct, _, body = a.get("/api/v1/pods")
    check(st == 404, "/api/v1/pods: %d" % st)
    # half a request holds one connection, not the server
    slow = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    st, ct, _, body = a.get("/healthz")
    check(st == 200, "/healthz while a client stalls: %d" % st)
    slow.close()

    # leader election: A leads, B sees A
    deadline = time.monotonic() + 30
    while lease_spec() != "%s|15" % a.identity and time.monotonic() < deadline:
        time.sleep(0.2)
    check(lease_spec() == "%s|15" % a.identity, "the Lease is not A's: %r" % lease_spec())
    b = Replica()
    try:
        check(b.port and b.identity and b.identity != a.identity, "replica B did not start: %s" % b.read_err())
        deadline = time.monotonic() + 20
        while ("the leader is %s" % a.identity) not in b.read_err() and time.monotonic() < deadline:
            time.sleep(0.2)
        check(("the leader is %s" % a.identity) in b.err, "B did not see A lead: %r" % b.err)
        check("leading" not in b.err, "B leads too: %r" % b.err)
        check(lease_spec() == "%s|15" % a.identity, "B took the Lease: %r" % lease_spec())
    finally:
        rc, took = b.stop()
        check(rc == 0, "B: SIGTERM exit %d" % rc)
finally:
    rc, took = a.stop()
    check(rc == 0, "A: SIGTERM exit %d: %s" % (rc, a.err))
    check(took < 5, "A: SIGTERM took %.1f s" % took)
    if a.identity:
        check(lease_spec() == "|1", "A did not release the Lease: %r" % lease_spec())
    gslive.kubectl("-n", "default", "delete", "lease", LEASE, "--ignore-not-found", timeout=30)

sys.exit(CHECKS.done("ok"))
