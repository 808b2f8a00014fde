"""A GGUF v3 writer (llama.cpp's format), field by field, little-endian, laid out like
orch's C++ writer (model/gguf_writer.cc, docs/models.md "The generated file"): metadata
in the caller's order with general.alignment (u32 32) appended last, tensor infos, zero
padding to a multiple of 32, then each tensor's data followed by zeros up to the next
multiple of 32.
"""
import struct

ALIGNMENT = 32
_MAGIC = b"GGUF"
_VERSION = 3
# Value types (gguf_type) and tensor types (ggml_type), the on-disk numbers.
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16 = 0, 1
_ELEMENT_BYTES = {GGML_F32: 4, GGML_F16: 2}


def _align(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _scalar(kind, value):
    if kind == U32:
        return struct.pack("<I", value)
    if kind == I32:
        return struct.pack("<i", value)
    if kind == F32:
        return struct.pack("<f", value)
    if kind == BOOL:
        return struct.pack("<B", 1 if value else 0)
    if kind == STRING:
        return _string(value)
    raise ValueError(f"unsupported gguf value type {kind}")


class Writer:
    def __init__(self):
        self._kv = []       # encoded pairs
        self._tensors = []  # (name, ne, ggml type, data bytes)

    def add(self, key, kind, value):
        self._kv.append(_string(key) + struct.pack("<I", kind) + _scalar(kind, value))

    def add_array(self, key, kind, values):
        body = b"".join(_scalar(kind, v) for v in values)
        self._kv.append(_string(key) + struct.pack("<II", ARRAY, kind) +
                        struct.pack("<Q", len(values)) + body)

    def add_tensor(self, name, ne, ggml_type, data):
        """`ne` in ggml order (ne[0] is a row's length); `data` the row-major bytes."""
        count = 1
        for n in ne:
            count *= n
        if len(data) != count * _ELEMENT_BYTES[ggml_type]:
            raise ValueError(f"{name}: {len(data)} bytes for ne {ne}")
        self._tensors.append((name, list(ne), ggml_type, data))

    def bytes(self):
        kv = self._kv + [_string("general.alignment") + struct.pack("<II", U32, ALIGNMENT)]
        out = bytearray(_MAGIC + struct.pack("<IQQ", _VERSION, len(self._tensors), len(kv)))
        for pair in kv:
            out += pair
        offset = 0
        for name, ne, ggml_type, data in self._tensors:
            out += _string(name) + struct.pack("<I", len(ne))
            out += struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", ggml_type, offset)
            offset = _align(offset + len(data))
        out += b"\0" * (_align(len(out)) - len(out))
        for _name, _ne, _type, data in self._tensors:
            out += data + b"\0" * (_align(len(data)) - len(data))
        return bytes(out)
