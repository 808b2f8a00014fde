// The llama.cpp driver's reading of a job document (docs/driver-protocol.md):
// every coordinate axis mapped to the engine setting it controls, checked before
// any engine work against the axis table of job_axes.h (which is also what the
// driver declares to the planner, so the two cannot disagree).
//
// Pure: no llama.cpp header, no I/O. Compiled once and shared by every engine
// build's driver. Type names stay strings here ("q8_0", "f16"); the engine layer
// maps them to ggml/llama enums and rejects what its build lacks.
//
// Axis -> setting (docs/drivers.md):
//   quant        weight type of the model file to run (quantized from the base if
//                the resolved file has another type)
//   kv           "T" or "K/V": type_k / type_v of the KV cache
//   attention    off | on | auto: flash_attn_type
//   cpu_backend  "best" or one CPU kernel variant name (libggml-cpu-NAME.so)
//   repack       on | off: use_extra_bufts (repacked weight layouts, e.g. AMX)
//   threads, batch, ubatch, ctx: n_threads(_batch), n_batch, n_ubatch, n_ctx
//   hardware     "cpu" (no offload) or "gpu..." (every layer offloaded)
//   tp           devices the layers are split over (gpu only)
//   sampler.*    generate workloads: temperature, top_k, top_p, min_p,
//                repeat_penalty, repeat_last_n, seed, order
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "plan_document/job_fields.h"

namespace orch::drivers::llamacpp {

enum class FlashAttention { kOff, kOn, kAuto };

// Bytes of full rows a run may keep to make every position exact, when the job does
// not say (plan_document/job_fields.h, as the planner's default).
inline constexpr std::int64_t kDefaultFullRowBudgetBytes =
    plan_document::kFullRowBudgetBytes.fallback;

struct CaptureSettings {
  std::uint32_t top_logits = static_cast<std::uint32_t>(plan_document::kTopLogits.fallback);
  std::int64_t full_every = 0;                                      // 0 = never
  std::vector<std::pair<std::int64_t, std::int64_t>> full_windows;  // [begin, end)
  std::int64_t full_row_budget_bytes = kDefaultFullRowBudgetBytes;  // 0 = never by budget
  bool every_row = false;  // set by ForRun: every position's row fits the budget

  // This policy for a run of `positions` rows of `vocab` logits: every row kept when
  // positions x vocab x 4 bytes <= full_row_budget_bytes (> 0); else full_every and
  // full_windows alone decide, as without a budget.
  CaptureSettings ForRun(std::int64_t positions, std::int64_t vocab) const;
  // Whether the whole logit row at `position` is kept.
  bool WantsFullRow(std::int64_t position) const;
};

struct SamplerSettings {
  double temperature = 0.8;
  std::int32_t top_k = 40;
  double top_p = 0.95;
  double min_p = 0.05;
  double repeat_penalty = 1.0;
  std::int32_t repeat_last_n = 64;
  std::uint32_t seed = 0;
  // Samplers applied before the final draw, in order. Names: penalties, top_k,
  // top_p, min_p, temperature.
  std::vector<std::string> order = {"penalties", "top_k", "top_p", "min_p", "temperature"};
  bool greedy() const { return temperature <= 0.0; }
};

// One chat turn of a generate workload's `messages` (docs/driver-protocol.md).
struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
};

struct WorkloadSettings {
  enum class Kind { kTeacherForced, kGenerate };
  Kind kind = Kind::kTeacherForced;
  std::string name;
  // teacher_forced: text to tokenize, or explicit token ids (has_tokens), or a
  // context and a continuation tokenized apart and concatenated (has_continuation).
  std::string text;
  std::vector<std::int32_t> tokens;
  bool has_tokens = false;
  std::string context;
  std::string continuation;
  bool has_continuation = false;
  std::int64_t positions = 0;  // teacher_forced: positions evaluated (the text must have them)
  // generate: a prompt, or messages rendered with the model's chat template.
  std::string prompt;
  std::vector<ChatMessage> messages;
  std::int64_t max_tokens = 0;
  bool has_messages() const { return !messages.empty(); }
};

struct JobSettings {
  std::string run_id;
  std::string job_id;
  std::string engine;  // requirements.engine, e.g. "llama.cpp@b8390"

  std::string model_requirement;
  std::string model_path;    // empty: the agent has no such model
  std::string model_sha256;  // of model_path, when the agent computed it
  std::string cache_dir;     // where quantized variants are kept; may be empty
  // The agent's hash cache file (fingerprint/file_hash_cache.h): hashes of the files
  // in cache_dir by identity, which the driver trusts and adds to. May be empty.
  std::string hash_cache;
  // Weight type wanted ("q4_0"); empty when the coordinate has no quant axis.
  std::string quant;
  // Type of the file at model_path when known from the plan (synth recipes and
  // pinned variants), else empty and read from the file.
  std::string model_type;

  std::string type_k = "f16";
  std::string type_v = "f16";
  FlashAttention attention = FlashAttention::kAuto;
  std::string cpu_backend = "best";
  bool repack = true;
  std::int32_t threads = 0;  // 0 = hardware concurrency
  std::int32_t batch = 0;    // 0 = the whole prompt in one batch
  std::int32_t ubatch = 0;   // 0 = engine default
  std::int32_t ctx = 0;      // 0 = enough for the workload
  std::string hardware = "cpu";
  std::int32_t tp = 1;

  WorkloadSettings workload;
  CaptureSettings capture;
  SamplerSettings sampler;

  bool gpu() const { return hardware.rfind("gpu", 0) == 0; }
};

// The KV cache types this driver knows; an engine build may still lack one.
bool IsKnownCacheType(std::string_view type);
// Weight types `quantize` accepts ("f32", "f16", "bf16", "q8_0", "q4_0", ...).
bool IsKnownWeightType(std::string_view type);

// Parses a job document. The workload's other fields (its `task` object, the
// plan's own bookkeeping) are ignored. Errors, each naming the field and the value:
//   kInvalidArgument      the document or a field is malformed (invalid_job)
//   kFailedPrecondition   the coordinate cannot run on llama.cpp, e.g. a
//                         quantized V cache without flash attention
//                         (invalid_combination)
Result<JobSettings> ParseJob(std::string_view json_text);

// Session mode (docs/driver-protocol.md, "Sessions"): the coordinate axes whose
// values llama_model_load_from_file and the process's CPU backend depend on,
// declared as `session.load_axes` in the hello of `version`. Every other axis
// (kv, attention, threads, batch, ubatch, ctx, sampler.*) is a llama_context or
// sampler setting: a job may change it and still run on the loaded model, with a
// fresh context of its own.
const std::vector<std::string>& LoadAxes();

// What a loaded model was loaded with: the file actually loaded (after
// quantization), its SHA-256 and every load-time setting. Two jobs with equal
// keys run on the same llama_model; any difference loads the model anew.
std::string ModelLoadKey(const JobSettings& settings, std::string_view model_path,
                         std::string_view model_sha256);

// The driver protocol's error code for a Status from the driver:
// kInvalidArgument -> invalid_job, kFailedPrecondition -> invalid_combination,
// kNotFound -> model_missing, kDataLoss -> sha256_mismatch, else engine_error.
std::string_view ErrorCodeFor(const Status& status);

}  // namespace orch::drivers::llamacpp
