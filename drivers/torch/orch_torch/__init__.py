"""The PyTorch engine driver (orch-driver-torch): the llama architecture
written directly in PyTorch from a GGUF file's tensors, or, with transformers
importable, transformers' LlamaForCausalLM built from the same file
(docs/drivers.md, "orch-driver-torch")."""
