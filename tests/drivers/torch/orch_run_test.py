"""orch-driver-torch through the whole system: `orch run` starts a
coordinator and local agents (real child processes), whose driver check runs
`orch-driver-torch version`, and which run a spec with a torch baseline and a
llama.cpp cell; then `orch report` compares them."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

SPEC = """
[experiment]
name = "torch-vs-llama"

[model]
synth = "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1"

[[workloads]]
name = "readme-64"
kind = "teacher_forced"
text_file = "texts/readme.txt"
positions = 64

[baseline]
engine = "torch@{version}"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
dtype = "float32"

[alternatives]
engine = ["llama.cpp@b8390"]
dtype = ["bfloat16"]

[repeats]
baseline = 2
cells = 1
"""


def torch_version():
    out = subprocess.run([harness.torch_driver(), "version"], stdout=subprocess.PIPE,
                         check=True, timeout=60).stdout
    return json.loads(out)["version"]


class OrchRunTest(unittest.TestCase):
    def test_orch_run_compares_torch_with_llama_cpp(self):
        orch = os.environ["ORCH_BINARY"]
        with tempfile.TemporaryDirectory(prefix="orch-torch-run-") as d:
            os.mkdir(os.path.join(d, "texts"))
            shutil.copy(harness.README, os.path.join(d, "texts", "readme.txt"))
            version = torch_version()
            spec = os.path.join(d, "spec.toml")
            with open(spec, "w") as f:
                f.write(SPEC.format(version=version))
            data = os.path.join(d, "data")
            run = subprocess.run(
                [orch, "run", spec, "--data-dir", data, "--agents", "2", "--timeout", "240",
                 "--driver", "torch@%s=%s" % (version, harness.torch_driver()),
                 "--driver", "llama.cpp@b8390=" + harness.llama_driver("b8390")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            log = run.stdout.decode(errors="replace")
            self.assertEqual(run.returncode, 0, log[-4000:])
            report = subprocess.run([orch, "report", "torch-vs-llama", "--data-dir", data,
                                     "--json"], stdout=subprocess.PIPE, check=True, timeout=60)
            parsed = json.loads(report.stdout)
            text = json.dumps(parsed)
            self.assertIn("torch@" + version, text)
            self.assertIn("llama.cpp@b8390", text)
            self.assertIn("bfloat16", text)
            human = subprocess.run([orch, "report", "torch-vs-llama", "--data-dir", data],
                                   stdout=subprocess.PIPE, check=True, timeout=60)
            sys_text = human.stdout.decode(errors="replace")
            print(sys_text)
            self.assertIn("torch@" + version, sys_text)


if __name__ == "__main__":
    unittest.main()
