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
            workload = json.loads(report.stdout)["workloads"][0]
            baseline = workload["baseline"]
            self.assertEqual(baseline["repeats"]["available"], 2)
            self.assertTrue(baseline["repeats"]["bit_identical"])
            cells = {c["label"]: c for c in workload["cells"]}
            self.assertEqual(set(cells), {"engine=llama.cpp@b8390", "dtype=bfloat16"})
            for cell in cells.values():
                self.assertEqual(cell["status"], "compared", cell["reason"])
                self.assertEqual(cell["comparison"]["compared"], 64)
                self.assertFalse(cell["comparison"]["bit_identical"])
            llama = cells["engine=llama.cpp@b8390"]["comparison"]
            bf16 = cells["dtype=bfloat16"]["comparison"]
            self.assertGreaterEqual(llama["top1_agreement"], 0.95)
            self.assertGreater(bf16["kld"]["mean"], 10 * llama["kld"]["mean"])

if __name__ == "__main__":
    unittest.main()
