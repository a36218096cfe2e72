#!/usr/bin/python3
"""bench-agent.py - issue 14 section 5: the node agent's speed, end to end, with the fake NVML
and a kubelet played by python3-grpcio (tests/agent/kubelet.py).

    bench/bench-agent.py [--gpusched build/gpusched]
                         [--fake-nvml build/tests/fake_nvml/libnvidia-ml.so.1]
                         [--calls 1000] [--scrapes 200] [--idle 60] [--idle-whole 30]
                         [--only mig|whole]

Two runs, each with a fresh agent process:

  mig    8 H100 80GB in MIG mode, 7 x 1g.10gb each (56 MIG devices), --mig-strategy mixed:
         the agent serves nvidia.com/mig-1g.10gb; the PodResources server reports 56 pods,
         one MIG device each (pod attribution on every MIG series)
  whole  8 whole H100 80GB (every GPU NVLink-connected to the 7 others), nvidia.com/gpu;
         8 pods, one GPU each

Measured in each run, in this order:
  first list   agent start -> the kubelet's Register call, and Register -> the first
               ListAndWatch response received by the kubelet's stream
  rpc          --calls calls each through one persistent python3-grpcio channel on the
               plugin socket: GetDevicePluginOptions (empty request and answer: the Python
               client's and the transport's own cost), Allocate (one device; whole: 2 GPUs),
               GetPreferredAllocation (mig: 1 of 56; whole: 4 of 8 with NVLink scoring);
               p50/p99/max, client side
  /metrics     --scrapes GETs, one connection each (as Prometheus without keep-alive);
               p50/p99 and body size
  idle         --idle seconds (--idle-whole for the whole run) with --sample-interval 1s
               and nothing else happening: CPU (utime+stime from /proc/<pid>/stat) as % of
               one core, RSS (VmRSS) at the end, peak RSS (VmHWM)
  health       8 times: an XID 79 on a GPU not yet failed is written into the scenario
               (rename(2)); time until the kubelet's stream receives a list with that
               GPU's devices Unhealthy. The fake NVML polls its file every 20 ms inside
               nvmlEventSetWait, so up to 20 ms of each figure is the fake's polling
               (each injection waits a random 50-250 ms first, so it does not lock onto
               that period). Also: the time until the agent's "unhealthy" log line.

Prints per-step lines on stderr and one Markdown table on stdout. Exit 77 without
python3-grpcio or without the fake NVML (it is built with the tests: GS_TESTS=ON).
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
try:
    import grpc  # noqa: F401
    import grpc_tools  # noqa: F401
except ImportError:
    print("SKIP: python3-grpcio / python3-grpc-tools not installed (scripts/deps.sh grpc-peer)")
    sys.exit(77)
import kubelet  # noqa: E402
from agenttest import write_atomic  # noqa: E402
from google.protobuf import json_format  # noqa: E402

NGPU = 8
NMIG = 7
CLK_TCK = os.sysconf("SC_CLK_TCK")


def gpu_uuid(i):
    return "GPU-b0a0c0d0-0000-4000-8000-%012d" % i


def mig_uuid(i, j):
    return "MIG-b0a0c0d0-%04d-5000-8000-%012d" % (i, j)


BUS = ["00000000:%02X:00.0" % b for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]


def scenario(mode, xid_gpu=None):
    lines = ["driver 550.107.02", "cuda 12040"]
    for i in range(NGPU):
        common = ("memory=81559 pci=%s minor=%d cc=9.0 arch=9 numa=%d temp=%d power=%d energy=%d "
                  "ecc-sbe=0 ecc-dbe=0 sm-clock=1980 mem-clock=2619 replay=0"
                  % (BUS[i], i, i // 4, 40 + i, 300000 + 1000 * i, 10 ** 9 + i))
        if mode == "mig":
            lines.append("gpu uuid=%s %s mig=1 fbused=%d name=NVIDIA H100 80GB HBM3"
                         % (gpu_uuid(i), common, 7 * 1000))
            for j in range(NMIG):
                lines.append("mig uuid=%s gi=%d ci=0 memory=9856 gi-slices=1 ci-slices=1 sms=16 ce=1 "
                             "dec=1 jpg=1 fbused=%d" % (mig_uuid(i, j), 7 + j, 1000))
        else:
            peers = ",".join(BUS[k] for k in range(NGPU) if k != i)
            lines.append("gpu uuid=%s %s mig=0 nvlink=%s util=%d memutil=%d fbused=%d "
                         "name=NVIDIA H100 80GB HBM3"
                         % (gpu_uuid(i), common, peers, 10 * i, 5 * i, 2000 * (i + 1)))
    if xid_gpu is not None:
        lines.append("xid gpu=%d code=79" % xid_gpu)
    return "\n".join(lines) + "\n"




def log(msg):
    print(msg, file=sys.stderr, flush=True)


class TimedRegistration(kubelet.RegistrationServer):
    """kubelet.py's Registration server with a monotonic timestamp on every event."""

    def _event(self, ev):
        ev["t"] = time.monotonic()
        super()._event(ev)


