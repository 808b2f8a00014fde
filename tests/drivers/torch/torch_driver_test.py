"""orch-driver-torch against the real engines, on CPU: reruns, the
cross-engine cell against llama.cpp, dtype and thread effects, tokenization
parity with llama.cpp, generation, the capture policy and typed errors.
Figures are printed (stderr) as `figure: NAME = VALUE` for docs/drivers.md."""

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness

RECIPE = "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1"
RECIPE_HD64 = "llama:vocab=2048,embd=256,layers=2,heads=4,kv_heads=2,ff=512,ctx=512,seed=3"
TORCH = {"engine": "torch@x", "quant": "f32", "kv": "f16", "attention": "off", "tp": "1",
         "hardware": "cpu", "threads": "1"}
LLAMA = {"engine": "llama.cpp@b8390", "quant": "f32", "kv": "f16", "attention": "off",
         "tp": "1", "hardware": "cpu", "threads": "1"}
FULL = {"top_logits": 20, "full_every": 1, "full_windows": []}

_DIR = tempfile.mkdtemp(prefix="orch-torch-test-")
atexit.register(shutil.rmtree, _DIR, True)
_RESULTS = {}


def model(recipe=RECIPE):
    name = hashlib.sha256(recipe.encode()).hexdigest()[:12] + ".gguf"
    return harness.synth(recipe, os.path.join(_DIR, name))


def figure(name, value):
    sys.stderr.write("figure: %s = %s\n" % (name, value))


def torch_run(overrides=None, positions=64, capture=None, recipe=RECIPE, **kw):
    coordinate = dict(TORCH, **(overrides or {}))
    key = json.dumps([coordinate, positions, capture, recipe, kw], sort_keys=True)
    if key not in _RESULTS:
        job = harness.teacher_forced(model(recipe), coordinate, positions, capture=capture, **kw)
        _RESULTS[key] = harness.run_in_process(job)
    return _RESULTS[key]


def llama_run(overrides=None, positions=64, capture=None, recipe=RECIPE, release="b8390"):
    coordinate = dict(LLAMA, **(overrides or {}))
    job = harness.teacher_forced(model(recipe), coordinate, positions, capture=capture)
    return harness.run(harness.llama_driver(release), job)


def torch_can_matmul_float16_on_cpu():
    import torch
    try:
        torch.nn.functional.linear(torch.ones((2, 2), dtype=torch.float16),
                                   torch.ones((2, 2), dtype=torch.float16))
        return True
    except RuntimeError:
        return False


