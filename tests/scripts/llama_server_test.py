"""llama-server as scripts/setup-engines builds it from a release's source bundle
(third_party/engines/llama.cpp-RELEASE/server/llama-server): it names its release, and
serves the trained model (examples/models/kjv-tiny-f32.gguf) on 127.0.0.1: /health,
/props, and /completion of token ids with the top log-probabilities the server drivers
read. The executable runs as a real process, stopped by its pid in every path.

Environment: ORCH_LLAMA_SERVER (the executable), ORCH_LLAMA_SERVER_RELEASE (b8390),
ORCH_SOURCE_DIR (the repository, for the model)."""

import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import unittest
import urllib.request

SERVER = os.environ.get("ORCH_LLAMA_SERVER", "")
RELEASE = os.environ.get("ORCH_LLAMA_SERVER_RELEASE", "")
MODEL = os.path.join(os.environ.get("ORCH_SOURCE_DIR", ""), "examples/models/kjv-tiny-f32.gguf")
TEXT = "In the beginning God created the heaven and the earth."
HEALTH_WAIT_S = 60
STOP_WAIT_S = 10


def require_server():
    if not SERVER or not RELEASE:
        raise AssertionError("ORCH_LLAMA_SERVER and ORCH_LLAMA_SERVER_RELEASE are not set "
                             "(the test runs under ctest)")
    if not os.access(SERVER, os.X_OK):
        raise AssertionError("%s is missing: run scripts/setup (its scripts/setup-engines "
                             "builds llama-server %s)" % (SERVER, RELEASE))


def build_number():
    """The number a bNNNN release's server reports (0 for other release names)."""
    match = re.fullmatch(r"b([0-9]+)", RELEASE)
    return int(match.group(1)) if match else 0


def is_float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0] == value


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process):
    if process.poll() is None:
        process.terminate()  # SIGTERM to this pid
        try:
            process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_WAIT_S)


class VersionTest(unittest.TestCase):
    def test_version_names_the_release(self):
        require_server()
        out = subprocess.run([SERVER, "--version"], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = out.stdout + out.stderr
        self.assertRegex(text, r"version: %d \([0-9a-f]+\)" % build_number())


class ServingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_server()
        cls.dir = tempfile.mkdtemp(prefix="orch-llama-server-test-")
        cls.healthy = False
        cls.addClassCleanup(cls.remove_dir_unless_failed)
        cls.log_path = os.path.join(cls.dir, "server.log")
        port = free_port()
        cls.base = "http://127.0.0.1:%d" % port
        with open(cls.log_path, "wb") as log:
            cls.process = subprocess.Popen(
                [SERVER, "-m", MODEL, "--host", "127.0.0.1", "--port", str(port), "-c", "512",
                 "-np", "1"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=cls.dir)
        cls.addClassCleanup(stop, cls.process)
        cls.wait_healthy()
        cls.healthy = True

    @classmethod
    def remove_dir_unless_failed(cls):
        """A server that never became healthy leaves its folder (and log) to read."""
        if cls.healthy:
            shutil.rmtree(cls.dir, True)

    @classmethod
    def wait_healthy(cls):
        deadline = time.monotonic() + HEALTH_WAIT_S
        while time.monotonic() < deadline:
            if cls.process.poll() is not None:
                raise AssertionError("llama-server exited with %d before it was healthy; "
                                     "its log %s:\n%s" % (cls.process.returncode, cls.log_path,
                                                          cls.log_tail()))
            try:
                status, _ = cls.get("/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("llama-server was not healthy (GET /health) within %d s; its "
                             "log %s:\n%s" % (HEALTH_WAIT_S, cls.log_path, cls.log_tail()))

    @classmethod
    def log_tail(cls):
        with open(cls.log_path, "rb") as log:
            return log.read()[-4000:].decode(errors="replace")

    @classmethod
    def get(cls, path):
        try:
            with urllib.request.urlopen(cls.base + path, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, None

    def post(self, path, body):
        request = urllib.request.Request(self.base + path, json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            self.assertEqual(response.status, 200)
            return json.loads(response.read())

    def prompt(self):
        tokens = self.post("/tokenize", {"content": TEXT})["tokens"]
        self.assertGreater(len(tokens), 4)
        return tokens

    def complete(self, tokens, **settings):
        body = {"prompt": tokens, "n_predict": 1, "n_probs": 5, "temperature": 0,
                "post_sampling_probs": False, "cache_prompt": False}
        body.update(settings)
        return self.post("/completion", body)

    def n_vocab(self):
        _, models = self.get("/v1/models")
        return models["data"][0]["meta"]["n_vocab"]

    def test_health_is_ok(self):
        self.assertEqual(self.get("/health"), (200, {"status": "ok"}))

    def test_props_name_the_release_and_the_slots(self):
        status, props = self.get("/props")
        self.assertEqual(status, 200)
        self.assertRegex(props["build_info"], r"^b%d-[0-9a-f]+$" % build_number())
        self.assertEqual(props["total_slots"], 1)

    def test_completion_of_token_ids_returns_the_top_logprobs(self):
        tokens = self.prompt()
        result = self.complete(tokens)
        self.assertEqual(result["tokens_evaluated"], len(tokens))
        self.assertFalse(result["generation_settings"]["post_sampling_probs"])
        [chosen] = result["completion_probabilities"]
        top = chosen["top_logprobs"]
        self.assertEqual(len(top), 5)
        ids = [entry["id"] for entry in top]
        values = [entry["logprob"] for entry in top]
        self.assertEqual(len(set(ids)), 5)
        self.assertEqual(values, sorted(values, reverse=True))
        self.assertTrue(all(value <= 0 and is_float32(value) for value in values), values)
        # Greedy: the chosen token is the most likely one, with its log-probability.
        self.assertEqual((chosen["id"], chosen["logprob"]), (ids[0], values[0]))

    def test_logprobs_are_the_models_distribution_before_sampling(self):
        tokens = self.prompt()
        n_vocab = self.n_vocab()
        whole = self.complete(tokens, n_probs=n_vocab + 10)["completion_probabilities"][0]
        row = whole["top_logprobs"]
        self.assertEqual(len(row), n_vocab)
        self.assertEqual(len({entry["id"] for entry in row}), n_vocab)
        self.assertAlmostEqual(math.fsum(math.exp(entry["logprob"]) for entry in row), 1.0,
                               delta=1e-4)
        # Sampling settings change neither the values nor the order...
        top5 = [(entry["id"], entry["logprob"]) for entry in row[:5]]
        sampled = self.complete(tokens, temperature=0.5, top_k=2, seed=1)
        self.assertEqual([(e["id"], e["logprob"]) for e in
                          sampled["completion_probabilities"][0]["top_logprobs"]], top5)
        # ...unless post_sampling_probs asks for the sampler's probabilities.
        processed = self.complete(tokens, temperature=0.5, top_k=2, top_p=1.0, min_p=0.0,
                                  seed=1, post_sampling_probs=True)
        processed = processed["completion_probabilities"][0]
        self.assertEqual([e["id"] for e in processed["top_probs"]], [i for i, _ in top5[:2]])

    def test_cached_prompt_growing_by_one_token_evaluates_one_token(self):
        tokens = self.prompt()
        for n in range(1, len(tokens) + 1):
            result = self.complete(tokens[:n], cache_prompt=True, id_slot=0)
            self.assertEqual(result["tokens_cached"], n)
            self.assertEqual(result["timings"]["prompt_n"], 1, "prefix of %d tokens" % n)


if __name__ == "__main__":
    unittest.main()
