"""orch-driver-llama-server against a real llama-server (b8390, built by
scripts/setup-engines into third_party/engines/llama.cpp-b8390/server/): the
server is started on 127.0.0.1 at a free port with the trained model, waited
for (bounded), a teacher-forced job runs through the driver, and the server
is stopped by its pid."""

import json
import os
import signal
import socket
import subprocess
import time
import unittest
import urllib.request

import harness

SERVER = os.path.join(harness.SOURCE, "third_party", "engines", "llama.cpp-b8390", "server",
                      "llama-server")
MODEL = os.path.join(harness.SOURCE, "examples", "models", "kjv-tiny-f32.gguf")
HEALTH_WAIT_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(SERVER):
            raise AssertionError("%s is missing: build it with scripts/setup (it runs "
                                 "scripts/setup-engines, which builds llama-server for b8390)"
                                 % SERVER)
        cls.port = free_port()
        cls.url = "http://127.0.0.1:%d" % cls.port
        cls.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                    "llama-server-e2e-%d.log" % os.getpid()), "wb")
        cls.proc = subprocess.Popen([SERVER, "-m", MODEL, "--host", "127.0.0.1", "--port",
                                     str(cls.port), "-np", "1", "-c", "512", "-t", "1"],
                                    stdout=cls.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + HEALTH_WAIT_S
        for _ in range(HEALTH_WAIT_S * 4):
            if cls.proc.poll() is not None:
                raise AssertionError("llama-server exited with %d" % cls.proc.returncode)
            try:
                with urllib.request.urlopen(cls.url + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.25)
        cls.tearDownClass()
        raise AssertionError("llama-server did not answer /health within %d s" % HEALTH_WAIT_S)

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            os.kill(cls.proc.pid, signal.SIGTERM)
            try:
                cls.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(cls.proc.pid, signal.SIGKILL)
                cls.proc.wait()
        cls.log.close()

    def job(self, **args):
        workload = {"name": "verse", "kind": "teacher_forced", "positions": 16,
                    "text": "In the beginning God created the heaven and the earth. And the earth was "
                            "without form, and void; and darkness was upon the face of the deep."}
        return harness.job("llama-server@b8390", self.url, workload=workload, top_k=8, **args)

    def test_the_server_reports_itself_and_a_wrong_slot_count_is_refused(self):
        out = harness.run("llama-server", self.job(coordinate={"slots": "2"}))
        self.assertEqual(out.error["code"], "invalid_combination", out.log)
        self.assertIn('slots = "2"', out.error["message"])
        self.assertEqual(out.hello["version"], "b8390")

    def test_teacher_forced_job_on_the_decode_path(self):
        out = harness.run("llama-server", self.job(coordinate={"slots": "1"}))
        self.assertEqual(out.status, 0, (out.error, out.log))
        self.assertEqual(out.hello["capture_path"], "decode-per-position")
        self.assertEqual(len(out.records), 16)
        for fields, top, _ in out.records:
            self.assertEqual(len(top), 8)
            self.assertTrue(fields["flags"] & 8)
        self.assertEqual(json.loads(json.dumps(out.done))["positions"], 16)

    def test_the_servers_log_says_where_the_weights_went_and_a_gpu_job_is_refused(self):
        # This llama-server has no GPU backend: whatever -ngl asks, its log shows the
        # weights in host memory, so a job that asks for a GPU would measure the CPU.
        server = {"mode": "launched", "log": self.log.name}
        gpu = harness.run("llama-server", self.job(coordinate={"slots": "1", "hardware": "gpu"},
                                                   server=server))
        self.assertEqual(gpu.error["code"], "invalid_combination", gpu.log)
        self.assertIn('hardware = "gpu"', gpu.error["message"])
        self.assertIn("reports cpu", gpu.error["message"])
        self.assertIn("CPU_Mapped model buffer size", gpu.error["message"])
        cpu = harness.run("llama-server", self.job(coordinate={"slots": "1", "hardware": "cpu"},
                                                   server=server))
        self.assertEqual(cpu.status, 0, (cpu.error, cpu.log))
        self.assertEqual(cpu.hello["server"]["reported"]["from_log"]["hardware"], "cpu")


if __name__ == "__main__":
    unittest.main()
