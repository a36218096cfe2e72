#!/usr/bin/python3
"""grpc-python-test.py ECHO_SERVER - lib/agent/grpc.c against a real gRPC peer.

tests/agent/kubelet.py (python3-grpcio) plays the kubelet against grpc_echo_server (a
DevicePlugin with canned answers on gpusched's server, tests/agent/grpc_echo_server.c):
GetDevicePluginOptions, Allocate, GetPreferredAllocation, ListAndWatch with three updates
(and the server's `closed` callback when the client cancels), trailers-only UNIMPLEMENTED
for PreStartContainer, the socket path as :authority (kubelets < 1.26), Registration with
the kubelet dialing back, a refused registration's status and percent-encoded message
through gs_grpc_unary, and PodResources List/GetAllocatableResources through gs_grpc_unary.
Exit 77 with one "SKIP: ..." line when python3-grpcio or grpc_tools is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import grpc  # noqa: F401
    import grpc_tools.protoc  # noqa: F401
except ImportError as e:
    print("SKIP: python3-grpcio / python3-grpc-tools not installed (%s); "
          "scripts/deps.sh grpc-peer installs them" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubelet  # noqa: E402

ECHO = sys.argv[1]
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def wait_path(p, secs=10):
    end = time.time() + secs
    while time.time() < end:
        if os.path.exists(p):
            return True
        time.sleep(0.02)
    return False


def start_echo(args, out):
    return subprocess.Popen([ECHO, "serve"] + args, stdout=out, stderr=subprocess.STDOUT, text=True)


def stop(proc, out_path):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with open(out_path) as f:
        return proc.returncode, f.read()


def main():
    tmp = tempfile.mkdtemp(prefix="gs-grpc-test.")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


def run(tmp):
    dp_sock = os.path.join(tmp, "gs.sock")
    out_path = os.path.join(tmp, "echo.out")
    with open(out_path, "w") as out:
        proc = start_echo([dp_sock], out)
    check(wait_path(dp_sock), "the plugin socket appears")

    opts = kubelet.plugin_call(dp_sock, "options")
    check(opts == {"pre_start_required": False, "get_preferred_allocation_available": True},
          "GetDevicePluginOptions: %s" % json.dumps(opts, sort_keys=True))

    req = {"container_requests": [{"devices_ids": ["GPU-0", "GPU-2"]}, {"devices_ids": ["GPU-1"]}]}
    alloc = kubelet.plugin_call(dp_sock, "allocate", req)
    crs = alloc.get("container_responses", [])
    check(len(crs) == 2, "Allocate: two container responses")
    check(crs and crs[0]["envs"] == {"NVIDIA_VISIBLE_DEVICES": "GPU-0,GPU-2"}
          and crs[1]["envs"] == {"NVIDIA_VISIBLE_DEVICES": "GPU-1"}, "Allocate: NVIDIA_VISIBLE_DEVICES per container")
    check(crs and [d["name"] for d in crs[0]["cdi_devices"]] == ["nvidia.com/gpu=GPU-0", "nvidia.com/gpu=GPU-2"],
          "Allocate: CDI device names")
    check(crs and crs[0]["annotations"].get("gpusched.test/authority") == "localhost",
          "Allocate: :authority is localhost (kubelet >= 1.26)")

    pref = kubelet.plugin_call(dp_sock, "preferred", {"container_requests": [
        {"available_deviceIDs": ["GPU-0", "GPU-1", "GPU-2", "GPU-3"],
         "must_include_deviceIDs": ["GPU-3"], "allocation_size": 2}]})
    check(pref == {"container_responses": [{"deviceIDs": ["GPU-3", "GPU-0"]}]},
          "GetPreferredAllocation: %s" % json.dumps(pref, sort_keys=True))

    lists = kubelet.plugin_call(dp_sock, "watch", count=3)
    check([len(r["devices"]) for r in lists] == [1, 2, 3], "ListAndWatch: three updates of 1, 2, 3 devices")
    check(len(lists) == 3 and [d["health"] for d in lists[2]["devices"]] == ["Healthy", "Unhealthy", "Healthy"],
          "ListAndWatch: GPU-1 Unhealthy in the third update")
    check(len(lists) == 3 and lists[0]["devices"][0]["topology"] == {"nodes": [{"ID": "0"}]},
          "ListAndWatch: NUMA node 0")

    try:
        kubelet.plugin_call(dp_sock, "prestart", {"devices_ids": ["GPU-0"]})
        check(False, "PreStartContainer: UNIMPLEMENTED")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNIMPLEMENTED and "PreStartContainer" in (e.details() or ""),
              "PreStartContainer: trailers-only UNIMPLEMENTED (%s: %s)" % (e.code().name, e.details()))

    # kubelet < 1.26: grpc-go dialed the bare path, which became :authority
    alloc = kubelet.plugin_call(dp_sock, "allocate", {"container_requests": [{"devices_ids": ["GPU-0"]}]},
                                authority_path=True)
    ann = alloc["container_responses"][0]["annotations"]
    check(ann.get("gpusched.test/authority") == dp_sock, "socket path as :authority accepted and seen by the handler")
    lists = kubelet.plugin_call(dp_sock, "watch", count=1, authority_path=True)
    check(len(lists) == 1, "ListAndWatch with the socket path as :authority")

    # the command-line form prints JSON and exits 3 on a gRPC error
    cli = subprocess.run([sys.executable, kubelet.__file__, "call", "--socket", dp_sock, "prestart"],
                         capture_output=True, text=True, timeout=60)
    check(cli.returncode == 3 and json.loads(cli.stdout)["code"] == 12, "kubelet.py call: exit 3 and the code")

    rc, text = stop(proc, out_path)
    check(rc == 0, "echo server exits 0 on SIGTERM")
    check(text.count("closed ListAndWatch") == 2, "closed callback once per cancelled ListAndWatch:\n" + text)
    check(not os.path.exists(dp_sock), "socket removed on stop")

    # Registration: the plugin registers, the kubelet dials back and watches
    kubelet_sock = os.path.join(tmp, "kubelet.sock")
    record = os.path.join(tmp, "record.jsonl")
    reg = kubelet.RegistrationServer(kubelet_sock, record).start()
    try:
        with open(out_path, "w") as out:
            proc = start_echo([dp_sock, "--register", kubelet_sock, "--resource", "example.com/gpu"], out)
        got = reg.wait(lambda evs: sum(e["event"] == "devices" for e in evs) >= 3, 15)
        check(got, "Registration: three device lists recorded")
        evs = reg.events()
        check(evs and evs[0] == {"event": "register", "version": "v1beta1", "endpoint": "gs.sock",
                                 "resource_name": "example.com/gpu",
                                 "options": {"pre_start_required": False,
                                             "get_preferred_allocation_available": True}},
              "Registration: the RegisterRequest decoded by grpcio: %s" % (evs[:1],))
        check(any(e["event"] == "options" for e in evs), "Registration: GetDevicePluginOptions on dial-back")
        latest = reg.latest("example.com/gpu") or []
        check([d["ID"] for d in latest] == ["GPU-0", "GPU-1", "GPU-2"], "Registration: latest list")
        with open(record) as f:
            lines = [json.loads(line) for line in f]
        check(len(lines) == len(reg.events()), "Registration: every event in the record file")
        rc, text = stop(proc, out_path)
        check("registered 0 \n" in text, "gs_grpc_unary: Register answered OK:\n" + text)
        check(reg.wait(lambda evs: any(e["event"] == "stream-end" for e in evs), 10),
              "Registration: the stream ends when the plugin stops")

        # a refused registration: status and percent-decoded message through gs_grpc_unary
        with open(out_path, "w") as out:
            proc = start_echo([dp_sock, "--register", kubelet_sock, "--version", "v1alpha9"], out)
        end = time.time() + 10
        text = ""
        while time.time() < end and "registered" not in text and "register-error" not in text:
            time.sleep(0.05)
            with open(out_path) as f:
                text = f.read()
        rc, text = stop(proc, out_path)
        check("registered 3 Unsupported version 'v1alpha9': 100% v1beta1 only\n" in text,
              "gs_grpc_unary: INVALID_ARGUMENT with its message decoded:\n" + text)
    finally:
        reg.stop()

    # PodResources: the kubelet's lister, read by gs_grpc_unary + protobuf-c
    pr_sock = os.path.join(tmp, "pod-resources.sock")
    data = os.path.join(tmp, "podresources.json")
    with open(data, "w") as f:
        json.dump({
            "pod_resources": [
                {"name": "train-0", "namespace": "ml", "containers": [
                    {"name": "main", "devices": [
                        {"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-aaa", "GPU-bbb"],
                         "topology": {"nodes": [{"ID": 0}]}}]},
                    {"name": "sidecar"}]},
                {"name": "infer-1", "namespace": "serve", "containers": [
                    {"name": "srv", "devices": [
                        {"resource_name": "nvidia.com/mig-1g.18gb", "device_ids": ["MIG-ccc"]}]}]}],
            "allocatable": {"devices": [
                {"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-aaa", "GPU-bbb", "GPU-ddd"]},
                {"resource_name": "nvidia.com/mig-1g.18gb", "device_ids": ["MIG-ccc", "MIG-eee"]}]},
        }, f)
    prs = kubelet.PodResourcesServer(pr_sock, data).start()
    try:
        res = subprocess.run([ECHO, "podresources", pr_sock], capture_output=True, text=True, timeout=60)
        want = ("pod ml/train-0 main nvidia.com/gpu GPU-aaa,GPU-bbb\n"
                "pod serve/infer-1 srv nvidia.com/mig-1g.18gb MIG-ccc\n"
                "allocatable nvidia.com/gpu GPU-aaa,GPU-bbb,GPU-ddd\n"
                "allocatable nvidia.com/mig-1g.18gb MIG-ccc,MIG-eee\n")
        check(res.returncode == 0 and res.stdout == want,
              "PodResources List + GetAllocatableResources via gs_grpc_unary:\n" + res.stdout + res.stderr)
    finally:
        prs.stop()


if __name__ == "__main__":
    sys.exit(main())
