#!/usr/bin/python3
"""kubelet.py - the kubelet's side of the device plugin and PodResources APIs, played by a
real gRPC implementation (Debian's python3-grpcio), for gpusched's agent tests.

The two .proto files of the repository (proto/deviceplugin/v1beta1/api.proto,
proto/podresources/v1/api.proto) are compiled with grpc_tools.protoc into a temporary
directory (prefix "gs-kubelet.", removed at exit) the first time they are needed.

Command line (every JSON goes to stdout, one object per line):

  kubelet.py registration --socket KUBELET_SOCK --record FILE [--plugin-dir DIR]
      Serve v1beta1.Registration on KUBELET_SOCK until SIGTERM/SIGINT. Like the kubelet,
      for each RegisterRequest it dials DIR/<endpoint> back (DIR: the socket's directory),
      calls GetDevicePluginOptions and keeps ListAndWatch open; a new registration of the
      same resource replaces the old stream. Every event is appended to FILE as one JSON
      line: {"event": "register", "version", "endpoint", "resource_name", "options"},
      {"event": "options", "resource_name", "options"}, {"event": "devices",
      "resource_name", "devices": [{"ID", "health", "topology"}...]} per list,
      {"event": "stream-end", "resource_name", "code", "details"}. A version other than
      v1beta1 is refused (INVALID_ARGUMENT), as the kubelet refuses it.

  kubelet.py call --socket PLUGIN_SOCK METHOD [--request JSON] [--authority-path]
                  [--count N] [--timeout SECONDS]
      Call a device plugin: METHOD is options, allocate, preferred, prestart or watch.
      --request is the request message as JSON (protobuf JSON mapping, field names as in
      the .proto, e.g. {"container_requests": [{"devices_ids": ["GPU-0"]}]}). watch prints
      the first N (default 1) ListAndWatch responses, then cancels. On a gRPC error prints
      {"error": "UNIMPLEMENTED", "code": 12, "details": "..."} and exits 3.
      --authority-path dials with the socket path as :authority, as kubelets before 1.26
      did (grpc-go dialed with a bare path); the default is "localhost" (kubelet >= 1.26).

  kubelet.py podresources --socket SOCK --data FILE
      Serve v1.PodResourcesLister on SOCK until SIGTERM/SIGINT from FILE (read again on
      every call): {"pod_resources": [PodResources...], "allocatable":
      AllocatableResourcesResponse} in the protobuf JSON mapping. Get answers the named
      pod or NOT_FOUND.

As a module (sys.path: tests/agent): protos() -> (dp_pb2, dp_grpc, pr_pb2, pr_grpc);
RegistrationServer(socket, record=None).start() / .latest(resource) / .events() / .stop();
plugin_call(socket, method, request=None, authority_path=False, count=1, timeout=10);
PodResourcesServer(socket, data_file).start() / .stop(). Exit status 2: usage.
"""
import argparse
import atexit
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from concurrent import futures

import grpc
from google.protobuf import json_format

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
PROTOS = ["deviceplugin/v1beta1/api.proto", "podresources/v1/api.proto"]

_compiled = None
_compile_lock = threading.Lock()


def protos():
    """Compile the .protos once; return (dp_pb2, dp_grpc, pr_pb2, pr_grpc)."""
    global _compiled
    with _compile_lock:
        if _compiled is None:
            from grpc_tools import protoc
            out = tempfile.mkdtemp(prefix="gs-kubelet.")
            atexit.register(shutil.rmtree, out, True)
            rc = protoc.main(["protoc", "-I" + PROTO_DIR, "--python_out=" + out,
                              "--grpc_python_out=" + out] + PROTOS)
            if rc != 0:
                raise RuntimeError("grpc_tools.protoc failed on %s (status %d)" % (PROTO_DIR, rc))
            sys.path.insert(0, out)
            import importlib
            _compiled = (importlib.import_module("deviceplugin.v1beta1.api_pb2"),
                         importlib.import_module("deviceplugin.v1beta1.api_pb2_grpc"),
                         importlib.import_module("podresources.v1.api_pb2"),
                         importlib.import_module("podresources.v1.api_pb2_grpc"))
        return _compiled


