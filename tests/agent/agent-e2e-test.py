#!/usr/bin/python3
"""agent-e2e-test.py - `gpusched agent` against a kubelet played by python3-grpcio.

Usage: agent-e2e-test.py GPUSCHED FAKE_NVML_LIBRARY

The agent runs as a process with the fake NVML (tests/fake-nvml) and a live scenario file,
a plugin directory of its own, the kubelet's Registration server (kubelet.py) on
<dir>/kubelet.sock and a PodResources server. Steps, each asserted:
  1. registration: nvidia.com/gpu registered with endpoint gpusched-gpu.sock; the kubelet's
     ListAndWatch gets the 4 GPUs, Healthy, with their NUMA nodes;
  2. Allocate answers NVIDIA_VISIBLE_DEVICES with the UUIDs; an unknown ID is refused;
     GetPreferredAllocation picks an NVLink pair; an old kubelet's :authority (the socket
     path) is served;
  3. /metrics: DCGM_FI_DEV_GPU_UTIL with the pod of the PodResources List, the agent's
     registration counter; /readyz 200;
  4. `gpusched agent check` passes (0), with the kubelet's allocatable devices;
  5. XID 79 on GPU 1 and the GPU off the bus: Unhealthy in ListAndWatch within 3 s, `agent
     check` fails (1) naming it; back on the bus: Healthy again after probe + quiet time;
  6. kubelet restart (sockets deleted, kubelet.sock created again): registered again
     within 2 s, counted (registrations_total 2), /readyz 200 again;
  7. SIGTERM: exit 0, the plugin socket removed.
Exit 77 (skip) without python3-grpcio.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import grpc  # noqa: F401
    import grpc_tools  # noqa: F401
except ImportError:
    print("SKIP: python3-grpcio / python3-grpc-tools not installed (scripts/deps.sh grpc-peer)")
    sys.exit(77)
import kubelet  # noqa: E402
from agenttest import FAILED, check, http_get, wait_for, write_atomic  # noqa: E402

UUIDS = ["GPU-aaaaaaaa-0000-4000-8000-00000000000%d" % i for i in range(4)]
BUS = ["00000000:%02X:00.0" % b for b in (0x18, 0x2A, 0x9A, 0xAB)]


def scenario(lost=(), xids=()):
    peers = {0: 1, 1: 0, 2: 3, 3: 2}
    lines = ["driver 550.107.02", "cuda 12040"]
    for i in range(4):
        lines.append("gpu uuid=%s memory=81559 pci=%s minor=%d cc=9.0 mig=0 arch=9 numa=%d nvlink=%s,%s "
                     "util=%d fbused=%d temp=50 power=300000%s name=NVIDIA H100 80GB HBM3"
                     % (UUIDS[i], BUS[i], i, i // 2, BUS[peers[i]], BUS[peers[i]], 90 if i == 0 else 0,
                        1000 * (i + 1), " lost" if i in lost else ""))
    for g, code in xids:
        lines.append("xid gpu=%d code=%d" % (g, code))
    return "\n".join(lines) + "\n"












def main():
    if len(sys.argv) != 3:
        print("usage: agent-e2e-test.py GPUSCHED FAKE_NVML_LIBRARY", file=sys.stderr)
        return 2
    gpusched, fake = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="gs-agent-e2e.")
    dp = os.path.join(work, "dp")
    os.mkdir(dp)
    scn = os.path.join(work, "node.scn")
    write_atomic(scn, scenario())
    record = os.path.join(work, "record.jsonl")
    prdata = os.path.join(work, "podresources.json")
    pr_sock = os.path.join(work, "pr.sock")
    with open(prdata, "w") as f:
        json.dump({"pod_resources": [{"name": "train-0", "namespace": "ml", "containers": [
            {"name": "trainer", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": [UUIDS[0]]}]}]}],
            "allocatable": {"devices": []}}, f)
    reg = kubelet.RegistrationServer(os.path.join(dp, "kubelet.sock"), record=record, plugin_dir=dp)
    reg.start()
    prs = kubelet.PodResourcesServer(pr_sock, prdata)
    prs.start()
    env = dict(os.environ, GS_FAKE_NVML=scn, KUBECONFIG=os.path.join(work, "no-kubeconfig"), HOME=work)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    args = [gpusched, "agent", "--node", "gpu-node-1", "--nvml-library", fake, "--device-plugin-dir", dp,
            "--pod-resources-socket", pr_sock, "--listen", "127.0.0.1:0", "--probe-interval", "1s",
            "--recover-after", "2s"]
    agent = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    log = []
    port = {}

    def reader():
        for line in agent.stderr:
            log.append(line)
            m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                port["p"] = int(m.group(1))

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    sock = os.path.join(dp, "gpusched-gpu.sock")
    try:
        # 1. registration and the first device list
        check(wait_for(lambda: "p" in port, 10), "the agent started and serves metrics")
        base = "http://127.0.0.1:%d" % port.get("p", 0)
        regs = wait_for(lambda: [e for e in reg.events() if e.get("event") == "register"], 5)
        check(bool(regs) and regs[0].get("resource_name") == "nvidia.com/gpu"
              and regs[0].get("endpoint") == "gpusched-gpu.sock" and regs[0].get("version") == "v1beta1",
              "registered nvidia.com/gpu with endpoint gpusched-gpu.sock (v1beta1)")
        devs = wait_for(lambda: reg.latest("nvidia.com/gpu"), 5)
        ids = sorted(d["ID"] for d in devs) if devs else []
        check(ids == sorted(UUIDS), "ListAndWatch lists the 4 GPUs by UUID")
        check(devs is not None and all(d["health"] == "Healthy" for d in devs), "all Healthy")
        numa = {d["ID"]: d.get("topology", {}).get("nodes", [{}])[0].get("ID", "0") for d in devs or []}
        check(str(numa.get(UUIDS[2])) == "1" and str(numa.get(UUIDS[0], "0")) == "0",
              "TopologyInfo carries the NUMA nodes (GPU 2 on node 1)")

        # 2. Allocate, GetPreferredAllocation, old kubelet authority
        r = kubelet.plugin_call(sock, "allocate", {"container_requests": [{"devices_ids": [UUIDS[2], UUIDS[3]]}]})
        envs = (r.get("container_responses") or [{}])[0].get("envs", {})
        check(envs.get("NVIDIA_VISIBLE_DEVICES") == "%s,%s" % (UUIDS[2], UUIDS[3]),
              "Allocate answers NVIDIA_VISIBLE_DEVICES with the UUIDs (%s)" % envs.get("NVIDIA_VISIBLE_DEVICES"))
        try:
            r = kubelet.plugin_call(sock, "allocate", {"container_requests": [{"devices_ids": ["GPU-nope"]}]})
            check(False, "Allocate of an unknown ID is refused (got %s)" % r)
        except grpc.RpcError as e:
            check(e.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND),
                  "Allocate of an unknown ID is refused (%s: %s)" % (e.code().name, e.details()))
        r = kubelet.plugin_call(sock, "preferred", {"container_requests": [
            {"available_deviceIDs": [UUIDS[0], UUIDS[2], UUIDS[3], UUIDS[1]], "allocation_size": 2}]})
        pick = sorted((r.get("container_responses") or [{}])[0].get("deviceIDs", []))
        check(pick in (sorted(UUIDS[0:2]), sorted(UUIDS[2:4])), "GetPreferredAllocation picks an NVLink pair (%s)" % pick)
        r = kubelet.plugin_call(sock, "options", authority_path=True)
        check(r.get("get_preferred_allocation_available") is True,
              "a kubelet < 1.26 (:authority = the socket path) is served")

        # 3. metrics and readiness
        code, body = wait_for(lambda: (lambda c, b: (c, b) if 'pod="train-0"' in b else None)(
            *http_get(base + "/metrics")), 15) or http_get(base + "/metrics")
        check(code == 200 and re.search(r'DCGM_FI_DEV_GPU_UTIL\{gpu="0",UUID="%s"[^}]*pod="train-0"[^}]*\} 90'
                                        % UUIDS[0], body) is not None,
              "/metrics: DCGM_FI_DEV_GPU_UTIL of GPU 0 = 90 with the pod of PodResources")
        check('gpusched_agent_registrations_total{resource="nvidia.com/gpu"} 1' in body, "registrations counted")
        check(http_get(base + "/readyz")[0] == 200, "/readyz 200 once registered")

        # 4. agent check passes with the kubelet's view
        def set_allocatable():
            latest = reg.latest("nvidia.com/gpu") or []
            with open(prdata) as f:
                d = json.load(f)
            d["allocatable"] = {"devices": [{"resource_name": "nvidia.com/gpu",
                                             "device_ids": [x["ID"] for x in latest]}]}
            write_atomic(prdata, json.dumps(d))
        set_allocatable()
        chk = [gpusched, "agent", "check", "--nvml-library", fake, "--device-plugin-dir", dp,
               "--pod-resources-socket", pr_sock, "--timeout", "5s"]
        p = subprocess.run(chk, env=env, capture_output=True, text=True)
        check(p.returncode == 0, "agent check passes on a healthy registered node (rc %d)\n%s%s"
              % (p.returncode, p.stdout, p.stderr))

        # 5. XID 79 and the GPU off the bus, then back
        write_atomic(scn, scenario(lost=(1,), xids=((1, 79),)))
        bad = wait_for(lambda: [d for d in (reg.latest("nvidia.com/gpu") or []) if d["health"] == "Unhealthy"], 3)
        check([d["ID"] for d in bad or []] == [UUIDS[1]], "XID 79: GPU 1 Unhealthy in ListAndWatch within 3 s")
        p = subprocess.run(chk + ["-o", "json"], env=env, capture_output=True, text=True)
        rep = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
        check(p.returncode == 1 and any(c["check"] == "healthy" and not c["ok"] and UUIDS[1] in c["message"]
                                        for c in rep.get("checks", [])),
              "agent check fails (1) naming the unhealthy GPU")
        code, body = http_get(base + "/metrics")
        check('gpusched_agent_devices{resource="nvidia.com/gpu",health="Unhealthy"} 1' in body,
              "/metrics counts 1 Unhealthy device")
        t0 = time.time()
        write_atomic(scn, scenario())
        good = wait_for(lambda: all(d["health"] == "Healthy" for d in (reg.latest("nvidia.com/gpu") or [])), 10)
        check(good, "back on the bus: Healthy again after probe and quiet time (%.1f s)" % (time.time() - t0))

        # 6. kubelet restart
        reg.stop()
        for name in os.listdir(dp):
            path = os.path.join(dp, name)
            if not name.endswith(".jsonl"):
                os.unlink(path)
        t0 = time.time()
        reg = kubelet.RegistrationServer(os.path.join(dp, "kubelet.sock"), record=None, plugin_dir=dp)
        reg.start()
        again = wait_for(lambda: reg.latest("nvidia.com/gpu"), 2.5)
        check(bool(again) and len(again) == 4, "kubelet restart: registered again with 4 devices in %.2f s"
              % (time.time() - t0))
        code, body = wait_for(lambda: (lambda c, b: (c, b) if 'registrations_total{resource="nvidia.com/gpu"} 2' in b
                                       else None)(*http_get(base + "/metrics")), 3) or (0, "")
        check(code == 200, "registrations_total{resource=\"nvidia.com/gpu\"} 2 after the restart")
        check(wait_for(lambda: http_get(base + "/readyz")[0] == 200, 3), "/readyz 200 again")
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
        try:
            rc = agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
            rc = -9
        check(rc == 0, "SIGTERM: exit 0 (rc %s)" % rc)
        check(not os.path.exists(sock), "the plugin socket is removed on exit")
        reg.stop()
        prs.stop()
        t.join(timeout=2)
        if FAILED:
            sys.stdout.write("--- agent log ---\n" + "".join(log))
        shutil.rmtree(work, ignore_errors=True)
    print("agent e2e: %d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
