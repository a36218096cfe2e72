#!/usr/bin/env python3
"""dcgm-endpoint.py - a stand-in for dcgm-exporter's /metrics, for the monitor's tests.

Serves one fixture file (tests/data/dcgm/*.prom, written in dcgm-exporter's text format) at
/metrics with dcgm-exporter's content type, on 127.0.0.1 (or --host). The fixture is read
again on every request, so a test can rewrite it between scrapes to change utilization.

  dcgm-endpoint.py FIXTURE [--port N] [--host ADDR]

--port 0 (the default) takes a free port. Once listening, the script prints one line
"listening on http://HOST:PORT/metrics" (flushed) and serves until SIGTERM or SIGINT.
Any other path answers 404; a fixture that cannot be read answers 500. /healthz answers 200.
Only the Python standard library is used.
"""
import argparse
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def make_handler(fixture):
    class Handler(BaseHTTPRequestHandler):
        server_version = "dcgm-endpoint/1"

        def log_message(self, fmt, *args):  # quiet: tests read stdout for the address
            pass

        def _send(self, code, ctype, body, head=False):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _answer(self, head):
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._send(200, "text/plain", b"ok\n", head)
                return
            if path != "/metrics":
                self._send(404, "text/plain", b"404 page not found\n", head)
                return
            try:
                with open(fixture, "rb") as f:
                    body = f.read()
            except OSError as e:
                self._send(500, "text/plain", ("cannot read fixture: %s\n" % e).encode(), head)
                return
            self._send(200, CONTENT_TYPE, body, head)

        def do_GET(self):
            self._answer(False)

        def do_HEAD(self):
            self._answer(True)

    return Handler


def main():
    ap = argparse.ArgumentParser(description="serve a dcgm-exporter fixture at /metrics")
    ap.add_argument("fixture", help="file in dcgm-exporter's text format")
    ap.add_argument("--port", type=int, default=0, help="TCP port (0: a free one)")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on")
    a = ap.parse_args()
    try:
        open(a.fixture, "rb").close()
    except OSError as e:
        print("dcgm-endpoint: %s" % e, file=sys.stderr)
        return 2
    srv = ThreadingHTTPServer((a.host, a.port), make_handler(a.fixture))
    srv.daemon_threads = True

    def stop(_sig, _frm):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    host, port = srv.server_address[:2]
    print("listening on http://%s:%d/metrics" % (host, port), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
