#!/usr/bin/python3
"""nri-test.py - the agent's NRI plugin against NRI's own runtime side.

Usage: nri-test.py GPUSCHED FAKE_NVML_LIBRARY SOURCE_DIR

The runtime is played by tests/nri/runtime (Go, containerd/nri's pkg/adaptation at the
version scripts/peer-nri.sh pins), built once into the peers' cache. `gpusched agent
--nri-socket` runs with the fake NVML (4 GPUs) and the share resource aliyun.com/gpu-mem,
without a kubelet (--no-register). Steps, each asserted:
  1. the plugin registers and synchronizes; a container that asked for a share and runs
     without injection is named in the agent's log;
  2. two identical pods (same request, same node) created together get exactly the GPU their
     own record lists (different GPUs), with the device nodes of that GPU only;
  3. a container of the pod that the record does not list gets NVIDIA_VISIBLE_DEVICES=void
     and no device node; a pod without a record asking for nothing is left alone;
  4. a record whose uid is another pod's is refused (the container's creation fails), so
     is a share container without a record and a record for another node;
  5. the runtime restarts: the plugin reconnects and injects again; with python3-grpcio
     the share resource's ListAndWatch goes Unhealthy while the runtime is away and
     Healthy again once the plugin is back.
Exit 77 (skip) when the peer cannot be built (no Go, no module proxy).
"""
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from agenttest import FAILED, check, http_get, wait_for  # noqa: E402

UUIDS = ["GPU-bbbbbbbb-0000-4000-8000-00000000000%d" % i for i in range(4)]
UID_A = "0f6c2a9e-54b1-4c1e-9d7e-3f5a8b2c1d40"
UID_B = "7b1d0c3e-9a2f-4e11-8c6d-5a4b3c2d1e0f"
UID_C = "c0ffee00-1111-4222-8333-444455556666"
UID_D = "d00dfeed-1111-4222-8333-444455556666"
NODE = "gpu-a"
SHARE = "aliyun.com/gpu-mem"









def scenario():
    lines = ["driver 550.107.02", "cuda 12040"]
    for i in range(4):
        lines.append("gpu uuid=%s memory=81559 pci=00000000:%02X:00.0 minor=%d cc=9.0 mig=0 arch=9 numa=0 "
                     "util=0 fbused=0 temp=40 power=100000 name=NVIDIA H100 80GB HBM3"
                     % (UUIDS[i], 0x18 + 0x10 * i, 10 + i))
    return "\n".join(lines) + "\n"


def record(uid, gpu, node=NODE, ctr="main", mem=20480):
    return json.dumps({"v": "1.0", "node": node, "uid": uid, "time": "2026-01-02T03:04:05Z", "kind": "share",
                       "conv": "gpushare",
                       "containers": [{"name": ctr, "devices": [{"gpu": gpu, "uuid": UUIDS[gpu], "mem": mem}]}]},
                      separators=(",", ":"))


