"""Driver frames (docs/driver-protocol.md, "Frames"; driver_protocol/frames.h).

Frame = u32 little-endian payload length + u8 type + payload, payload at most
16 MiB. Order: exactly one hello first, any number of records, then done or
error last; FrameWriter enforces that order on the writing side, and in
session mode (docs/driver-protocol.md, "Sessions") starts the next job's
stream after next_job(). A session's stdin carries JOB frames
(encode_job_frame, read_job_frame).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any, BinaryIO

HELLO = 1
RECORD = 2
DONE = 3
ERROR = 4
JOB = 16  # stdin of a session driver only: one job document

MAX_PAYLOAD = 16 << 20  # agent::kMaxDriverFramePayload

_HEADER = struct.Struct("<IB")


def encode_frame(frame_type: int, payload: bytes | str) -> bytes:
    """The bytes of one frame. `payload` is bytes (or str, encoded UTF-8)."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    if frame_type not in (HELLO, RECORD, DONE, ERROR):
        raise ValueError("unknown frame type %r" % (frame_type,))
    if len(payload) > MAX_PAYLOAD:
        raise ValueError("frame payload of %d bytes is over the %d-byte limit"
                         % (len(payload), MAX_PAYLOAD))
    return _HEADER.pack(len(payload), frame_type) + bytes(payload)


def split_frames(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """A driver's output as ([(type, payload), ...], trailing): its whole frames in
    order, and the count of bytes after the last whole one (a stream cut short).
    For tests and tools; the agent's parser (driver_protocol/) is the strict one."""
    found, pos = [], 0
    while pos + _HEADER.size <= len(data):
        length, frame_type = _HEADER.unpack_from(data, pos)
        end = pos + _HEADER.size + length
        if end > len(data):
            break
        found.append((frame_type, bytes(data[pos + _HEADER.size:end])))
        pos = end
    return found, len(data) - pos


def split_job_streams(data: bytes) -> tuple[list[bytes], bytes]:
    """A session driver's output (docs/driver-protocol.md, "Sessions") as one byte
    string per job, each ending with its done or error frame, and the bytes after
    the last such frame."""
    streams, pos, begin = [], 0, 0
    for frame_type, payload in split_frames(data)[0]:
        pos += _HEADER.size + len(payload)
        if frame_type in (DONE, ERROR):
            streams.append(bytes(data[begin:pos]))
            begin = pos
    return streams, bytes(data[begin:])


def encode_job_frame(payload: bytes | str) -> bytes:
    """The bytes of one job frame (a session driver's stdin)."""
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError("job frame payload of %d bytes is over the %d-byte limit"
                         % (len(payload), MAX_PAYLOAD))
    return _HEADER.pack(len(payload), JOB) + bytes(payload)


def _read_exactly(stream, size):
    chunks = []
    while size > 0:
        chunk = stream.read(size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_job_frame(stream: BinaryIO) -> bytes | None:
    """The next job document (bytes) from a binary stream; None at end of
    file between frames. ValueError naming the defect for a frame of another
    type, a length over the limit, or a stream that ends inside a frame."""
    header = _read_exactly(stream, _HEADER.size)
    if not header:
        return None
    if len(header) < _HEADER.size:
        raise ValueError("job frame: stdin ended after %d of the 5 header bytes"
                         % len(header))
    length, frame_type = _HEADER.unpack(header)
    if frame_type != JOB:
        raise ValueError("job frame: type %d, expected %d (job)" % (frame_type, JOB))
    if length > MAX_PAYLOAD:
        raise ValueError("job frame: payload of %d bytes exceeds the limit of %d"
                         % (length, MAX_PAYLOAD))
    payload = _read_exactly(stream, length)
    if len(payload) < length:
        raise ValueError("job frame: stdin ended after %d of its %d payload bytes"
                         % (len(payload), length))
    return payload


def dump_json(value: Any) -> str:
    """A JSON payload as the C++ drivers write it: compact, UTF-8, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)


class FrameWriter:
    """Writes frames to a binary stream in protocol order.

    `take_stdout()` builds one on the process's real stdout and points file
    descriptor 1 at stderr, so nothing an engine prints can corrupt the
    stream. Records are flushed in groups of `flush_every`; every other frame
    at once.
    """

    def __init__(self, stream, flush_every=64):
        self._out = stream
        self._flush_every = flush_every
        self._unflushed = 0
        self._state = "start"  # start -> open -> closed

    @classmethod
    def take_stdout(cls):
        import sys
        sys.stdout.flush()
        stream = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        return cls(stream)

    @property
    def hello_sent(self):
        return self._state != "start"

    @property
    def closed(self):
        return self._state == "closed"

    def next_job(self) -> None:
        """Session mode: after a job's done or error, the next job's stream
        (a hello first again)."""
        self._expect("closed", "next job")
        self._state = "start"

    def hello(self, obj: dict[str, Any]) -> None:
        self._expect("start", "hello")
        self._write(HELLO, dump_json(obj))
        self._state = "open"

    def record(self, payload: bytes) -> None:
        self._expect("open", "record")
        self._write(RECORD, payload)

    def done(self, obj: dict[str, Any]) -> None:
        self._expect("open", "done")
        self._write(DONE, dump_json(obj))
        self._state = "closed"

    def error(self, code: str, message: str) -> None:
        self._expect("open", "error")
        self._write(ERROR, dump_json({"code": code, "message": message}))
        self._state = "closed"

    def _expect(self, state, what):
        if self._state != state:
            raise RuntimeError("driver protocol: %s frame while the stream is %s"
                               % (what, self._state))

    def _write(self, frame_type, payload):
        self._out.write(encode_frame(frame_type, payload))
        if frame_type == RECORD:
            self._unflushed += 1
            if self._unflushed < self._flush_every:
                return
        self._unflushed = 0
        self._out.flush()
