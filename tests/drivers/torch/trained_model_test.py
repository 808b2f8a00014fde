"""orch-driver-torch on the trained model (examples/models/kjv-tiny-f32.gguf and -f16,
docs/models.md): held-out King James text, teacher-forced, against llama.cpp b8390 on
the same file. Figures are printed as `figure: NAME = VALUE` (docs/drivers.md)."""

import os
import sys
import unittest

import harness

MODELS = os.environ.get("ORCH_TRAINED_MODEL_DIR",
                        os.path.join(harness.SOURCE, "examples", "models"))
TEXT = os.path.join(harness.SOURCE, "examples", "texts", "kjv-heldout.txt")
POSITIONS = 256
TORCH = {"engine": "torch@x", "quant": "f32", "kv": "f16", "attention": "off", "tp": "1",
         "hardware": "cpu", "threads": "1"}
LLAMA = {"engine": "llama.cpp@b8390", "quant": "f32", "kv": "f16", "attention": "off",
         "tp": "1", "hardware": "cpu", "threads": "1"}
FULL = {"top_logits": 20, "full_every": 1, "full_windows": []}


def figure(name, value):
    sys.stderr.write("figure: %s = %s\n" % (name, value))


def job(name, coordinate):
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    return harness.teacher_forced(os.path.join(MODELS, name), coordinate, POSITIONS,
                                  text=text, capture=FULL)


class TrainedModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.torch_f32 = harness.run_in_process(job("kjv-tiny-f32.gguf", TORCH))
        cls.llama_f32 = harness.run(harness.llama_driver("b8390"), job("kjv-tiny-f32.gguf", LLAMA))

    def test_both_engines_read_the_same_tokens_and_agree_on_top1(self):
        ours, theirs = self.torch_f32, self.llama_f32
        self.assertEqual(ours.status, 0, ours.error)
        self.assertEqual(theirs.status, 0, theirs.log[-2000:])
        self.assertEqual(ours.inputs, theirs.inputs)
        identical = sum(a == b for a, b in zip(ours.hashes, theirs.hashes))
        agree = harness.top1_agreement(ours, theirs)
        figure("trained model, llama.cpp b8390 f32 vs torch f32: bit-identical rows",
               "%d/%d" % (identical, POSITIONS))
        figure("trained model, llama.cpp b8390 f32 vs torch f32: top-1 agreement", "%.4f" % agree)
        figure("trained model, llama.cpp b8390 f32 vs torch f32: mean KL",
               "%.3g" % harness.mean_kl(theirs, ours))
        self.assertLess(identical, POSITIONS)
        self.assertGreaterEqual(agree, 0.95)

    def test_bf16_moves_the_distribution_more_than_the_engine_change(self):
        bf16 = harness.run_in_process(job("kjv-tiny-f32.gguf", dict(TORCH, dtype="bfloat16")))
        self.assertEqual(bf16.status, 0, bf16.error)
        kl_bf16 = harness.mean_kl(self.torch_f32, bf16)
        kl_engine = harness.mean_kl(self.llama_f32, self.torch_f32)
        figure("trained model, torch f32 vs bf16: mean KL", "%.3g" % kl_bf16)
        figure("trained model, torch f32 vs bf16: top-1 agreement",
               "%.4f" % harness.top1_agreement(self.torch_f32, bf16))
        self.assertGreater(kl_bf16, 10 * kl_engine)

    def test_an_f32_kv_cache_brings_the_engines_much_closer(self):
        # llama.cpp's CPU matmuls against an f16 cache take f16 operands on both sides
        # (ggml converts Q and the softmax weights to the cache's vec_dot type); the torch
        # driver rounds only the stored K and V. With f32 caches that difference is gone.
        ours = harness.run_in_process(job("kjv-tiny-f32.gguf", dict(TORCH, kv="f32")))
        theirs = harness.run(harness.llama_driver("b8390"),
                             job("kjv-tiny-f32.gguf", dict(LLAMA, kv="f32")))
        self.assertEqual((ours.status, theirs.status), (0, 0))
        kl_f32 = harness.mean_kl(theirs, ours)
        kl_f16 = harness.mean_kl(self.llama_f32, self.torch_f32)
        figure("trained model, llama.cpp vs torch with kv f32: mean KL", "%.3g" % kl_f32)
        figure("trained model, llama.cpp vs torch with kv f32: top-1 agreement",
               "%.4f" % harness.top1_agreement(ours, theirs))
        self.assertLess(kl_f32, kl_f16 / 100)

    def test_f16_file_runs_with_its_own_weights(self):
        f16 = harness.run_in_process(job("kjv-tiny-f16.gguf", dict(TORCH, quant="f16")))
        self.assertEqual(f16.status, 0, f16.error)
        self.assertEqual(f16.done["model"]["type"], "f16")
        figure("trained model, torch f32 file vs f16 file: top-1 agreement",
               "%.4f" % harness.top1_agreement(self.torch_f32, f16))
        self.assertGreaterEqual(harness.top1_agreement(self.torch_f32, f16), 0.9)


if __name__ == "__main__":
    unittest.main()