class Runtime:
    """The Go peer: one JSON command per line, one JSON answer per line."""

    def __init__(self, binary, socket):
        self.p = subprocess.Popen([binary, "-socket", socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        first = self.q.get(timeout=30)
        if not first.get("ready"):
            raise RuntimeError("peer did not start: %s" % first)

    def _read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))

    def _read_err(self):
        for line in self.p.stderr:
            self.err.append(line)

    def cmd(self, **c):
        self.p.stdin.write(json.dumps(c) + "\n")
        self.p.stdin.flush()
        return self.q.get(timeout=60)

    def create(self, pod_name, uid, ctr, annotations=None, share=True, pod_id=None):
        pod = {"id": pod_id or "sb-" + pod_name, "name": pod_name, "namespace": "ml", "uid": uid,
               "annotations": annotations or {}}
        c = {"id": "c-%s-%s" % (pod_name, ctr), "pod_id": pod["id"], "name": ctr, "env": ["PATH=/usr/bin"],
             "annotations": {}}
        if share:
            c["env"].append("NVIDIA_VISIBLE_DEVICES=void")  # what the plugin's Allocate set
            c["annotations"]["gpusched.io/share-resource"] = SHARE
        return self.cmd(op="create", pod=pod, container=c)

    def close(self):
        if self.p.poll() is not None:
            return
        try:
            self.cmd(op="quit")
        except Exception:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def main():
    if len(sys.argv) != 4:
        print("usage: nri-test.py GPUSCHED FAKE_NVML_LIBRARY SOURCE_DIR", file=sys.stderr)
        return 2
    gpusched, fake, src = sys.argv[1:4]
    b = subprocess.run([os.path.join(src, "scripts", "peer-nri.sh")], capture_output=True, text=True)
    if b.returncode != 0:
        print(("SKIP: %s" if b.returncode == 77 else "FAIL: %s")
              % (b.stderr.strip().splitlines() or ["peer-nri.sh failed"])[-1])
        return 77 if b.returncode == 77 else 1
    peer = b.stdout.strip().splitlines()[-1]
    try:
        import grpc  # noqa: F401
        import grpc_tools  # noqa: F401
        import kubelet
    except ImportError:
        kubelet = None

    work = tempfile.mkdtemp(prefix="gs-nri.")
    dp = os.path.join(work, "dp")
    os.mkdir(dp)
    sock = os.path.join(work, "nri.sock")
    scn = os.path.join(work, "node.scn")
    with open(scn, "w") as f:
        f.write(scenario())
    cfg = os.path.join(work, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\ngpusched:\n  shareResources: [%s]\n" % SHARE)

    rt = Runtime(peer, sock)
    rts = [rt]
    # a container created before the plugin was there: asked for a share, runs with void
    rt.cmd(op="containers", pods=[{"id": "sb-old", "name": "old", "namespace": "ml", "uid": UID_C}],
           containers=[{"id": "c-old", "pod_id": "sb-old", "name": "main",
                        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
                        "annotations": {"gpusched.io/share-resource": SHARE}}])
    env = dict(os.environ, GS_FAKE_NVML=scn, KUBECONFIG=os.path.join(work, "no-kubeconfig"), HOME=work)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    args = [gpusched, "agent", "--node", NODE, "--nvml-library", fake, "--device-plugin-dir", dp,
            "--pod-resources-socket", "", "--listen", "127.0.0.1:0", "--no-register", "--config", cfg,
            "--nri-socket", sock]
    agent = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    log = []
    port = {}

    def reader():
        for line in agent.stderr:
            log.append(line)
            m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                port["p"] = int(m.group(1))

    threading.Thread(target=reader, daemon=True).start()
    law_sock = os.path.join(dp, "gpusched-gpu-mem.sock")
    watch = {"updates": [], "stop": False}

    def watcher():
        dpb, dp_grpc, _, _ = kubelet.protos()
        with kubelet.plugin_channel(law_sock) as ch:
            stream = dp_grpc.DevicePluginStub(ch).ListAndWatch(dpb.Empty(), timeout=120)
            try:
                for resp in stream:
                    devs = resp.devices
                    watch["updates"].append((time.time(), sum(1 for d in devs if d.health == "Healthy"), len(devs)))
                    if watch["stop"]:
                        break
            except Exception as e:  # the agent stops at the end
                watch["error"] = str(e)

    try:
        # 1. registration and synchronization
        w = rt.cmd(op="wait", timeout_ms=15000)
        check(w.get("ok") is True, "the plugin registered and synchronized with the runtime (%s)" % w)
        check(wait_for(lambda: any("registered as 10-gpusched" in x for x in log), 5),
              "the agent logs its registration as 10-gpusched")
        check(wait_for(lambda: any("ml/old/main" in x and "without its devices" in x for x in log), 5),
              "Synchronize: the container created without injection is named in the log")
        if kubelet:
            check(wait_for(lambda: os.path.exists(law_sock), 10), "the share resource's plugin socket exists")
            threading.Thread(target=watcher, daemon=True).start()
            first = wait_for(lambda: watch["updates"], 10)
            check(bool(first) and first[-1][1] == first[-1][2] and first[-1][2] == 4 * 79,
                  "ListAndWatch: the %d gpu-mem units are Healthy once the plugin is connected (%s)"
                  % (4 * 79, first[-1] if first else None))

        # 2. two identical pods created together get the devices of their own record
        ra, rb = record(UID_A, 1), record(UID_B, 0)
        out = {}

        def create(name, uid, rec):
            out[name] = rt.create(name, uid, "main", {"gpusched.io/assignment": rec})

        # the runtime serializes plugin calls: issue B before A, A's record names GPU 1
        create("pod-b", UID_B, rb)
        create("pod-a", UID_A, ra)
        a, bb = out["pod-a"], out["pod-b"]
        check(a.get("ok") and a["env"].get("NVIDIA_VISIBLE_DEVICES") == UUIDS[1],
              "pod A's container gets GPU 1, its record's (%s)" % a)
        check(bb.get("ok") and bb["env"].get("NVIDIA_VISIBLE_DEVICES") == UUIDS[0],
              "pod B's container gets GPU 0, its record's (%s)" % bb)
        pa = sorted(d["path"] for d in a.get("devices", []))
        pb = sorted(d["path"] for d in bb.get("devices", []))
        check("/dev/nvidia11" in pa and "/dev/nvidia10" not in pa and "/dev/nvidiactl" in pa,
              "pod A: /dev/nvidia11 (GPU 1's minor) and /dev/nvidiactl, not GPU 0's node (%s)" % pa)
        check("/dev/nvidia10" in pb and "/dev/nvidia11" not in pb, "pod B: /dev/nvidia10 only (%s)" % pb)
        d11 = [d for d in a.get("devices", []) if d["path"] == "/dev/nvidia11"]
        check(bool(d11) and d11[0]["type"] == "c" and d11[0]["major"] == 195 and d11[0]["minor"] == 11
              and d11[0]["mode"] == 0o666, "device node c 195:11 mode 0666 (%s)" % d11)
        # the agent's log is read by another thread: the line may arrive after the answer
        check(wait_for(lambda: any("ml/pod-a main: " + UUIDS[1] in x for x in log), 5), "the injection is logged")
        base = "http://127.0.0.1:%d" % port.get("p", 0)
        code, body = http_get(base + "/metrics")
        check(code == 200 and "gpusched_agent_nri_connected 1\n" in body
              and 'gpusched_agent_nri_containers_total{outcome="injected"} 2\n' in body,
              "/metrics: gpusched_agent_nri_connected 1, 2 containers injected")
        check(http_get(base + "/readyz")[0] == 200, "/readyz 200 while the NRI plugin is connected")

        # 3. a container the record does not list: no GPU; a pod that is not ours: untouched
        s = rt.create("pod-a", UID_A, "sidecar", {"gpusched.io/assignment": ra}, share=False)
        check(s.get("ok") and s["env"] == {"NVIDIA_VISIBLE_DEVICES": "void"} and not s.get("devices"),
              "a container not in the record gets NVIDIA_VISIBLE_DEVICES=void and no device (%s)" % s)
        n = rt.create("web", UID_C, "nginx", {}, share=False)
        check(n.get("ok") and not n.get("env") and not n.get("devices"), "a pod without record is left alone (%s)" % n)

        # 4. refusals fail the container's creation
        r = rt.create("pod-c", UID_C, "main", {"gpusched.io/assignment": ra})
        check(not r.get("ok") and "copied records are refused" in r.get("error", "")
              and "gpusched" in r.get("error", ""),
              "another pod's record is refused: creation fails (%s)" % r.get("error"))
        r = rt.create("pod-d", UID_C, "main", {})
        check(not r.get("ok") and "no gpusched.io/assignment annotation" in r.get("error", ""),
              "a share container without a record is refused (%s)" % r.get("error"))
        r = rt.create("pod-e", UID_C, "main", {"gpusched.io/assignment": record(UID_C, 2, node="gpu-b")})
        check(not r.get("ok") and 'for node "gpu-b"' in r.get("error", ""),
              "a record for another node is refused (%s)" % r.get("error"))

        # 4b. a record that would over-commit GPU 1 (A holds 20480 of its 81559 MiB) is refused,
        # until A's sandbox stops
        rd = record(UID_D, 1, mem=70000)
        r = rt.create("pod-d2", UID_D, "main", {"gpusched.io/assignment": rd})
        check(not r.get("ok") and "over-committed: 20480 MiB in use + 70000 MiB" in r.get("error", ""),
              "a record over-committing GPU 1's memory is refused (%s)" % r.get("error"))
        pod_a = {"id": "sb-pod-a", "name": "pod-a", "namespace": "ml", "uid": UID_A,
                 "annotations": {"gpusched.io/assignment": ra}}
        s = rt.cmd(op="stop", pod=pod_a)
        check(s.get("ok") and wait_for(lambda: any("ml/pod-a stopped: its devices are free" in x for x in log), 3),
              "StopPodSandbox of pod A frees its share (%s)" % s)
        r = rt.create("pod-d2", UID_D, "main", {"gpusched.io/assignment": rd})
        check(r.get("ok") and r["env"].get("NVIDIA_VISIBLE_DEVICES") == UUIDS[1],
              "then the same record is admitted (%s)" % r.get("error", r.get("env")))

        # 5. the runtime restarts: the plugin reconnects
        n_before = len(watch["updates"])
        rt.close()  # the runtime goes away: its connections end, its socket stays behind
        check(wait_for(lambda: any("connection closed by the runtime" in x for x in log), 5),
              "the plugin notices the runtime is gone")
        code, why = http_get(base + "/readyz")
        check(code == 503 and "NRI plugin is not connected" in why, "/readyz 503 while the runtime is away (%s)" % why)
        if kubelet:
            check(wait_for(lambda: [u for u in watch["updates"][n_before:] if u[1] == 0], 5),
                  "ListAndWatch: the gpu-mem units turn Unhealthy while the runtime is away")
        time.sleep(1.5)  # the plugin retries every second meanwhile
        t0 = time.time()
        rt = Runtime(peer, sock)
        rts.append(rt)
        # the restarted runtime knows pod B only: the plugin's book is rebuilt from it
        rt.cmd(op="containers", pods=[{"id": "sb-pod-b", "name": "pod-b", "namespace": "ml", "uid": UID_B,
                                       "annotations": {"gpusched.io/assignment": rb}}],
               containers=[{"id": "c-pod-b-main", "pod_id": "sb-pod-b", "name": "main",
                            "env": ["NVIDIA_VISIBLE_DEVICES=" + UUIDS[0]],
                            "annotations": {"gpusched.io/share-resource": SHARE}}])
        w = rt.cmd(op="wait", timeout_ms=10000)
        took = time.time() - t0
        check(w.get("ok") is True and took < 3, "the runtime restarted: the plugin reconnected and synchronized "
              "in %.2f s (it retries every second; %s)" % (took, w))
        c = rt.create("pod-a2", UID_A, "main", {"gpusched.io/assignment": ra})
        check(c.get("ok") and c.get("env", {}).get("NVIDIA_VISIBLE_DEVICES") == UUIDS[1],
              "after the restart, injection works again (%s)" % c)
        r = rt.create("pod-e2", UID_D, "main", {"gpusched.io/assignment": record(UID_D, 0, mem=70000)})
        check(not r.get("ok") and "GPU 0 is over-committed: 20480 MiB in use" in r.get("error", ""),
              "pod B's share, known from Synchronize, is counted again (%s)" % r.get("error"))
        if kubelet:
            ok = wait_for(lambda: watch["updates"][-1][1] == watch["updates"][-1][2], 10)
            check(bool(ok), "ListAndWatch: Healthy again once the plugin is back (%s)" % watch["updates"][n_before:])
        else:
            print("skip  ListAndWatch health across the restart (python3-grpcio not installed)")
        check(http_get(base + "/readyz")[0] == 200, "/readyz 200 again")
        code, body = http_get(base + "/metrics")
        check("gpusched_agent_nri_connections_total 2\n" in body and
              'gpusched_agent_nri_containers_total{outcome="refused"} 5\n' in body,
              "/metrics: 2 connections, 5 containers refused")
    finally:
        watch["stop"] = True
        agent.terminate()
        try:
            agent.wait(timeout=15)
        except subprocess.TimeoutExpired:
            agent.kill()
        for r in rts:
            r.close()
        if FAILED:
            sys.stdout.write("--- agent log ---\n" + "".join(log[-60:]) + "--- runtime log ---\n"
                             + "".join(sum((r.err[-30:] for r in rts), [])))
        shutil.rmtree(work, ignore_errors=True)
    check(agent.returncode == 0, "the agent exits 0 on SIGTERM (rc %s)" % agent.returncode)
    print("%d failed" % len(FAILED) if FAILED else "all passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
