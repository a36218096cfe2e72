#!/usr/bin/env python3
"""harness-test.py - the control-plane harness cleans up after itself, however it ends.

Through the command `controlplane.py run -- CMD`:
  1. CMD sees a ready API server and the harness exits with CMD's status (3 here);
  2. SIGTERM to the harness while CMD runs: exit 143, etcd and kube-apiserver gone, the
     temporary directory removed;
  3. SIGKILL to the harness: etcd, kube-apiserver and CMD die with it (PR_SET_PDEATHSIG); the
     directory it left is removed by the next harness (which runs step 1 again).
Peer processes are found by their command lines, which name the run's directory.

Exit 0 pass, 1 fail, 77 skipped (one line why: the peers are not built).
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import controlplane  # noqa: E402
import gslive  # noqa: E402

CP = [sys.executable, os.path.join(HERE, "controlplane.py")]
CHECKS = gslive.Checks()
check = CHECKS.check
FAILS = CHECKS.fails
DIRS = []  # the planes this test started: the only processes it may kill


def procs_naming(text):
    """PIDs whose command line contains TEXT."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def gone_within(text, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not procs_naming(text):
            return True
        time.sleep(0.2)
    return False


def start_run(marker, script):
    """controlplane.py run -- sh -c SCRIPT; returns (process, GS_CP_DIR) once CMD started."""
    p = subprocess.Popen(CP + ["run", "--", "sh", "-c", 'echo "$GS_CP_DIR" > %s; %s'
                               % (marker, script)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=controlplane._pdeathsig)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(marker) and os.path.getsize(marker) > 0:
            with open(marker) as f:
                d = f.read().strip()
            DIRS.append(d)
            return p, d
        time.sleep(0.2)
    return p, None


def main():
    try:
        controlplane.peers()
    except controlplane.PeersMissing as e:
        print("SKIP: %s" % e)
        return 77
    work = tempfile.mkdtemp(prefix="gs-harness-test.")
    try:
        # 1. exit status and a ready server
        p, d = start_run(os.path.join(work, "m1"), '"$GS_KUBECTL" --kubeconfig '
                         '"$GS_KUBECONFIG_RBAC" get --raw /readyz && exit 3')
        out = p.communicate(timeout=120)[0]
        check(p.returncode == 3, "run passes on CMD's exit status (3, got %s)" % p.returncode)
        check("ok" in out, "CMD reached /readyz as the RBAC user")
        check(d is not None and not os.path.exists(d), "directory removed after run")

        # 2. SIGTERM
        p, d = start_run(os.path.join(work, "m2"), "sleep 120")
        if check(d is not None, "second plane up"):
            check(len(procs_naming(d)) >= 2, "etcd and kube-apiserver run (%d processes name %s)"
                  % (len(procs_naming(d)), d))
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
            check(p.returncode == 128 + signal.SIGTERM, "SIGTERM: exit 143 (got %s)"
                  % p.returncode)
            check(gone_within(d, 10), "SIGTERM: no process of that plane left")
            check(not os.path.exists(d), "SIGTERM: directory removed")

        # 3. SIGKILL, then the next harness sweeps the directory
        p, d = start_run(os.path.join(work, "m3"), "sleep 120")
        if check(d is not None, "third plane up"):
            p.kill()
            p.wait()
            check(gone_within(d, 15), "SIGKILL: etcd and kube-apiserver died with it")
            check(os.path.exists(d), "SIGKILL: the directory is left behind")
            p, _ = start_run(os.path.join(work, "m4"), "true")
            p.communicate(timeout=120)
            check(p.returncode == 0, "the next run works")
            check(not os.path.exists(d), "the next run removed the stale directory")
    finally:
        for d in DIRS:
            for pid in procs_naming(d):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        subprocess.run(["rm", "-rf", work])
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    signal.alarm(int(os.environ.get("GS_LIVE_TIMEOUT", "300")))
    sys.exit(main())
