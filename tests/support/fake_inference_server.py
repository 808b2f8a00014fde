#!/usr/bin/env python3
"""A stand-in inference server for the agent's [[servers]] tests: a real HTTP
server on 127.0.0.1 that answers GET /health, and nothing an engine does.

  fake_inference_server.py --port PORT --pid-dir DIR [--model PATH] [--tag TEXT]
                           [--mode ok|never-healthy|exit]

It writes DIR/<its pid> holding its arguments, so a test can find every server
the agent launched. --mode ok answers /health with 200, never-healthy with 503,
exit prints an error and exits 1 before listening.
"""
import argparse
import http.server
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid-dir", required=True)
    parser.add_argument("--model", default="")
    parser.add_argument("--tag", default="")
    parser.add_argument("--mode", default="ok", choices=["ok", "never-healthy", "exit"])
    args = parser.parse_args()
    with open(os.path.join(args.pid_dir, str(os.getpid())), "w") as out:
        out.write(" ".join(sys.argv[1:]) + "\n")
    if args.mode == "exit":
        print("fatal: cannot load model " + args.model, flush=True)
        sys.exit(1)
    status = 200 if args.mode == "ok" else 503

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            code = status if self.path == "/health" else 404
            body = b'{"status": "ok"}' if code == 200 else b'{"status": "loading"}'
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):
            pass  # quiet: the log's last lines are what a failure shows

    server = http.server.HTTPServer(("127.0.0.1", args.port), Handler)
    print("listening on 127.0.0.1:%d, tag %s" % (args.port, args.tag), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
