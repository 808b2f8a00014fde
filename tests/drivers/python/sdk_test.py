"""Tests of the Python driver SDK (drivers/python/orch_driver) against the
C++ side of the driver protocol: the agent's frame parser and the digest
library, run through orch-frame-check ($ORCH_FRAME_CHECK), and the shared
digest library ($ORCH_DIGEST_LIBRARY)."""

import array
import ctypes
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

from orch_driver import axes, bpe, chat, digest, driver, errors, frames, gguf, job, records


def frame_check(stream):
    out = subprocess.run([os.environ["ORCH_FRAME_CHECK"]], input=stream,
                         stdout=subprocess.PIPE, check=True)
    return json.loads(out.stdout)


def pseudo_row(seed, vocab):
    state = seed * 2654435761 % 2**32
    row = array.array("f")
    for _ in range(vocab):
        state = (state * 1103515245 + 12345) % 2**31
        row.append((state / 2**31 - 0.5) * 20.0)
    return row


class FramesTest(unittest.TestCase):
    def test_split_frames_reads_whole_frames_and_counts_the_rest(self):
        data = (frames.encode_frame(frames.HELLO, "{}") + frames.encode_frame(frames.RECORD, b"ab")
                + frames.encode_frame(frames.DONE, "{}"))
        self.assertEqual(frames.split_frames(data),
                         ([(frames.HELLO, b"{}"), (frames.RECORD, b"ab"), (frames.DONE, b"{}")], 0))
        # Cut inside the last frame's payload, then inside a header.
        self.assertEqual(frames.split_frames(data[:-1]),
                         ([(frames.HELLO, b"{}"), (frames.RECORD, b"ab")], 6))
        self.assertEqual(frames.split_frames(data[:3]), ([], 3))

    def test_split_job_streams_ends_each_job_at_its_done_or_error(self):
        first = frames.encode_frame(frames.HELLO, "{}") + frames.encode_frame(frames.DONE, "{}")
        second = (frames.encode_frame(frames.HELLO, "{}") +
                  frames.encode_frame(frames.ERROR, '{"code":"x"}'))
        rest = frames.encode_frame(frames.HELLO, "{}")
        self.assertEqual(frames.split_job_streams(first + second + rest),
                         ([first, second], rest))

    def test_frame_is_length_type_payload_little_endian(self):
        self.assertEqual(frames.encode_frame(frames.DONE, b"{}"),
                         b"\x02\x00\x00\x00\x03{}")
        self.assertEqual(frames.encode_frame(frames.HELLO, "é"),
                         b"\x02\x00\x00\x00\x01\xc3\xa9")

    def test_payload_over_the_limit_is_refused(self):
        with self.assertRaisesRegex(ValueError, "over the 16777216-byte limit"):
            frames.encode_frame(frames.RECORD, bytes(frames.MAX_PAYLOAD + 1))

    def test_unknown_type_is_refused(self):
        with self.assertRaisesRegex(ValueError, "unknown frame type 5"):
            frames.encode_frame(5, b"")

    def test_writer_keeps_protocol_order(self):
        writer = frames.FrameWriter(io.BytesIO())
        with self.assertRaisesRegex(RuntimeError, "record frame while the stream is start"):
            writer.record(b"x")
        writer.hello({"engine": "e"})
        with self.assertRaisesRegex(RuntimeError, "hello frame while the stream is open"):
            writer.hello({"engine": "e"})
        writer.done({"positions": 0})
        with self.assertRaisesRegex(RuntimeError, "error frame while the stream is closed"):
            writer.error("engine_error", "late")

    def test_cpp_parser_reads_the_stream_byte_for_byte(self):
        lib = digest.load()
        out = io.BytesIO()
        writer = frames.FrameWriter(out, flush_every=2)
        writer.hello({"engine": "test", "version": "1"})
        for position in range(5):
            row = pseudo_row(position, 300)
            d = lib.digest_row(row, top_k=7, target_id=position)
            full = row.tobytes() if position % 2 == 0 else None
            writer.record(records.encode_position_record(position, 10 + position, -1, d, full))
        writer.done({"positions": 5})
        checked = frame_check(out.getvalue())
        self.assertEqual(checked["stream_error"], "")
        self.assertTrue(checked["reencoded_stream_equal"])
        self.assertEqual([f["type"] for f in checked["frames"]], [1, 2, 2, 2, 2, 2, 3])
        self.assertEqual(json.loads(checked["frames"][0]["payload"]),
                         {"engine": "test", "version": "1"})
        recs = checked["records"]
        self.assertEqual([r["position"] for r in recs], [0, 1, 2, 3, 4])
        self.assertEqual([r["input_token"] for r in recs], [10, 11, 12, 13, 14])
        self.assertTrue(all(r["reencoded_equal"] for r in recs))
        self.assertEqual([r["full_row"] for r in recs], [300, 0, 300, 0, 300])
        self.assertEqual([r["top_count"] for r in recs], [7] * 5)

    def test_cpp_parser_names_a_truncated_stream(self):
        stream = frames.encode_frame(frames.HELLO, b"{}") + b"\x05\x00"
        self.assertNotEqual(frame_check(stream)["stream_error"], "")


