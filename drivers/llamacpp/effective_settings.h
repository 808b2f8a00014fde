// What the engine actually ran, read from the engine rather than echoed from the job
// (docs/drivers.md, "Effective settings"): the done frame's `effective` object.
//
// The observer listens to two engine channels for the life of the process:
//   - the log callback (llama_log_set; every line still goes to stderr): the KV cache's
//     storage types ("llama_kv_cache: ... K (f16) ... V (f16) ...") and the model's
//     buffer types ("CPU_REPACK model buffer size = ...": repacked weights);
//   - the graph evaluation callback (context cb_eval, which never asks for data, so
//     the graph is computed in one piece as without it): the types of K and V that the
//     attention operations read, and whether they are flash attention operations.
// Effective() turns these, the loaded CPU variant and the context's threads into
// {"axes": {axis: value in the coordinate's vocabulary}, "why": {axis: reason},
//  "raw": {facts}}. An axis is present only when the engine said what it did.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drivers/llamacpp/cpu_backend.h"
#include "llama.h"

namespace orch::drivers::llamacpp {

class EngineObserver final {
 public:
  // The process-wide observer; Install() points llama.cpp's log at it (once).
  static EngineObserver& Instance();
  void Install();

  // For llama_context_params::cb_eval / cb_eval_user_data.
  static bool OnEval(struct ggml_tensor* tensor, bool ask, void* user_data);

  // Forget what an earlier model (its buffers) or context (cache, attention) showed: a
  // process that loads several models or contexts reports each job's own.
  void BeginModel();
  void BeginContext();

  nlohmann::json Effective(const LoadedBackend& backend, llama_context* context) const;

 private:
  EngineObserver() = default;
  static void OnLog(enum ggml_log_level level, const char* text, void* user_data);
  void Line(const std::string& line);
  void Attention(const struct ggml_tensor* tensor);

  mutable std::mutex mutex_;
  std::string partial_;  // a log line not yet ended by '\n'
  std::string cache_k_, cache_v_;
  std::vector<std::string> model_buffers_;
  bool saw_attention_ = false;
  bool flash_ = false;
  std::string read_k_, read_v_;
};

}  // namespace orch::drivers::llamacpp
