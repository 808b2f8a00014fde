"""The per-position digest, computed by the project's digest library through
its C ABI (digest/orch_digest.h) so that every engine's digests come from the
same code.

The shared library (liborchdigest.so.ABI) is found, in this order, at
  1. $ORCH_DIGEST_LIBRARY (a file);
  2. next to or under the driver's install prefix: ../ when the running
     program (sys.argv[0]) is in PREFIX/lib/orch/drivers/ (the packages), then
     ../lib/orch/, ../lib/*/orch/ and ../lib/ relative to its folder;
  3. the build trees of a source checkout: build*/digest/ above this package,
     build/ (the one the README makes) first, then the others by name (a
     debug or sanitizer tree, slower, never shadows it).
LibraryNotFound names every place it looked.
"""

import ctypes
import glob
import math
import os
import struct
import sys

ABI_VERSION = 1
LIBRARY_NAME = "liborchdigest.so.%d" % ABI_VERSION

OK = 0
STATUS_NAMES = {0: "OK", 1: "INVALID_ARGUMENT", 2: "BUFFER_TOO_SMALL",
                3: "NULL_POINTER", 4: "INTERNAL"}

# Digest versions (digest/orch_digest.h ORCH_DIGEST_VERSION_*): how logsumexp
# and entropy are computed; a position record's version byte is its digest's.
DIGEST_VERSION_1 = 1
DIGEST_VERSION_2 = 2
CURRENT_DIGEST_VERSION = DIGEST_VERSION_2

# Row flags (digest/orch_digest.h). The first three say why a row is not a
# distribution; the last two say what kind of row was digested.
ROW_HAS_NAN = 1
ROW_HAS_POS_INF = 2
ROW_NO_FINITE_LOGIT = 4
ROW_TOP_K_ONLY = 8    # a server's returned top-k log-probabilities, not the full row
ROW_PROCESSED = 16    # with ROW_TOP_K_ONLY: values after the server's sampling transforms
ROW_NOT_DISTRIBUTION = ROW_HAS_NAN | ROW_HAS_POS_INF | ROW_NO_FINITE_LOGIT
NO_TARGET = -1
DEFAULT_TOP_K = 20
MAX_TOP_K = 1024


class LibraryNotFound(RuntimeError):
    pass


class DigestFailed(RuntimeError):
    pass


class _TokenLogit(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("logit", ctypes.c_float)]


