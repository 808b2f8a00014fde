"""The trained tiny model: corpus, tokenizer, network, GGUF writer, driver client.

Used by scripts/train-tiny-model and scripts/eval-tiny-model (docs/models.md, "The
trained model"). Only tinylm.network needs PyTorch; the rest is the standard library
and the driver SDK (drivers/python/orch_driver: frames, position records, GPT-2's byte
map and pre-tokenizer), which importing tinylm puts on the path.
"""
import os
import sys

_SDK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "drivers", "python")
if os.path.realpath(_SDK) not in (os.path.realpath(p) for p in sys.path):
    sys.path.insert(0, os.path.realpath(_SDK))
