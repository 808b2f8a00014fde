"""The axes orch-driver-torch reads from a job's coordinate, the values it
accepts, and the combinations it refuses: one table, printed by
`orch-driver-torch capabilities --json` and checked in as
planner/declarations/torch.json (a test keeps the two equal).

The table is static (what the driver can do with a capable torch); what the
running torch lacks (sdpa before torch 2.0, CUDA, a second GPU,
transformers) is refused at run time as invalid_combination, naming what is
missing.
"""

from orch_driver import axes
from orch_driver.axes import Axis, Condition, Rule

WEIGHT_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0")
CACHE_TYPES = ("f32", "f16", "bf16")
DTYPES = ("float32", "bfloat16", "float16")
SDPA = ("sdpa", "sdpa_math", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn")
ATTENTION = ("off", "eager", "on", "blocked", "auto") + SDPA + ("flash_attention_2",)
TRANSFORMERS_ATTENTION = ("off", "eager", "auto") + SDPA + ("flash_attention_2",)
SAMPLERS = ("penalties", "top_k", "top_p", "min_p", "temperature")

AXES = [
    axes.text("engine", "none: the engine is the driver's torch"),
    Axis("impl", values=("orch", "transformers"), noun="implementation",
         sets="orch: the llama forward written in this driver; transformers: "
              "LlamaForCausalLM from the GGUF's config and weights"),
    Axis("quant", values=WEIGHT_TYPES, noun="weight type",
         sets="weight type of the model file run (must be the file's own: "
              "q8_0/q4_0 are dequantized on load to the compute dtype)"),
    Axis("kv", values=CACHE_TYPES, pair=True, noun="cache type",
         sets="storage dtype of the K / V cache (rounded to it, computed in "
              "dtype)"),
    Axis("attention", values=ATTENTION, noun="attention implementation",
         sets="off/eager: softmax(QK^T)V; on/blocked: online softmax over "
              "key blocks of attention_block; auto: sdpa when torch has it, "
              "else eager; sdpa*: F.scaled_dot_product_attention with one "
              "backend (torch >= 2.0); flash_attention_2: transformers only"),
    axes.count("attention_block", 1,
               "key block size of the blocked attention (default 64)"),
    Axis("dtype", values=DTYPES, noun="compute dtype",
         sets="dtype of weights and activations (logits are read as float32)"),
    axes.switch("matmul_tf32", "torch.backends.cuda.matmul.allow_tf32 and "
                "cudnn.allow_tf32 (GPU only)"),
    axes.switch("deterministic", "torch.use_deterministic_algorithms"),
    axes.count("threads", 0, "torch.set_num_threads (0 = all hardware threads)"),
    axes.count("batch", 0, "prefill chunk: tokens per forward (0 = the whole "
               "workload)"),
    axes.count("ctx", 0, "KV cache capacity in tokens (0 = what the workload "
               "needs)"),
    axes.text("hardware", "cpu, or gpu...: CUDA device (the first of the "
              "job's gpu_ids, else cuda:0)"),
    axes.count("tp", 1, "GPUs the layers are split over (pipeline, in order)"),
    axes.text("chat_template", "none: accepted and not applied by this driver"),
    Axis("sampler.seed", axes.INTEGER, "seed", min=0, max=0xffffffff,
         sets="torch.Generator seed of the final draw"),
    axes.real("sampler.temperature", "temperature (0 = greedy)"),
    Axis("sampler.top_k", axes.INTEGER, "count", min=-1, max=1 << 30,
         sets="top_k sampler"),
    axes.real("sampler.top_p", "top_p sampler"),
    axes.real("sampler.min_p", "min_p sampler"),
    axes.real("sampler.repeat_penalty", "penalties sampler"),
    Axis("sampler.repeat_last_n", axes.INTEGER, "count", min=-1, max=1 << 30,
         sets="penalties sampler window"),
    Axis("sampler.order", values=SAMPLERS, list=True, noun="sampler",
         sets="sampler chain order before the seeded draw"),
]

RULES = [
    Rule(Condition("tp", min=2), Condition("hardware", prefix="gpu"),
         "the torch driver splits layers only across GPUs; use tp = 1 on CPU"),
    Rule(Condition("matmul_tf32", in_=("on",)), Condition("hardware", prefix="gpu"),
         "TF32 is a CUDA matmul mode; a CPU run has none"),
    Rule(Condition("attention", in_=("flash_attention_2",)),
         Condition("impl", in_=("transformers",)),
         "flash_attention_2 is a transformers attn_implementation; the "
         "driver's own forward has eager, blocked and sdpa"),
    Rule(Condition("impl", in_=("transformers",)),
         Condition("attention", in_=TRANSFORMERS_ATTENTION),
         "transformers' LlamaForCausalLM has no blocked attention (its "
         "attn_implementation is eager, sdpa or flash_attention_2)"),
    Rule(Condition("attention", in_=("sdpa_flash", "sdpa_efficient", "sdpa_cudnn",
                                     "flash_attention_2")),
         Condition("hardware", prefix="gpu"),
         "the flash, memory-efficient and cuDNN attention kernels are CUDA "
         "kernels; on CPU use sdpa_math, sdpa, eager or blocked"),
]
