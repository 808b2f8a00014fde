"""The torch dtypes a job's coordinate names (dtype, kv) and the running torch's
version: shared by the engine (settings, checks) and the session (the run)."""

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CACHE_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DTYPE_CACHE_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


def torch_version():
    """The running torch's version without its local part ("2.1.2", not "2.1.2+cpu")."""
    return torch.__version__.split("+")[0]
