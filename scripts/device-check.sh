#!/usr/bin/env bash
# device-check.sh - gpusched's node agent on a real NVIDIA GPU, compared with nvidia-smi.
#
# Usage: scripts/device-check.sh            (from anywhere; works on the repository checkout)
#
# 1. build/gpusched is built when missing (cmake, tests off); missing build dependencies
#    are named with the Debian packages that provide them.
# 2. Discovery: `gpusched agent discover -o json` with the real libnvidia-ml.so.1 against
#    `nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,driver_version` and
#    `nvidia-smi -L` (MIG devices): GPU count, UUIDs, names, memory (within 2 %: NVML's total
#    and nvidia-smi's may differ by the driver's reservation), PCI bus ids, driver version,
#    MIG device UUIDs and profiles.
# 3. Metrics: the agent with --no-register, a plugin directory of its own, no PodResources,
#    --listen 127.0.0.1:0; /metrics scraped twice, 1.5 s apart, between two nvidia-smi
#    readings; DCGM_FI_DEV_GPU_TEMP (+-5 C), DCGM_FI_DEV_FB_USED (+-max(256 MiB, 5 %)) and
#    DCGM_FI_DEV_POWER_USAGE (+-max(25 W, 15 %)) of every GPU against temperature.gpu,
#    memory.used and power.draw (the range of the two readings, widened by the tolerance).
#    A value nvidia-smi reports as [N/A] must be absent from /metrics too. Memory used may
#    also differ by exactly memory.reserved (NVML v1 counts the reservation as used, v2
#    does not; the line says so).
# 4. Device plugin (needs python3-grpcio and python3-grpc-tools, else SKIP): the kubelet's
#    Registration server of tests/agent/kubelet.py in a temporary directory, the agent
#    registering there: every planned resource registered, its first ListAndWatch listing
#    exactly the devices `agent discover` plans, all Healthy; Allocate of each resource's
#    first device answers NVIDIA_VISIBLE_DEVICES with it; SIGTERM exits 0.
#
# Prints PASS/FAIL/SKIP lines; with $OUT set (the device machine's convention) also writes
# them to $OUT/device-check.txt. Exit status: 0 every comparison passed; 1 a comparison
# failed; 2 cannot build or run (missing dependencies are named); 77 no NVIDIA GPU or driver
# here (nothing was compared: not a pass).
#
# Dry run without a GPU: DEVICE_CHECK_FAKE_NVML=<fake libnvidia-ml.so.1 built with the tests>
# and GS_FAKE_NVML=<scenario file> (tests/fake-nvml/fake_nvml.c) load the fake NVML and
# replace nvidia-smi's answers with ones derived from the scenario, so every comparison runs
# (the ctest agent/device-check-fake). DEVICE_CHECK_FAKE_SKEW=1 makes the derived answers
# disagree (a UUID, a temperature) to prove the comparisons fail. DEVICE_CHECK_SMI overrides
# the nvidia-smi command; DEVICE_CHECK_GPUSCHED the binary (default build/gpusched).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
say() { printf 'device-check: %s\n' "$*" >&2; }

FAKE_LIB=${DEVICE_CHECK_FAKE_NVML:-}
SMI=${DEVICE_CHECK_SMI:-nvidia-smi}
GPUSCHED=${DEVICE_CHECK_GPUSCHED:-$ROOT/build/gpusched}

# Debian's python3 first: python3-grpcio installs there (a pyenv or venv python3 on PATH may
# lack it). DEVICE_CHECK_PYTHON overrides.
PYTHON=${DEVICE_CHECK_PYTHON:-}
if [ -z "$PYTHON" ]; then
  for c in /usr/bin/python3 python3; do
    if command -v "$c" >/dev/null 2>&1; then PYTHON=$c; break; fi
  done
fi
if [ -z "$PYTHON" ]; then
  say "python3 is missing (Debian: apt-get install python3); it runs the comparisons"
  exit 2
fi

# --- is there a GPU? (before building: a machine without one has nothing to check)
if [ -n "$FAKE_LIB" ]; then
  if [ ! -f "$FAKE_LIB" ] || [ -z "${GS_FAKE_NVML:-}" ] || [ ! -f "${GS_FAKE_NVML:-}" ]; then
    say "dry run needs DEVICE_CHECK_FAKE_NVML=<fake library> and GS_FAKE_NVML=<scenario file>, both existing"
    exit 2
  fi
  NVML_LIB=$(cd "$(dirname "$FAKE_LIB")" && pwd)/$(basename "$FAKE_LIB")
  say "DRY RUN: fake NVML $FAKE_LIB, scenario $GS_FAKE_NVML; nvidia-smi's answers derived from the scenario"
