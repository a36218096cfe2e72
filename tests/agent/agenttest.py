"""agenttest.py - what the agent's Python tests share (tests/agent/*-test.py, bench/bench-agent.py).

check(cond, what)      prints "ok    what" or "FAIL  what", records failures in FAILED
wait_for(pred, secs)   polls pred every 50 ms until it returns something true
http_get(url)          (status, body); (0, reason) when nothing answered
write_atomic(p, text)  replaces the file by rename (the fake NVML re-reads a scenario whose
                       inode, size or mtime changed: a rename is seen at once, never half)
"""
import os
import time
import urllib.error
import urllib.request

FAILED = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        FAILED.append(what)
    return cond


def wait_for(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)
