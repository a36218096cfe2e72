#!/usr/bin/python3
"""discover-test.py - `gpusched agent discover` with the fake NVML (no kubelet, no cluster).

Usage: discover-test.py GPUSCHED FAKE_NVML_LIBRARY SCENARIO_DIR

On tests/data/nvml/mig.scn (an A100 in MIG mode with 3g.40gb, 1c.2g.20gb, 1g.10gb+me, and
an A10) under --mig-strategy mixed, -o json: the MIG devices and their profiles as NVML
names them, one resource per advertised profile (1c.2g.20gb not advertised, with a note,
and not labelled either), the A10 as nvidia.com/gpu, and the labels the engine reads. Then
the text form, a config file (time-slicing, 4 replicas: IDs <uuid>::0..3 and the -SHARED
product), an invalid config (exit 2, file:line:col) and a missing NVML (exit 2).
"""
import json
import os
import subprocess
import sys
import tempfile

FAILED = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILED.append(what)


def main():
    gpusched, fake, scn_dir = sys.argv[1:4]
    env = dict(os.environ, GS_FAKE_NVML=os.path.join(scn_dir, "mig.scn"))
    base = [gpusched, "agent", "discover", "--nvml-library", fake]
    p = subprocess.run(base + ["--mig-strategy", "mixed", "-o", "json"], env=env, capture_output=True, text=True)
    check(p.returncode == 0, "discover -o json exits 0 (%d: %s)" % (p.returncode, p.stderr.strip()))
    d = json.loads(p.stdout) if p.returncode == 0 else {}
    gpus = d.get("gpus", [])
    check([g["name"] for g in gpus] == ["NVIDIA A100-SXM4-80GB", "NVIDIA A10"], "two GPUs by name")
    profiles = [m["profile"] for m in gpus[0]["migDevices"]] if gpus else []
    check(profiles == ["3g.40gb", "1c.2g.20gb", "1g.10gb+me"], "MIG profiles as NVML names them: %s" % profiles)
    res = {r["name"]: r["devices"] for r in d.get("resources", [])}
    check(sorted(res) == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-3g.40gb"],
          "resources: %s" % sorted(res))
    check(res.get("nvidia.com/gpu") == ["GPU-77aa88bb-99cc-4dde-8eff-001122334455"], "the A10 as nvidia.com/gpu")
    check(any("1c.2g.20gb" in n for n in d.get("notes", [])), "a note says why 1c.2g.20gb is not advertised")
    lab = d.get("labels", {})
    check(lab.get("nvidia.com/mig.strategy") == "mixed" and lab.get("nvidia.com/mig-3g.40gb.count") == "1"
          and "nvidia.com/mig-1c.2g.20gb.count" not in lab, "labels: mixed, 3g.40gb counted, 1c.2g.20gb not")

    p = subprocess.run(base + ["--mig-strategy", "mixed"], env=env, capture_output=True, text=True)
    check(p.returncode == 0 and "nvidia.com/mig-3g.40gb" in p.stdout and "LABELS" in p.stdout, "text form")

    with tempfile.TemporaryDirectory(prefix="gs-discover.") as tmp:
        cfg = os.path.join(tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                    "      replicas: 4\n")
        env2 = dict(env, GS_FAKE_NVML=os.path.join(scn_dir, "two-gpus.scn"))
        p = subprocess.run(base + ["--config", cfg, "-o", "json"], env=env2, capture_output=True, text=True)
        d = json.loads(p.stdout) if p.returncode == 0 else {}
        ids = {r["name"]: r["devices"] for r in d.get("resources", [])}.get("nvidia.com/gpu", [])
        check(p.returncode == 0 and len(ids) == 8 and all("::" in i for i in ids),
              "time-slicing x4: 8 replica IDs <uuid>::k (%d)" % len(ids))
        check(d.get("labels", {}).get("nvidia.com/gpu.product", "").endswith("-SHARED")
              and d.get("labels", {}).get("nvidia.com/gpu.replicas") == "4", "product -SHARED, replicas 4")
        with open(cfg, "w") as f:
            f.write("version: v1\nflags:\n  migStrategy: mixed\n  bogus: 1\n")
        p = subprocess.run(base + ["--config", cfg], env=env2, capture_output=True, text=True)
        check(p.returncode == 2 and "config.yaml:4:" in p.stderr and "bogus" in p.stderr,
              "an unknown key: exit 2 with file:line:col (%s)" % p.stderr.strip())
    p = subprocess.run([gpusched, "agent", "discover", "--nvml-library", "/nonexistent/libnvidia-ml.so.1"],
                       env=env, capture_output=True, text=True)
    check(p.returncode == 2 and "libnvidia-ml" in p.stderr, "no NVML: exit 2 naming the library")
    print("agent discover: %d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