class DigestTest(unittest.TestCase):
    def setUp(self):
        self.lib = digest.load()

    def stream_of(self, rows, top_k, targets):
        out = io.BytesIO()
        writer = frames.FrameWriter(out)
        writer.hello({"engine": "test"})
        digests = []
        for position, (row, target) in enumerate(zip(rows, targets)):
            d = self.lib.digest_row(row, top_k=top_k, target_id=target)
            digests.append(d)
            writer.record(records.encode_position_record(position, 0, -1, d, row.tobytes()))
        writer.done({})
        return frame_check(out.getvalue()), digests

    def test_digests_equal_the_cpp_library_for_the_same_rows(self):
        rows = [pseudo_row(seed, vocab) for seed, vocab in ((1, 1024), (2, 5), (3, 32000))]
        checked, digests = self.stream_of(rows, 20, [3, -1, 31999])
        self.assertEqual([r["digest_equal"] for r in checked["records"]], [True] * 3)
        self.assertEqual([r["hash"] for r in checked["records"]],
                         ["%016x%016x" % (d.hash_high, d.hash_low) for d in digests])

    def test_v1_and_v2_digests_each_match_the_cpp_library_of_their_version(self):
        row = pseudo_row(7, 32000)
        digests = [self.lib.digest_row(row, top_k=20, target_id=5, version=v)
                   for v in (digest.DIGEST_VERSION_1, digest.DIGEST_VERSION_2)]
        out = io.BytesIO()
        writer = frames.FrameWriter(out)
        writer.hello({})
        for position, d in enumerate(digests):
            writer.record(records.encode_position_record(position, 0, -1, d, row.tobytes()))
        writer.done({})
        recs = frame_check(out.getvalue())["records"]
        self.assertEqual([(r["version"], r["digest_equal"]) for r in recs],
                         [(1, True), (2, True)])
        v1, v2 = digests
        self.assertEqual((v1.hash_low, v1.hash_high, v1.argmax, v1.top),
                         (v2.hash_low, v2.hash_high, v2.argmax, v2.top))
        self.assertAlmostEqual(v1.logsumexp, v2.logsumexp, delta=2e-6)

    def test_driver_records_carry_the_current_digest_version(self):
        row = pseudo_row(8, 100)
        buf = (ctypes.c_char * len(row.tobytes())).from_buffer_copy(row.tobytes())
        data, _, _ = self.lib.record_at(ctypes.addressof(buf), 100, 20, -1, 0, 0, -1, False)
        self.assertEqual(data[0], digest.CURRENT_DIGEST_VERSION)
        self.assertEqual(digest.CURRENT_DIGEST_VERSION, 2)

    def test_a_changed_digest_field_is_caught_by_the_cpp_check(self):
        row = pseudo_row(4, 64)
        d = self.lib.digest_row(row, top_k=5)
        d.argmax = (d.argmax + 1) % 64
        out = io.BytesIO()
        writer = frames.FrameWriter(out)
        writer.hello({})
        writer.record(records.encode_position_record(0, 0, -1, d, row.tobytes()))
        writer.done({})
        self.assertEqual(frame_check(out.getvalue())["records"][0]["digest_equal"], False)

    def test_nan_row_is_flagged_not_rejected(self):
        d = self.lib.digest_row([1.0, float("nan"), 2.0])
        self.assertEqual(d.flags & digest.ROW_HAS_NAN, digest.ROW_HAS_NAN)
        self.assertFalse(d.is_distribution())
        self.assertTrue(math.isnan(d.logsumexp))
        self.assertEqual(d.argmax, 2)

    def test_argmax_ties_go_to_the_lower_id_and_top_is_best_first(self):
        d = self.lib.digest_row([1.0, 5.0, 5.0, 2.0], top_k=3, target_id=3)
        self.assertEqual(d.argmax, 1)
        self.assertEqual(d.top, [(1, 5.0), (2, 5.0), (3, 2.0)])
        self.assertEqual((d.target_id, d.target_logit), (3, 2.0))

    def test_invalid_arguments_are_errors_naming_the_status(self):
        with self.assertRaisesRegex(digest.DigestFailed, "INVALID_ARGUMENT"):
            self.lib.digest_row([1.0, 2.0], target_id=2)
        with self.assertRaisesRegex(digest.DigestFailed, "INVALID_ARGUMENT"):
            self.lib.digest_row([])

    def test_kl_divergence_of_a_row_with_itself_is_zero(self):
        row = pseudo_row(5, 100)
        self.assertEqual(self.lib.kl_divergence(row, row), 0.0)
        self.assertGreater(self.lib.kl_divergence(row, pseudo_row(6, 100)), 0.0)

    def test_library_is_looked_up_env_first_then_install_prefix_then_build_tree(self):
        with tempfile.TemporaryDirectory() as prefix:
            saved = os.environ.get("ORCH_DIGEST_LIBRARY")
            os.environ["ORCH_DIGEST_LIBRARY"] = "/nonexistent/liborchdigest.so.1"
            try:
                program = os.path.join(prefix, "bin", "orch-driver-x")
                paths = digest.candidate_paths(program)
                self.assertEqual(paths[0], "/nonexistent/liborchdigest.so.1")
                self.assertEqual(paths[1], os.path.join(os.path.realpath(prefix), "lib",
                                                        "orch", "liborchdigest.so.1"))
                self.assertTrue(any("/digest/liborchdigest.so.1" in p and "build" in p
                                    for p in paths[2:]))
                # The environment's file is missing, so the next candidate loads.
                self.assertNotEqual(digest.load(program).path, paths[0])
            finally:
                if saved is None:
                    del os.environ["ORCH_DIGEST_LIBRARY"]
                else:
                    os.environ["ORCH_DIGEST_LIBRARY"] = saved

    def test_the_readme_build_tree_comes_before_other_build_trees(self):
        # A debug or sanitizer tree ("build-asan" sorts before "build/" by bytes) must not
        # shadow the optimised one.
        with tempfile.TemporaryDirectory() as root:
            for tree in ("build-asan", "build", "build-release"):
                os.makedirs(os.path.join(root, tree, "digest"))
                open(os.path.join(root, tree, "digest", "liborchdigest.so.1"), "w").close()
            saved = os.environ.pop("ORCH_DIGEST_LIBRARY", None)
            try:
                paths = digest.candidate_paths("", root=root)
            finally:
                if saved is not None:
                    os.environ["ORCH_DIGEST_LIBRARY"] = saved
            self.assertEqual([os.path.basename(os.path.dirname(os.path.dirname(p)))
                              for p in paths], ["build", "build-asan", "build-release"])

    def test_a_driver_installed_in_lib_orch_drivers_finds_the_library_beside_it(self):
        # The packages: PREFIX/lib/orch/drivers/orch-driver-torch, PREFIX/lib/orch/liborchdigest.
        with tempfile.TemporaryDirectory() as prefix:
            program = os.path.join(prefix, "lib", "orch", "drivers", "orch-driver-x")
            saved = os.environ.pop("ORCH_DIGEST_LIBRARY", None)
            try:
                paths = digest.candidate_paths(program)
            finally:
                if saved is not None:
                    os.environ["ORCH_DIGEST_LIBRARY"] = saved
            expected = os.path.join(os.path.realpath(prefix), "lib", "orch", "liborchdigest.so.1")
            self.assertIn(expected, paths)
            self.assertLess(paths.index(expected), min(
                i for i, p in enumerate(paths) if "/digest/liborchdigest" in p))

    def test_library_not_found_names_where_it_looked(self):
        with self.assertRaises(digest.LibraryNotFound) as caught:
            digest.load(paths=["/nonexistent/a.so", "/nonexistent/b.so"])
        message = str(caught.exception)
        self.assertIn("ORCH_DIGEST_LIBRARY", message)
        self.assertIn("/nonexistent/a.so (no such file)", message)
        self.assertIn("/nonexistent/b.so (no such file)", message)


