#!/usr/bin/env python3
"""bench-live.py - issue 11 section 5: the live client against a real API server, side by
side with the real kubectl, in the same run.

    bench/bench-live.py [--nodes 5000] [--pods 100000] [--threads 8] [--runs 3]
                        [--bench build/bench/bench_live] [--watch]

Starts the control plane of tests/live (etcd + kube-apiserver from scripts/peers.sh, no
kube-scheduler), creates the nodes and pods (bench_live populate), then for each run:
  - kubectl get pods -A -o json > /dev/null           (the anchor: wall time, peak RSS)
  - bench_live list                                   (every snapshot kind into the store,
                                                       then the snapshot: wall time,
                                                       objects/s, bytes per cached pod,
                                                       peak RSS)
  - with --watch (after the lists), bench_live watch: a Pod informer's initial sync, then
    pod label patches at --rate per second for --watch-seconds: events/s the informer
    applied and the time from the server's answer to the change being in the store.
Prints one markdown table for docs/performance.md. Exit 77 when the peers are not built.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "live"))
from controlplane import ControlPlane, PeersMissing  # noqa: E402


def run_rss(argv, env, stdout=subprocess.DEVNULL):
    """Run argv under fork/exec + wait4 to get this child's own peak RSS."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            if stdout == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_WRONLY)
                os.dup2(fd, 1)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    dt = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench-live: {' '.join(argv)} failed ({status})")
    return dt, ru.ru_maxrss / 1024.0


def kv(line):
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=100000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bench", default=os.path.join(HERE, "..", "build", "bench", "bench_live"))
    ap.add_argument("--no-kubectl", action="store_true", help="skip the kubectl anchor (measuring gpusched alone)")
    ap.add_argument("--watch", action="store_true", help="also run the informer under churn")
    ap.add_argument("--watch-seconds", type=float, default=20)
    ap.add_argument("--rate", default="1000", help="pod patches per second during --watch (a list: 50,200,1000)")
    ap.add_argument("--churn-threads", type=int, default=32)
    a = ap.parse_args()
    bench = os.path.abspath(a.bench)
    if not os.access(bench, os.X_OK):
        raise SystemExit(f"bench-live: {bench} not built (cmake --build build --target bench_live)")
    try:
        cp = ControlPlane(scheduler=False)
        cp.__enter__()
    except PeersMissing as e:
        print(f"SKIP: {e}")
        return 77
    try:
        env = dict(os.environ)
        env.update(cp.env)
        out = subprocess.run([bench, "populate", str(a.nodes), str(a.pods), str(a.threads)], env=env,
                             check=True, capture_output=True, text=True).stdout
        print(out.strip(), file=sys.stderr)
        kubectl = env["GS_KUBECTL"]
        kcfg = ["--kubeconfig", env["GS_KUBECONFIG_ADMIN"]]
        rows = []
        for r in range(a.runs):
            kt, krss = (0.0, 0.0) if a.no_kubectl else run_rss([kubectl, *kcfg, "get", "pods", "-A", "-o", "json"], env)
            res = subprocess.run([bench, "list"], env=env, check=True, capture_output=True, text=True).stdout
            m = kv(res.strip().splitlines()[-1])
            rows.append((kt, krss, m))
            print(f"run {r + 1}: kubectl {kt:.2f} s {krss:.0f} MiB; bench_live {res.strip()}", file=sys.stderr)
        print(f"| run | kubectl get pods -A -o json | its peak RSS | gpusched list (6 kinds) | objects/s | "
              f"received / kept per pod | store overhead per pod | snapshot read | peak RSS |")
        print("|---|---|---|---|---|---|---|---|---|")
        for i, (kt, krss, m) in enumerate(rows, 1):
            print(f"| {i} | {kt:.2f} s | {krss:.0f} MiB | {float(m['list_s']):.2f} s | {float(m['objects_per_s']):,.0f} | "
                  f"{float(m['received_per_pod']):,.0f} B / {float(m['kept_per_pod']):,.0f} B | "
                  f"{float(m['store_overhead_per_pod']):,.0f} B | {float(m['snapshot_s']):.2f} s | "
                  f"{float(m['peak_rss_mib']):.0f} MiB |")
        if a.watch:
            wrows = []
            rates = [float(x) for x in str(a.rate).split(",")]
            for r in range(a.runs * len(rates)):
                rate = rates[r % len(rates)]
                w = subprocess.run([bench, "watch", str(a.watch_seconds), str(rate), str(a.churn_threads)],
                                   env=env, capture_output=True, text=True)
                line = (w.stdout.strip().splitlines() or [""])[-1]
                print(f"watch run {r + 1}: {line or w.stderr.strip()}", file=sys.stderr)
                if line:
                    m = kv(line)
                    m["rate"] = rate
                    wrows.append(m)
            print()
            print("| run | informer sync (pods) | patches/s asked / achieved | events/s applied | change -> cache p50 / p99 / max "
                  "| behind at end | relists | RSS synced (peak with the load generator) |")
            print("|---|---|---|---|---|---|---|---|")
            for i, m in enumerate(wrows, 1):
                print(f"| {i} | {float(m['sync_s']):.2f} s ({'streaming list' if m['watch_list'] == '1' else 'paged list'}) | "
                      f"{m['rate']:,.0f} / {float(m['patches_per_s']):,.0f} | {float(m['events_per_s']):,.0f} | "
                      f"{float(m['latency_p50_ms']):.1f} / {float(m['latency_p99_ms']):.1f} / "
                      f"{float(m['latency_max_ms']):.1f} ms | {m['behind_at_end']} | {m['relists']} | "
                      f"{float(m['rss_synced_mib']):.0f} MiB ({float(m['peak_rss_mib']):.0f} MiB) |")
    finally:
        cp.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
