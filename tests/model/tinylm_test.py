#!/usr/bin/python3
"""The trained model's tokenizer and GGUF writer (scripts/tinylm): GPT-2's byte map, the
gpt-2 pre-tokenizer's splits as llama.cpp makes them, BPE training and rank-ordered
encoding, and the GGUF layout. Standard library only; ctest runs it as TinyLmTest."""
import os
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))

from tinylm import bpe, gguf  # noqa: E402


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