class TopLogprobsTest(unittest.TestCase):
    """Top-k-only rows (a server's returned log-probabilities) through the SDK,
    checked byte for byte against the C++ digest and record codec."""

    def setUp(self):
        self.lib = digest.load()

    def sink(self, workers=0):
        out = io.BytesIO()
        writer = frames.FrameWriter(out)
        writer.hello({"engine": "test"})
        return out, writer, driver.RecordSink(writer, self.lib, job.Capture(top_logits=3),
                                              workers, min_pipelined_row=1)

    def test_digest_is_sorted_flagged_and_equal_to_the_cpp_library_byte_for_byte(self):
        nan = float("nan")
        digests = [
            self.lib.digest_top_logprobs([7, 2, 9], [-2.0, -0.25, -2.0], vocab_size=10,
                                         target_id=4),
            self.lib.digest_top_logprobs([1, 3], [-0.5, -1.5], target_id=3,
                                         extra_flags=digest.ROW_PROCESSED),
            self.lib.digest_top_logprobs([0, 5], [nan, -3.0], vocab_size=6),
        ]
        first, processed, with_nan = digests
        self.assertEqual(first.top, [(2, -0.25), (7, -2.0), (9, -2.0)])
        self.assertEqual((first.argmax, first.flags, first.logsumexp, first.vocab_size),
                         (2, digest.ROW_TOP_K_ONLY, 0.0, 10))
        self.assertTrue(math.isnan(first.entropy))
        self.assertTrue(math.isnan(first.target_logit))  # target 4 was not returned
        self.assertTrue(first.is_distribution() and first.is_top_k_only())
        self.assertEqual(processed.flags, digest.ROW_TOP_K_ONLY | digest.ROW_PROCESSED)
        self.assertEqual(processed.target_logit, -1.5)  # taken from the returned pairs
        self.assertEqual(with_nan.flags, digest.ROW_TOP_K_ONLY | digest.ROW_HAS_NAN)
        self.assertFalse(with_nan.is_distribution())
        out, writer, sink = self.sink()
        for position, d in enumerate(digests):
            sink.emit_digest(position, d, 10 + position, -1)
        writer.done({})
        checked = frame_check(out.getvalue())
        recs = checked["records"]
        self.assertEqual(checked["stream_error"], "")
        self.assertTrue(checked["reencoded_stream_equal"])
        self.assertEqual([(r["position"], r["input_token"], r["top_k_only"], r["digest_equal"],
                           r["reencoded_equal"]) for r in recs],
                         [(0, 10, True, True, True), (1, 11, True, True, True),
                          (2, 12, True, True, True)])
        self.assertEqual([r["hash"] for r in recs],
                         ["%016x%016x" % (d.hash_high, d.hash_low) for d in digests])
        self.assertEqual(recs[0]["top"], [[2, -0.25], [7, -2.0], [9, -2.0]])
        self.assertEqual(sink.nan_rows, 1)  # the NaN row only: top-k rows are distributions
        self.assertEqual(sink.first_nan_position, 2)

    def test_a_changed_top_k_digest_is_caught_by_the_cpp_check(self):
        d = self.lib.digest_top_logprobs([1, 2], [-0.5, -1.0])
        d.hash_low ^= 1
        out, writer, sink = self.sink()
        sink.emit_digest(0, d, 0, -1)
        writer.done({})
        self.assertEqual(frame_check(out.getvalue())["records"][0]["digest_equal"], False)

    def test_identical_returned_values_hash_equal_and_one_bit_does_not(self):
        a = self.lib.digest_top_logprobs([3, 1], [-1.0, -0.25])
        b = self.lib.digest_top_logprobs([1, 3], [-0.25, -1.0])
        c = self.lib.digest_top_logprobs([1, 3], [-0.25, -1.0000001])
        self.assertEqual((a.hash_low, a.hash_high), (b.hash_low, b.hash_high))
        self.assertNotEqual((a.hash_low, a.hash_high), (c.hash_low, c.hash_high))

    def test_invalid_requests_are_errors_naming_the_status(self):
        for ids, values, vocab in (([], [], 0), ([1, 1], [-1.0, -2.0], 0),
                                   ([5], [-1.0], 4), (list(range(1025)), [-1.0] * 1025, 0)):
            with self.assertRaisesRegex(digest.DigestFailed, "INVALID_ARGUMENT"):
                self.lib.digest_top_logprobs(ids, values, vocab_size=vocab)
        with self.assertRaisesRegex(digest.DigestFailed, "INVALID_ARGUMENT"):
            self.lib.digest_top_logprobs([1], [-1.0], extra_flags=digest.ROW_HAS_NAN)
        with self.assertRaisesRegex(digest.DigestFailed, "2 ids but 1"):
            self.lib.digest_top_logprobs([1, 2], [-1.0])

    def test_emit_digest_follows_pipelined_rows_in_position_order(self):
        out, writer, sink = self.sink(workers=2)
        for position in range(3):
            row = pseudo_row(position, 40)
            buf = (ctypes.c_char * len(row.tobytes())).from_buffer_copy(row.tobytes())
            sink.emit(position, ctypes.addressof(buf), 40, position, -1)
        sink.emit_digest(3, self.lib.digest_top_logprobs([1], [0.0], vocab_size=40), 3, -1)
        with self.assertRaisesRegex(ValueError, "position 3 after position 3"):
            sink.emit_digest(3, self.lib.digest_top_logprobs([1], [0.0]), 3, -1)
        sink.finish()
        writer.done({})
        recs = frame_check(out.getvalue())["records"]
        self.assertEqual([(r["position"], r["top_k_only"]) for r in recs],
                         [(0, False), (1, False), (2, False), (3, True)])
        self.assertEqual((sink.positions, sink.nan_rows), (4, 0))


class RecordsTest(unittest.TestCase):
    def test_version_byte_is_the_digests_version_and_v2_is_the_default(self):
        d = digest.RowDigest(3, 0, 1, 2.5, 0.5, 7, 9, -1, 0.0, [(1, 3.0)])
        v2 = records.encode_position_record(4, 5, 6, d, None)
        self.assertEqual(v2[0], 2)
        d.version = digest.DIGEST_VERSION_1
        v1 = records.encode_position_record(4, 5, 6, d, None)
        self.assertEqual(v1[0], 1)
        self.assertEqual(v1[1:], v2[1:])  # one layout
        self.assertEqual(records.decode_position_record(v2)[0]["version"], 2)
        d.version = 3
        with self.assertRaisesRegex(ValueError, "digest version 3 has no record layout"):
            records.encode_position_record(4, 5, 6, d, None)

    def test_layout_v1(self):
        d = digest.RowDigest(3, 0, 1, 2.5, 0.5, 7, 9, -1, 0.0, [(1, 3.0)],
                             digest.DIGEST_VERSION_1)
        data = records.encode_position_record(4, 5, 6, d, None)
        self.assertEqual(data[0], 1)
        self.assertEqual(struct.unpack_from("<Qii", data, 1), (4, 5, 6))
        self.assertEqual(len(data), 1 + 8 + 4 + 4 + 4 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + 4 + 4 + 8 + 4)
        fields, top, full = records.decode_position_record(data)
        self.assertEqual((fields["hash_low"], fields["hash_high"], top, full),
                         (7, 9, [(1, 3.0)], b""))

    def test_full_row_must_hold_the_vocabulary(self):
        d = digest.RowDigest(3, 0, 1, 2.5, 0.5, 7, 9, -1, 0.0, [])
        with self.assertRaisesRegex(ValueError, "full row of 8 bytes for a vocabulary of 3"):
            records.encode_position_record(0, 0, -1, d, b"\0" * 8)


