"""Position records (digest/record_codec.h), the payload of a record frame.

Little-endian: u8 version (the digest's version, 1 or 2; same layout), u64 position, i32 input_token, i32 output_token,
u32 vocab_size, u32 flags, i32 argmax, f64 logsumexp, f64 entropy,
u64 hash.low, u64 hash.high, i32 target_id, f32 target_logit, u32 top_count,
top_count x (i32 id, f32 logit), u32 full_row_count (0 or vocab_size),
full_row_count x f32.
"""

from __future__ import annotations

import struct
from typing import Any

VERSIONS = (1, 2)  # digest.DIGEST_VERSION_1, digest.DIGEST_VERSION_2

_HEAD = struct.Struct("<BQiiIIiddQQifI")
_PAIR = struct.Struct("<if")


def encode_position_record(position: int, input_token: int, output_token: int, digest: Any,
                           full_row: bytes | None = None) -> bytes:
    """The record bytes. `full_row`: None, or the row as float32 bytes
    (exactly vocab_size values)."""
    top = digest.top
    if digest.version not in VERSIONS:
        raise ValueError("digest version %r has no record layout" % (digest.version,))
    parts = [_HEAD.pack(digest.version, position, input_token, output_token,
                        digest.vocab_size, digest.flags, digest.argmax,
                        digest.logsumexp, digest.entropy, digest.hash_low,
                        digest.hash_high, digest.target_id,
                        digest.target_logit, len(top))]
    parts.extend(_PAIR.pack(i, v) for i, v in top)
    if full_row is None:
        parts.append(struct.pack("<I", 0))
    else:
        row = bytes(full_row)
        if len(row) != 4 * digest.vocab_size:
            raise ValueError("full row of %d bytes for a vocabulary of %d"
                             % (len(row), digest.vocab_size))
        parts.append(struct.pack("<I", digest.vocab_size))
        parts.append(row)
    return b"".join(parts)


def decode_position_record(
        data: bytes) -> tuple[dict[str, Any], list[tuple[int, float]], bytes]:
    """(position, input_token, output_token, fields dict, top, full_row
    bytes); for tests and tools. ValueError on malformed input."""
    if len(data) < _HEAD.size or data[0] not in VERSIONS:
        raise ValueError("position record: truncated or unknown version")
    head = _HEAD.unpack_from(data, 0)
    names = ("version", "position", "input_token", "output_token",
             "vocab_size", "flags", "argmax", "logsumexp", "entropy",
             "hash_low", "hash_high", "target_id", "target_logit",
             "top_count")
    fields = dict(zip(names, head))
    offset = _HEAD.size
    top = []
    for _ in range(fields["top_count"]):
        top.append(_PAIR.unpack_from(data, offset))
        offset += _PAIR.size
    (count,) = struct.unpack_from("<I", data, offset)
    offset += 4
    full = data[offset:offset + 4 * count]
    if offset + 4 * count != len(data):
        raise ValueError("position record: %d trailing bytes"
                         % (len(data) - offset - 4 * count))
    return fields, top, full
