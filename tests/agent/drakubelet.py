"""drakubelet.py - the kubelet's side of DRA for gpusched's tests, with Debian's python3-grpcio:
its plugin watcher (pluginregistration.Registration: GetInfo, NotifyRegistrationStatus) and
its DRA manager's calls (DRAPlugin v1 or v1beta1: NodePrepareResources,
NodeUnprepareResources).

The repository's proto/pluginregistration/v1/api.proto and proto/dra/v1/api.proto are
compiled with grpc_tools.protoc into a temporary directory (prefix "gs-drakubelet.",
removed at exit) the first time they are needed. v1beta1 has the same messages under
another package: its calls are made with the v1 messages on the v1beta1 method paths, as
the wire format does not carry the package.

  info(reg_sock) -> dict                         GetInfo
  notify(reg_sock, registered, error="")         NotifyRegistrationStatus
  prepare(sock, claims, version="v1") -> dict    {uid: {"devices": [...], "error": ""}}
  unprepare(sock, claims, version="v1") -> dict  {uid: {"error": ""}}
claims: [{"namespace", "name", "uid"}]. gRPC errors raise grpc.RpcError.
"""
import atexit
import os
import shutil
import sys
import tempfile
import threading

import grpc
from google.protobuf import json_format

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
PROTOS = ["pluginregistration/v1/api.proto", "dra/v1/api.proto"]

_compiled = None
_lock = threading.Lock()


def protos():
    """(reg_pb2, dra_pb2)"""
    global _compiled
    with _lock:
        if _compiled is None:
            from grpc_tools import protoc
            out = tempfile.mkdtemp(prefix="gs-drakubelet.")
            atexit.register(shutil.rmtree, out, True)
            rc = protoc.main(["protoc", "-I" + PROTO_DIR, "--python_out=" + out] + PROTOS)
            if rc != 0:
                raise RuntimeError("grpc_tools.protoc failed on %s (status %d)" % (PROTO_DIR, rc))
            sys.path.insert(0, out)
            import importlib
            _compiled = (importlib.import_module("pluginregistration.v1.api_pb2"),
                         importlib.import_module("dra.v1.api_pb2"))
        return _compiled


def to_dict(msg):
    return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                     including_default_value_fields=True)


def _unary(sock, path, req, resp_type, timeout=10):
    with grpc.insecure_channel("unix:" + sock) as ch:
        call = ch.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=resp_type.FromString)
        return call(req, timeout=timeout)


def info(reg_sock):
    reg, _ = protos()
    return to_dict(_unary(reg_sock, "/pluginregistration.Registration/GetInfo", reg.InfoRequest(), reg.PluginInfo))


def notify(reg_sock, registered, error=""):
    reg, _ = protos()
    _unary(reg_sock, "/pluginregistration.Registration/NotifyRegistrationStatus",
           reg.RegistrationStatus(plugin_registered=registered, error=error), reg.RegistrationStatusResponse)


def _claims(dra, claims):
    return [dra.Claim(namespace=c["namespace"], name=c["name"], uid=c["uid"]) for c in claims]


def prepare(sock, claims, version="v1"):
    _, dra = protos()
    r = _unary(sock, "/k8s.io.kubelet.pkg.apis.dra.%s.DRAPlugin/NodePrepareResources" % version,
               dra.NodePrepareResourcesRequest(claims=_claims(dra, claims)), dra.NodePrepareResourcesResponse)
    return {uid: to_dict(v) for uid, v in r.claims.items()}


def unprepare(sock, claims, version="v1"):
    _, dra = protos()
    r = _unary(sock, "/k8s.io.kubelet.pkg.apis.dra.%s.DRAPlugin/NodeUnprepareResources" % version,
               dra.NodeUnprepareResourcesRequest(claims=_claims(dra, claims)), dra.NodeUnprepareResourcesResponse)
    return {uid: to_dict(v) for uid, v in r.claims.items()}