class CaptureTest(unittest.TestCase):
    def test_full_every_and_windows(self):
        c = job.parse_capture({"top_logits": 5, "full_every": 4, "full_windows": [[9, 11]]})
        self.assertEqual(c.top_logits, 5)
        self.assertEqual([p for p in range(14) if c.wants_full_row(p)], [0, 4, 8, 9, 10, 12])

    def test_every_row_when_the_run_fits_the_budget(self):
        c = job.parse_capture({"top_logits": 5, "full_every": 4, "full_windows": [[9, 11]]})
        self.assertEqual(c.full_row_budget_bytes, 64 << 20)
        # 128 x 32,000 x 4 = 16 MB fits 64 MiB; 512 x 152,064 x 4 = 311 MB does not.
        self.assertTrue(all(c.for_run(128, 32000).wants_full_row(p) for p in range(128)))
        over = c.for_run(512, 152064)
        self.assertEqual([p for p in range(14) if over.wants_full_row(p)], [0, 4, 8, 9, 10, 12])
        exact = job.parse_capture({"full_row_budget_bytes": 10 * 1024 * 4})
        self.assertTrue(exact.for_run(10, 1024).wants_full_row(5))
        self.assertFalse(exact.for_run(11, 1024).wants_full_row(5))
        never = job.parse_capture({"full_row_budget_bytes": 0})
        self.assertFalse(never.for_run(1, 2).wants_full_row(0))

    def test_a_negative_budget_is_an_invalid_job(self):
        with self.assertRaises(errors.InvalidJob) as caught:
            job.parse_capture({"full_row_budget_bytes": -5})
        self.assertEqual(caught.exception.message, "capture.full_row_budget_bytes: expected a "
                         "non-negative integer, got -5")

    def test_default_keeps_no_full_rows(self):
        c = job.parse_capture(None)
        self.assertEqual(c.top_logits, 20)
        self.assertFalse(any(c.wants_full_row(p) for p in range(100)))


TABLE = [
    axes.Axis("attention", values=("eager", "blocked"), aliases=(("off", "eager"),),
              noun="attention implementation", sets="attention"),
    axes.Axis("kv", values=("f32", "f16"), pair=True, noun="cache type"),
    axes.Axis("order", values=("top_k", "top_p"), list=True, noun="sampler"),
    axes.count("threads", 0, "threads"),
    axes.real("sampler.temperature", "temperature"),
    axes.switch("deterministic", "deterministic algorithms"),
    axes.Axis("cpu", chars="abc", noun="variant"),
    axes.text("hardware", "device"),
    axes.count("tp", 1, "devices"),
]


def job_doc(**overrides):
    doc = {"run_id": "r", "job_id": "j", "coordinate": {"attention": "eager"},
           "workload": {"name": "w", "kind": "teacher_forced", "positions": 4,
                        "tokens": [1, 2, 3, 4]},
           "model": {"requirement": "synth:x", "path": "/m.gguf"},
           "requirements": {"engine": "torch@1.13.1"}}
    doc.update(overrides)
    return json.dumps(doc)


class JobConformanceTest(unittest.TestCase):
    """The SDK's verdict on every job document of tests/data/job-conformance.json,
    the table the llama.cpp driver's tests run too."""

    VALUES = {"capture.top_logits": lambda j: j.capture.top_logits,
              "capture.full_every": lambda j: j.capture.full_every,
              "capture.full_row_budget_bytes": lambda j: j.capture.full_row_budget_bytes,
              "resources.threads": lambda j: j.threads}

    def test_every_document_gets_the_tables_verdict(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data",
                            "job-conformance.json")
        with open(path) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(cases)
        for case in cases:
            with self.subTest(case["name"]):
                try:
                    read = job.parse_job(json.dumps(case["document"]), [])
                    verdict, message = "ok", ""
                except errors.DriverError as e:
                    read, verdict, message = None, e.code, e.message
                self.assertEqual(verdict, case["verdict"], message)
                self.assertIn(case.get("message", ""), message)
                for field, value in case.get("expect", {}).items():
                    self.assertEqual(self.VALUES[field](read), value, field)


