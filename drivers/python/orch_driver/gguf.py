"""A GGUF v2/v3 reader (metadata and tensor layout), standard library only.

Tensor data is not read here: GgufFile gives each tensor's ggml type, shape
(ggml `ne` order: ne[0] is the innermost, contiguous dimension) and absolute
file offset, for the engine to map or read. Errors are ValueError naming the
file and what is wrong.
"""

import struct

# ggml types: id -> (name, block elements, block bytes)
GGML_TYPES = {
    0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20),
    6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34),
    9: ("q8_1", 32, 36), 10: ("q2_k", 256, 84), 11: ("q3_k", 256, 110),
    12: ("q4_k", 256, 144), 13: ("q5_k", 256, 176), 14: ("q6_k", 256, 210),
    15: ("q8_k", 256, 292), 20: ("iq4_nl", 32, 18), 24: ("i8", 1, 1),
    25: ("i16", 1, 2), 26: ("i32", 1, 4), 27: ("i64", 1, 8), 28: ("f64", 1, 8),
    30: ("bf16", 1, 2),
}

# general.file_type (llama_ftype) -> weight type name
FILE_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0",
              9: "q5_1", 10: "q2_k", 11: "q3_k_s", 12: "q3_k_m",
              13: "q3_k_l", 14: "q4_k_s", 15: "q4_k_m", 16: "q5_k_s",
              17: "q5_k_m", 18: "q6_k", 25: "iq4_nl", 30: "iq4_xs",
              32: "bf16"}

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
            7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class TensorInfo:
    __slots__ = ("name", "shape", "type_id", "offset", "nbytes")

    def __init__(self, name, shape, type_id, offset, nbytes):
        self.name = name
        self.shape = shape      # ne order
        self.type_id = type_id
        self.offset = offset    # absolute, in the file
        self.nbytes = nbytes

    @property
    def type_name(self):
        return GGML_TYPES[self.type_id][0]

    @property
    def elements(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


class _Reader:
    def __init__(self, data, path):
        self.data = data
        self.pos = 0
        self.path = path

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("%s: truncated GGUF header at byte %d"
                             % (self.path, self.pos))
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise ValueError("%s: truncated GGUF string at byte %d"
                             % (self.path, self.pos))
        raw = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="surrogateescape")

    def _strings(self, n):
        """n strings in a row (a vocabulary): the hot path of reading a
        model's metadata."""
        data, pos, size = self.data, self.pos, len(self.data)
        unpack = struct.Struct("<Q").unpack_from
        out = []
        for _ in range(n):
            if pos + 8 > size:
                raise ValueError("%s: truncated GGUF string array" % self.path)
            (length,) = unpack(data, pos)
            pos += 8
            if pos + length > size:
                raise ValueError("%s: truncated GGUF string array" % self.path)
            out.append(data[pos:pos + length].decode("utf-8", errors="surrogateescape"))
            pos += length
        self.pos = pos
        return out

    def value(self, type_id):
        if type_id in _SCALARS:
            return self.take(_SCALARS[type_id])
        if type_id == _STRING:
            return self.string()
        if type_id == _ARRAY:
            item = self.take("<I")
            n = self.take("<Q")
            if item in _SCALARS:
                fmt = _SCALARS[item]
                size = struct.calcsize(fmt)
                end = self.pos + n * size
                if end > len(self.data):
                    raise ValueError("%s: truncated GGUF array" % self.path)
                values = list(struct.unpack_from("<%d%s" % (n, fmt[1]),
                                                 self.data, self.pos))
                self.pos = end
                return values
            if item == _STRING:
                return self._strings(n)
            return [self.value(item) for _ in range(n)]
        raise ValueError("%s: unknown GGUF value type %d" % (self.path, type_id))


class GgufFile:
    """The metadata (`kv`, a dict) and tensor table (`tensors`, name ->
    TensorInfo) of a GGUF file. `data` is the file's bytes (an mmap or
    bytes)."""

    def __init__(self, path, data):
        self.path = path
        r = _Reader(data, path)
        if bytes(data[:4]) != b"GGUF":
            raise ValueError("%s is not a GGUF file (no GGUF magic)" % path)
        r.pos = 4
        self.version = r.take("<I")
        if self.version not in (2, 3):
            raise ValueError("%s: GGUF version %d is not supported (2 or 3)"
                             % (path, self.version))
        n_tensors = r.take("<Q")
        n_kv = r.take("<Q")
        self.kv = {}
        for _ in range(n_kv):
            key = r.string()
            self.kv[key] = r.value(r.take("<I"))
        alignment = self.kv.get("general.alignment", 32)
        infos = []
        for _ in range(n_tensors):
            name = r.string()
            dims = r.take("<I")
            shape = [r.take("<Q") for _ in range(dims)]
            type_id = r.take("<I")
            offset = r.take("<Q")
            infos.append((name, shape, type_id, offset))
        start = (r.pos + alignment - 1) // alignment * alignment
        self.tensors = {}
        for name, shape, type_id, offset in infos:
            if type_id not in GGML_TYPES:
                raise ValueError("%s: tensor %s has unknown ggml type %d"
                                 % (path, name, type_id))
            _, block, block_bytes = GGML_TYPES[type_id]
            n = 1
            for d in shape:
                n *= d
            nbytes = n // block * block_bytes
            if start + offset + nbytes > len(data):
                raise ValueError("%s: tensor %s runs past the end of the file"
                                 % (path, name))
            self.tensors[name] = TensorInfo(name, shape, type_id,
                                            start + offset, nbytes)

    def get(self, key, default=None):
        return self.kv.get(key, default)

    def require(self, key):
        if key not in self.kv:
            raise ValueError("%s: metadata %s is missing" % (self.path, key))
        return self.kv[key]

    def file_type(self):
        """The weight type name from general.file_type, or "" when absent."""
        ft = self.kv.get("general.file_type")
        return FILE_TYPES.get(ft, "") if isinstance(ft, int) else ""


def open_gguf(path):
    """(GgufFile, mmap) of `path`; the mmap stays open for tensor reads."""
    import mmap
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return GgufFile(path, mapped), mapped
