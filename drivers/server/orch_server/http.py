"""A small JSON-over-HTTP client for the server drivers (standard library
only: http.client).

Requests go over one persistent HTTP/1.1 connection (keep-alive) per thread
(a client is shared by the measured requests and the background load's
threads; an http.client connection is not), opened at the first request and
again whenever the server closed it: a teacher-forced
job is one request per position, and a new TCP connection per request cost
the driver about a fifth of its throughput against llama-server
(docs/benchmarks.md, "llama-server driver throughput"). A request that fails
on a reused connection before any answer arrives (the server closed it while
idle) is sent once more on a new connection; that second try is the one
whose failure counts. send() writes a request and returns before its answer
is read, so a caller can work while the server computes (post_each: one
request per position, each answer taken while the next is on the wire).
Every request has a timeout. A refused connection is retried a bounded
number of times only while the client has never reached the server (a
server still starting); after the first answer, and for every other failure,
the first error is final. Failures are EngineError values whose message
names the method, the URL and what was wrong: the HTTP status and the first
200 bytes of the body, "connection refused", a timeout, or a body that is
not the JSON asked for (truncated or malformed).
"""

import http.client
import json
import socket
import threading
import time
import urllib.parse

from orch_driver.errors import EngineError

BODY_SHOWN = 200


class HttpError(EngineError):
    """A failed request. `status` is the HTTP status (0: no answer), `body`
    the answer's bytes (possibly empty)."""

    def __init__(self, message, url, status=0, body=b""):
        super().__init__(message)
        self.url = url
        self.status = status
        self.body = body

    def body_text(self):
        return self.body.decode("utf-8", errors="replace")


def shown(body):
    """The first BODY_SHOWN bytes of a body, as text for a message."""
    text = body[:BODY_SHOWN].decode("utf-8", errors="replace")
    return text + ("..." if len(body) > BODY_SHOWN else "")


def _refused(error):
    reason = getattr(error, "reason", error)
    return isinstance(reason, ConnectionRefusedError)


# What a reused connection the server closed while it was idle raises when a
# request is written to it or its answer's status line is read.
STALE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError,
         http.client.RemoteDisconnected)


class Sent:
    """A request written to the connection, its answer not yet read."""

    def __init__(self, client, method, url, path, data, headers):
        self.client = client
        self.method = method
        self.url = url
        self.path = path
        self.data = data
        self.headers = headers
        self.reused = False
        self.status = None
        self.raw = None

    def read(self):
        """Reads the answer (once); HttpError unless it is a 2xx."""
        if self.status is None:
            self.status, self.raw = self.client._receive(self)
        if not 200 <= self.status < 300:
            raise HttpError("%s %s: HTTP %d: %s" % (self.method, self.url, self.status,
                                                    shown(self.raw)), self.url, self.status,
                            self.raw)
        return self.raw

    def json(self):
        """The answer's JSON value; HttpError otherwise."""
        raw = self.read()
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise HttpError("%s %s: HTTP %d with a body that is not JSON (truncated or "
                            "malformed, %d bytes): %s" % (self.method, self.url, self.status,
                                                           len(raw), shown(raw)),
                            self.url, self.status, raw)


class Client:
    def __init__(self, base_url, api_key="", timeout_s=600.0, refused_tries=20,
                 refused_wait_s=0.25):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.refused_tries = max(1, refused_tries)
        self.refused_wait_s = refused_wait_s
        self.reached = False
        self.connections_opened = 0
        self._opened_lock = threading.Lock()
        self._local = threading.local()  # .connection: this thread's, or None
        parts = urllib.parse.urlsplit(self.base_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path

    def url(self, path):
        return self.base_url + path

    def get(self, path):
        return self.request("GET", path, None)

    def post(self, path, body):
        return self.request("POST", path, body)

    def request(self, method, path, body):
        """The answer's JSON value; HttpError otherwise."""
        return self.send(method, path, body).json()

    def send(self, method, path, body):
        """Sends a request and returns its Sent, whose read() or json() takes
        the answer: the caller may work while the server computes. Read it
        before the next request of the same thread (one request at a time on a
        connection)."""
        url = self.url(path)
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        sent = Sent(self, method, url, self._prefix + path, data, headers)
        tries = 1 if self.reached else self.refused_tries
        for attempt in range(tries):
            try:
                self._write(sent)
                return sent
            except (OSError, http_client_errors()) as error:
                if not _refused(error) or attempt + 1 == tries:
                    raise self._unreachable(method, url, error, attempt + 1)
                time.sleep(self.refused_wait_s)
        raise AssertionError("unreachable")

    def post_each(self, path, bodies, take):
        """POSTs each of `bodies` (JSON values) in turn, one request on the
        wire at a time as post() would, and calls take(index, answer) for each
        answer in order. take(i, ...) runs while request i + 1 is on the wire,
        so the caller's work overlaps the server's (llama-server teacher
        forcing: one request per position)."""
        pending = None  # (index, Sent) read, not yet taken
        sent = None
        try:
            for index, body in enumerate(bodies):
                sent = self.send("POST", path, body)
                if pending is not None:
                    take(pending[0], pending[1].json())
                sent.read()
                pending, sent = (index, sent), None
            if pending is not None:
                take(pending[0], pending[1].json())
        finally:
            if sent is not None:  # an answer left on the connection: it cannot be reused
                self.close()

    def _write(self, sent):
        """Writes the request on the open connection, or on a new one when
        there is none or the open one turns out closed by the server."""
        sent.reused = self._connection() is not None
        try:
            self._write_once(sent)
        except STALE:
            if not sent.reused:
                raise
            sent.reused = False
            self._write_once(sent)  # a new connection

    def _write_once(self, sent):
        connection = self._connection()
        if connection is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            connection = kind(self._host, self._port, timeout=self.timeout_s)
            self._local.connection = connection
            with self._opened_lock:
                self.connections_opened += 1
        try:
            connection.request(sent.method, sent.path, body=sent.data, headers=sent.headers)
        except BaseException:
            self.close()
            raise

    def _receive(self, sent):
        """The answer's status and bytes. A reused connection the server closed
        before answering gets the request once more on a new connection."""
        try:
            try:
                answer = self._connection().getresponse()
            except STALE:
                self.close()
                if not sent.reused:
                    raise
                sent.reused = False
                self._write_once(sent)
                answer = self._connection().getresponse()
        except (OSError, http_client_errors()) as error:
            self.close()
            raise self._unreachable(sent.method, sent.url, error, 1)
        except BaseException:
            self.close()
            raise
        self.reached = True
        raw = self._read(answer, sent.method, sent.url)
        if answer.will_close:
            self.close()
        return answer.status, raw

    def _connection(self):
        return getattr(self._local, "connection", None)

    def close(self):
        """Closes the calling thread's connection."""
        connection = self._connection()
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _read(self, answer, method, url):
        try:
            return answer.read()
        except (OSError, http_client_errors()) as error:
            self.close()
            raise HttpError("%s %s: the answer broke off (%s: %s)" % (
                method, url, type(error).__name__, error), url)

    def _unreachable(self, method, url, error, tries):
        reason = getattr(error, "reason", error)
        if isinstance(reason, (socket.timeout, TimeoutError)):
            what = "no answer within %g s" % self.timeout_s
        elif isinstance(reason, ConnectionRefusedError):
            what = "connection refused (%d tr%s)" % (tries, "y" if tries == 1 else "ies")
        else:
            what = "unreachable (%s)" % reason
        return HttpError("%s %s: %s" % (method, url, what), url)


def http_client_errors():
    return http.client.HTTPException
