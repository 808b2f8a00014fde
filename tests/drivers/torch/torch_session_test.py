"""orch-driver-torch in session mode (docs/driver-protocol.md, "Sessions"), as a
real child process on a generated model: a job run warm, after other jobs on
the same loaded weights (another workload, another sampler, other per-job
settings), gives the records and done of the same job run cold; the hello
says whether the weights were already loaded; bad jobs in the middle get
their errors and the session goes on; end of file ends it with 0."""

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

RECIPE = "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1"
TORCH = {"engine": "torch@x", "quant": "f32", "kv": "f16", "attention": "off", "tp": "1",
         "hardware": "cpu", "threads": "1"}
TIMINGS = ("eval_ms", "load_ms", "wall_ms")

_DIR = tempfile.mkdtemp(prefix="orch-torch-session-test-")
atexit.register(shutil.rmtree, _DIR, True)


def model():
    return harness.synth(RECIPE, os.path.join(_DIR, "tiny.gguf"))


def teacher(**overrides):
    return harness.teacher_forced(model(), dict(TORCH, **overrides), 48)


def generate(seed, temperature):
    job = teacher(**{"sampler.temperature": temperature, "sampler.seed": seed,
                     "sampler.top_k": "0", "sampler.top_p": "1", "sampler.min_p": "0"})
    job["workload"] = {"name": "g", "kind": "generate", "prompt": "The model", "max_tokens": 12}
    return job


def comparable(done):
    """The done object less what measures this run's time."""
    return {k: v for k, v in done.items() if k not in TIMINGS}


class TorchSessionTest(unittest.TestCase):
    def cold(self, job):
        out = harness.run(harness.torch_driver(), job)
        self.assertEqual(out.status, 0, out.log[-2000:])
        self.assertIsNotNone(out.done, out.log[-2000:])
        return out

    def session(self, jobs):
        return harness.run_session(harness.torch_driver(), jobs)

    def assertSameJob(self, cold, warm, what):
        self.assertIsNotNone(warm.done, "%s: %s" % (what, warm.error))
        self.assertTrue(cold.record_bytes, what)
        self.assertEqual(warm.record_bytes, cold.record_bytes, what)
        self.assertEqual(comparable(warm.done), comparable(cold.done), what)

    def assertSession(self, out, warm, jobs_before):
        self.assertEqual(out.hello["session"], {"warm": warm, "jobs_before": jobs_before})

    def test_a_warm_job_gives_the_cold_records_and_done_after_any_other_job(self):
        cold_teacher = self.cold(teacher())
        cold_generate = self.cold(generate("42", "1.0"))
        self.assertNotIn("session", cold_teacher.hello)  # a single run is unchanged
        out = self.session([teacher(), generate("7", "0.5"), generate("42", "1.0"), teacher(),
                            generate("42", "1.0")])
        self.assertEqual(out.status, 0, out.log[-2000:])
        self.assertEqual(out.rest, b"")
        self.assertEqual(len(out.jobs), 5, out.log[-2000:])
        self.assertSameJob(cold_teacher, out.jobs[0], "the first job")
        self.assertSameJob(cold_generate, out.jobs[2], "generate, warm after another sampler")
        self.assertSameJob(cold_teacher, out.jobs[3], "teacher forcing, warm after generation")
        self.assertSameJob(cold_generate, out.jobs[4], "generate, warm after teacher forcing")
        self.assertSession(out.jobs[0], False, 0)
        for i in range(1, 5):
            self.assertSession(out.jobs[i], True, i)
        self.assertEqual(out.jobs[3].done["load_ms"], 0.0)  # nothing loaded for it
        # The other sampler drew other tokens: leaked sampler state would show.
        self.assertNotEqual(out.jobs[1].done["generated_ids"],
                            cold_generate.done["generated_ids"])

    def test_bad_jobs_in_the_middle_get_their_errors_and_the_session_goes_on(self):
        missing = teacher()
        missing["model"]["path"] = ""
        mismatch = teacher()
        mismatch["model"]["requirement"] = "sha256:" + "a" * 64
        out = self.session([teacher(), {"not": "a job"}, missing, mismatch,
                            teacher(quant="q8_0"), teacher()])
        self.assertEqual(out.status, 0, out.log[-2000:])
        self.assertEqual(len(out.jobs), 6, out.log[-2000:])
        self.assertEqual([o.error["code"] for o in out.jobs[1:5]],
                         ["invalid_job", "model_missing", "sha256_mismatch",
                          "invalid_combination"])
        for i in range(1, 5):
            self.assertIsNone(out.jobs[i].done)
            self.assertEqual(out.jobs[i].hello["session"]["jobs_before"], i)
        self.assertSameJob(out.jobs[0], out.jobs[5], "the job after the errors")

    def test_per_job_settings_reuse_the_weights_and_another_dtype_loads_anew(self):
        per_job = teacher(attention="on", kv="f32", threads="2", batch="16")
        bf16 = teacher(dtype="bfloat16")
        cold_per_job = self.cold(per_job)
        cold_bf16 = self.cold(bf16)
        out = self.session([teacher(), per_job, bf16, teacher()])
        self.assertEqual(out.status, 0, out.log[-2000:])
        self.assertEqual(len(out.jobs), 4, out.log[-2000:])
        self.assertSameJob(cold_per_job, out.jobs[1], "other per-job settings, warm")
        self.assertSession(out.jobs[1], True, 1)
        self.assertSameJob(cold_bf16, out.jobs[2], "another dtype")
        self.assertSession(out.jobs[2], False, 2)
        self.assertSession(out.jobs[3], False, 3)
        self.assertSameJob(out.jobs[0], out.jobs[3], "the first job again")

    def test_end_of_file_at_once_ends_the_session_with_nothing_written(self):
        out = self.session([])
        self.assertEqual((out.status, out.jobs, out.rest), (0, [], b""))

    def test_version_declares_the_load_axes(self):
        hello = json.loads(subprocess.run([harness.torch_driver(), "version"],
                                          stdout=subprocess.PIPE, check=True,
                                          timeout=60).stdout)
        self.assertEqual(hello["session"],
                         {"load_axes": ["impl", "quant", "dtype", "hardware", "tp"]})


if __name__ == "__main__":
    unittest.main()