class JobTest(unittest.TestCase):
    def assertInvalid(self, text, message):
        with self.assertRaises(errors.InvalidJob) as caught:
            job.parse_job(text, TABLE)
        self.assertEqual(caught.exception.message, message)
        self.assertEqual(caught.exception.code, "invalid_job")
        self.assertEqual(caught.exception.exit_status, 2)

    def test_reads_a_teacher_forced_job(self):
        j = job.parse_job(job_doc(resources={"threads": 3},
                                  capture={"top_logits": 4}), TABLE)
        self.assertEqual((j.run_id, j.job_id, j.engine), ("r", "j", "torch@1.13.1"))
        self.assertEqual(j.workload.tokens, [1, 2, 3, 4])
        self.assertEqual(j.settings, {"attention": "eager"})
        self.assertEqual((j.threads, j.capture.top_logits, j.model.path), (3, 4, "/m.gguf"))

    def test_capture_falls_back_to_the_workloads(self):
        j = job.parse_job(job_doc(workload={"kind": "generate", "prompt": "hi",
                                            "max_tokens": 3, "capture": {"top_logits": 2}}), TABLE)
        self.assertEqual((j.workload.kind, j.capture.top_logits), ("generate", 2))

    def test_reads_the_jobs_gpus(self):
        j = job.parse_job(job_doc(resources={"threads": 3, "gpu_ids": [2, 3]}), TABLE)
        self.assertEqual(j.gpu_ids, [2, 3])
        self.assertEqual(job.parse_job(job_doc(), TABLE).gpu_ids, [])

    def test_refuses_gpu_ids_that_are_not_device_numbers(self):
        for bad in ("0", [0, -1], [True], [1.5]):
            with self.subTest(gpu_ids=bad):
                self.assertInvalid(
                    job_doc(resources={"gpu_ids": bad}),
                    "job.resources.gpu_ids: expected a list of device numbers "
                    "(non-negative integers), got " + json.dumps(bad))

    def test_coordinate_threads_wins_over_resources(self):
        j = job.parse_job(job_doc(coordinate={"threads": "2"}, resources={"threads": 3}), TABLE)
        self.assertEqual((j.threads, j.settings["threads"]), (0, 2))

    def test_knob_axes_are_kept_unread(self):
        j = job.parse_job(job_doc(coordinate={"knob.x": 5}), TABLE)
        self.assertEqual((j.coordinate, j.settings), ({"knob.x": "5"}, {}))

    def test_malformed_documents(self):
        self.assertInvalid("[1]", "job: stdin is not a JSON object")
        self.assertInvalid("{", "job: stdin is not a JSON object")
        self.assertInvalid(job_doc(coordinate=3), "job.coordinate: missing or not an object")
        self.assertInvalid(job_doc(capture={"top_logits": 0}),
                           "capture.top_logits: expected 1 to 1024, got 0")
        self.assertInvalid(job_doc(capture={"full_every": -1}),
                           "capture.full_every: expected a non-negative integer, got -1")
        self.assertInvalid(job_doc(capture={"full_windows": [[3, 1]]}),
                           "capture.full_windows: expected [begin, end] with 0 <= begin <= end, "
                           "got [3, 1]")
        self.assertInvalid(job_doc(workload={"kind": "x"}),
                           'workload.kind: expected teacher_forced or generate, got "x"')
        self.assertInvalid(job_doc(workload={"kind": "teacher_forced", "tokens": [1, -2]}),
                           "workload.tokens: not a token id: -2")
        self.assertInvalid(job_doc(workload={"name": "w", "kind": "teacher_forced"}),
                           "workload w: teacher_forced needs text, tokens, or context with "
                           "continuation")
        self.assertInvalid(job_doc(workload={"name": "g", "kind": "generate", "prompt": "p"}),
                           "workload g: generate needs a prompt (or messages) and "
                           "max_tokens > 0")
        self.assertInvalid(job_doc(model=[]), "model: expected an object, got []")

    def test_reads_messages_and_ignores_the_task_object(self):
        w = job.parse_job(job_doc(workload={
            "name": "c", "kind": "generate", "max_tokens": 2,
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            "task": {"workload": "t", "case": "c1"}}), TABLE).workload
        self.assertEqual((w.messages, w.prompt), ([("system", "s"), ("user", "u")], ""))

    def test_malformed_messages_name_the_field_as_the_llama_cpp_driver_does(self):
        def chat_job(messages, **extra):
            return job_doc(workload=dict({"name": "chat", "kind": "generate", "max_tokens": 4,
                                          "messages": messages}, **extra))
        self.assertInvalid(chat_job([]), 'workload chat: messages: expected a non-empty array '
                           'of {"role", "content"}, got []')
        self.assertInvalid(chat_job([{"role": "bot", "content": "x"}]),
                           'workload chat: messages[0].role: expected "system", "user" or '
                           '"assistant", got "bot"')
        self.assertInvalid(chat_job([{"role": "user", "content": "x"}, {"role": "user"}]),
                           "workload chat: messages[1].content: expected a string, got nothing")
        self.assertInvalid(chat_job(["hi"]),
                           'workload chat: messages[0]: expected an object, got "hi"')
        self.assertInvalid(chat_job([{"role": "user", "content": "x"}], prompt="p"),
                           "workload chat: generate takes prompt or messages, not both")

    def test_reads_context_and_continuation(self):
        doc = {"name": "mc", "kind": "teacher_forced", "context": "Q: 2+2? A:",
               "continuation": " 4", "task": {"workload": "q", "case": "c", "choice": 1}}
        w = job.parse_job(job_doc(workload=doc), TABLE).workload
        self.assertEqual((w.context, w.continuation, w.positions), ("Q: 2+2? A:", " 4", 0))
        self.assertInvalid(job_doc(workload=dict(doc, continuation="")),
                           "workload mc.continuation: expected a non-empty string")
        self.assertInvalid(job_doc(workload={"name": "mc", "kind": "teacher_forced",
                                             "context": "x"}),
                           "workload mc.continuation: expected a string (context and "
                           "continuation go together), got nothing")
        self.assertInvalid(job_doc(workload=dict(doc, text="x")),
                           "workload mc: teacher_forced takes text, tokens, or context with "
                           "continuation, not several")

    def test_axis_values_name_field_value_and_what_is_accepted(self):
        self.assertInvalid(job_doc(coordinate={"attention": "flash"}),
                           'coordinate.attention: unknown attention implementation "flash" '
                           '(expected one of eager, blocked)')
        self.assertInvalid(job_doc(coordinate={"kv": "f32/q8_0"}),
                           'coordinate.kv: unknown cache type "q8_0" in "f32/q8_0" '
                           '(expected T or K/V with T one of f32, f16)')
        self.assertInvalid(job_doc(coordinate={"order": "top_k,min_p"}),
                           'coordinate.order: unknown sampler "min_p" in "top_k,min_p" '
                           '(expected a comma list of top_k, top_p)')
        self.assertInvalid(job_doc(coordinate={"threads": "-1"}),
                           'coordinate.threads: expected an integer in [0, 16777216], got "-1"')
        self.assertInvalid(job_doc(coordinate={"threads": "2.5"}),
                           'coordinate.threads: expected an integer in [0, 16777216], got "2.5"')
        self.assertInvalid(job_doc(coordinate={"sampler.temperature": "warm"}),
                           'coordinate.sampler.temperature: expected a number, got "warm"')
        self.assertInvalid(job_doc(coordinate={"deterministic": "maybe"}),
                           'coordinate.deterministic: expected on or off, got "maybe"')
        self.assertInvalid(job_doc(coordinate={"cpu": "abd"}),
                           'coordinate.cpu: invalid variant "abd" (expected characters from abc)')

    def test_axis_values_are_canonical(self):
        j = job.parse_job(job_doc(coordinate={"attention": "OFF", "kv": "f16",
                                              "deterministic": True, "tp": 2}), TABLE)
        self.assertEqual(j.canonical, {"attention": "eager", "kv": "f16/f16",
                                       "deterministic": "on", "tp": "2"})
        self.assertEqual(j.settings["deterministic"], True)


