#!/usr/bin/env python3
"""dra-judge-stub.py - a stand-in for `gpusched schedule -o json` that answers the DRA judge
with what kube-scheduler did, read from the plane after the fact (the judge runs gpusched
once the pod was decided). It exists to test the judge itself (dra-judge-selftest.py)
while gpusched has no DRA allocation: agreeing, it must pass; lying, it must be caught.

    dra-judge-stub.py schedule -o json FILE...

The pending pods of FILE... (pods without spec.nodeName) each get a decision: result
scheduled on the pod's node (or unschedulable with the PodScheduled message), and `claims`
in the contract of docs/output-json.md (name, claim "namespace/name" or null for a
template's claim, allocated, results), the results those of the claim's
status.allocation. The judge's probe pod (namespace "probe") is scheduled with no claims
allocated. GS_STUB_LIE (comma-separated): devices (reverse multi-device results, rename a
single device gpu-99), node (another node name unless pinned by kubernetes.io/hostname),
message (a different unschedulable message).
"""
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gsdra  # noqa: E402


def main():
    files = [a for a in sys.argv[1:] if a not in ("schedule", "-o", "json")]
    lie = set(filter(None, os.environ.get("GS_STUB_LIE", "").split(",")))
    pods = []
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        for o in doc.get("items", []) if doc.get("kind") == "List" else [doc]:
            if o.get("kind") == "Pod" and not o["spec"].get("nodeName"):
                pods.append(o)
    api = None
    decisions = []
    for p in pods:
        ns, name = p["metadata"].get("namespace", "default"), p["metadata"]["name"]
        d = {"namespace": ns, "name": name, "result": "unschedulable", "node": None,
             "message": None, "claims": []}
        live = {}
        if ns == "probe":
            d["result"] = "scheduled"
        else:
            api = api or gsdra.Api()
            try:
                live = api.get("/api/v1/namespaces/%s/pods/%s" % (ns, name))
            except gsdra.ApiError:
                live = {}
            if (live.get("spec") or {}).get("nodeName"):
                d["result"], d["node"] = "scheduled", live["spec"]["nodeName"]
                if "node" in lie and "kubernetes.io/hostname" not in p["spec"].get("nodeSelector", {}):
                    d["node"] += "-elsewhere"
            for c in (live.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    d["message"] = c.get("message")
                    if "message" in lie:
                        d["message"] = (d["message"] or "") + " (not quite)"
        generated = {s["name"]: s.get("resourceClaimName")
                     for s in (live.get("status") or {}).get("resourceClaimStatuses") or []}
        for pc in p["spec"].get("resourceClaims", []):
            cname = pc.get("resourceClaimName") or generated.get(pc["name"])
            res = []
            if d["result"] == "scheduled" and cname and ns != "probe":
                try:
                    c = api.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (ns, cname))
                    alloc = (c.get("status") or {}).get("allocation") or {}
                    res = [{k: r[k] for k in ("request", "driver", "pool", "device")}
                           for r in (alloc.get("devices") or {}).get("results", [])]
                except gsdra.ApiError:
                    res = []
            if "devices" in lie and res:
                res = list(reversed(res)) if len(res) > 1 else [dict(res[0], device="gpu-99")]
            d["claims"].append({"name": pc["name"],
                                "claim": "%s/%s" % (ns, pc["resourceClaimName"])
                                if pc.get("resourceClaimName") else None,
                                "allocated": bool(res), "results": res})
        decisions.append(d)
    json.dump({"apiVersion": "gpusched.io/v1alpha1", "kind": "ScheduleResult",
               "decisions": decisions}, sys.stdout, indent=2)
    print()
    return 0 if all(d["result"] == "scheduled" for d in decisions) else 1


if __name__ == "__main__":
    sys.exit(main())
