"""The SDK's digest pipeline (drivers/python/orch_driver/pipeline.py) and the
RecordSink on it: records byte-identical to digesting each row in turn and in
position order for 1, 2 and 4 workers, rows shorter than the pipeline's
threshold digested in turn, rows digested off the emitting thread,
at most max_in_flight rows out, the first failure in position order wins, and
the records emitted before an engine failure precede its error frame. The
digest is the real shared library ($ORCH_DIGEST_LIBRARY)."""

import array
import ctypes
import io
import json
import threading
import unittest

from orch_driver import digest, driver, frames, job, pipeline

VOCAB = 2000


def pseudo_row(seed, vocab=VOCAB):
    state = (seed + 1) * 2654435761 % 2**32
    row = array.array("f")
    for _ in range(vocab):
        state = (state * 1103515245 + 12345) % 2**31
        row.append((state / 2**31 - 0.5) * 20.0)
    if seed % 17 == 5:
        row[seed % vocab] = float("nan")
    return row


ROWS = [pseudo_row(p) for p in range(150)]
CAPTURE = job.parse_capture({"top_logits": 20, "full_every": 16, "full_windows": [[40, 42]]})


def sink_output(workers, borrow):
    """The record frames a sink writes for ROWS, and its counts. Rows pass
    through one reused buffer (copy path) or each in its own buffer with an
    owner (borrow path)."""
    out = io.BytesIO()
    writer = frames.FrameWriter(out)
    writer.hello({"engine": "test"})
    # Rows of VOCAB logits are below the pipeline's threshold: forced on.
    sink = driver.RecordSink(writer, digest.load(), CAPTURE, workers, min_pipelined_row=0)
    reused = (ctypes.c_float * VOCAB)()
    for p, row in enumerate(ROWS):
        target = (p * 7 + 1) % VOCAB if p + 1 < len(ROWS) else digest.NO_TARGET
        if borrow:
            owned = (ctypes.c_float * VOCAB)(*row)
            sink.emit(p, ctypes.addressof(owned), VOCAB, p % VOCAB, -1, target, owner=owned)
        else:
            ctypes.memmove(reused, row.tobytes(), 4 * VOCAB)
            sink.emit(p, ctypes.addressof(reused), VOCAB, p % VOCAB, -1, target)
            ctypes.memset(reused, 0, 4 * VOCAB)  # the engine overwrites its buffer
    sink.finish()
    return out.getvalue(), (sink.positions, sink.nan_rows, sink.first_nan_position,
                            sorted(sink.token_ids))


class FakeLibrary:
    """record_at as a function of position; `gate` (an Event) is waited on
    first, for at most a minute; `fail` maps positions to exceptions."""

    def __init__(self, gate=None, fail=None):
        self.gate = gate
        self.fail = fail or {}
        self.opened = 0
        self.lock = threading.Lock()

    def record_at(self, address, vocab, top_k, target, position, input_token,
                  output_token, full_row):
        if self.gate is not None and self.gate.wait(60):
            with self.lock:
                self.opened += 1
        if position in self.fail:
            raise self.fail[position]
        return (b"record %d" % position, 0, position)