class RulesTest(unittest.TestCase):
    RULES = [axes.Rule(axes.Condition("tp", min=2), axes.Condition("hardware", prefix="gpu"),
                       "splits only across GPUs")]

    def test_violated_rule_is_invalid_combination(self):
        with self.assertRaises(errors.InvalidCombination) as caught:
            axes.check_rules(self.RULES, {"tp": "2", "hardware": "cpu"})
        self.assertEqual(caught.exception.message,
                         'tp = 2 needs hardware = "gpu...", got hardware = "cpu": '
                         "splits only across GPUs")
        self.assertEqual(caught.exception.exit_status, 2)

    def test_rule_holds(self):
        axes.check_rules(self.RULES, {"tp": "2", "hardware": "gpu"})
        axes.check_rules(self.RULES, {"tp": "1", "hardware": "cpu"})

    def test_declaration_format(self):
        declared = json.loads(axes.declaration_json("e", "d", TABLE[:2], self.RULES))
        self.assertEqual(declared["schema"], "orch.capabilities/1")
        self.assertEqual(declared["axes"][0], {
            "name": "attention", "type": "string", "values": ["eager", "blocked"],
            "aliases": {"off": "eager"}, "sets": "attention"})
        self.assertEqual(declared["rules"][0]["when"], {"axis": "tp", "min": 2})


class ToyEngine(driver.Engine):
    family = "toy"
    driver_name = "orch-driver-toy"
    axes = TABLE
    fail = None

    def hello(self, j):
        return {"engine": "toy", "version": "1"}

    def run(self, j, sink):
        if self.fail is not None:
            raise self.fail
        rows = [pseudo_row(p, 50) for p in range(len(j.workload.tokens))]
        rows[1][3] = float("nan")
        for p, row in enumerate(rows):
            buf = (__import__("ctypes").c_char * len(row.tobytes())).from_buffer_copy(row.tobytes())
            sink.emit(p, __import__("ctypes").addressof(buf), 50, j.workload.tokens[p], -1, -1)
        return {"engine_note": "ok"}


class DriverShellTest(unittest.TestCase):
    def run_toy(self, text, fail=None):
        engine = ToyEngine()
        engine.fail = fail
        out = io.BytesIO()
        status = driver.run_job(engine, text.encode(), frames.FrameWriter(out))
        return status, frame_check(out.getvalue())

    def test_the_default_budget_keeps_every_row_of_a_small_run(self):
        status, checked = self.run_toy(job_doc(capture={"top_logits": 3, "full_every": 2}))
        self.assertEqual(status, 0)
        self.assertEqual([r["full_row"] for r in checked["records"]], [50] * 4)
        budget = 4 * 50 * 4 - 1  # one byte short of the run's rows
        status, checked = self.run_toy(job_doc(capture={"top_logits": 3, "full_every": 2,
                                                        "full_row_budget_bytes": budget}))
        self.assertEqual([r["full_row"] for r in checked["records"]], [50, 0, 50, 0])

    def test_a_run_is_hello_records_done(self):
        status, checked = self.run_toy(job_doc(capture={"top_logits": 3, "full_every": 2,
                                                        "full_row_budget_bytes": 0}))
        self.assertEqual(status, 0)
        self.assertEqual(checked["stream_error"], "")
        self.assertEqual([f["type"] for f in checked["frames"]], [1, 2, 2, 2, 2, 3])
        done = json.loads(checked["frames"][-1]["payload"])
        self.assertEqual((done["positions"], done["nan_rows"], done["first_nan_position"],
                          done["engine_note"]), (4, 1, 1, "ok"))
        self.assertEqual([r["digest_equal"] for r in checked["records"]],
                         [True, None, True, None])

    def test_invalid_job_is_hello_then_error_exit_2(self):
        status, checked = self.run_toy(job_doc(coordinate={"attention": "x"}))
        self.assertEqual(status, 2)
        self.assertEqual(checked["stream_error"], "")
        error = json.loads(checked["frames"][-1]["payload"])
        self.assertEqual(error["code"], "invalid_job")
        self.assertIn('unknown attention implementation "x"', error["message"])

    def test_a_failing_check_is_hello_then_engine_error(self):
        class Broken(ToyEngine):
            def check(self, j):
                raise KeyError("probe")
        out = io.BytesIO()
        status = driver.run_job(Broken(), job_doc().encode(), frames.FrameWriter(out))
        checked = frame_check(out.getvalue())
        self.assertEqual(status, 3)
        self.assertEqual(checked["stream_error"], "")
        self.assertEqual(json.loads(checked["frames"][-1]["payload"]),
                         {"code": "engine_error", "message": "KeyError: 'probe'"})

    def test_engine_failures_are_typed(self):
        status, checked = self.run_toy(job_doc(), fail=ZeroDivisionError("boom"))
        self.assertEqual(status, 3)
        self.assertEqual(json.loads(checked["frames"][-1]["payload"]),
                         {"code": "engine_error", "message": "ZeroDivisionError: boom"})
        status, checked = self.run_toy(job_doc(), fail=errors.ModelMissing("gone"))
        self.assertEqual(status, 2)
        self.assertEqual(json.loads(checked["frames"][-1]["payload"])["code"], "model_missing")


def record_frames(stream):
    """The record frames of one job stream, as bytes."""
    return [frames.encode_frame(frame_type, payload)
            for frame_type, payload in frames.split_frames(stream)[0]
            if frame_type == frames.RECORD]


class LoadingToy(ToyEngine):
    """ToyEngine with the load/run split: the handle is keyed by attention."""
    load_axes = ("attention",)

    def __init__(self):
        self.loads = []
        self.unloads = []

    def load_key(self, j):
        return j.canonical.get("attention")

    def load(self, j):
        self.loads.append(j.job_id)
        return {"loaded_for": j.job_id}

    def run_loaded(self, j, handle, sink):
        done = self.run(j, sink)
        done["handle"] = handle["loaded_for"]
        return done

    def unload(self, handle):
        self.unloads.append(handle["loaded_for"])


