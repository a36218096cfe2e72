"""gsdra.py - DRA building blocks shared by tests/live/dra-judge-test.py and
bench/bench-dra.py (standard library only).

  Api          a small JSON client of the plane's API server as the admin (the client
               certificate and CA in GS_CP_DIR): get, create, patch (merge), delete,
               much faster than one kubectl process per call.
  catalog      NVIDIA GPU models (productName, memory, compute capability, architecture)
               and their MIG profiles (profile id, memory slices, engines, memory).
  devices      gpu_device / mig_device: ResourceSlice devices shaped as NVIDIA's DRA driver
               (dra-driver-nvidia-gpu, driver gpu.nvidia.com) publishes them: full GPUs
               `gpu-<minor>`, MIG devices `gpu-<minor>-mig-<profile without dots>-<id>-<start>`,
               typed attributes (type, uuid, productName, brand, architecture,
               cudaComputeCapability, driverVersion, cudaDriverVersion, index/minor,
               pcieBusID, resource.kubernetes.io/pcieRoot) and capacities (memory; MIG
               engines and memorySlice<i>).
  slices       node_slices(node, spec): the node's ResourceSlices in one of the layouts
               single (one slice), split (two slices in one pool), two-pools, or
               partitionable (a sharedCounters slice, one devices slice per GPU with every
               MIG placement consuming counters, as the driver's DynamicMIG mode does).
  classes      device_classes(prefix): <prefix>.gpu.nvidia.com (type == 'gpu'),
               <prefix>.mig.nvidia.com (type == 'mig'), <prefix>.large.gpu.nvidia.com (a
               gpu with memory >= 40Gi).
"""
import json
import os
import ssl
import time
import urllib.error
import urllib.request

DRIVER = "gpu.nvidia.com"
RESOURCE = "resource.k8s.io/v1"


# ---------------------------------------------------------------- the API client
class ApiError(Exception):
    def __init__(self, status, body):
        self.status = status
        self.body = body
        try:
            msg = json.loads(body).get("message", body)
        except ValueError:
            msg = body
        super().__init__("HTTP %d: %s" % (status, msg))


class Api:
    """JSON requests to GS_APISERVER_URL as the admin (GS_CP_DIR/admin.crt, admin.key,
    ca.crt: the files controlplane.py writes)."""

    def __init__(self, env=None):
        env = env or os.environ
        self.url = env["GS_APISERVER_URL"]
        d = env["GS_CP_DIR"]
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(d, "admin.crt"), os.path.join(d, "admin.key"))

    def req(self, method, path, body=None, ctype="application/json", timeout=60):
        data = None if body is None else json.dumps(body).encode()
        rq = urllib.request.Request(self.url + path, data=data, method=method,
                                    headers={"Content-Type": ctype, "Accept": "application/json"})
        for attempt in range(5):
            try:
                with urllib.request.urlopen(rq, timeout=timeout, context=self.ctx) as r:
                    text = r.read()
                    return json.loads(text) if text else None
            except urllib.error.HTTPError as e:
                body_text = e.read().decode(errors="replace")
                if e.code == 429 or (e.code >= 500 and attempt < 4):
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise ApiError(e.code, body_text)
            except (urllib.error.URLError, ConnectionError) as e:
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    def get(self, path):
        return self.req("GET", path)

    def create(self, path, obj):
        return self.req("POST", path, obj)

    def patch(self, path, obj):
        return self.req("PATCH", path, obj, "application/merge-patch+json")

    def delete(self, path, missing_ok=True, body=None):
        try:
            return self.req("DELETE", path, body)
        except ApiError as e:
            if missing_ok and e.status == 404:
                return None
            raise