def proc_cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)


def proc_status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def pct(values, p):
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def ms(v):
    return "%.2f" % (v * 1e3)


def time_calls(fn, n):
    fn()  # warm the channel
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def scrape_once(port):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    r = c.getresponse()
    body = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError("/metrics answered %d" % r.status)
    return time.perf_counter() - t0, body


def run(mode, a):
    work = tempfile.mkdtemp(prefix="gs-bench-agent.")
    dp = os.path.join(work, "dp")
    os.mkdir(dp)
    scn = os.path.join(work, "node.scn")
    write_atomic(scn, scenario(mode))
    resource = "nvidia.com/mig-1g.10gb" if mode == "mig" else "nvidia.com/gpu"
    sock = os.path.join(dp, "gpusched-mig-1g.10gb.sock" if mode == "mig" else "gpusched-gpu.sock")
    if mode == "mig":
        held = [(mig_uuid(i, j), "job-%d-%d" % (i, j)) for i in range(NGPU) for j in range(NMIG)]
    else:
        held = [(gpu_uuid(i), "train-%d" % i) for i in range(NGPU)]
    prdata = os.path.join(work, "podresources.json")
    with open(prdata, "w") as f:
        json.dump({"pod_resources": [
            {"name": pod, "namespace": "ml", "containers": [
                {"name": "main", "devices": [{"resource_name": resource, "device_ids": [dev]}]}]}
            for dev, pod in held], "allocatable": {"devices": []}}, f)
    pr_sock = os.path.join(work, "pr.sock")
    reg = TimedRegistration(os.path.join(dp, "kubelet.sock"), plugin_dir=dp).start()
    prs = kubelet.PodResourcesServer(pr_sock, prdata).start()
    env = dict(os.environ, GS_FAKE_NVML=scn, KUBECONFIG=os.path.join(work, "no-kubeconfig"), HOME=work)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    args = [a.gpusched, "agent", "--node", "bench-node", "--nvml-library", a.fake_nvml,
            "--device-plugin-dir", dp, "--pod-resources-socket", pr_sock, "--listen", "127.0.0.1:0",
            "--sample-interval", "1s"]
    if mode == "mig":
        args += ["--mig-strategy", "mixed"]
    res = {"mode": mode}
    t_start = time.monotonic()
    agent = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    agent_log, agent_times, port = [], [], {}

    def reader():
        for line in agent.stderr:
            agent_log.append(line)
            agent_times.append((time.monotonic(), line))
            m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                port["p"] = int(m.group(1))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    ok = False
    try:
        # first list
        if not reg.wait(lambda evs: any(e["event"] == "devices" and e["resource_name"] == resource
                                        for e in evs), 15):
            raise RuntimeError("no ListAndWatch list for %s within 15 s" % resource)
        evs = reg.events()
        t_reg = next(e["t"] for e in evs if e["event"] == "register" and e["resource_name"] == resource)
        first = next(e for e in evs if e["event"] == "devices" and e["resource_name"] == resource)
        res["devices"] = len(first["devices"])
        res["start_to_register"] = t_reg - t_start
        res["register_to_list"] = first["t"] - t_reg
        log("%s: %d devices; start -> Register %.1f ms, Register -> first list %.1f ms"
            % (mode, res["devices"], res["start_to_register"] * 1e3, res["register_to_list"] * 1e3))
        for _ in range(100):
            if "p" in port:
                break
            time.sleep(0.05)

        # rpc latencies through one persistent channel
        dpb, dp_grpc, _, _ = kubelet.protos()
        ch = kubelet.plugin_channel(sock)
        stub = dp_grpc.DevicePluginStub(ch)
        empty = dpb.Empty()
        if mode == "mig":
            alloc_ids = [mig_uuid(3, 4)]
            avail = [mig_uuid(i, j) for i in range(NGPU) for j in range(NMIG)]
            size = 1
        else:
            alloc_ids = [gpu_uuid(2), gpu_uuid(3)]
            avail = [gpu_uuid(i) for i in range(NGPU)]
            size = 4
        areq = json_format.ParseDict({"container_requests": [{"devices_ids": alloc_ids}]}, dpb.AllocateRequest())
        preq = json_format.ParseDict({"container_requests": [{"available_deviceIDs": avail,
                                                              "allocation_size": size}]},
                                     dpb.PreferredAllocationRequest())
        resp = stub.Allocate(areq, timeout=5)
        envs = dict(resp.container_responses[0].envs)
        if envs.get("NVIDIA_VISIBLE_DEVICES") != ",".join(alloc_ids):
            raise RuntimeError("Allocate answered %s" % envs)
        pick = list(stub.GetPreferredAllocation(preq, timeout=5).container_responses[0].deviceIDs)
        log("%s: Allocate -> NVIDIA_VISIBLE_DEVICES=%s; preferred %d of %d -> %s"
            % (mode, envs["NVIDIA_VISIBLE_DEVICES"], size, len(avail), ",".join(p[-3:] for p in pick)))
        for name, fn in (("options", lambda: stub.GetDevicePluginOptions(empty, timeout=5)),
                         ("allocate", lambda: stub.Allocate(areq, timeout=5)),
                         ("preferred", lambda: stub.GetPreferredAllocation(preq, timeout=5))):
            lat = time_calls(fn, a.calls)
            res[name] = lat
            log("%s: %-9s n=%d p50 %s ms p99 %s ms max %s ms" % (mode, name, len(lat), ms(pct(lat, 50)),
                                                                   ms(pct(lat, 99)), ms(max(lat))))
        ch.close()

        # /metrics
        base = port.get("p")
        if base is None:
            raise RuntimeError("the agent did not say where it serves metrics")
        # wait until the pods of PodResources are on the series (the first sample read)
        end = time.time() + 10
        body = b""
        while time.time() < end:
            body = scrape_once(base)[1]
            if held[0][1].encode() in body:
                break
            time.sleep(0.1)
        lat, sizes = [], []
        for _ in range(a.scrapes):
            t, body = scrape_once(base)
            lat.append(t)
            sizes.append(len(body))
        res["scrape"] = lat
        res["scrape_bytes"] = max(sizes)
        res["series"] = sum(1 for ln in body.split(b"\n") if ln and not ln.startswith(b"#"))
        res["attributed"] = body.count(b'pod="')
        log("%s: /metrics n=%d p50 %s ms p99 %s ms, %d bytes, %d series (%d with a pod)"
            % (mode, len(lat), ms(pct(lat, 50)), ms(pct(lat, 99)), res["scrape_bytes"], res["series"],
               res["attributed"]))

        # idle window at --sample-interval 1s
        idle = a.idle if mode == "mig" else a.idle_whole
        c0, t0 = proc_cpu_ticks(agent.pid), time.monotonic()
        time.sleep(idle)
        c1, t1 = proc_cpu_ticks(agent.pid), time.monotonic()
        res["idle_s"] = t1 - t0
        res["cpu_pct"] = 100.0 * (c1 - c0) / CLK_TCK / (t1 - t0)
        res["rss_kib"] = proc_status_kib(agent.pid, "VmRSS")
        res["hwm_kib"] = proc_status_kib(agent.pid, "VmHWM")
        log("%s: idle %.0f s: CPU %.2f %% of one core (%d ticks), RSS %.1f MiB, peak %.1f MiB"
            % (mode, res["idle_s"], res["cpu_pct"], c1 - c0, res["rss_kib"] / 1024, res["hwm_kib"] / 1024))

        # health change -> ListAndWatch
        hl, hd = [], []
        for g in range(NGPU):
            want = {mig_uuid(g, j) for j in range(NMIG)} if mode == "mig" else {gpu_uuid(g)}
            n0 = len(reg.events())

            def seen(evs, want=want, n0=n0):
                for e in evs[n0:]:
                    if e["event"] == "devices" and e["resource_name"] == resource:
                        bad = {d["ID"] for d in e["devices"] if d["health"] == "Unhealthy"}
                        if want <= bad:
                            return e
                return None
            # a random pause first: injecting right after the last detection would always land
            # just after one of the fake's 20 ms polls (a phase-locked 19-20 ms every time)
            time.sleep(random.uniform(0.05, 0.25))
            t0 = time.monotonic()
            write_atomic(scn, scenario(mode, xid_gpu=g))
            if not reg.wait(lambda evs: seen(evs) is not None, 5):
                raise RuntimeError("XID 79 on GPU %d: no Unhealthy list within 5 s" % g)
            hl.append(seen(reg.events())["t"] - t0)
            logged = [t for t, line in list(agent_times) if t >= t0 and ": unhealthy: " in line]
            if logged:
                hd.append(min(logged) - t0)
        res["health"] = hl
        res["health_log"] = hd
        log("%s: XID -> Unhealthy in ListAndWatch: n=%d p50 %s ms max %s ms; the agent's log line: p50 %s ms"
            % (mode, len(hl), ms(pct(hl, 50)), ms(max(hl)), ms(pct(hd, 50)) if hd else "-"))
        res["hwm_kib"] = proc_status_kib(agent.pid, "VmHWM")
        ok = True
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
        try:
            rc = agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
            rc = -9
        reg.stop()
        prs.stop()
        th.join(timeout=2)
        if not ok or rc != 0:
            log("--- agent log (rc %s) ---\n%s" % (rc, "".join(agent_log)))
        shutil.rmtree(work, ignore_errors=True)
    return res


