#!/usr/bin/env python3
"""hostile-test.py - hostile and unlucky clients against `gpusched serve --webhook`.

usage: hostile-test.py GPUSCHED_BINARY FAULT_SHIM_SO

Loopback only (127.0.0.1 for the probes and reviews that must keep working, 127.0.0.2-5
for the attackers, so that per-address limits apply to them and not to the probes).
Every attack is bounded in connections and seconds. Each one asserts that /healthz keeps
answering (and how fast: the figures are printed, docs/reliability.md quotes them) and
that every review answered 200 has exactly one whole line in the audit log.

Attacks: slowloris, slow bodies, 1,000 concurrent connections, oversized / deep / wide
bodies, SIGTERM under load (drain period), SIGHUP under load with a FIFO at the audit log
and certificate paths, kill -9 under load, a full disk (a 64 KiB tmpfs in a private mount
namespace: skipped visibly without unshare/mount), an injected fdatasync failure and a
short write (FAULT_SHIM_SO via LD_PRELOAD).

Exit 0 pass, 1 fail, 77 skipped (python3 too old or the binary has no serve command).
"""
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

GS = sys.argv[1]
SHIM = sys.argv[2] if len(sys.argv) > 2 else ""
if subprocess.run([GS, "serve", "--help"], capture_output=True).returncode != 0:
    print("SKIP: %s has no serve command" % GS)
    sys.exit(77)

WORK = tempfile.mkdtemp(prefix="gs-hostile.")
FAILS = []
CHECKS = [0]
FIGURES = []
SERVERS = []


def check(what, cond):
    CHECKS[0] += 1
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what, flush=True)


def figure(text):
    FIGURES.append(text)
    print("figure: " + text, flush=True)


# ------------------------------------------------------------------ the server
class Server:
    def __init__(self, name, args, env=None, wrap=None, audit=True):
        self.name = name
        self.audit = os.path.join(WORK, name + ".audit.log") if audit else None
        cmd = [GS, "serve", "--webhook", "--listen", "127.0.0.1:0", "--threads", "2"]
        if not any(a.startswith("--drain-period") for a in args):
            cmd += ["--drain-period", "0"]
        if self.audit and not any(a.startswith("--audit-log") for a in args):
            cmd += ["--audit-log", self.audit]
        cmd += args
        if wrap:
            cmd = wrap(cmd)
        self.errpath = os.path.join(WORK, name + ".err")
        self.errf = open(self.errpath, "w")
        self.p = subprocess.Popen(cmd, stderr=self.errf, stdout=subprocess.DEVNULL, env=env)
        SERVERS.append(self)
        self.port = None
        deadline = time.time() + 10
        while time.time() < deadline and self.p.poll() is None:
            m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)", self.log())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.05)
        if not self.port:
            raise RuntimeError("%s did not start: %s" % (name, self.log()))

    def log(self):
        with open(self.errpath) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None

    def rss_kb(self, key="VmHWM"):
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return -1