def path_of(obj):
    """The collection path an object is created under."""
    kind, ns = obj["kind"], obj["metadata"].get("namespace")
    core = {"Node": "nodes", "Namespace": "namespaces", "Pod": "pods"}
    dra = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices",
           "ResourceClaim": "resourceclaims", "ResourceClaimTemplate": "resourceclaimtemplates"}
    if kind in core:
        base, plural = "/api/v1", core[kind]
    else:
        base, plural = "/apis/" + RESOURCE, dra[kind]
    return base + ("/namespaces/%s/" % ns if ns else "/") + plural


# ---------------------------------------------------------------- the catalog
# model: productName, memory capacity, cudaComputeCapability, architecture, MIG profile set
MODELS = {
    "H100": ("NVIDIA H100 80GB HBM3", "81559Mi", "9.0.0", "Hopper", "80"),
    "A100-80": ("NVIDIA A100-SXM4-80GB", "81920Mi", "8.0.0", "Ampere", "80"),
    "A100-40": ("NVIDIA A100-SXM4-40GB", "40960Mi", "8.0.0", "Ampere", "40"),
    "L4": ("NVIDIA L4", "23034Mi", "8.9.0", "Ada Lovelace", None),
    "T4": ("Tesla T4", "15360Mi", "7.5.0", "Turing", None),
}
# MIG profiles, smallest first: name, profile id, memory slices, multiprocessors,
# copy engines, decoders, jpeg engines, ofa engines, memory; the placement starts
PROFILES = {
    "80": [("1g.10gb", 19, 1, 14, 1, 0, 0, 0, "9856Mi"), ("1g.20gb", 15, 2, 14, 1, 1, 0, 0, "19968Mi"),
           ("2g.20gb", 14, 2, 28, 2, 1, 0, 0, "19968Mi"), ("3g.40gb", 9, 4, 42, 3, 2, 0, 0, "40192Mi"),
           ("4g.40gb", 5, 4, 56, 4, 2, 0, 0, "40192Mi"), ("7g.80gb", 0, 8, 98, 7, 5, 1, 1, "80896Mi")],
    "40": [("1g.5gb", 19, 1, 14, 1, 0, 0, 0, "4864Mi"), ("1g.10gb", 15, 2, 14, 1, 1, 0, 0, "9856Mi"),
           ("2g.10gb", 14, 2, 28, 2, 1, 0, 0, "9856Mi"), ("3g.20gb", 9, 4, 42, 3, 2, 0, 0, "19968Mi"),
           ("4g.20gb", 5, 4, 56, 4, 2, 0, 0, "19968Mi"), ("7g.40gb", 0, 8, 98, 7, 5, 1, 1, "40192Mi")],
}
STARTS = [[0, 1, 2, 3, 4, 5, 6], [0, 2, 4, 6], [0, 2, 4], [0, 4], [0], [0]]
# static MIG layouts (pre-created instances): (profile index, start)
MIG_LAYOUTS = {
    "all-1g": [(0, s) for s in range(7)],
    "two-3g": [(3, 0), (3, 4)],
    "mixed": [(2, 0), (0, 2), (0, 3), (3, 4)],
}
DRIVER_VERSION = "560.35.3"
CUDA_DRIVER_VERSION = "12.6.0"


