"""The server drivers' HTTP client (orch_server/http.py) against a real
HTTP/1.1 server in the test process: requests share one keep-alive
connection, a connection the server closed while idle is replaced once, and
a server that answers and then goes away is an engine error naming the URL."""

import http.server
import json
import socket
import threading
import unittest

from orch_server import http as http_mod


class KeepAliveServer:
    """http.server speaking HTTP/1.1 on 127.0.0.1; answers every request with
    {"n": count}; records the client port of each request. close_after_each:
    the server closes the connection after each answer without saying so
    (no "Connection: close"), as a server whose idle keep-alive ran out."""

    def __init__(self, close_after_each=False, fail_at=None):
        self.ports = []
        self.arrived = threading.Condition()  # notified as each request arrives
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                with owner.arrived:
                    owner.ports.append(self.client_address[1])
                    n = len(owner.ports)
                    owner.arrived.notify_all()
                failed = n == fail_at
                payload = (b"slot unavailable" if failed else json.dumps({"n": n}).encode())
                self.send_response(500 if failed else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()
                if close_after_each:
                    self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def wait_for(self, count, timeout_s=10):
        """True once `count` requests have arrived (False after timeout_s)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.ports) >= count, timeout_s)

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


class HttpClientTest(unittest.TestCase):
    def test_requests_share_one_keep_alive_connection(self):
        with KeepAliveServer() as server:
            client = http_mod.Client(server.url)
            answers = [client.post("/completion", {"prompt": [i]})["n"] for i in range(5)]
            client.close()
        self.assertEqual(answers, [1, 2, 3, 4, 5])
        self.assertEqual(len(set(server.ports)), 1, server.ports)
        self.assertEqual(client.connections_opened, 1)

    def test_threads_sharing_a_client_each_get_their_own_connection(self):
        # The background load's threads and the measured requests share one client.
        errors = []
        with KeepAliveServer() as server:
            client = http_mod.Client(server.url)

            def hammer(n):
                try:
                    for i in range(20):
                        client.post("/completion", {"prompt": [n, i]})
                except Exception as error:  # noqa: BLE001 (reported below)
                    errors.append(repr(error))
                finally:
                    client.close()

            threads = [threading.Thread(target=hammer, args=(n,)) for n in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertEqual(len(server.ports), 80)
        self.assertEqual(client.connections_opened, 4)
        self.assertEqual(len(set(server.ports)), 4, server.ports)

    def test_a_connection_the_server_closed_while_idle_is_replaced(self):
        with KeepAliveServer(close_after_each=True) as server:
            client = http_mod.Client(server.url)
            answers = [client.post("/completion", {"prompt": [i]})["n"] for i in range(3)]
            client.close()
        self.assertEqual(answers, [1, 2, 3])
        self.assertEqual(len(set(server.ports)), 3, server.ports)

    def test_a_server_gone_after_answering_is_an_engine_error_naming_the_url(self):
        # A server that answers one request on a kept-alive connection, then
        # closes it and its listening socket (as a killed server's sockets).
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = "http://127.0.0.1:%d" % listener.getsockname()[1]

        def serve_one():
            connection, _ = listener.accept()
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(4096)
                head, _, body = request.partition(b"\r\n\r\n")
                length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:")][0])
                while len(body) < length:
                    body += connection.recv(4096)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: 8\r\n\r\n{\"n\": 1}")
            listener.close()

        server = threading.Thread(target=serve_one)
        server.start()
        client = http_mod.Client(url)
        self.assertEqual(client.post("/completion", {"prompt": [1]})["n"], 1)
        server.join(timeout=30)
        self.assertFalse(server.is_alive())
        # The kept connection is dead and a new one is refused, once (the
        # client has reached the server before).
        with self.assertRaises(http_mod.HttpError) as caught:
            client.post("/completion", {"prompt": [2]})
        message = caught.exception.message
        self.assertIn("POST %s/completion" % url, message)
        self.assertIn("connection refused (1 try)", message)

    def test_post_each_takes_an_answer_while_the_next_request_is_on_the_wire(self):
        # take(i) waits until request i + 1 has reached the server: a loop that
        # sent the next request only after taking an answer would wait in vain.
        taken, overlapped = [], []
        with KeepAliveServer() as server:
            client = http_mod.Client(server.url)

            def take(i, answer):
                taken.append((i, answer["n"]))
                overlapped.append(i == 4 or server.wait_for(i + 2))

            client.post_each("/completion", ({"prompt": [i]} for i in range(5)), take)
            client.close()
        self.assertEqual(taken, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)])
        self.assertEqual(overlapped, [True] * 5)
        self.assertEqual(len(server.ports), 5)
        self.assertEqual(len(set(server.ports)), 1, server.ports)

    def test_post_each_stops_at_an_error_answer_and_leaves_a_usable_client(self):
        taken = []
        with KeepAliveServer(fail_at=3) as server:
            client = http_mod.Client(server.url)
            with self.assertRaises(http_mod.HttpError) as caught:
                client.post_each("/completion", ({"prompt": [i]} for i in range(5)),
                                 lambda i, answer: taken.append(i))
            self.assertEqual(client.post("/completion", {})["n"], 4)
            client.close()
        self.assertEqual(taken, [0, 1])  # answer 2 was read, never taken
        self.assertIn("POST %s/completion: HTTP 500: slot unavailable" % server.url,
                      caught.exception.message)

    def test_post_each_closes_a_connection_whose_answer_it_left_unread(self):
        # take fails while the next request is on the wire: its answer is never
        # read, so the connection must not carry the next request.
        with KeepAliveServer() as server:
            server.httpd.handle_error = lambda *args: None  # the reset of the closed connection
            client = http_mod.Client(server.url)

            def take(i, answer):
                raise ValueError("take %d failed" % i)

            with self.assertRaisesRegex(ValueError, "take 0 failed"):
                client.post_each("/completion", ({"prompt": [i]} for i in range(3)), take)
            # Whether the server counted the abandoned request first is a race: the
            # answer's number is not checked, only that a new connection carried it.
            self.assertIn("n", client.post("/completion", {}))
            client.close()
        self.assertEqual(client.connections_opened, 2)
        self.assertEqual(len(set(server.ports)), 2, server.ports)

    def test_a_url_with_a_path_prefix_keeps_it(self):
        with KeepAliveServer() as server:
            seen = []
            original = server.httpd.RequestHandlerClass.do_POST

            def record(handler):
                seen.append(handler.path)
                original(handler)

            server.httpd.RequestHandlerClass.do_POST = record
            client = http_mod.Client(server.url + "/prefix/")
            client.post("/completion", {})
            client.close()
        self.assertEqual(seen, ["/prefix/completion"])


if __name__ == "__main__":
    unittest.main()