class SessionTest(unittest.TestCase):
    def run_session(self, engine, docs, tail=b""):
        stdin = io.BytesIO(b"".join(frames.encode_job_frame(d) for d in docs) + tail)
        out = io.BytesIO()
        status = driver.run_session(engine, stdin, frames.FrameWriter(out))
        streams, rest = frames.split_job_streams(out.getvalue())
        self.assertEqual(rest, b"")
        checked = [frame_check(stream) for stream in streams]
        for c, stream in zip(checked, streams):
            self.assertEqual(c["stream_error"], "")
            c["records_bytes"] = record_frames(stream)
        return status, checked, stdin

    @staticmethod
    def hello(checked):
        return json.loads(checked["frames"][0]["payload"])

    @staticmethod
    def last(checked):
        return json.loads(checked["frames"][-1]["payload"])

    def test_the_handle_is_kept_while_the_key_is_equal_and_loaded_anew_when_not(self):
        engine = LoadingToy()
        docs = [job_doc(job_id="a"), job_doc(job_id="b"),
                job_doc(job_id="c", coordinate={"attention": "blocked"}),
                job_doc(job_id="d")]
        status, checked, _ = self.run_session(engine, docs)
        self.assertEqual(status, 0)
        self.assertEqual(len(checked), 4)
        self.assertEqual([self.hello(c)["session"] for c in checked],
                         [{"warm": False, "jobs_before": 0}, {"warm": True, "jobs_before": 1},
                          {"warm": False, "jobs_before": 2}, {"warm": False, "jobs_before": 3}])
        self.assertEqual([self.last(c)["handle"] for c in checked], ["a", "a", "c", "d"])
        self.assertEqual(engine.loads, ["a", "c", "d"])
        self.assertEqual(engine.unloads, ["a", "c", "d"])  # the last at end of file
        self.assertEqual(len(checked[0]["records_bytes"]), 4)
        self.assertEqual(checked[0]["records_bytes"], checked[1]["records_bytes"])

    def test_another_model_file_is_another_key(self):
        engine = LoadingToy()
        docs = [job_doc(job_id="a"),
                job_doc(job_id="b", model={"requirement": "synth:x", "path": "/n.gguf"}),
                job_doc(job_id="c", model={"requirement": "synth:x", "path": "/n.gguf",
                                           "sha256": "ab"})]
        status, checked, _ = self.run_session(engine, docs)
        self.assertEqual(status, 0)
        self.assertEqual(engine.loads, ["a", "b", "c"])

    def test_typed_errors_end_their_job_and_the_session_goes_on(self):
        class Picky(LoadingToy):
            def load(self, j):
                if j.job_id == "missing":
                    raise errors.ModelMissing("no file for job missing")
                return LoadingToy.load(self, j)
        engine = Picky()
        docs = [job_doc(job_id="a"), job_doc(coordinate={"attention": "x"}),
                job_doc(job_id="missing", coordinate={"attention": "blocked"}),
                job_doc(job_id="b")]
        status, checked, _ = self.run_session(engine, docs)
        self.assertEqual(status, 0)
        self.assertEqual([self.last(c).get("code") for c in checked],
                         [None, "invalid_job", "model_missing", None])
        self.assertEqual([c["frames"][-1]["type"] for c in checked], [3, 4, 4, 3])
        self.assertEqual(self.hello(checked[1])["session"], {"warm": False, "jobs_before": 1})
        # The failed load dropped the old handle: the next job loads again.
        self.assertEqual(engine.loads, ["a", "b"])
        self.assertEqual(self.hello(checked[3])["session"], {"warm": False, "jobs_before": 3})

    def test_an_engine_error_ends_the_session_with_status_3_and_unloads(self):
        class Failing(LoadingToy):
            def run_loaded(self, j, handle, sink):
                if j.job_id == "boom":
                    raise ZeroDivisionError("boom")
                return LoadingToy.run_loaded(self, j, handle, sink)
        engine = Failing()
        docs = [job_doc(job_id="a"), job_doc(job_id="boom"), job_doc(job_id="never")]
        status, checked, stdin = self.run_session(engine, docs)
        self.assertEqual(status, 3)
        self.assertEqual(len(checked), 2)
        self.assertEqual(self.last(checked[1]),
                         {"code": "engine_error", "message": "ZeroDivisionError: boom"})
        self.assertEqual(engine.unloads, ["a"])
        self.assertLess(stdin.tell(), len(stdin.getvalue()))  # the third job was not read

    def test_an_engine_without_the_split_runs_every_job_cold(self):
        status, checked, _ = self.run_session(ToyEngine(), [job_doc(), job_doc()])
        self.assertEqual(status, 0)
        self.assertEqual([self.hello(c)["session"] for c in checked],
                         [{"warm": False, "jobs_before": 0}, {"warm": False, "jobs_before": 1}])
        self.assertEqual([self.last(c)["engine_note"] for c in checked], ["ok", "ok"])

    def test_end_of_file_at_once_is_exit_0_with_nothing_written(self):
        status, checked, _ = self.run_session(LoadingToy(), [])
        self.assertEqual((status, checked), (0, []))

    def test_a_frame_that_is_no_job_is_invalid_job_and_ends_the_session(self):
        bad = frames.encode_frame(frames.HELLO, "{}")
        status, checked, _ = self.run_session(LoadingToy(), [job_doc()], tail=bad)
        self.assertEqual(status, 2)
        self.assertEqual(self.last(checked[1]),
                         {"code": "invalid_job", "message": "job frame: type 1, expected 16 (job)"})
        self.assertEqual(self.hello(checked[1])["session"], {"warm": False, "jobs_before": 1})
        status, checked, _ = self.run_session(LoadingToy(), [], tail=b"\x10\x00\x00\x00\x10{}")
        self.assertEqual(self.last(checked[0])["message"],
                         "job frame: stdin ended after 2 of its 16 payload bytes")

    def test_a_single_run_is_unchanged_and_version_declares_the_load_axes(self):
        out = io.BytesIO()
        self.assertEqual(driver.run_job(LoadingToy(), job_doc().encode(),
                                        frames.FrameWriter(out)), 0)
        self.assertNotIn("session", self.hello(frame_check(out.getvalue())))
        saved, sys.stdout = sys.stdout, io.StringIO()
        try:
            self.assertEqual(driver.main(LoadingToy(), ["orch-driver-toy", "version"]), 0)
            printed = sys.stdout.getvalue()
        finally:
            sys.stdout = saved
        self.assertEqual(json.loads(printed)["session"], {"load_axes": ["attention"]})

    def test_job_frames_round_trip_and_the_writer_starts_the_next_stream_only_after_one_ended(self):
        stream = io.BytesIO(frames.encode_job_frame('{"a":1}') + frames.encode_job_frame(b""))
        self.assertEqual(frames.read_job_frame(stream), b'{"a":1}')
        self.assertEqual(frames.read_job_frame(stream), b"")
        self.assertIsNone(frames.read_job_frame(stream))
        writer = frames.FrameWriter(io.BytesIO())
        writer.hello({})
        with self.assertRaises(RuntimeError):
            writer.next_job()
        writer.done({})
        writer.next_job()
        writer.hello({})


class ModelFileTest(unittest.TestCase):
    def model(self, path, requirement, sha=""):
        m = job.ModelRef()
        m.path, m.requirement, m.sha256 = path, requirement, sha
        return m

    def test_missing_and_mismatched_models_are_typed(self):
        from orch_driver import model_file
        with self.assertRaisesRegex(errors.ModelMissing, 'model "sha256:ab" is not on this agent'):
            model_file.check_model(self.model("", "sha256:ab"))
        with self.assertRaisesRegex(errors.ModelMissing, "model file /nonexistent does not exist"):
            model_file.check_model(self.model("/nonexistent", "synth:x"))
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"abc")
            f.flush()
            real = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            self.assertEqual(model_file.check_model(self.model(f.name, "sha256:" + real.upper())),
                             (f.name, real))
            with self.assertRaisesRegex(errors.Sha256Mismatch, "has sha256 %s, the job requires 00" % real):
                model_file.check_model(self.model(f.name, "sha256:" + "0" * 64))
            with self.assertRaisesRegex(errors.InvalidJob, "is not sha256: followed by 64 hex digits"):
                model_file.check_model(self.model(f.name, "sha256:xyz"))