def _uuid(seed, kind="GPU"):
    h = "%032x" % (seed & ((1 << 128) - 1))
    return "%s-%s-%s-%s-%s-%s" % (kind, h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


def _s(v):
    return {"string": v}


def gpu_attributes(model, minor, uuid):
    product, _mem, cc, arch, _ = MODELS[model]
    return {
        "type": _s("gpu"), "uuid": _s(uuid), "productName": _s(product), "brand": _s("Nvidia"),
        "architecture": _s(arch), "cudaComputeCapability": {"version": cc},
        "driverVersion": {"version": DRIVER_VERSION},
        "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
        "index": {"int": minor}, "minor": {"int": minor},
        "pcieBusID": _s("0000:%02x:00.0" % (0x10 + 0x10 * minor)),
        # two PCIe roots of four GPUs each, as an 8-GPU HGX board
        "resource.kubernetes.io/pcieRoot": _s("pci0000:%02x" % (0 if minor < 4 else 0x80)),
    }


def gpu_device(model, minor, uuid):
    return {"name": "gpu-%d" % minor, "attributes": gpu_attributes(model, minor, uuid),
            "capacity": {"memory": {"value": MODELS[model][1]}}}


def mig_device(model, minor, parent_uuid, pidx, start, uuid):
    product, _mem, cc, arch, pset = MODELS[model]
    name, pid, nslices, sms, ce, dec, jpg, ofa, mem = PROFILES[pset][pidx]
    attrs = {
        "type": _s("mig"), "uuid": _s(uuid), "parentUUID": _s(parent_uuid), "profile": _s(name),
        "productName": _s(product), "brand": _s("Nvidia"), "architecture": _s(arch),
        "cudaComputeCapability": {"version": cc}, "driverVersion": {"version": DRIVER_VERSION},
        "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
        "parentIndex": {"int": minor}, "parentMinor": {"int": minor},
        "pcieBusID": _s("0000:%02x:00.0" % (0x10 + 0x10 * minor)),
        "resource.kubernetes.io/pcieRoot": _s("pci0000:%02x" % (0 if minor < 4 else 0x80)),
    }
    cap = {"multiprocessors": {"value": str(sms)}, "copyEngines": {"value": str(ce)},
           "decoders": {"value": str(dec)}, "encoders": {"value": "0"},
           "jpegEngines": {"value": str(jpg)}, "ofaEngines": {"value": str(ofa)},
           "memory": {"value": mem}}
    for i in range(start, start + nslices):
        cap["memorySlice%d" % i] = {"value": "1"}
    return {"name": "gpu-%d-mig-%s-%d-%d" % (minor, name.replace(".", ""), pid, start),
            "attributes": attrs, "capacity": cap}


def counter_set(model, minor):
    """The shared counters of one partitionable GPU (DynamicMIG)."""
    counters = {"multiprocessors": {"value": "98"}, "memory": {"value": MODELS[model][1]}}
    for i in range(8):
        counters["memory-slice-%d" % i] = {"value": "1"}
    return {"name": "gpu-%d-counter-set" % minor, "counters": counters}


def _consumes(minor, counters):
    return [{"counterSet": "gpu-%d-counter-set" % minor, "counters": counters}]


def partitionable_devices(model, minor, uuid, seed):
    """gpu-<minor> consuming the whole counter set, then every MIG placement consuming its
    memory slices, multiprocessors and memory."""
    full = {"multiprocessors": {"value": "98"}, "memory": {"value": MODELS[model][1]}}
    for i in range(8):
        full["memory-slice-%d" % i] = {"value": "1"}
    g = gpu_device(model, minor, uuid)
    g["consumesCounters"] = _consumes(minor, full)
    out = [g]
    pset = MODELS[model][4]
    for pidx, prof in enumerate(PROFILES[pset]):
        for start in STARTS[pidx]:
            d = mig_device(model, minor, uuid, pidx, start, _uuid(seed * 131 + pidx * 8 + start, "MIG"))
            use = {"multiprocessors": {"value": str(prof[3])}, "memory": {"value": prof[8]}}
            for i in range(start, start + prof[2]):
                use["memory-slice-%d" % i] = {"value": "1"}
            d["consumesCounters"] = _consumes(minor, use)
            out.append(d)
    return out


# ---------------------------------------------------------------- slices of a node
def node_devices(spec, seed):
    """[(gpu index, [devices])] of a node spec {"gpus": [{"model", "mig": layout or None,
    "partitionable": bool}]} (partitionable GPUs give their devices separately)."""
    out = []
    for minor, g in enumerate(spec["gpus"]):
        uuid = _uuid(seed * 1000003 + minor * 7919 + 1)
        if g.get("partitionable"):
            out.append((minor, partitionable_devices(g["model"], minor, uuid, seed * 17 + minor)))
        elif g.get("mig"):
            out.append((minor, [mig_device(g["model"], minor, uuid, pidx, start,
                                           _uuid(seed * 7 + minor * 97 + pidx * 8 + start + 3, "MIG"))
                                for pidx, start in MIG_LAYOUTS[g["mig"]]]))
        else:
            out.append((minor, [gpu_device(g["model"], minor, uuid)]))
    return out


def _slice(name, node, pool, count, devices=None, counters=None):
    spec = {"driver": DRIVER, "nodeName": node,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}}
    if counters is not None:
        spec["sharedCounters"] = counters
    else:
        spec["devices"] = devices
    return {"apiVersion": RESOURCE, "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": spec}