class PipelineTest(unittest.TestCase):
    def test_records_are_byte_identical_and_in_order_for_1_2_4_workers(self):
        reference, counts = sink_output(0, borrow=False)
        self.assertEqual(counts[0], len(ROWS))
        self.assertGreater(counts[1], 0)  # NaN rows are among them
        for workers in (1, 2, 4):
            for borrow in (False, True):
                got, got_counts = sink_output(workers, borrow)
                self.assertEqual(got, reference, "%d workers, borrow %s" % (workers, borrow))
                self.assertEqual(got_counts, counts)

    def test_submit_returns_before_the_row_is_digested(self):
        gate = threading.Event()
        library = FakeLibrary(gate)
        written = []
        p = pipeline.DigestPipeline([library, library], library,
                                    lambda args, payload, flags, argmax: written.append(payload),
                                    max_in_flight=4)
        buffer = (ctypes.c_float * 4)()
        for position in range(2):
            p.submit(ctypes.addressof(buffer), 4, 20, -1, position, 0, -1, False)
        self.assertEqual(written, [])  # both rows are held at the gate
        gate.set()
        p.finish()
        self.assertEqual(written, [b"record 0", b"record 1"])
        self.assertEqual(library.opened, 2)  # none was digested before the gate opened

    def test_at_most_max_in_flight_rows_are_out_ahead_of_the_writer(self):
        for slots in (1, 2, 5):
            submitted = [0]
            ahead = [0]

            def write(args, payload, flags, argmax):
                ahead[0] = max(ahead[0], submitted[0] - args[4])

            library = FakeLibrary()
            p = pipeline.DigestPipeline([library, library], library, write, slots)
            buffer = (ctypes.c_float * 4)()
            for position in range(50):
                p.submit(ctypes.addressof(buffer), 4, 20, -1, position, 0, -1, False)
                submitted[0] += 1
            p.finish()
            self.assertLessEqual(ahead[0], slots)

    def test_first_failure_in_position_order_stops_the_stream(self):
        library = FakeLibrary(fail={7: digest.DigestFailed("row 7"),
                                    9: digest.DigestFailed("row 9")})
        written = []
        p = pipeline.DigestPipeline([library] * 4, library,
                                    lambda args, payload, flags, argmax: written.append(args[4]),
                                    max_in_flight=6)
        buffer = (ctypes.c_float * 4)()
        with self.assertRaisesRegex(digest.DigestFailed, "row 7"):
            for position in range(40):
                p.submit(ctypes.addressof(buffer), 4, 20, -1, position, 0, -1, False)
            p.finish()
        with self.assertRaisesRegex(digest.DigestFailed, "row 7"):
            p.finish()
        self.assertEqual(written, list(range(7)))

    def test_records_emitted_before_an_engine_failure_precede_its_error(self):
        class Failing(driver.Engine):
            family = "toy"
            driver_name = "orch-driver-toy"

            def hello(self, j):
                return {"engine": "toy", "version": "1"}

            def digest_workers(self, j):
                return 2

            def run(self, j, sink):
                for p in range(3):
                    row = (ctypes.c_float * 50)(*pseudo_row(p, 50))
                    sink.emit(p, ctypes.addressof(row), 50, 1, -1, -1)
                raise ZeroDivisionError("boom")

        doc = {"run_id": "r", "job_id": "j", "coordinate": {},
               "workload": {"name": "w", "kind": "teacher_forced", "positions": 3,
                            "tokens": [1, 2, 3]},
               "model": {"requirement": "synth:x", "path": "/m.gguf"},
               "requirements": {"engine": "toy@1"}}
        out = io.BytesIO()
        status = driver.run_job(Failing(), json.dumps(doc).encode(), frames.FrameWriter(out))
        self.assertEqual(status, 3)
        types = []
        stream = out.getvalue()
        while stream:
            length = int.from_bytes(stream[:4], "little")
            types.append(stream[4])
            stream = stream[5 + length:]
        self.assertEqual(types, [frames.HELLO, frames.RECORD, frames.RECORD, frames.RECORD,
                                 frames.ERROR])

    def test_short_rows_are_digested_in_turn_and_long_ones_on_workers(self):
        # emit returns the argmax of a row it digested at once, None for one
        # it queued; the threshold is pipeline.MIN_PIPELINED_ROW logits.
        for vocab, queued in ((VOCAB, False), (pipeline.MIN_PIPELINED_ROW, True)):
            writer = frames.FrameWriter(io.BytesIO())
            writer.hello({"engine": "test"})
            sink = driver.RecordSink(writer, digest.load(), CAPTURE, workers=2)
            row = (ctypes.c_float * vocab)(*pseudo_row(3, vocab))
            results = [sink.emit(p, ctypes.addressof(row), vocab, 1, -1) for p in range(3)]
            sink.finish()
            self.assertEqual(sink.positions, 3)
            if queued:
                self.assertEqual(results, [None, None, None])
            else:
                self.assertTrue(all(isinstance(r, int) for r in results), results)

    def test_workers_are_the_cores_the_engine_leaves_at_least_one(self):
        self.assertEqual(pipeline.workers_for(1, 2), 1)
        self.assertEqual(pipeline.workers_for(1, 8), 7)
        self.assertEqual(pipeline.workers_for(8, 8), 1)
        self.assertEqual(pipeline.workers_for(2, None), 1)
        self.assertEqual(pipeline.rows_in_flight(1), 4)
        self.assertEqual(pipeline.rows_in_flight(1000), 64)


if __name__ == "__main__":
    unittest.main()