def table(results, a):
    cols = [r["mode"] for r in results]
    names = {"mig": "8 x H100, 7 x 1g.10gb each (56 MIG devices, mixed)", "whole": "8 x whole H100 (NVLink)"}
    out = ["| measure | " + " | ".join(names[c] for c in cols) + " |",
           "|---|" + "---:|" * len(cols)]

    def row(label, f):
        out.append("| %s | %s |" % (label, " | ".join(f(r) for r in results)))
    row("devices advertised", lambda r: str(r["devices"]))
    row("agent start -> Register", lambda r: "%s ms" % ms(r["start_to_register"]))
    row("Register -> first ListAndWatch list at the kubelet", lambda r: "%s ms" % ms(r["register_to_list"]))
    row("XID 79 -> Unhealthy list at the kubelet, p50 / max (n=8)",
        lambda r: "%s / %s ms" % (ms(pct(r["health"], 50)), ms(max(r["health"]))))
    row("XID 79 -> the agent's \"unhealthy\" log line, p50 (n=8)",
        lambda r: "%s ms" % ms(pct(r["health_log"], 50)) if r["health_log"] else "-")
    for key, label in (("options", "GetDevicePluginOptions (client + transport floor)"),
                       ("allocate", "Allocate"), ("preferred", "GetPreferredAllocation")):
        row("%s p50 / p99 / max (n=%d)" % (label, a.calls),
            lambda r, key=key: "%s / %s / %s ms" % (ms(pct(r[key], 50)), ms(pct(r[key], 99)), ms(max(r[key]))))
    row("/metrics scrape p50 / p99 (n=%d)" % a.scrapes,
        lambda r: "%s / %s ms" % (ms(pct(r["scrape"], 50)), ms(pct(r["scrape"], 99))))
    row("/metrics body, series (with a pod label)",
        lambda r: "%.1f KiB, %d (%d)" % (r["scrape_bytes"] / 1024, r["series"], r["attributed"]))
    row("CPU at --sample-interval 1s, idle", lambda r: "%.2f %% of one core (%.0f s)" % (r["cpu_pct"], r["idle_s"]))
    row("RSS / peak RSS (VmRSS / VmHWM)", lambda r: "%.1f / %.1f MiB" % (r["rss_kib"] / 1024, r["hwm_kib"] / 1024))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpusched", default=os.path.join(ROOT, "build", "gpusched"))
    ap.add_argument("--fake-nvml", default=os.path.join(ROOT, "build", "tests", "fake_nvml", "libnvidia-ml.so.1"))
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--idle", type=float, default=60)
    ap.add_argument("--idle-whole", type=float, default=30)
    ap.add_argument("--only", choices=["mig", "whole"])
    a = ap.parse_args()
    if not os.path.exists(a.fake_nvml):
        print("SKIP: no fake NVML at %s (build with the tests)" % a.fake_nvml)
        return 77
    a.gpusched = os.path.abspath(a.gpusched)
    a.fake_nvml = os.path.abspath(a.fake_nvml)
    kubelet.protos()
    modes = [a.only] if a.only else ["mig", "whole"]
    t0 = time.monotonic()
    results = [run(m, a) for m in modes]
    print(table(results, a))
    print("\n%s, %.0f s, %d CPUs online" % (" ".join(["bench/bench-agent.py"] + sys.argv[1:]),
                                          time.monotonic() - t0, os.cpu_count()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