def node_slices(node, spec, seed):
    """The ResourceSlices of NODE for SPEC (layout: single, split, two-pools; any
    partitionable GPU makes the layout partitionable: a counters slice and one devices
    slice per GPU, in the node's pool)."""
    per_gpu = node_devices(spec, seed)
    name = node + "-" + DRIVER + "-"
    if any(g.get("partitionable") for g in spec["gpus"]):
        counters = [counter_set(g["model"], m) for m, g in enumerate(spec["gpus"])
                    if g.get("partitionable")]
        n = 1 + len(per_gpu)
        out = [_slice(name + "counters", node, node, n, counters=counters)]
        for m, devs in per_gpu:
            out.append(_slice(name + "%d" % m, node, node, n, devices=devs))
        return out
    devs = [d for _, ds in per_gpu for d in ds]
    layout = spec.get("layout", "single")
    if layout == "single" or len(per_gpu) < 2:
        return [_slice(name + "0", node, node, 1, devices=devs)]
    half = [d for m, ds in per_gpu[:len(per_gpu) // 2] for d in ds]
    rest = [d for m, ds in per_gpu[len(per_gpu) // 2:] for d in ds]
    if layout == "split":
        return [_slice(name + "0", node, node, 2, devices=half),
                _slice(name + "1", node, node, 2, devices=rest)]
    if layout == "two-pools":
        return [_slice(name + "0", node, node, 1, devices=half),
                _slice(name + "1", node, node + "-b", 1, devices=rest)]
    raise ValueError("unknown layout %r" % layout)


# ---------------------------------------------------------------- device classes
GPU_SELECTOR = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
MIG_SELECTOR = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
LARGE_SELECTOR = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
CLASSES = {  # short name -> selectors
    "gpu.nvidia.com": [GPU_SELECTOR],
    "mig.nvidia.com": [MIG_SELECTOR],
    "large.gpu.nvidia.com": [GPU_SELECTOR, LARGE_SELECTOR],
}


def class_name(prefix, short):
    return "%s.%s" % (prefix, short)


def device_classes(prefix):
    return [{"apiVersion": RESOURCE, "kind": "DeviceClass",
             "metadata": {"name": class_name(prefix, short)},
             "spec": {"selectors": [{"cel": {"expression": e}} for e in sels]}}
            for short, sels in CLASSES.items()]


# ---------------------------------------------------------------- nodes
def node_objects(name, labels, taint, allocatable):
    """(Node, status patch): labelled (kubernetes.io/hostname too), tainted with TAINT only,
    Ready, capacity = allocatable."""
    lab = dict(labels)
    lab["kubernetes.io/hostname"] = name
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
            "spec": {"taints": [taint]}}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"status": {"capacity": allocatable, "allocatable": allocatable,
                         "conditions": [{"type": "Ready", "status": "True",
                                         "reason": "KubeletReady", "message": "fake node",
                                         "lastHeartbeatTime": now, "lastTransitionTime": now}]}}
    return node, status


def create_node(api, name, labels, taint, allocatable):
    node, status = node_objects(name, labels, taint, allocatable)
    api.create("/api/v1/nodes", node)
    api.patch("/api/v1/nodes/%s/status" % name, status)
    # the API server's TaintNodesByCondition added not-ready: the taints as written
    api.patch("/api/v1/nodes/" + name, {"spec": {"taints": [taint]}})