def gguf_bytes(kvs, tensors=()):
    """A GGUF v3 file: kvs [(key, type, packed value)], tensors [(name, ne, type)]."""
    def string(text):
        data = text.encode()
        return struct.pack("<Q", len(data)) + data
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, value in kvs:
        out += string(key) + struct.pack("<I", kind) + value
    offset = 0
    for name, ne, kind in tensors:
        out += string(name) + struct.pack("<I", len(ne)) + b"".join(
            struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", kind, offset)
        offset += 4 * ne[0] * (ne[1] if len(ne) > 1 else 1)
    out += b"\0" * ((-len(out)) % 32)
    return out + b"\0" * offset


class GgufTest(unittest.TestCase):
    def test_reads_metadata_and_tensor_layout(self):
        data = gguf_bytes([("general.architecture", 8, struct.pack("<Q", 5) + b"llama"),
                           ("general.file_type", 4, struct.pack("<I", 32)),
                           ("xs", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, -2, 3))],
                          [("a", [4, 2], 0), ("b", [3], 0)])
        f = gguf.GgufFile("m.gguf", data)
        self.assertEqual(f.get("general.architecture"), "llama")
        self.assertEqual(f.get("xs"), [1, -2, 3])
        self.assertEqual(f.file_type(), "bf16")
        self.assertEqual((f.tensors["a"].shape, f.tensors["a"].type_name, f.tensors["a"].nbytes),
                         ([4, 2], "f32", 32))
        self.assertEqual(f.tensors["b"].offset - f.tensors["a"].offset, 32)

    def test_bad_files_are_errors_naming_the_file(self):
        with self.assertRaisesRegex(ValueError, "x.gguf is not a GGUF file"):
            gguf.GgufFile("x.gguf", b"GGML" + bytes(20))
        with self.assertRaisesRegex(ValueError, "x.gguf: GGUF version 9 is not supported"):
            gguf.GgufFile("x.gguf", b"GGUF" + struct.pack("<IQQ", 9, 0, 0))
        with self.assertRaisesRegex(ValueError, "x.gguf: truncated GGUF"):
            gguf.GgufFile("x.gguf", gguf_bytes([("k", 4, struct.pack("<I", 1))])[:30])
        with self.assertRaisesRegex(ValueError, "tensor a runs past the end of the file"):
            gguf.GgufFile("x.gguf", gguf_bytes([], [("a", [4, 2], 0)])[:-8])


class BpeTest(unittest.TestCase):
    def test_gpt2_pre_tokenizer_splits_as_llama_cpp(self):
        cases = {"Hello world": ["Hello", " world"], "it's": ["it", "'s"],
                 "they'll": ["they", "'ll"], "a  b": ["a", " ", " b"], "x\n\n": ["x", "\n\n"],
                 "12ab": ["12", "ab"], "!!  ...": ["!!", " ", " ..."], " \u00e9t\u00e9": [" \u00e9t\u00e9"],
                 "'S": ["'", "S"]}
        for text, words in cases.items():
            self.assertEqual(bpe.split_gpt2(text), words, text)

    def test_merges_by_rank_and_adds_bos(self):
        chars = bpe.bytes_to_unicode()
        tokens = [chars[b] for b in range(256)] + ["he", "\u0120t", "\u0120the", "<s>"]
        kv = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
              "tokenizer.ggml.tokens": tokens,
              "tokenizer.ggml.token_type": [1] * 259 + [3],
              "tokenizer.ggml.merges": ["h e", "\u0120 t", "\u0120t he"],
              "tokenizer.ggml.bos_token_id": 259, "tokenizer.ggml.add_bos_token": True}
        t = bpe.BpeTokenizer(kv)
        self.assertEqual(t.encode("the the"), [259, ord("t"), 256, 258])
        self.assertEqual(t.piece(258), b" the")
        self.assertEqual(t.piece(259), b"")

    def test_other_tokenizers_are_unsupported(self):
        with self.assertRaisesRegex(bpe.Unsupported, 'tokenizer.ggml.model "llama"'):
            bpe.BpeTokenizer({"tokenizer.ggml.model": "llama"})

    def test_parse_special_cuts_out_control_tokens_as_llama_cpp_does(self):
        chars = bpe.bytes_to_unicode()
        tokens = [chars[b] for b in range(256)] + ["<|im_start|>", "<s>"]
        kv = {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
              "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": [1] * 256 + [3, 3],
              "tokenizer.ggml.merges": [], "tokenizer.ggml.bos_token_id": 257,
              "tokenizer.ggml.add_bos_token": True}
        t = bpe.BpeTokenizer(kv)
        self.assertEqual(t.encode("<|im_start|>a", parse_special=True), [257, 256, ord("a")])
        self.assertEqual(len(t.encode("<|im_start|>a")), 1 + len("<|im_start|>a"))
        self.assertEqual(t.encode("a", add_special=False), [ord("a")])

    def test_printable_text_escapes_invalid_utf8(self):
        self.assertEqual(bpe.printable_text(b"a\xc3\xa9\xff"), "a\u00e9\\xff")


class ChatTest(unittest.TestCase):
    CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
              "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}")

    def test_chatml_renders_every_turn_and_the_assistant_prefix(self):
        self.assertEqual(chat.render(self.CHATML, [("system", "s"), ("user", "a\nb")], "m"),
                         "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\na\nb<|im_end|>\n"
                         "<|im_start|>assistant\n")
        self.assertEqual(chat.render("chatml", [("user", "u")], "m"),
                         "<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n")

    def test_no_template_or_another_family_is_an_invalid_combination_naming_the_model(self):
        for template, text in ((None, "has no chat template"), ("", "has no chat template"),
                               ("{{ '[INST]' }}", "is not ChatML"),
                               (self.CHATML + "<|im_sep|>", "is not ChatML")):
            with self.assertRaises(errors.InvalidCombination) as caught:
                chat.render(template, [("user", "u")], "/models/m.gguf")
            self.assertIn("/models/m.gguf", caught.exception.message)
            self.assertIn(text, caught.exception.message)

    def test_done_names_the_template_by_its_sha256(self):
        import hashlib
        fields = chat.done_fields(self.CHATML, "p")
        self.assertEqual(fields["chat_template"],
                         {"source": "model",
                          "sha256": hashlib.sha256(self.CHATML.encode()).hexdigest()})
        self.assertEqual(fields["rendered_prompt"], "p")


if __name__ == "__main__":
    unittest.main()