class _RowDigest(ctypes.Structure):
    _fields_ = [("vocab_size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("argmax", ctypes.c_int32), ("top_count", ctypes.c_uint32),
                ("logsumexp", ctypes.c_double), ("entropy", ctypes.c_double),
                ("hash_low", ctypes.c_uint64), ("hash_high", ctypes.c_uint64),
                ("target_id", ctypes.c_int32), ("target_logit", ctypes.c_float)]


assert ctypes.sizeof(_RowDigest) == 56
assert sys.byteorder == "little"  # the record layout and the C rows are both host order

_RECORD_HEAD = struct.Struct("<BQiiIIiddQQifI")  # records.py
_U32 = struct.Struct("<I")
_ZERO = _U32.pack(0)
assert ctypes.sizeof(_TokenLogit) == 8


class RowDigest:
    """One row's digest (digest/row_digest.h RowDigest)."""

    __slots__ = ("vocab_size", "flags", "argmax", "logsumexp", "entropy",
                 "hash_low", "hash_high", "target_id", "target_logit", "top",
                 "version")

    def __init__(self, vocab_size, flags, argmax, logsumexp, entropy,
                 hash_low, hash_high, target_id, target_logit, top,
                 version=CURRENT_DIGEST_VERSION):
        self.vocab_size = vocab_size
        self.flags = flags
        self.argmax = argmax
        self.logsumexp = logsumexp
        self.entropy = entropy
        self.hash_low = hash_low
        self.hash_high = hash_high
        self.target_id = target_id
        self.target_logit = target_logit
        self.top = top  # [(id, logit), ...], best first
        self.version = version  # DIGEST_VERSION_*

    def is_distribution(self):
        """No NaN, no +inf, a finite value; a top-k-only row is one."""
        return self.flags & ROW_NOT_DISTRIBUTION == 0

    def is_top_k_only(self):
        return self.flags & ROW_TOP_K_ONLY != 0

    def __eq__(self, other):
        if not isinstance(other, RowDigest):
            return NotImplemented
        return all(_same(getattr(self, f), getattr(other, f))
                   for f in self.__slots__)

    def __repr__(self):
        return "RowDigest(argmax=%d, hash=%016x%016x, flags=%d)" % (
            self.argmax, self.hash_high, self.hash_low, self.flags)


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def candidate_paths(argv0=None, root=None):
    """Where the library is looked for, in order (see the module comment).
    `root`: the source checkout (default: the one holding this package)."""
    paths = []
    explicit = os.environ.get("ORCH_DIGEST_LIBRARY")
    if explicit:
        paths.append(explicit)
    program = argv0 if argv0 is not None else (sys.argv[0] if sys.argv else "")
    if program:
        bindir = os.path.dirname(os.path.realpath(program))
        prefix = os.path.dirname(bindir)
        if os.path.basename(bindir) == "drivers":  # PREFIX/lib/orch/drivers (the packages)
            paths.append(os.path.join(prefix, LIBRARY_NAME))
        paths.append(os.path.join(prefix, "lib", "orch", LIBRARY_NAME))
        paths.extend(sorted(glob.glob(os.path.join(prefix, "lib", "*", "orch",
                                                   LIBRARY_NAME))))
        paths.append(os.path.join(prefix, "lib", LIBRARY_NAME))
    if root is None:
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    trees = glob.glob(os.path.join(root, "build*", "digest", LIBRARY_NAME))
    # "build-asan" sorts before "build/" by bytes ('-' < '/'): order by the tree's name.
    paths.extend(sorted(trees, key=lambda p: (
        os.path.basename(os.path.dirname(os.path.dirname(p))) != "build", p)))
    return paths


class DigestLibrary:
    """liborchdigest loaded through ctypes."""

    def __init__(self, path):
        self.path = path
        lib = ctypes.CDLL(path)
        lib.orch_digest_abi_version.restype = ctypes.c_uint32
        lib.orch_digest_abi_version.argtypes = []
        lib.orch_digest_status_name.restype = ctypes.c_char_p
        lib.orch_digest_status_name.argtypes = [ctypes.c_int32]
        try:  # libraries before digest v2 lack it: "not found" below
            row_versioned = lib.orch_digest_row_versioned
        except AttributeError as error:
            raise OSError("no orch_digest_row_versioned (a library older "
                          "than digest v2)") from error
        row_versioned.restype = ctypes.c_int32
        row_versioned.argtypes = [
            ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64,
            ctypes.c_uint32, ctypes.c_int32, ctypes.POINTER(_TokenLogit),
            ctypes.c_uint32, ctypes.POINTER(_RowDigest)]
        # Added without an ABI bump: a library from before top-k rows lacks
        # it, and digest_top_logprobs says so.
        self._top_logprobs = getattr(lib, "orch_digest_top_logprobs", None)
        if self._top_logprobs is not None:
            self._top_logprobs.restype = ctypes.c_int32
            self._top_logprobs.argtypes = [
                ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32),
                ctypes.POINTER(ctypes.c_float), ctypes.c_uint32, ctypes.c_uint64,
                ctypes.c_int32, ctypes.c_float, ctypes.c_uint32,
                ctypes.POINTER(_TokenLogit), ctypes.c_uint32,
                ctypes.POINTER(_RowDigest)]
        lib.orch_digest_kl_divergence_exact.restype = ctypes.c_int32
        lib.orch_digest_kl_divergence_exact.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
            ctypes.POINTER(ctypes.c_double)]
        abi = lib.orch_digest_abi_version()
        if abi != ABI_VERSION:
            raise LibraryNotFound("%s has digest ABI %d; this SDK speaks %d"
                                  % (path, abi, ABI_VERSION))
        self._lib = lib
        self._top = (_TokenLogit * MAX_TOP_K)()
        self._out = _RowDigest()

    def status_name(self, status):
        return self._lib.orch_digest_status_name(status).decode()

    def _digest(self, address, vocab_size, top_k, target_id, version):
        status = self._lib.orch_digest_row_versioned(
            version, ctypes.c_void_p(address), vocab_size, top_k, target_id,
            self._top, MAX_TOP_K, ctypes.byref(self._out))
        if status != OK:
            raise DigestFailed(
                "orch_digest_row_versioned(version %d, vocab %d, top_k %d, "
                "target %d): %s" % (version, vocab_size, top_k, target_id,
                                    self.status_name(status)))
        return self._out

    def digest_address(self, address, vocab_size, top_k=DEFAULT_TOP_K,
                       target_id=NO_TARGET, version=CURRENT_DIGEST_VERSION):
        """Digests `vocab_size` float32 values at memory `address` (e.g. a
        contiguous CPU tensor's data_ptr()). Not thread-safe: one
        DigestLibrary per thread."""
        o = self._digest(address, vocab_size, top_k, target_id, version)
        top = [(self._top[i].id, self._top[i].logit) for i in range(o.top_count)]
        return RowDigest(o.vocab_size, o.flags, o.argmax, o.logsumexp,
                         o.entropy, o.hash_low, o.hash_high, o.target_id,
                         o.target_logit, top, version)

    def record_at(self, address, vocab_size, top_k, target_id, position,
                  input_token, output_token, full_row):
        """The position record (records.py) of the row at `address`, digest
        version CURRENT_DIGEST_VERSION, encoded straight from the C structs:
        (bytes, flags, argmax). The hot path of a driver: no Python objects
        per top-k entry."""
        o = self._digest(address, vocab_size, top_k, target_id,
                         CURRENT_DIGEST_VERSION)
        # orch_token_logit is {i32 id, f32 logit}: the record's pair layout.
        parts = [_RECORD_HEAD.pack(CURRENT_DIGEST_VERSION, position,
                                   input_token, output_token,
                                   o.vocab_size, o.flags, o.argmax, o.logsumexp,
                                   o.entropy, o.hash_low, o.hash_high,
                                   o.target_id, o.target_logit, o.top_count),
                 ctypes.string_at(self._top, 8 * o.top_count)]
        if full_row:
            parts.append(_U32.pack(vocab_size))
            parts.append(ctypes.string_at(address, 4 * vocab_size))
        else:
            parts.append(_ZERO)
        return b"".join(parts), o.flags, o.argmax

    def digest_top_logprobs(self, ids, logprobs, vocab_size=0,
                            target_id=NO_TARGET, target_logprob=float("nan"),
                            extra_flags=0, version=CURRENT_DIGEST_VERSION):
        """The digest of a top-k-only row: the `ids` a server returned for
        one position with their `logprobs` (same length, any order). Flagged
        ROW_TOP_K_ONLY (| `extra_flags`: 0 or ROW_PROCESSED); top sorted by
        value descending, ties by lower id; logsumexp 0, entropy NaN; the hash
        is of the sorted (id, value) pairs. `vocab_size` 0: unknown.
        `target_logprob` NaN: the server did not return the target's.
        DigestFailed (naming the status) on a repeated id, k of 0 or above
        MAX_TOP_K, an id or target outside a known vocabulary."""
        if self._top_logprobs is None:
            raise DigestFailed("%s has no orch_digest_top_logprobs (a library "
                               "older than top-k rows)" % self.path)
        k = len(ids)
        if len(logprobs) != k:
            raise DigestFailed("top logprobs: %d ids but %d log-probabilities"
                               % (k, len(logprobs)))
        id_array = (ctypes.c_int32 * max(k, 1))(*ids)
        value_array = (ctypes.c_float * max(k, 1))(*logprobs)
        status = self._top_logprobs(
            version, id_array, value_array, k, vocab_size, target_id,
            target_logprob, extra_flags, self._top, MAX_TOP_K,
            ctypes.byref(self._out))
        if status != OK:
            raise DigestFailed(
                "orch_digest_top_logprobs(version %d, k %d, vocab %d, target %d, "
                "extra flags %d): %s" % (version, k, vocab_size, target_id,
                                         extra_flags, self.status_name(status)))
        o = self._out
        top = [(self._top[i].id, self._top[i].logit) for i in range(o.top_count)]
        return RowDigest(o.vocab_size, o.flags, o.argmax, o.logsumexp,
                         o.entropy, o.hash_low, o.hash_high, o.target_id,
                         o.target_logit, top, version)

    def digest_row(self, row, top_k=DEFAULT_TOP_K, target_id=NO_TARGET,
                   version=CURRENT_DIGEST_VERSION):
        """Digests a row given as bytes-like float32 data (array('f'),
        bytes) or a sequence of floats."""
        data = _float32_buffer(row)
        count = len(data) // 4
        buf = (ctypes.c_char * len(data)).from_buffer_copy(data)
        return self.digest_address(ctypes.addressof(buf), count, top_k,
                                   target_id, version)

    def kl_divergence(self, p_row, q_row):
        p = _float32_buffer(p_row)
        q = _float32_buffer(q_row)
        if len(p) != len(q):
            raise DigestFailed("KL of rows of %d and %d values"
                               % (len(p) // 4, len(q) // 4))
        pb = (ctypes.c_char * len(p)).from_buffer_copy(p)
        qb = (ctypes.c_char * len(q)).from_buffer_copy(q)
        out = ctypes.c_double()
        status = self._lib.orch_digest_kl_divergence_exact(
            ctypes.addressof(pb), ctypes.addressof(qb), len(p) // 4,
            ctypes.byref(out))
        if status != OK:
            raise DigestFailed("orch_digest_kl_divergence_exact: %s"
                               % self.status_name(status))
        return out.value


def _float32_buffer(row):
    import array
    if isinstance(row, (bytes, bytearray)):
        return bytes(row)
    if isinstance(row, memoryview):
        return row.cast("B").tobytes()
    if isinstance(row, array.array) and row.typecode == "f":
        return row.tobytes()
    return array.array("f", row).tobytes()


def load(argv0=None, paths=None):
    """The first loadable library of `paths` (default: candidate_paths());
    LibraryNotFound names every place looked at and why each failed."""
    tried = []
    for path in candidate_paths(argv0) if paths is None else paths:
        if not os.path.isfile(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            return DigestLibrary(path)
        except OSError as error:  # not loadable, or older than digest v2
            tried.append("%s (%s)" % (path, error))
    raise LibraryNotFound(
        "the digest library %s was not found; set ORCH_DIGEST_LIBRARY to its "
        "path, install it to PREFIX/lib/orch/, or build the orch_digest_c "
        "target; looked at: %s" % (LIBRARY_NAME, "; ".join(tried) or "nothing"))
