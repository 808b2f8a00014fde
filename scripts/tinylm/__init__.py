"""The trained tiny model: corpus, tokenizer, network, GGUF writer, driver client.

Used by scripts/train-tiny-model and scripts/eval-tiny-model (docs/models.md, "The
trained model"). Only tinylm.network needs PyTorch; the rest is the standard library.
"""