class TorchDriverTest(unittest.TestCase):
    def assertOk(self, out):
        self.assertEqual(out.status, 0, out.log[-2000:])
        self.assertIsNotNone(out.done, out.log[-2000:])
        self.assertEqual(out.trailing, 0)

    def assertError(self, out, code, text):
        self.assertEqual(out.status, 2, out.log[-2000:])
        self.assertEqual(out.error["code"], code)
        self.assertIn(text, out.error["message"])
        self.assertEqual(out.hello["engine"], "torch")
        self.assertEqual(out.records, [])

    def test_hello_and_done_report_what_ran(self):
        out = torch_run()
        self.assertOk(out)
        self.assertEqual(out.hello["engine"], "torch")
        self.assertEqual(out.hello["build"]["torch"].split("+")[0], out.hello["version"])
        self.assertEqual(out.done["positions"], 64)
        self.assertEqual(len(out.records), 64)
        ran = out.done["ran"]
        self.assertEqual((ran["attention"], ran["dtype"], ran["kv"], ran["threads"],
                          ran["devices"]), ("eager", "float32", "f16/f16", 1, ["cpu"]))
        self.assertEqual(out.done["model"]["type"], "f32")

    def test_done_reports_the_effective_settings_read_from_what_ran(self):
        out = torch_run()
        self.assertOk(out)
        effective = out.done["effective"]
        self.assertEqual(effective["axes"], {"attention": "off", "dtype": "float32",
                                             "kv": "f16", "threads": "1"})
        # The cache stores f16; attention reads it converted to the compute dtype.
        self.assertEqual(effective["raw"]["kv_cache"], {"k": "f16", "v": "f16"})
        self.assertEqual(effective["raw"]["attention_reads"], {"q": "f32", "k": "f32", "v": "f32"})
        self.assertEqual(effective["raw"]["attention_path"], "eager")
        auto = torch_run({"attention": "auto"})
        self.assertOk(auto)
        self.assertEqual(auto.done["effective"]["axes"]["attention"], auto.done["ran"]["attention"])
        self.assertNotEqual(auto.done["effective"]["axes"]["attention"], "auto")

    def test_done_names_every_token_its_records_name(self):
        # Rows are digested on worker threads; done is written after the last
        # of their records, so token_text covers them all.
        out = torch_run(positions=128)
        self.assertOk(out)
        named = set(out.inputs) | set(out.argmax)
        self.assertEqual(named - {int(t) for t in out.done["token_text"]}, set())

    def test_rerun_in_a_child_process_is_bit_identical(self):
        first = torch_run()
        again = harness.run(harness.torch_driver(),
                            harness.teacher_forced(model(), TORCH, 64))
        self.assertOk(again)
        self.assertEqual(first.hashes, again.hashes)

    def test_text_is_tokenized_as_llama_cpp_tokenizes_it(self):
        texts = [harness.readme_text(),
                 "It's  we're   they'll I'd 12345 x2y  \n\n tabs\tand\u00e9t\u00e9 "
                 "\u4e2d\u6587 \U0001F600!!  ... 'quoted' end   "]
        for text in texts:
            job = harness.teacher_forced(model(), TORCH, 0, text=text)
            ours = harness.run_in_process(job)
            theirs = harness.run(harness.llama_driver("b8390"),
                                 harness.teacher_forced(model(), LLAMA, 0, text=text))
            self.assertOk(ours)
            self.assertOk(theirs)
            self.assertEqual(ours.inputs, theirs.inputs)
            for token in set(ours.inputs):
                self.assertEqual(ours.done["token_text"][str(token)],
                                 theirs.done["token_text"][str(token)])

    def test_llama_cpp_f32_and_torch_f32_differ_in_bits_and_agree_on_top1(self):
        ours = torch_run(positions=128, capture=FULL)
        theirs = llama_run(positions=128, capture=FULL)
        self.assertOk(ours)
        self.assertOk(theirs)
        self.assertEqual(ours.inputs, theirs.inputs)
        identical = sum(a == b for a, b in zip(ours.hashes, theirs.hashes))
        agree = harness.top1_agreement(ours, theirs)
        figure("llama.cpp b8390 f32 vs torch f32: bit-identical rows", "%d/128" % identical)
        figure("llama.cpp b8390 f32 vs torch f32: top-1 agreement", "%.4f" % agree)
        figure("llama.cpp b8390 f32 vs torch f32: mean KL", "%.3g" % harness.mean_kl(theirs, ours))
        figure("llama.cpp b8390 f32 vs torch f32: max |dlogit|",
               "%.3g" % harness.max_abs_delta(theirs, ours))
        self.assertLess(identical, 128)
        self.assertGreaterEqual(agree, 0.95)

    def test_an_f32_kv_cache_brings_llama_cpp_and_torch_much_closer(self):
        # llama.cpp multiplies f16 operands against an f16 cache (Q and the softmax
        # weights converted); the torch driver rounds only the stored K and V.
        kl_f16 = harness.mean_kl(llama_run(positions=128, capture=FULL),
                                 torch_run(positions=128, capture=FULL))
        ours = torch_run({"kv": "f32"}, positions=128, capture=FULL)
        theirs = llama_run({"kv": "f32"}, positions=128, capture=FULL)
        self.assertOk(ours)
        kl_f32 = harness.mean_kl(theirs, ours)
        figure("llama.cpp b8390 vs torch, kv f32: mean KL", "%.3g" % kl_f32)
        figure("llama.cpp b8390 vs torch, kv f32: max |dlogit|",
               "%.3g" % harness.max_abs_delta(theirs, ours))
        self.assertLess(kl_f32, kl_f16 / 100)

    def test_bf16_moves_the_distribution_more_than_engines_do_at_f32(self):
        f32 = torch_run(positions=128, capture=FULL)
        bf16 = torch_run({"dtype": "bfloat16"}, positions=128, capture=FULL)
        theirs = llama_run(positions=128, capture=FULL)
        self.assertOk(bf16)
        self.assertEqual(bf16.done["ran"]["dtype"], "bfloat16")
        kl_engine = harness.mean_kl(theirs, f32)
        kl_bf16 = harness.mean_kl(f32, bf16)
        figure("torch f32 vs torch bf16: mean KL", "%.3g" % kl_bf16)
        figure("torch f32 vs torch bf16: top-1 agreement", "%.4f" % harness.top1_agreement(f32, bf16))
        self.assertGreater(kl_bf16, 10 * kl_engine)

    def test_threads_1_and_2_give_the_same_bits(self):
        one = torch_run({"threads": "1"}, positions=128)
        two = torch_run({"threads": "2"}, positions=128)
        self.assertOk(two)
        self.assertEqual(two.done["ran"]["threads"], 2)
        same = sum(a == b for a, b in zip(one.hashes, two.hashes))
        figure("torch threads 1 vs 2: bit-identical rows", "%d/128" % same)
        self.assertEqual(one.hashes, two.hashes)

    def test_blocked_attention_changes_bits_not_top1(self):
        eager = torch_run(positions=128, capture=FULL)
        blocked = torch_run({"attention": "blocked", "attention_block": "16"}, positions=128,
                            capture=FULL)
        self.assertOk(blocked)
        self.assertEqual((blocked.done["ran"]["attention"],
                          blocked.done["ran"]["attention_block"]), ("blocked", 16))
        self.assertEqual(torch_run({"attention": "on"}, positions=128).done["ran"]["attention"],
                         "blocked")
        same = sum(a == b for a, b in zip(eager.hashes, blocked.hashes))
        figure("torch eager vs blocked(16): bit-identical rows", "%d/128" % same)
        self.assertLess(harness.max_abs_delta(eager, blocked), 1e-3)
        self.assertEqual(harness.top1_agreement(eager, blocked), 1.0)

    def test_deterministic_algorithms_are_switched_on_and_change_nothing_here(self):
        on = torch_run({"deterministic": "on"})
        self.assertOk(on)
        self.assertTrue(on.done["ran"]["deterministic"])
        self.assertFalse(torch_run().done["ran"]["deterministic"])
        self.assertEqual(on.hashes, torch_run().hashes)

    def test_prefill_chunks_see_the_same_context(self):
        whole = torch_run(positions=96)
        chunked = torch_run({"batch": "32"}, positions=96)
        self.assertOk(chunked)
        self.assertEqual(chunked.done["ran"]["batch"], 32)
        figure("torch batch all vs 32: bit-identical rows", "%d/96" % sum(
            a == b for a, b in zip(whole.hashes, chunked.hashes)))
        self.assertEqual(harness.top1_agreement(whole, chunked), 1.0)

    def test_head_dim_64_model_runs_and_agrees_with_llama_cpp(self):
        ours = torch_run(positions=64, recipe=RECIPE_HD64)
        theirs = llama_run(positions=64, recipe=RECIPE_HD64)
        self.assertOk(ours)
        self.assertIn("head_dim=64", ours.done["ran"]["model"])
        self.assertGreaterEqual(harness.top1_agreement(ours, theirs), 0.95)

    def test_capture_policy_keeps_full_rows_where_asked(self):
        out = torch_run(positions=40, capture={"top_logits": 5, "full_every": 16,
                                               "full_windows": [[3, 5]],
                                               "full_row_budget_bytes": 0})
        self.assertOk(out)
        kept = [i for i, row in enumerate(out.full_rows) if row]
        self.assertEqual(kept, [0, 3, 4, 16, 32])
        self.assertEqual({f["top_count"] for f, _, _ in out.records}, {5})

    def test_greedy_generation_picks_the_argmax_and_reruns_identically(self):
        job = harness.teacher_forced(model(), dict(TORCH, **{"sampler.temperature": "0"}), 0)
        job["workload"] = {"name": "g", "kind": "generate", "prompt": "The model", "max_tokens": 12}
        first = harness.run(harness.torch_driver(), job)
        again = harness.run_in_process(job)
        self.assertOk(first)
        self.assertEqual(first.done["generated_ids"], again.done["generated_ids"])
        outputs = [f["output_token"] for f, _, _ in first.records]
        self.assertEqual(outputs, first.done["generated_ids"])
        self.assertEqual(outputs, first.argmax[:len(outputs)])
        self.assertEqual([f["input_token"] for f, _, _ in first.records][1:], outputs[:-1])

    def test_seeded_sampling_depends_on_the_seed_only(self):
        def generate(seed):
            c = dict(TORCH, **{"sampler.temperature": "1.5", "sampler.seed": str(seed),
                               "sampler.top_k": "0", "sampler.top_p": "1", "sampler.min_p": "0"})
            job = harness.teacher_forced(model(), c, 0)
            job["workload"] = {"name": "g", "kind": "generate", "prompt": "The", "max_tokens": 16}
            out = harness.run_in_process(job)
            self.assertOk(out)
            return out.done["generated_ids"]
        self.assertEqual(generate(7), generate(7))
        self.assertNotEqual(generate(7), generate(8))

    def test_unknown_axis_value_is_invalid_job(self):
        out = torch_run({"attention": "flash"})
        self.assertError(out, "invalid_job",
                         'coordinate.attention: unknown attention implementation "flash"')
        self.assertError(torch_run({"dtype": "float8"}), "invalid_job",
                         'coordinate.dtype: unknown compute dtype "float8"')

    def test_combinations_the_running_torch_cannot_run_are_refused(self):
        self.assertError(torch_run({"tp": "2"}), "invalid_combination",
                         'tp = 2 needs hardware = "gpu...", got hardware = "cpu"')
        self.assertError(torch_run({"matmul_tf32": "on"}), "invalid_combination",
                         'matmul_tf32 = "on" needs hardware = "gpu..."')
        import torch
        if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            self.assertError(torch_run({"attention": "sdpa"}), "invalid_combination",
                             'attention = "sdpa" needs torch >= 2.0')
        if not torch.cuda.is_available():
            self.assertError(torch_run({"hardware": "gpu"}), "invalid_combination",
                             "this torch sees no CUDA device")
        if not torch_can_matmul_float16_on_cpu():
            self.assertError(torch_run({"dtype": "float16"}), "invalid_combination",
                             'dtype = "float16" on CPU: torch ')
        try:
            import transformers  # noqa: F401
        except ImportError:
            self.assertError(torch_run({"impl": "transformers"}), "invalid_combination",
                             'impl = "transformers" needs the transformers package')

    def test_quant_other_than_the_files_is_refused(self):
        self.assertError(torch_run({"quant": "q8_0"}), "invalid_combination",
                         'quant = "q8_0": the model file')

    def test_missing_model_and_sha_mismatch_are_typed(self):
        job = harness.teacher_forced("", TORCH, 8, requirement="sha256:" + "0" * 64)
        self.assertError(harness.run_in_process(job), "model_missing",
                         "is not on this agent")
        job = harness.teacher_forced(model(), TORCH, 8, requirement="sha256:" + "0" * 64)
        self.assertError(harness.run(harness.torch_driver(), job), "sha256_mismatch",
                         "the job requires " + "0" * 64)
        with open(model(), "rb") as f:
            real = hashlib.sha256(f.read()).hexdigest()
        job = harness.teacher_forced(model(), TORCH, 8, requirement="sha256:" + real)
        self.assertOk(harness.run_in_process(job))

    def test_quantized_files_are_dequantized_on_load(self):
        q8 = os.path.join(_DIR, "q8_0.gguf")
        if not os.path.exists(q8):
            subprocess.run([harness.llama_driver("b8390"), "quantize", model(), q8, "q8_0", "1"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        job = harness.teacher_forced(q8, dict(TORCH, quant="q8_0"), 64)
        ours = harness.run_in_process(job)
        self.assertOk(ours)
        self.assertEqual(ours.done["model"]["dequantized"], ["q8_0"])
        self.assertIn("q8_0 weights dequantized on load to float32", ours.done["notes"])
        theirs = harness.run(harness.llama_driver("b8390"),
                             harness.teacher_forced(q8, dict(LLAMA, quant="q8_0"), 64))
        self.assertOk(theirs)
        agree = harness.top1_agreement(ours, theirs)
        figure("llama.cpp q8_0 vs torch q8_0-dequantized f32: top-1 agreement", "%.4f" % agree)
        self.assertGreaterEqual(agree, 0.9)


class DequantizationTest(unittest.TestCase):
    """q8_0 and q4_0 blocks as ggml defines them: an f16 scale d, then 32 int8 values
    (q8_0: v = q * d), or 16 bytes of nibbles (q4_0: low nibbles are values 0..15,
    high nibbles 16..31, v = (nibble - 8) * d)."""

    def dequantize(self, type_id, ne, data):
        import struct as s
        from orch_driver import gguf
        from orch_torch import weights

        class File:
            path = "blocks.gguf"
            tensors = {"t": gguf.TensorInfo("t", ne, type_id, 0, len(data))}
        return weights.tensor_f32_or_native(File, data, "t")

    def test_q8_0(self):
        import struct as s
        qs = list(range(-16, 16))
        block = s.pack("<e", 0.5) + s.pack("<32b", *qs)
        out = self.dequantize(8, [32, 2], block + s.pack("<e", -2.0) + s.pack("<32b", *qs))
        self.assertEqual(list(out.shape), [2, 32])
        self.assertEqual(out[0].tolist(), [q * 0.5 for q in qs])
        self.assertEqual(out[1].tolist(), [q * -2.0 for q in qs])

    def test_q4_0(self):
        import struct as s
        low = list(range(16))
        high = [15 - v for v in range(16)]
        block = s.pack("<e", 0.25) + bytes(l | (h << 4) for l, h in zip(low, high))
        out = self.dequantize(2, [32], block)
        self.assertEqual(out.tolist(), [(v - 8) * 0.25 for v in low + high])


class TransformersLayoutTest(unittest.TestCase):
    """impl = "transformers" cannot run here (no transformers); its weight mapping can be
    checked: transformers' half-split RoPE on the un-permuted Q weights gives the same
    queries as this driver's adjacent-pair RoPE on GGUF's permuted ones."""

    def test_unpermuted_q_with_half_split_rope_equals_gguf_q_with_pair_rope(self):
        import torch
        from orch_torch.hf import _unpermute
        from orch_torch.llama import LlamaModel

        class Config:
            heads, head_dim, rope_dim, rope_base, embd = 4, 16, 16, 10000.0, 64
        ours = LlamaModel.__new__(LlamaModel)
        ours.config = Config
        half = Config.rope_dim // 2
        ours.inv_freq = (Config.rope_base ** -(torch.arange(0, half, dtype=torch.float64) * 2.0
                                               / Config.rope_dim)).float()
        torch.manual_seed(0)
        w_gguf = torch.randn(64, 64)
        x = torch.randn(5, 64)
        positions = torch.arange(3, 8)
        q_ours = ours._rope((x @ w_gguf.T).view(5, 4, 16), positions)
        q_hf = (x @ _unpermute(w_gguf, 4).T).view(5, 4, 16)
        angle = positions.float().unsqueeze(1) * ours.inv_freq.unsqueeze(0)
        cos = torch.cat((angle.cos(), angle.cos()), -1).unsqueeze(1)
        sin = torch.cat((angle.sin(), angle.sin()), -1).unsqueeze(1)
        rotated = torch.cat((-q_hf[..., 8:], q_hf[..., :8]), -1)
        q_hf = q_hf * cos + rotated * sin
        # transformers' dims (i, i + d/2) are GGUF's (2i, 2i + 1).
        back = torch.stack((q_hf[..., :8], q_hf[..., 8:]), -1).reshape(5, 4, 16)
        self.assertTrue(torch.allclose(back, q_ours, atol=1e-5))


class CapabilitiesTest(unittest.TestCase):
    def test_checked_in_declaration_is_what_the_driver_declares(self):
        printed = subprocess.run([harness.torch_driver(), "capabilities", "--json"],
                                 stdout=subprocess.PIPE, check=True).stdout.decode()
        path = os.path.join(harness.SOURCE, "planner", "declarations", "torch.json")
        if os.environ.get("ORCH_UPDATE_GOLDEN"):
            with open(path, "w") as f:
                f.write(printed)
        with open(path) as f:
            self.assertEqual(printed, f.read(),
                             "planner/declarations/torch.json is not the driver's output; "
                             "regenerate it with `drivers/torch/orch-driver-torch capabilities "
                             "--json > planner/declarations/torch.json` and reconfigure")

    def test_version_is_the_hello_without_a_job(self):
        out = subprocess.run([harness.torch_driver(), "version"], stdout=subprocess.PIPE,
                             check=True, timeout=30).stdout
        hello = json.loads(out)
        self.assertEqual(hello["engine"], "torch")
        self.assertTrue(hello["version"])


if __name__ == "__main__":
    unittest.main()
