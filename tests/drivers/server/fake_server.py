"""A small real HTTP server in the test process (http.server on 127.0.0.1, a
free port) that answers from a routing table: (METHOD, path) -> (status, body
bytes, how) with how "whole" or "truncated" (a Content-Length larger than the
bytes sent, then the connection closed), or a function of the request's body
that returns that triple (it may block: requests are served on threads).
Records every request's body and counts the requests in flight."""

import http.server
import json
import os
import threading

DOCUMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "documents")


def document(name):
    with open(os.path.join(DOCUMENTS, name), "rb") as f:
        return f.read()


class FakeServer:
    def __init__(self, routes):
        self.routes = dict(routes)
        self.requests = []
        self.lock = threading.Lock()
        self.in_flight = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                doc = json.loads(body) if body else None
                owner.requests.append((method, self.path, doc))
                route = owner.routes.get((method, self.path),
                                         (404, b'{"error": "not found"}', "whole"))
                with owner.lock:
                    owner.in_flight += 1
                try:
                    status, payload, how = route(doc) if callable(route) else route
                finally:
                    with owner.lock:
                        owner.in_flight -= 1
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if how == "truncated":
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[:len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def posts(self, path):
        return [body for method, p, body in self.requests if method == "POST" and p == path]