else
  if ! command -v "$SMI" >/dev/null 2>&1; then
    say "NO GPU CHECKED: nvidia-smi not found ($SMI): no NVIDIA driver on this machine. Exit 77 (skipped, not passed)."
    exit 77
  fi
  if ! smi_list=$("$SMI" -L 2>&1) || ! grep -q '^GPU [0-9]' <<<"$smi_list"; then
    say "NO GPU CHECKED: '$SMI -L' found no GPU: $smi_list"
    say "Exit 77 (skipped, not passed)."
    exit 77
  fi
  NVML_LIB=libnvidia-ml.so.1
fi

# --- build when needed
if [ ! -x "$GPUSCHED" ]; then
  missing=()
  for c in cmake cc pkg-config protoc-c; do
    command -v "$c" >/dev/null 2>&1 || missing+=("command $c")
  done
  if command -v pkg-config >/dev/null 2>&1; then
    for m in libfyaml libmicrohttpd gnutls libcurl libnghttp2 libprotobuf-c; do
      pkg-config --exists "$m" || missing+=("pkg-config module $m")
    done
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "cannot build $GPUSCHED; missing: ${missing[*]}"
    say "Debian packages: build-essential cmake pkg-config libfyaml-dev libmicrohttpd-dev libgnutls28-dev libcurl4-gnutls-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler (scripts/deps.sh core http)"
    exit 2
  fi
  say "building build/gpusched (cmake, Release, tests off)"
  if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGS_TESTS=OFF >/dev/null &&
         cmake --build build -j"$(nproc)" >/dev/null; }; then
    say "the build failed (run the two cmake commands by hand to see why)"
    exit 2
  fi
fi

export DC_GPUSCHED=$GPUSCHED DC_NVML_LIB=$NVML_LIB DC_SMI=$SMI DC_ROOT=$ROOT
export DC_FAKE=${FAKE_LIB:+1}
exec "$PYTHON" - <<'PY'
import json, os, re, signal, subprocess, sys, tempfile, threading, time

GPUSCHED, LIB, SMI, ROOT = (os.environ[k] for k in ("DC_GPUSCHED", "DC_NVML_LIB", "DC_SMI", "DC_ROOT"))
FAKE = os.environ.get("DC_FAKE") == "1"
SKEW = os.environ.get("DEVICE_CHECK_FAKE_SKEW") == "1"
LINES, FAILED = [], []


def out(kind, what):
    line = "%-5s %s" % (kind, what)
    LINES.append(line)
    print(line, flush=True)
    if kind == "FAIL":
        FAILED.append(what)


def check(ok, what):
    out("PASS" if ok else "FAIL", what)
    return ok


# ---------------------------------------------------------------- nvidia-smi (or derived)
def scenario_gpus():
    """The fake NVML scenario as nvidia-smi would see it."""
    gpus, driver = [], ""
    with open(os.environ["GS_FAKE_NVML"]) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("driver "):
                driver = line.split()[1]
            elif line.startswith("gpu "):
                head, _, name = line.partition(" name=")
                kv = {}
                for tok in head.split()[1:]:
                    k, _, v = tok.partition("=")
                    kv[k] = v if _ else "1"
                kv["name"], kv["migs"] = name.strip(), []
                gpus.append(kv)
            elif line.startswith("mig ") and gpus:
                kv = dict(t.partition("=")[::2] for t in line.split()[1:])
                gpus[-1]["migs"].append(kv)
    return gpus, driver