def http(port, method, path, body=b"", src="127.0.0.1", timeout=5.0, headers=None):
    """One request on a fresh connection: (status, body); status 0 when refused/failed."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        h = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path)
        if method == "POST":
            h += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        for k, v in (headers or {}).items():
            h += "%s: %s\r\n" % (k, v)
        try:
            s.sendall(h.encode() + b"\r\n" + body)
        except OSError:
            pass  # answered (413) and closed before the body was sent: read the answer
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
        s.close()
        m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
        return (int(m.group(1)) if m else 0), data.split(b"\r\n\r\n", 1)[-1]
    except OSError:
        return 0, b""


POD = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":'
       '[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"1"}}}]}}')


def review(uid, obj=POD):
    return ('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s",'
            '"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1",'
            '"resource":"pods"},"name":"p","namespace":"team-a","operation":"CREATE","userInfo":'
            '{"username":"alice"},"object":%s,"oldObject":null,"dryRun":false}}' % (uid, obj)).encode()


class Answered:
    """The uids answered 200 (thread-safe)."""

    seq = [0]

    def __init__(self):
        self.lock = threading.Lock()
        self.ok = set()
        self.codes = {}
        self.n = 0
        Answered.seq[0] += 1
        self.prefix = "u%d-%d" % (os.getpid(), Answered.seq[0])

    def post(self, port, src="127.0.0.1", timeout=5.0):
        with self.lock:
            self.n += 1
            uid = "%s-%d" % (self.prefix, self.n)
        code, _ = http(port, "POST", "/validate", review(uid), src=src, timeout=timeout)
        with self.lock:
            self.codes[code] = self.codes.get(code, 0) + 1
            if code == 200:
                self.ok.add(uid)
        return code


def audit_lines(path, allow_torn_tail=False):
    """Parsed lines; None (and a failure) when a line is not whole JSON."""
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(b"\n")
    tail = parts.pop()  # after the last newline: must be empty
    if tail and not allow_torn_tail:
        check("%s: ends with a torn line (%d bytes)" % (os.path.basename(path), len(tail)), False)
    out = []
    for i, line in enumerate(parts):
        try:
            out.append(json.loads(line.decode("utf-8")))
        except (ValueError, UnicodeDecodeError):
            check("%s line %d is not one whole UTF-8 JSON object: %r" % (path, i + 1, line[:80]), False)
            return None
    return out


def check_audit(name, path, answered, allow_torn_tail=False):
    lines = audit_lines(path, allow_torn_tail)
    if lines is None:
        return
    count = {}
    for l in lines:
        count[l.get("uid")] = count.get(l.get("uid"), 0) + 1
    missing = [u for u in answered.ok if count.get(u, 0) != 1]
    dup = [u for u, n in count.items() if n > 1]
    check("%s: %d of %d answered reviews without exactly one audit line (e.g. %s)"
          % (name, len(missing), len(answered.ok), missing[:3]), not missing)
    check("%s: uids audited twice: %s" % (name, dup[:3]), not dup)


class Prober:
    """Polls /healthz (and optionally posts reviews) from 127.0.0.1 during an attack."""

    def __init__(self, port, answered=None, period=0.2):
        self.port, self.answered, self.period = port, answered, period
        self.lat, self.fails, self.review_codes = [], 0, {}
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop_ev.is_set():
            t0 = time.time()
            code, _ = http(self.port, "GET", "/healthz", timeout=5)
            self.lat.append(time.time() - t0)
            if code != 200:
                self.fails += 1
            if self.answered:
                c = self.answered.post(self.port)
                self.review_codes[c] = self.review_codes.get(c, 0) + 1
            self.stop_ev.wait(self.period)

    def finish(self, what):
        self.stop_ev.set()
        self.t.join(10)
        n = len(self.lat)
        mx = max(self.lat) if self.lat else 0
        med = sorted(self.lat)[n // 2] if n else 0
        figure("%s: /healthz %d probes, %d failed, median %.1f ms, max %.1f ms; reviews %s"
               % (what, n, self.fails, med * 1000, mx * 1000, self.review_codes or "-"))
        check("%s: /healthz failed %d of %d times" % (what, self.fails, n), n > 0 and self.fails == 0)
        check("%s: /healthz took up to %.2f s" % (what, mx), mx < 2.0)
        if self.answered:
            bad = {c: k for c, k in self.review_codes.items() if c != 200}
            check("%s: reviews not answered 200: %s" % (what, bad), not bad)


def metric(port, name):
    code, body = http(port, "GET", "/metrics")
    m = re.search(rb"^" + re.escape(name.encode()) + rb" (\d+)", body, re.M)
    return int(m.group(1)) if m else -1


# ------------------------------------------------------------------ attacks
def slowloris():
    srv = Server("slowloris", ["--max-connections", "300", "--max-connections-per-ip", "120",
                               "--header-timeout", "3", "--timeout", "5"])
    ans = Answered()
    pr = Prober(srv.port, ans, 0.25)
    sel = selectors.DefaultSelector()
    socks = []
    opened = [0]

    def connect(src):
        try:
            s = socket.socket()
            s.bind((src, 0))
            s.settimeout(1)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nX-a: ")
            s.setblocking(False)
            socks.append((s, src))
            opened[0] += 1
        except OSError:
            pass

    srcs = ["127.0.0.%d" % i for i in range(2, 6)]
    for i in range(400):
        connect(srcs[i % 4])
    end = time.time() + 8
    while time.time() < end:  # one header byte a second per connection; reconnect when closed
        for s, src in list(socks):
            try:
                s.send(b"x")
            except OSError:
                socks.remove((s, src))
                s.close()
                connect(src)
        time.sleep(1)
    held = len(socks)
    for s, _ in socks:
        s.close()
    pr.finish("slowloris (400 connections from 4 addresses, 1 header byte/s, 8 s)")
    closed = metric(srv.port, 'gpusched_webhook_connections_closed_total{reason="header_timeout"}') + \
        metric(srv.port, 'gpusched_webhook_connections_closed_total{reason="evicted"}')
    figure("slowloris: %d attacker connections opened, %d open at the end, %d closed by header "
           "deadline or eviction, peak RSS %d KiB" % (opened[0], held, closed, srv.rss_kb()))
    check("slowloris: the server closed attackers (%d)" % closed, closed > 0)
    check("slowloris: exit 0 after SIGTERM", srv.stop() == 0)
    check_audit("slowloris", srv.audit, ans)


def slow_body():
    srv = Server("slowbody", ["--body-timeout", "6", "--min-body-rate", "1024"])
    ans = Answered()
    pr = Prober(srv.port, ans, 0.2)
    socks = []
    for i in range(64):
        try:
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.settimeout(1)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1048576\r\n\r\n{")
            socks.append(s)
        except OSError:
            pass
    end = time.time() + 6
    while time.time() < end:  # 32 bytes every 0.5 s: 64 B/s per connection
        for s in list(socks):
            try:
                s.send(b" " * 32)
            except OSError:
                socks.remove(s)
        time.sleep(0.5)
    for s in socks:
        s.close()
    pr.finish("slow body (64 x 1 MiB announced, 64 B/s, 6 s)")
    slow = metric(srv.port, 'gpusched_webhook_connections_closed_total{reason="slow_body"}')
    figure("slow body: %d connections closed below the minimum rate, %d still open at the end"
           % (slow, len(socks)))
    check("slow body: slow connections closed (%d)" % slow, slow >= 60)
    check("slow body: no review answered 503", 503 not in ans.codes)
    check("slow body: exit 0", srv.stop() == 0)
    check_audit("slow body", srv.audit, ans)


def budget_shed():
    """A small --body-budget spent by four stalled bodies: a fast review needing room gets
    it, and the slowest stalled body is dropped (shed) instead of the fast one."""
    srv = Server("budget", ["--max-body", "65536", "--body-budget", "131072",
                            "--body-timeout", "30", "--min-body-rate", "1"])
    ans = Answered()
    stalled = []
    for i in range(4):
        try:
            s = socket.socket()
            s.bind(("127.0.0.%d" % (2 + i % 3), 0))
            s.settimeout(2)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 65536\r\n\r\n{" + b" " * 20000)
            stalled.append(s)
        except OSError:
            pass
    time.sleep(1.5)  # the stalled bodies hold 4 x 32 KiB of the 128 KiB and fall behind
    uid = ans.prefix + "-fast"
    code, _ = http(srv.port, "POST", "/validate", review(uid) + b" " * 40000, timeout=10)
    if code == 200:
        ans.ok.add(uid)
    shed = metric(srv.port, 'gpusched_webhook_connections_closed_total{reason="shed"}')
    figure("body budget 128 KiB held by 4 stalled bodies: a fast 40 KiB review answered %d, "
           "%d stalled bodies shed" % (code, shed))
    check("budget: the fast review answered 200 (got %d)" % code, code == 200)
    check("budget: a stalled body was shed (%d)" % shed, shed >= 1)
    code, _ = http(srv.port, "GET", "/healthz")
    check("budget: /healthz answers (%d)" % code, code == 200)
    for s in stalled:
        s.close()
    check("budget: exit 0", srv.stop() == 0)
    check_audit("budget", srv.audit, ans)


def concurrent():
    srv = Server("concurrent", ["--max-connections", "1100", "--max-connections-per-ip", "300"])
    sel = selectors.DefaultSelector()
    pending = {}
    t0 = time.time()
    for i in range(1000):
        s = socket.socket()
        s.bind(("127.0.0.%d" % (2 + i % 4), 0))
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", srv.port))
        uid = "c-%d" % i
        body = review(uid)
        req = (b"POST /validate HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
               b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
        pending[s] = [uid, req, b""]
        sel.register(s, selectors.EVENT_WRITE)
    ans = Answered()
    pr = Prober(srv.port, None, 0.2)
    deadline = time.time() + 30
    while pending and time.time() < deadline:
        for key, ev in sel.select(0.5):
            s = key.fileobj
            st = pending[s]
            try:
                if ev & selectors.EVENT_WRITE:
                    n = s.send(st[1])
                    st[1] = st[1][n:]
                    if not st[1]:
                        sel.modify(s, selectors.EVENT_READ)
                    continue
                d = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                d = b""
            if d:
                st[2] += d
                continue
            sel.unregister(s)
            s.close()
            if st[2].startswith(b"HTTP/1.1 200"):
                ans.ok.add(st[0])
            code = st[2][9:12].decode() if st[2] else "none"
            ans.codes[code] = ans.codes.get(code, 0) + 1
            del pending[s]
    took = time.time() - t0
    for s in pending:
        s.close()
    pr.finish("1,000 concurrent reviews")
    figure("1,000 concurrent reviews from 4 addresses: %s in %.1f s, peak RSS %d KiB"
           % (ans.codes, took, srv.rss_kb()))
    check("concurrent: %d of 1000 answered 200" % len(ans.ok), len(ans.ok) == 1000)
    check("concurrent: exit 0", srv.stop() == 0)
    check_audit("concurrent", srv.audit, ans)


def bodies():
    srv = Server("bodies", [])
    ans = Answered()
    pr = Prober(srv.port, ans, 0.2)
    code, _ = http(srv.port, "POST", "/validate", b" " * (2 << 20))
    check("oversized body: HTTP %d, expected 413" % code, code == 413)
    t0 = time.time()
    code, _ = http(srv.port, "POST", "/validate", b"[" * 520000, timeout=20)
    figure("520,000 nested arrays: HTTP %d in %.2f s" % (code, time.time() - t0))
    check("deep body: HTTP %d, expected 400" % code, code == 400)
    deep = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"x":' + '{"a":' * 100000 + \
        '1' + '}' * 100000 + '}'
    t0 = time.time()
    code, _ = http(srv.port, "POST", "/validate", review("deep", deep), timeout=20)
    figure("a pod with an unknown field nested 100,000 levels: HTTP %d in %.2f s" % (code, time.time() - t0))
    check("deep pod: answered (%d)" % code, code in (200, 400, 413))
    env = ",".join('{"name":"E%d","value":"v"}' % i for i in range(30000))
    wide = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c",'
            '"image":"i","env":[%s]}]}}' % env)
    t0 = time.time()
    code, _ = http(srv.port, "POST", "/validate", review("wide", wide), timeout=20)
    figure("a pod with 30,000 env entries (%d KiB): HTTP %d in %.2f s"
           % (len(wide) // 1024, code, time.time() - t0))
    check("wide pod: answered (%d)" % code, code in (200, 413))
    if code == 200:
        ans.ok.add("wide")
    pr.finish("oversized, deep and wide bodies")
    figure("bodies: peak RSS %d KiB" % srv.rss_kb())
    check("bodies: exit 0", srv.stop() == 0)
    check_audit("bodies", srv.audit, ans)


def load(port, ans, stop_ev, threads=4):
    def run():
        while not stop_ev.is_set():
            ans.post(port, timeout=5)
    ts = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    return ts


def sigterm():
    # 8 s of drain: the 20 reviews below must all start inside it, also on a loaded machine
    srv = Server("sigterm", ["--drain-period", "8"])
    ans = Answered()
    stop_ev = threading.Event()
    ts = load(srv.port, ans, stop_ev)
    time.sleep(1)
    before = dict(ans.codes)
    srv.p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    rcode, _ = http(srv.port, "GET", "/readyz")
    hcode, _ = http(srv.port, "GET", "/healthz")
    during = Answered()
    for _ in range(20):
        during.post(srv.port)
    check("SIGTERM: /readyz %d during the drain period, expected 503" % rcode, rcode == 503)
    check("SIGTERM: /healthz %d during the drain period" % hcode, hcode == 200)
    check("SIGTERM: new connections served during the drain period: %s" % during.codes,
          during.codes.get(200, 0) == 20)
    rc = srv.p.wait(20)
    stop_ev.set()
    for t in ts:
        t.join(10)
    ans.ok |= during.ok
    refused = ans.codes.get(0, 0) - before.get(0, 0)
    figure("SIGTERM under load (4 senders, drain period 8 s): %s reviews; /readyz 503 and 20 of 20 "
           "reviews on new connections answered during the drain" % ans.codes)
    check("SIGTERM: exit %s, expected 0" % rc, rc == 0)
    check("SIGTERM: 'drain period' logged", "drain period" in srv.log())
    check_audit("SIGTERM", srv.audit, ans)


def sighup():
    srv = Server("sighup", [])
    ans = Answered()
    stop_ev = threading.Event()
    ts = load(srv.port, ans, stop_ev)
    pr = Prober(srv.port, None, 0.2)
    for i in range(10):
        os.rename(srv.audit, "%s.%d" % (srv.audit, i))  # rotation under load
        srv.p.send_signal(signal.SIGHUP)
        t0 = time.time()
        while srv.log().count("audit log reopened") <= i and time.time() - t0 < 5:
            time.sleep(0.05)
        time.sleep(0.1)
    os.rename(srv.audit, srv.audit + ".10")
    os.mkfifo(srv.audit)  # a FIFO where the log was: refused, not waited on
    srv.p.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    stop_ev.set()
    for t in ts:
        t.join(10)
    pr.finish("SIGHUP x 11 under load (log rotated each time, then a FIFO at the log path)")
    check("SIGHUP: a FIFO at the audit path refused", "not a regular file" in srv.log())
    rc = srv.stop(signal.SIGINT, 15)
    check("SIGHUP: SIGINT after the FIFO still stops the server (exit %s)" % rc, rc == 0)
    os.unlink(srv.audit)
    merged = srv.audit + ".all"
    with open(merged, "wb") as out:
        for i in range(11):
            with open("%s.%d" % (srv.audit, i), "rb") as f:
                out.write(f.read())
    check_audit("SIGHUP", merged, ans)
    if shutil.which("certtool"):
        key, crt, tmpl = (os.path.join(WORK, n) for n in ("t.key", "t.crt", "t.tmpl"))
        with open(tmpl, "w") as f:
            f.write('cn = "hostile"\nip_address = "127.0.0.1"\nexpiration_days = 2\ntls_www_server\n'
                    'signing_key\n')
        subprocess.run(["certtool", "--generate-privkey", "--key-type=ecdsa", "--outfile", key],
                       capture_output=True)
        subprocess.run(["certtool", "--generate-self-signed", "--load-privkey", key, "--template", tmpl,
                        "--outfile", crt], capture_output=True)
        tls = Server("sighup-tls", ["--tls-cert", crt, "--tls-key", key, "--drain-period", "0"], audit=False)
        os.unlink(crt)
        os.mkfifo(crt)
        tls.p.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        check("SIGHUP: a FIFO at the certificate path refused", "not a regular file" in tls.log())
        rc = tls.stop(signal.SIGTERM, 10)
        check("SIGHUP: SIGTERM after a FIFO certificate stops the server (exit %s)" % rc, rc == 0)
    else:
        print("SKIP part: certtool not found: the FIFO at the certificate path is not tried")


def kill9():
    srv = Server("kill9", [])
    ans = Answered()
    stop_ev = threading.Event()
    ts = load(srv.port, ans, stop_ev, threads=8)
    time.sleep(1.5)
    srv.p.kill()
    srv.p.wait()
    stop_ev.set()
    for t in ts:
        t.join(10)
    check_audit("kill -9", srv.audit, ans, allow_torn_tail=True)
    again = Server("kill9-restart", ["--audit-log", srv.audit, "--drain-period", "0"])
    check("kill -9: restarted server answers", http(again.port, "GET", "/healthz")[0] == 200)
    check("kill -9: restart exit 0", again.stop() == 0)
    audit_lines(srv.audit)  # every line whole now
    figure("kill -9 under 8 senders: %d reviews answered, each with one whole audit line" % len(ans.ok))


def full_disk():
    if not shutil.which("unshare"):
        print("SKIP part: unshare not found: the full disk is not tried")
        return
    disk = os.path.join(WORK, "disk")
    os.mkdir(disk)
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k none %s" % disk],
                           capture_output=True)
    if probe.returncode != 0:
        print("SKIP part: no private tmpfs (unshare -m / mount failed: %s): the full disk is not tried"
              % probe.stderr.decode().strip())
        return

    def wrap(cmd):
        return ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64k none "$0" && '
                'dd if=/dev/zero of="$0/filler" bs=1k count=40 2>/dev/null && exec "$@"', disk] + cmd

    log = os.path.join(disk, "audit.log")
    srv = Server("fulldisk", ["--audit-log", log, "--drain-period", "0"], wrap=wrap)
    inside = "/proc/%d/root%s" % (srv.p.pid, log)
    ans = Answered()
    codes = [ans.post(srv.port) for _ in range(200)]
    first500 = codes.index(500) if 500 in codes else -1
    check("full disk: reviews answered 500 once the disk is full (%s)" % ans.codes, first500 > 0)
    rcode, _ = http(srv.port, "GET", "/readyz")
    hcode, _ = http(srv.port, "GET", "/healthz")
    check("full disk: /readyz %d, expected 503" % rcode, rcode == 503)
    check("full disk: /healthz %d" % hcode, hcode == 200)
    shutil.copy(inside, os.path.join(WORK, "fulldisk.snapshot"))
    check_audit("full disk", os.path.join(WORK, "fulldisk.snapshot"), ans)
    os.unlink(os.path.join(os.path.dirname(inside), "filler"))
    t0 = time.time()
    while time.time() - t0 < 5 and http(srv.port, "GET", "/readyz")[0] != 200:
        time.sleep(0.1)
    took = time.time() - t0
    check("full disk: /readyz 200 again %.1f s after space was freed" % took, took < 5)
    after = [ans.post(srv.port) for _ in range(5)]
    check("full disk: reviews answered 200 after recovery (%s)" % after, after == [200] * 5)
    shutil.copy(inside, os.path.join(WORK, "fulldisk.snapshot"))
    check_audit("full disk, recovered", os.path.join(WORK, "fulldisk.snapshot"), ans)
    figure("full disk (64 KiB tmpfs): review %d was the first answered 500; /readyz 503 while full, 200 "
           "%.1f s after space was freed; every line whole" % (first500 + 1, took))
    check("full disk: exit 0", srv.stop() == 0)


def fsync_fault():
    if not SHIM or not os.path.exists(SHIM):
        print("SKIP part: no fault shim: the fdatasync failure is not tried")
        return
    ctl = os.path.join(WORK, "fault.ctl")
    env = dict(os.environ, LD_PRELOAD=SHIM, GS_FAULT_CTL=ctl)
    # a sanitizer build wants its runtime first in the library list; the shim only wraps
    # fdatasync and write, so the order does not matter to it
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
    for mode in ("fail", "ignore"):
        srv = Server("fsync-" + mode, ["--audit-failure", mode, "--drain-period", "0"], env=env)
        ans = Answered()
        check("fsync %s: healthy first" % mode, ans.post(srv.port) == 200)
        with open(ctl, "w") as f:
            f.write("fdatasync")
        code = ans.post(srv.port)
        rcode = http(srv.port, "GET", "/readyz")[0]
        hcode = http(srv.port, "GET", "/healthz")[0]
        if mode == "fail":
            check("fsync fail: review %d, expected 500" % code, code == 500)
            check("fsync fail: /readyz %d, expected 503" % rcode, rcode == 503)
        else:
            check("fsync ignore: review %d, expected 200" % code, code == 200)
            check("fsync ignore: /readyz %d, expected 200" % rcode, rcode == 200)
            check("fsync ignore: lost line counted",
                  metric(srv.port, "gpusched_webhook_audit_lost_total") >= 1)
            ans.ok.discard("%s-%d" % (ans.prefix, ans.n))  # answered without a durable line
        check("fsync %s: /healthz %d" % (mode, hcode), hcode == 200)
        check("fsync %s: audit_ok 0" % mode, metric(srv.port, "gpusched_webhook_audit_ok") == 0)
        os.unlink(ctl)
        t0 = time.time()
        while time.time() - t0 < 5 and metric(srv.port, "gpusched_webhook_audit_ok") != 1:
            time.sleep(0.1)
        took = time.time() - t0
        check("fsync %s: recovered by itself in %.1f s" % (mode, took), took < 5)
        check("fsync %s: review 200 after recovery" % mode, ans.post(srv.port) == 200)
        if mode == "fail":
            figure("injected fdatasync failure: 500 and /readyz 503, recovered by itself in %.1f s" % took)
            with open(ctl, "w") as f:
                f.write("short")
            code = ans.post(srv.port)
            check("short write: review %d, expected 500" % code, code == 500)
            os.unlink(ctl)
            time.sleep(1.5)
            check("short write: review 200 after", ans.post(srv.port) == 200)
        check("fsync %s: exit 0" % mode, srv.stop() == 0)
        check_audit("fsync " + mode, srv.audit, ans)


def main():
    start = time.time()
    for attack in (slowloris, slow_body, budget_shed, concurrent, bodies, sigterm, sighup, kill9, full_disk, fsync_fault):
        t0 = time.time()
        try:
            attack()
        except Exception as e:  # a broken attack is a failure, not a crash of the suite
            check("%s raised %r" % (attack.__name__, e), False)
        print("%s: %.1f s" % (attack.__name__, time.time() - t0), flush=True)
    for s in SERVERS:
        if s.p.poll() is None:
            s.p.kill()
            s.p.wait()
    print("%d checks, %d failed, %.0f s" % (CHECKS[0], len(FAILS), time.time() - start))
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if FAILS else 0)


main()
