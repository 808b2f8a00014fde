"""Row digests on worker threads, records out in submission (position) order:
the Python twin of drivers/llamacpp/digest_pipeline.h.

The digest itself is the C library's (digest.py) called through ctypes, which
releases the GIL, so workers digest while the engine (torch, whose kernels also
release it) computes the next rows. Each thread has its own DigestLibrary
(they are not thread-safe). A record's bytes are those the row gives digested
on the calling thread: the same C code on the same row.

submit() either borrows the row (an `owner` object keeps its memory alive until
the record is out; nothing is copied) or copies it into a reused slot buffer.
At most `max_in_flight` rows are out: when all slots are taken, submit() waits
for the oldest, digesting queued rows itself (newest first) meanwhile, so once
the engine is idle the caller digests alongside the workers. `write` (the
record callback) runs on the calling thread only, in order.

The first failure in submission order (a digest's exception or write's)
stops the stream: later records are never written, and submit() and finish()
raise it from then on.
"""

import collections
import ctypes
import threading

_FREE, _QUEUED, _RUNNING, _DONE = range(4)


class _Slot:
    __slots__ = ("state", "args", "owner", "buffer", "result", "error")

    def __init__(self):
        self.state = _FREE
        self.args = None    # record_at's arguments
        self.owner = None   # keeps a borrowed row alive
        self.buffer = None  # the copied row
        self.result = None  # (payload, flags, argmax)
        self.error = None


def workers_for(engine_threads, cores):
    """Digest workers beside an engine running `engine_threads` threads on
    `cores` hardware threads (None or 0: unknown): the cores the engine
    leaves, at least 1."""
    return max(1, (cores or 0) - max(engine_threads, 0))


# Rows of fewer logits are digested in turn on the engine's thread: handing
# one to a worker (a lock, a wake-up, the GIL) costs more than its digest
# (drivers/llamacpp/digest_pipeline.h has the same threshold).
MIN_PIPELINED_ROW = 8192


def rows_in_flight(workers):
    return min(64, 2 * (max(workers, 1) + 1))


class DigestPipeline:
    def __init__(self, libraries, caller_library, write, max_in_flight):
        """`libraries`: one DigestLibrary per worker thread; `caller_library`
        the calling thread's; `write(args, payload, flags, argmax)` takes each
        record in order."""
        self._caller_library = caller_library
        self._write = write
        self._slots = [_Slot() for _ in range(max(1, max_in_flight))]
        self._cond = threading.Condition()
        self._queue = collections.deque()  # slot indexes, oldest first
        self._stopping = False
        self._submitted = 0
        self._emitted = 0
        self._failure = None
        self._threads = [threading.Thread(target=self._work, args=(library,),
                                          name="orch-digest-%d" % i, daemon=True)
                         for i, library in enumerate(libraries)]
        for thread in self._threads:
            thread.start()

    def submit(self, address, vocab_size, top_k, target_id, position,
               input_token, output_token, full_row, owner=None):
        """Queues one row: `vocab_size` float32 at `address`, borrowed while
        `owner` is not None, else copied before submit returns."""
        if self._failure is not None:
            raise self._failure
        if self._submitted - self._emitted == len(self._slots):
            self._emit_oldest()
        index = self._submitted % len(self._slots)
        slot = self._slots[index]  # free: no worker touches it
        if owner is None:
            size = 4 * vocab_size
            if slot.buffer is None or len(slot.buffer) < size:
                slot.buffer = ctypes.create_string_buffer(size)
            ctypes.memmove(slot.buffer, address, size)
            address = ctypes.addressof(slot.buffer)
        slot.owner = owner
        slot.args = (address, vocab_size, top_k, target_id, position,
                     input_token, output_token, full_row)
        with self._cond:
            slot.state = _QUEUED
            self._queue.append(index)
            self._cond.notify_all()
        self._submitted += 1
        self._emit_ready()

    def finish(self):
        """Writes every submitted record in order and stops the workers;
        raises the first failure."""
        try:
            while self._failure is None and self._emitted < self._submitted:
                self._emit_oldest()
        finally:
            self.close()
        if self._failure is not None:
            raise self._failure

    def close(self):
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()
        self._threads = []

    @staticmethod
    def _digest(slot, library):
        try:
            slot.result = library.record_at(*slot.args)
            slot.error = None
        except Exception as error:  # raised on the calling thread, in order
            slot.result = None
            slot.error = error

    def _work(self, library):
        with self._cond:
            while True:
                while not self._stopping and not self._queue:
                    self._cond.wait()
                if self._stopping:
                    return
                slot = self._slots[self._queue.popleft()]
                slot.state = _RUNNING
                self._cond.release()
                try:
                    self._digest(slot, library)
                finally:
                    self._cond.acquire()
                slot.state = _DONE
                self._cond.notify_all()

    def _emit_oldest(self):
        oldest = self._slots[self._emitted % len(self._slots)]
        with self._cond:
            while oldest.state != _DONE:
                if not self._queue:
                    self._cond.wait()
                    continue
                slot = self._slots[self._queue.pop()]  # the newest: workers take the oldest
                slot.state = _RUNNING
                self._cond.release()
                try:
                    self._digest(slot, self._caller_library)
                finally:
                    self._cond.acquire()
                slot.state = _DONE
        self._emit(oldest)

    def _emit_ready(self):
        while self._emitted < self._submitted:
            oldest = self._slots[self._emitted % len(self._slots)]
            with self._cond:
                if oldest.state != _DONE:
                    return
            self._emit(oldest)

    def _emit(self, slot):
        try:
            if slot.error is not None:
                raise slot.error
            payload, flags, argmax = slot.result
            self._write(slot.args, payload, flags, argmax)
        except Exception as error:
            self._failure = error
            raise
        finally:
            slot.owner = None
            slot.result = None
            with self._cond:
                slot.state = _FREE
            self._emitted += 1