def to_dict(msg):
    return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                     including_default_value_fields=True)


def _unix_server(socket_path):
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_insecure_port("unix:" + socket_path)
    return server


def plugin_channel(socket_path, authority_path=False):
    options = [("grpc.default_authority", socket_path)] if authority_path else []
    return grpc.insecure_channel("unix:" + socket_path, options=options)


def plugin_call(socket_path, method, request=None, authority_path=False, count=1, timeout=10):
    """One call to a device plugin; returns the response as a dict (watch: a list of
    `count` dicts). gRPC errors raise grpc.RpcError."""
    dp, dp_grpc, _, _ = protos()
    kinds = {
        "options": ("GetDevicePluginOptions", dp.Empty),
        "allocate": ("Allocate", dp.AllocateRequest),
        "preferred": ("GetPreferredAllocation", dp.PreferredAllocationRequest),
        "prestart": ("PreStartContainer", dp.PreStartContainerRequest),
        "watch": ("ListAndWatch", dp.Empty),
    }
    if method not in kinds:
        raise ValueError("unknown method %r (known: %s)" % (method, ", ".join(sorted(kinds))))
    name, req_type = kinds[method]
    req = json_format.ParseDict(request or {}, req_type())
    with plugin_channel(socket_path, authority_path) as ch:
        stub = dp_grpc.DevicePluginStub(ch)
        if method == "watch":
            stream = stub.ListAndWatch(req, timeout=timeout)
            out = []
            try:
                for resp in stream:
                    out.append(to_dict(resp))
                    if len(out) >= count:
                        break
            finally:
                stream.cancel()
            return out
        return to_dict(getattr(stub, name)(req, timeout=timeout))


class RegistrationServer:
    """v1beta1.Registration as the kubelet serves it, dialing each plugin back."""

    def __init__(self, socket_path, record=None, plugin_dir=None):
        self.socket_path = socket_path
        self.record = record
        self.plugin_dir = plugin_dir or os.path.dirname(os.path.abspath(socket_path))
        self._lock = threading.Condition()
        self._events = []
        self._latest = {}
        self._streams = {}
        self._server = None

    def _event(self, ev):
        with self._lock:
            self._events.append(ev)
            if ev["event"] == "devices":
                self._latest[ev["resource_name"]] = ev["devices"]
            if self.record:
                with open(self.record, "a") as f:
                    f.write(json.dumps(ev, sort_keys=True) + "\n")
            self._lock.notify_all()

    def events(self):
        with self._lock:
            return list(self._events)

    def latest(self, resource):
        with self._lock:
            return self._latest.get(resource)

    def wait(self, predicate, timeout=10):
        """Wait until predicate(events) is true; returns it (False on timeout)."""
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self._events), timeout)

    def _watch(self, req):
        dp, dp_grpc, _, _ = protos()
        resource = req.resource_name
        endpoint = os.path.join(self.plugin_dir, req.endpoint)
        ch = plugin_channel(endpoint)
        try:
            stub = dp_grpc.DevicePluginStub(ch)
            try:
                opts = stub.GetDevicePluginOptions(dp.Empty(), timeout=10)
                self._event({"event": "options", "resource_name": resource, "options": to_dict(opts)})
                stream = stub.ListAndWatch(dp.Empty())
                with self._lock:
                    old = self._streams.get(resource)
                    self._streams[resource] = stream
                if old is not None:
                    old.cancel()
                for resp in stream:
                    self._event({"event": "devices", "resource_name": resource,
                                 "devices": to_dict(resp).get("devices", [])})
                self._event({"event": "stream-end", "resource_name": resource, "code": "OK",
                             "details": ""})
            except grpc.RpcError as e:
                self._event({"event": "stream-end", "resource_name": resource,
                             "code": e.code().name, "details": e.details() or ""})
        finally:
            ch.close()

    def start(self):
        dp, dp_grpc, _, _ = protos()
        outer = self

        class Registration(dp_grpc.RegistrationServicer):
            def Register(self, request, context):
                outer._event({"event": "register", "version": request.version,
                              "endpoint": request.endpoint,
                              "resource_name": request.resource_name,
                              "options": to_dict(request.options)})
                if request.version != "v1beta1":
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  "Unsupported version %r: 100%% v1beta1 only" % request.version)
                threading.Thread(target=outer._watch, args=(request,), daemon=True).start()
                return dp.Empty()

        self._server = _unix_server(self.socket_path)
        dp_grpc.add_RegistrationServicer_to_server(Registration(), self._server)
        self._server.start()
        return self

    def stop(self):
        with self._lock:
            streams = list(self._streams.values())
        for s in streams:
            s.cancel()
        if self._server:
            self._server.stop(0)