def fake_profile(g, m):
    gi, ci = int(m.get("gi-slices", 0)), int(m.get("ci-slices", 0))
    gb = -(-int(g["memory"]) // 1024)  # parent GiB rounded up
    eighths = -(-int(m["memory"]) * 8 // int(g["memory"]))
    size = round(eighths * gb / 8)
    p = ("%dg.%dgb" % (gi, size)) if ci == gi else ("%dc.%dg.%dgb" % (ci, gi, size))
    return p + ("+me" if int(m.get("ofa", 0)) > 0 and gi < 7 else "")


def smi(args):
    if not FAKE:
        p = subprocess.run([SMI] + args, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("%s %s: rc %d: %s" % (SMI, " ".join(args), p.returncode, p.stderr.strip()))
        return p.stdout
    gpus, driver = scenario_gpus()
    rows = []
    if args[0] == "-L":
        for i, g in enumerate(gpus):
            rows.append("GPU %d: %s (UUID: %s)" % (i, g["name"], g["uuid"]))
            for j, m in enumerate(g["migs"] if g.get("mig") == "1" else []):
                rows.append("  MIG %-13s Device %2d: (UUID: %s)" % (fake_profile(g, m), j, m["uuid"]))
        return "\n".join(rows) + "\n"
    fields = args[0].split("=", 1)[1].split(",")
    for i, g in enumerate(gpus):
        lost = "lost" in g
        vals = []
        for fld in fields:
            na = "[N/A]" if not lost else "[GPU requires reset]"
            if fld == "index":
                vals.append(str(i))
            elif fld == "uuid":
                vals.append(g["uuid"][:-1] + "X" if SKEW and i == 0 else g["uuid"])
            elif fld == "name":
                vals.append(g["name"])
            elif fld == "memory.total":
                vals.append("%s MiB" % g["memory"])
            elif fld == "pci.bus_id":
                vals.append(g["pci"])
            elif fld == "driver_version":
                vals.append(driver)
            elif fld == "temperature.gpu":
                vals.append(na if "temp" not in g else str(int(g["temp"]) + (20 if SKEW else 0)))
            elif fld == "memory.used":
                vals.append("%s MiB" % g.get("fbused", "0"))  # memory info always answers
            elif fld == "memory.reserved":
                vals.append("%s MiB" % g.get("fbreserved", "0"))
            elif fld == "power.draw":
                vals.append(na if "power" not in g else "%.2f W" % (int(g["power"]) / 1000.0))
            else:
                vals.append(na)
        rows.append(", ".join(vals))
    return "\n".join(rows) + "\n"


def smi_rows(query):
    return [[c.strip() for c in line.split(",")] for line in smi(["--query-gpu=" + query, "--format=csv,noheader"]).splitlines()
            if line.strip()]


def num(s):
    m = re.match(r"\s*([-+0-9.]+)", s or "")
    return float(m.group(1)) if m else None


def norm_bus(b):
    b = b.strip().upper()
    dom, _, rest = b.partition(":")
    return ("%08X:%s" % (int(dom, 16), rest)) if rest and len(dom) <= 8 else b


# ---------------------------------------------------------------- 1. discovery
def agent_env():
    env = dict(os.environ)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return env


def discover(extra=()):
    p = subprocess.run([GPUSCHED, "agent", "discover", "-o", "json", "--nvml-library", LIB] + list(extra),
                       capture_output=True, text=True, timeout=120, env=agent_env())
    if p.returncode != 0:
        raise RuntimeError("agent discover: rc %d: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def check_discovery():
    inv = discover()
    mig = any(g["migMode"] == 1 for g in inv["gpus"])
    if mig:
        inv = discover(["--mig-strategy", "mixed"])
    rows = smi_rows("index,uuid,name,memory.total,pci.bus_id,driver_version")
    out("INFO", "nvidia-smi: %d GPU(s), driver %s; agent discover: %d GPU(s), driver %s, CUDA %d"
        % (len(rows), rows[0][5] if rows else "?", len(inv["gpus"]), inv["driverVersion"], inv["cudaDriverVersion"]))
    check(len(rows) == len(inv["gpus"]), "GPU count: agent %d, nvidia-smi %d" % (len(inv["gpus"]), len(rows)))
    by_index = {g["index"]: g for g in inv["gpus"]}
    for r in rows:
        idx, uuid, name, mem, bus, drv = r[:6]
        g = by_index.get(int(idx))
        if not check(g is not None, "GPU %s: discovered" % idx):
            continue
        check(g["uuid"] == uuid, "GPU %s: UUID %s (nvidia-smi %s)" % (idx, g["uuid"], uuid))
        check(g["name"] == name, "GPU %s: name %r (nvidia-smi %r)" % (idx, g["name"], name))
        m = num(mem)
        check(m is not None and abs(g["memoryMiB"] - m) <= 0.02 * m,
              "GPU %s: memory %d MiB (nvidia-smi %s, 2 %% allowed)" % (idx, g["memoryMiB"], mem))
        check(norm_bus(g["pciBusId"]) == norm_bus(bus), "GPU %s: PCI bus id %s (nvidia-smi %s)" % (idx, g["pciBusId"], bus))
        check(inv["driverVersion"] == drv, "GPU %s: driver %s (nvidia-smi %s)" % (idx, inv["driverVersion"], drv))
        check(not g["lost"], "GPU %s: answers NVML (%s)" % (idx, g["lostReason"] or "not lost"))
    # MIG devices from nvidia-smi -L
    smi_mig, cur = {}, None
    for line in smi(["-L"]).splitlines():
        mg = re.match(r"GPU (\d+):", line)
        if mg:
            cur = int(mg.group(1))
            smi_mig[cur] = []
            continue
        mm = re.match(r"\s+MIG\s+(\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)]+)\)", line)
        if mm and cur is not None:
            smi_mig[cur].append((mm.group(3), mm.group(1)))
    for idx, g in sorted(by_index.items()):
        ours = sorted((d["uuid"], d["profile"]) for d in g["migDevices"])
        theirs = sorted(smi_mig.get(idx, []))
        if ours or theirs:
            check(ours == theirs, "GPU %d: MIG devices %s (nvidia-smi -L %s)"
                  % (idx, ", ".join("%s %s" % (p, u) for u, p in ours) or "none",
                     ", ".join("%s %s" % (p, u) for u, p in theirs) or "none"))
    return inv, mig


# ---------------------------------------------------------------- agent process
class Agent:
    def __init__(self, dp, extra):
        args = [GPUSCHED, "agent", "--node", "device-check", "--nvml-library", LIB, "--device-plugin-dir", dp,
                "--pod-resources-socket", "", "--listen", "127.0.0.1:0", "--sample-interval", "1s"] + extra
        self.p = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=agent_env())
        self.log, self.port = [], None
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stderr:
            self.log.append(line)
            m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                self.port = int(m.group(1))

    def wait_port(self, timeout=20):
        end = time.time() + timeout
        while self.port is None and time.time() < end and self.p.poll() is None:
            time.sleep(0.05)
        return self.port

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = -9
        self.t.join(timeout=2)
        return rc


def scrape(port):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.read().decode()


def gpu_series(body, name):
    """{gpu index: value} of the GPU-level series (no GPU_I_ID) of one family."""
    vals = {}
    for line in body.splitlines():
        if not line.startswith(name + "{"):
            continue
        labels, _, value = line[len(name) + 1:].rpartition("} ")
        lab = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
        if lab.get("GPU_I_ID", "") != "":
            continue
        vals[int(lab["gpu"])] = float(value)
    return vals


def check_metrics(inv):
    dp = tempfile.mkdtemp(prefix="gs-device-check.")
    a = Agent(dp, ["--no-register"] + (["--mig-strategy", "mixed"] if MIG else []))
    try:
        if not check(a.wait_port() is not None, "agent (--no-register) serves /metrics"):
            out("INFO", "agent log:\n" + "".join(a.log))
            return
        end, body = time.time() + 10, ""
        while time.time() < end and "DCGM_FI_DEV_" not in body:
            body = scrape(a.port)
            time.sleep(0.2)
        q = "index,temperature.gpu,memory.used,power.draw,memory.reserved"
        try:
            s1 = smi_rows(q)
        except RuntimeError:  # an older nvidia-smi without memory.reserved
            q = q.rsplit(",", 1)[0]
            s1 = smi_rows(q)
        b1 = scrape(a.port)
        time.sleep(1.5)
        b2 = scrape(a.port)
        s2 = smi_rows(q)
        tol = {"DCGM_FI_DEV_GPU_TEMP": (1, lambda v: 5.0, "C"),
               "DCGM_FI_DEV_FB_USED": (2, lambda v: max(256.0, 0.05 * v), "MiB"),
               "DCGM_FI_DEV_POWER_USAGE": (3, lambda v: max(25.0, 0.15 * v), "W")}
        for fam, (col, tolf, unit) in tol.items():
            for n, body in (("scrape 1", b1), ("scrape 2", b2)):
                ours = gpu_series(body, fam)
                for r1, r2 in zip(s1, s2):
                    idx = int(r1[0])
                    theirs = [num(r[col]) for r in (r1, r2) if num(r[col]) is not None]
                    if not theirs:
                        check(idx not in ours, "%s GPU %d %s: nvidia-smi %s, /metrics %s (both absent)"
                              % (n, idx, fam, r1[col], ours.get(idx, "absent")))
                        continue
                    lo, hi = min(theirs), max(theirs)
                    t = tolf(hi)
                    v = ours.get(idx)
                    good = v is not None and lo - t <= v <= hi + t
                    note = ""
                    reserved = num(r1[4]) if len(r1) > 4 else None
                    if fam == "DCGM_FI_DEV_FB_USED" and reserved and v is not None and not good:
                        # NVML's v1 memory info counts the driver's reservation as used, v2
                        # does not; nvidia-smi versions differ the same way
                        for shift in (reserved, -reserved):
                            if lo + shift - t <= v <= hi + shift + t:
                                good, note = True, " (differs by the %g MiB reserved)" % reserved
                    check(good, "%s GPU %d %s = %s %s (nvidia-smi %s..%s, +-%.0f)%s"
                          % (n, idx, fam, "absent" if v is None else "%g" % v, unit, "%g" % lo, "%g" % hi, t, note))
    finally:
        rc = a.stop()
        check(rc == 0, "agent (--no-register) exits 0 on SIGTERM (rc %s)" % rc)
        subprocess.run(["rm", "-rf", dp])


# ---------------------------------------------------------------- 4. device plugin
def check_device_plugin(inv):
    try:
        import grpc  # noqa: F401
        import grpc_tools  # noqa: F401
    except ImportError:
        out("SKIP", "device plugin path: python3-grpcio / python3-grpc-tools not installed")
        return
    sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
    import kubelet
    dp = tempfile.mkdtemp(prefix="gs-device-check.")
    reg = kubelet.RegistrationServer(os.path.join(dp, "kubelet.sock"), plugin_dir=dp).start()
    a = Agent(dp, ["--mig-strategy", "mixed"] if MIG else [])
    try:
        resources = [r for r in inv["resources"] if r["devices"]]
        check(bool(resources), "discover plans at least one resource (%s)" % ", ".join(r["name"] for r in inv["resources"]))
        for r in resources:
            name = r["name"]
            devs = None
            end = time.time() + 15
            while time.time() < end and devs is None:
                devs = reg.latest(name)
                time.sleep(0.05)
            if not check(devs is not None, "%s: registered, ListAndWatch received" % name):
                continue
            ids = sorted(d["ID"] for d in devs)
            check(ids == sorted(r["devices"]), "%s: ListAndWatch lists the %d planned devices" % (name, len(r["devices"])))
            check(all(d["health"] == "Healthy" for d in devs), "%s: every device Healthy" % name)
            sock = os.path.join(dp, r["socket"])
            first = r["devices"][0]
            resp = kubelet.plugin_call(sock, "allocate", {"container_requests": [{"devices_ids": [first]}]})
            env = (resp.get("container_responses") or [{}])[0].get("envs", {})
            vis = env.get("NVIDIA_VISIBLE_DEVICES", "")
            check(first.split("::")[0] in vis.split(","), "%s: Allocate(%s) -> NVIDIA_VISIBLE_DEVICES=%s" % (name, first, vis))
    finally:
        rc = a.stop()
        check(rc == 0, "agent (registered) exits 0 on SIGTERM (rc %s)" % rc)
        reg.stop()
        subprocess.run(["rm", "-rf", dp])


MIG = False
status = 0
try:
    out("INFO", "%s; gpusched %s; NVML %s" % ("DRY RUN (fake NVML, nvidia-smi derived from the scenario)" if FAKE
                                             else "real GPU", GPUSCHED, LIB))
    inv, MIG = check_discovery()
    check_metrics(inv)
    check_device_plugin(inv)
except Exception as e:  # noqa: BLE001 - report whatever stopped the check
    out("FAIL", "the check could not finish: %s: %s" % (type(e).__name__, e))
summary = "device-check: %s (%d failed of %d comparisons)" % ("PASSED" if not FAILED else "FAILED", len(FAILED),
                                                            sum(1 for ln in LINES if ln[:4] in ("PASS", "FAIL")))
LINES.append(summary)
print(summary)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "device-check.txt"), "w") as f:
        f.write("\n".join(LINES) + "\n")
sys.exit(1 if FAILED else 0)
PY
