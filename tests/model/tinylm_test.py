#!/usr/bin/python3
"""The trained model's tokenizer and GGUF writer (scripts/tinylm): GPT-2's byte map, the
gpt-2 pre-tokenizer's splits as llama.cpp makes them, BPE training and rank-ordered
encoding, the netcalls task generator, and the GGUF layout. Standard library only; ctest
runs it as TinyLmTest."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))

from tinylm import bpe, gguf, netcalls  # noqa: E402


class ByteTokensTest(unittest.TestCase):
    def test_spells_bytes_like_gpt2(self):
        tokens = bpe.byte_tokens()
        self.assertEqual(len(set(tokens)), 256)
        self.assertEqual(tokens[ord(" ")], "\u0120")   # Ġ
        self.assertEqual(tokens[ord("\n")], "\u010a")  # Ċ
        self.assertEqual(tokens[ord("a")], "a")
        self.assertEqual(tokens[0], "\u0100")


class PretokenizeTest(unittest.TestCase):
    def test_splits_like_llamas_gpt2_pre_tokenizer(self):
        # A run of spaces gives its last space to the next word; a blank line is two
        # newline words; contractions split off.
        self.assertEqual(bpe.pretokenize("Hello  world\n\nAnd it's 42, LORD."),
                         ["Hello", " ", " world", "\n", "\n", "And", " it", "'s", " 42",
                          ",", " LORD", "."])

    def test_trailing_whitespace_is_one_word(self):
        self.assertEqual(bpe.pretokenize("amen.  \n"), ["amen", ".", "  \n"])

    def test_rejects_text_outside_printable_ascii(self):
        with self.assertRaises(ValueError):
            bpe.pretokenize("caf\u00e9")


class BpeTest(unittest.TestCase):
    def test_merges_the_most_frequent_pair_first(self):
        vocab = bpe.train(["the then the that the\n"], 256 + 4 + 3)
        # "t h" occurs 5 times; then " th" and "th e" 4 times each, a tie the lower
        # token ids win (" " is byte 32, "th" is token 256).
        self.assertEqual(vocab.merges[:2], ["t h", "\u0120 th"])
        self.assertEqual(len(vocab.tokens), 263)
        self.assertEqual(vocab.tokens[-4:], list(bpe.CONTROL_TOKENS))
        self.assertEqual(vocab.bos, 259)

    def test_training_is_deterministic(self):
        text = ["And God said, Let there be light: and there was light.\n"] * 3
        self.assertEqual(bpe.train(text, 300).merges, bpe.train(text, 300).merges)

    def test_encoding_merges_the_lowest_rank_pair_first(self):
        ab_first = bpe.Vocab([("a", "b"), ("b", "c")])
        bc_first = bpe.Vocab([("b", "c"), ("a", "b")])
        self.assertEqual([ab_first.tokens[i] for i in ab_first.encode("abc")], ["ab", "c"])
        self.assertEqual([bc_first.tokens[i] for i in bc_first.encode("abc")], ["a", "bc"])

    def test_encode_adds_bos_and_decodes_back(self):
        vocab = bpe.train(["in the beginning\n"], 280)
        ids = vocab.encode("in the end\n", bos=True)
        self.assertEqual(ids[0], vocab.bos)
        self.assertEqual(vocab.decode(ids), "in the end\n")

    def test_single_digits_learns_no_merge_of_digits(self):
        text = ["port 5432 port 5432 port 5432 10.1.20.1\n"] * 3
        merged = bpe.train(text, 300)
        apart = bpe.train(text, 300, single_digits=True)
        self.assertTrue(any(c.isdigit() for m in merged.merges for c in m))
        self.assertFalse(any(c.isdigit() for m in apart.merges for c in m))
        self.assertIn("\u0120port", apart.tokens)  # words still merge
        ids = apart.encode(" 5432")
        self.assertEqual([apart.tokens[i] for i in ids], ["\u0120", "5", "4", "3", "2"])


class NetcallsTest(unittest.TestCase):
    def test_an_example_is_its_seeds_alone(self):
        a, b = netcalls.Example(1234), netcalls.Example(1234)
        self.assertEqual((a.prompt(), a.answer()), (b.prompt(), b.answer()))
        self.assertNotEqual(a.prompt(), netcalls.Example(1235).prompt())

    def test_the_answer_is_the_call_the_config_and_request_ask_for(self):
        for example in netcalls.training(200):
            call = json.loads(example.answer())
            self.assertEqual(call["name"], example.tool)
            arguments = call["arguments"]
            interfaces = dict(example.interfaces)
            ports = dict(example.services)
            if "interface" in arguments:
                self.assertIn(interfaces[arguments["interface"]], example.request + example.config)
            if "address" in arguments:
                self.assertIn(f" ip address {arguments['address']}/", example.config)
            if "port" in arguments:
                self.assertIn(f" port {arguments['port']}", example.config)
                self.assertIn(arguments["port"], ports.values())
            self.assertTrue(example.prompt().startswith("<|im_start|>user\n" + example.config))
            self.assertTrue(example.prompt().endswith("<|im_end|>\n<|im_start|>assistant\n"))

    def test_the_forward_variant_asks_only_for_values_that_follow_their_keys(self):
        examples = netcalls.training(200, "forward")
        self.assertEqual({e.tool for e in examples}, set(netcalls.FORWARD_TOOLS))
        for e in examples:
            arguments = e.arguments
            if "interface" in arguments:
                self.assertIn(arguments["interface"], e.request)
            if "address" in arguments:
                name = next(n for n, a in e.interfaces if a == arguments["address"])
                self.assertIn(name, e.request)
                self.assertIn(f"interface {name}\n ip address {arguments['address']}/", e.config)

    def test_the_site_variant_draws_every_value_from_the_fixed_site(self):
        examples = netcalls.training(300, "site")
        self.assertEqual({e.tool for e in examples}, set(netcalls.TOOLS))
        site = {name: (address, prefix) for name, address, prefix in netcalls.SITE_INTERFACES}
        for e in examples:
            for name, address in e.interfaces:
                self.assertEqual(site[name][0], address)
                self.assertIn(f"interface {name}\n ip address {address}/{site[name][1]}\n",
                              e.config + "\n")
            for service, port in e.services:
                self.assertEqual(netcalls.SITE_PORTS[service], port)
            arguments = e.arguments
            if "port" in arguments:
                self.assertEqual(arguments["port"], netcalls.SITE_PORTS[
                    next(s for s, p in e.services if p == arguments["port"])])
            if e.tool == "open_port":
                self.assertIn(arguments["interface"], e.request)
                self.assertEqual(arguments["address"], site[arguments["interface"]][0])
        # Every interface and service of the site appears, so a model sees them all.
        self.assertEqual({n for e in examples for n, _ in e.interfaces}, set(site))
        self.assertEqual({s for e in examples for s, _ in e.services}, set(netcalls.SITE_PORTS))

    def test_an_unknown_variant_is_refused_with_the_known_ones(self):
        with self.assertRaisesRegex(ValueError, "'sight'.*full, forward, site"):
            netcalls.Example(1, "sight")

    def test_held_out_configs_are_never_training_configs(self):
        train = netcalls.training(300)
        held = netcalls.held_out(50, train)
        self.assertEqual(len(held), 50)
        self.assertFalse({e.config for e in held} & {e.config for e in train})
        self.assertTrue(all(e.seed >= netcalls.HELDOUT_SEED_BASE for e in held))

    def test_the_committed_case_files_are_the_generators(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        for variant, name, cases in (("forward", "netcalls.jsonl", 40),
                                    ("site", "netcalls-site.jsonl", 120)):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, name)
                subprocess.run([sys.executable, "-B",
                                os.path.join(root, "scripts", "eval-task-model"), "--variant",
                                variant, "--write-cases", out, "--cases", str(cases)], check=True)
                with open(out) as f:
                    written = f.read()
            with open(os.path.join(root, "examples", "tasks", name)) as f:
                self.assertEqual(f.read(), written, name)


class GgufWriterTest(unittest.TestCase):
    def test_lays_out_header_metadata_and_aligned_tensor_data(self):
        w = gguf.Writer()
        w.add("general.architecture", gguf.STRING, "llama")
        w.add_array("tokenizer.ggml.token_type", gguf.I32, [1, 3])
        w.add_tensor("a", [3], gguf.GGML_F32, struct.pack("<3f", 1, 2, 3))
        w.add_tensor("b", [2, 1], gguf.GGML_F16, struct.pack("<2e", 0.5, -1))
        data = w.bytes()
        self.assertEqual(data[:4], b"GGUF")
        self.assertEqual(struct.unpack_from("<IQQ", data, 4), (3, 2, 3))  # + alignment
        self.assertIn(b"general.alignment", data)
        self.assertEqual(len(data) % 32, 0)
        start = len(data) - 64  # two tensors, each padded to 32 bytes
        self.assertEqual(data[start:start + 12], struct.pack("<3f", 1, 2, 3))
        self.assertEqual(data[start + 12:start + 32], bytes(20))
        self.assertEqual(data[start + 32:start + 36], struct.pack("<2e", 0.5, -1))

    def test_rejects_data_of_the_wrong_size(self):
        with self.assertRaises(ValueError):
            gguf.Writer().add_tensor("a", [4], gguf.GGML_F32, bytes(12))


if __name__ == "__main__":
    unittest.main()