class PodResourcesServer:
    """v1.PodResourcesLister answering from a JSON file."""

    def __init__(self, socket_path, data_file):
        self.socket_path = socket_path
        self.data_file = data_file
        self._server = None

    def _data(self):
        with open(self.data_file) as f:
            return json.load(f)

    def start(self):
        _, _, pr, pr_grpc = protos()
        outer = self

        class Lister(pr_grpc.PodResourcesListerServicer):
            def List(self, request, context):
                d = outer._data()
                return json_format.ParseDict({"pod_resources": d.get("pod_resources", [])},
                                             pr.ListPodResourcesResponse())

            def GetAllocatableResources(self, request, context):
                return json_format.ParseDict(outer._data().get("allocatable", {}),
                                             pr.AllocatableResourcesResponse())

            def Get(self, request, context):
                for p in outer._data().get("pod_resources", []):
                    if p.get("name") == request.pod_name and p.get("namespace") == request.pod_namespace:
                        return json_format.ParseDict({"pod_resources": p}, pr.GetPodResourcesResponse())
                context.abort(grpc.StatusCode.NOT_FOUND, "pod %s/%s not found" %
                              (request.pod_namespace, request.pod_name))

        self._server = _unix_server(self.socket_path)
        pr_grpc.add_PodResourcesListerServicer_to_server(Lister(), self._server)
        self._server.start()
        return self

    def stop(self):
        if self._server:
            self._server.stop(0)


def _wait_for_signal():
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(3600):
        pass


def main(argv):
    ap = argparse.ArgumentParser(prog="kubelet.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("registration")
    r.add_argument("--socket", required=True)
    r.add_argument("--record", required=True)
    r.add_argument("--plugin-dir")
    c = sub.add_parser("call")
    c.add_argument("--socket", required=True)
    c.add_argument("method", choices=["options", "allocate", "preferred", "prestart", "watch"])
    c.add_argument("--request", default="{}")
    c.add_argument("--authority-path", action="store_true")
    c.add_argument("--count", type=int, default=1)
    c.add_argument("--timeout", type=float, default=10)
    p = sub.add_parser("podresources")
    p.add_argument("--socket", required=True)
    p.add_argument("--data", required=True)
    a = ap.parse_args(argv)

    if a.cmd == "call":
        try:
            out = plugin_call(a.socket, a.method, json.loads(a.request), a.authority_path,
                              a.count, a.timeout)
        except grpc.RpcError as e:
            print(json.dumps({"error": e.code().name, "code": e.code().value[0],
                              "details": e.details() or ""}, sort_keys=True))
            return 3
        print(json.dumps(out, sort_keys=True))
        return 0
    if a.cmd == "registration":
        srv = RegistrationServer(a.socket, a.record, a.plugin_dir).start()
    else:
        srv = PodResourcesServer(a.socket, a.data).start()
    _wait_for_signal()
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
