#!/usr/bin/env python3
"""fake-prometheus.py - a stand-in for a Prometheus server's query API, for the monitor's tests.

Answers GET (and POST form) /api/v1/query?query=EXPR the way Prometheus's HTTP API does:
  200 {"status":"success","data":{"resultType":"vector","result":[...]}}
for an expression named in the answers file, and for any other expression
  400 {"status":"error","errorType":"bad_data","error":"..."}
with Content-Type application/json, as Prometheus answers a query it cannot parse.

  fake-prometheus.py ANSWERS [--port N] [--host ADDR]

ANSWERS is a JSON object {"<expression>": [result, ...]} whose results are Prometheus's
vector items ({"metric": {...}, "value": [<unix seconds>, "<value>"]}); it is read again on
every request, so a test can rewrite it between queries. An expression mapped to the string
"unavailable" answers 503 with Prometheus's error body (errorType "unavailable").
--port 0 (the default) takes a free port; once listening the script prints one line
"listening on http://HOST:PORT" (flushed) and serves until SIGTERM or SIGINT. Every query
received is appended, one per line, to ANSWERS + ".log". Only the standard library is used.
"""
import argparse
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def make_handler(answers):
    class Handler(BaseHTTPRequestHandler):
        server_version = "fake-prometheus/1"

        def log_message(self, fmt, *args):
            pass

        def _send(self, code, obj):
            body = json.dumps(obj, separators=(",", ":")).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _query(self, params):
            if urlsplit(self.path).path != "/api/v1/query":
                self.send_response(404)
                self.send_header("Content-Length", "19")
                self.end_headers()
                self.wfile.write(b"404 page not found\n")
                return
            q = params.get("query", [""])[0]
            with open(answers + ".log", "a") as f:
                f.write(q + "\n")
            with open(answers) as f:
                table = json.load(f)
            if q not in table:
                self._send(400, {"status": "error", "errorType": "bad_data",
                                 "error": "invalid parameter \"query\": unknown expression %s" % q})
                return
            if table[q] == "unavailable":
                self._send(503, {"status": "error", "errorType": "unavailable",
                                 "error": "query processing would load too many samples"})
                return
            self._send(200, {"status": "success",
                             "data": {"resultType": "vector", "result": table[q]}})

        def do_GET(self):
            self._query(parse_qs(urlsplit(self.path).query))

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0") or 0)
            self._query(parse_qs(self.rfile.read(n).decode()))

    return Handler


def main():
    ap = argparse.ArgumentParser(description="answer Prometheus instant queries from a file")
    ap.add_argument("answers", help="JSON object: expression -> vector results")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args()
    srv = ThreadingHTTPServer((a.host, a.port), make_handler(a.answers))
    srv.daemon_threads = True

    def stop(_sig, _frm):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    host, port = srv.server_address[:2]
    print("listening on http://%s:%d" % (host, port), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
