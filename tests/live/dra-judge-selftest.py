#!/usr/bin/env python3
"""dra-judge-selftest.py - the DRA judge judged: dra-judge-test.py run against
dra-judge-stub.py, a stand-in for gpusched that answers with what kube-scheduler did.

Run under the shared control plane (`controlplane.py exec STATE -- ...`); without one it
skips (77). Four runs of the judge:
  - the stub agreeing, the fixtures and GS_DRA_JUDGE_ROUNDS (default 2) random rounds:
    exit 0, every pod compared, exact and loose device comparisons made;
  - the stub on another node unless pinned (GS_STUB_LIE=node), fixtures only: exit 0, the
    judge re-ran it pinned to kube-scheduler's node;
  - the stub giving other devices (GS_STUB_LIE=devices): exit 1, "devices differ", the work
    directory kept with mismatches.txt naming the step's dump and pod files;
  - the stub with other unschedulable messages (GS_STUB_LIE=message): exit 1, "unschedulable
    messages differ".
Exit 0 pass, 1 fail, 77 skipped.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gslive  # noqa: E402

CHECKS = gslive.Checks()
check = CHECKS.check


def judge(lie, rounds):
    env = dict(os.environ, GS_DRA_JUDGE_ROUNDS=str(rounds), GS_STUB_LIE=lie)
    env.pop("GS_DRA_JUDGE_KEEP", None)
    r = subprocess.run([sys.executable, os.path.join(HERE, "dra-judge-test.py"),
                        os.path.join(HERE, "dra-judge-stub.py")], env=env, capture_output=True,
                       text=True, timeout=600)
    out = r.stdout + r.stderr
    m = re.search(r"^compared: (\{.*\})$", out, re.M)
    compared = json.loads(m.group(1)) if m else {}
    kept = re.search(r"^work directory kept: (\S+)$", out, re.M)
    return r.returncode, out, compared, kept.group(1) if kept else None


def main():
    gslive.plane("GS_KUBECONFIG_ADMIN", "GS_KUBECTL", "GS_APISERVER_URL", "GS_CP_DIR")
    gslive.deadline("dra-judge-selftest", 600)
    rounds = int(os.environ.get("GS_DRA_JUDGE_ROUNDS", "2"))

    rc, out, cmp_, kept = judge("", rounds)
    if rc == 77:
        gslive.skip(out.strip().splitlines()[-1])
    check(rc == 0 and kept is None, "the stub agreeing: the judge passes (exit %d)%s" % (
        rc, "" if rc == 0 else "\n" + out[-3000:]))
    # messages: compared, or skipped when other tests' nodes came or went meanwhile
    check(cmp_.get("steps", 0) >= 14 and cmp_.get("exact", 0) > 0
          and cmp_.get("messages", 0) + cmp_.get("messages_skipped", 0) > 0,
          "every step compared, devices exactly, messages: %s" % cmp_)

    rc, out, cmp_, kept = judge("node", 0)
    check(rc == 0 and cmp_.get("pinned", 0) > 0,
          "the stub elsewhere: re-run pinned to kube-scheduler's node and agreeing (exit %d, %s)"
          % (rc, cmp_))

    rc, out, cmp_, kept = judge("devices", 0)
    check(rc == 1 and "devices differ" in out, "the stub's other devices caught (exit %d)" % rc)
    mm = os.path.join(kept, "mismatches.txt") if kept else ""
    if check(bool(kept) and os.path.isfile(mm), "the work directory kept with mismatches.txt (%s)" % kept):
        with open(mm) as f:
            first = f.read().split("\n\n")[0]
        files = re.findall(r"^  (?:dump|pod) (\S+)$", first, re.M)
        check(len(files) == 2 and all(os.path.isfile(p) for p in files),
              "a mismatch names its step's dump and pod files: %s" % files)
        shutil.rmtree(kept, ignore_errors=True)

    rc, out, cmp_, kept = judge("message", 0)
    check(rc == 1 and "unschedulable messages differ" in out,
          "the stub's other messages caught (exit %d)" % rc)
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
    return CHECKS.done("the judge passes an agreeing stand-in and catches a lying one")


if __name__ == "__main__":
    sys.exit(main())
