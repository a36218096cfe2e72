#!/usr/bin/env python3
"""exec-credential.py - a client-go exec credential plugin for the live tests.

usage: exec-credential.py TOKEN_FILE [CALLS_FILE [EXPIRES_IN_SECONDS]]

Prints a client.authentication.k8s.io/v1 ExecCredential whose status.token is the content of
TOKEN_FILE (re-read on every call, so a test can rotate it; a file of several lines gives
line N to the N-th call counted in CALLS_FILE, the last line after that), with an expirationTimestamp
EXPIRES_IN_SECONDS from now when given. Each call appends one line to CALLS_FILE (when given),
so a test can count how often a client ran the plugin (caching, re-run after 401).
The client passes KUBERNETES_EXEC_INFO (the request's apiVersion, interactive); it is checked.
"""
import datetime
import json
import os
import sys


def main(argv):
    if not 1 <= len(argv) <= 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    info = json.loads(os.environ.get("KUBERNETES_EXEC_INFO") or "{}")
    api = "client.authentication.k8s.io/v1"
    if info and info.get("apiVersion") != api:
        print("exec-credential: asked for %r, I speak %s" % (info.get("apiVersion"), api),
              file=sys.stderr)
        return 1
    with open(argv[0]) as f:
        lines = [ln.strip() for ln in f.read().strip().splitlines()] or [""]
    calls = 0
    if len(argv) >= 2 and os.path.exists(argv[1]):
        with open(argv[1]) as f:
            calls = sum(1 for _ in f)
    token = lines[min(calls, len(lines) - 1)]
    status = {"token": token}
    if len(argv) == 3:
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
            seconds=int(argv[2]))
        status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if len(argv) >= 2:
        with open(argv[1], "a") as f:
            f.write("call\n")
    json.dump({"apiVersion": api, "kind": "ExecCredential", "status": status}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
