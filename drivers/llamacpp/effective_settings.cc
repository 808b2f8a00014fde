#include "drivers/llamacpp/effective_settings.h"

#include <cstdio>
#include <cstring>
#include <regex>

#include "ggml.h"

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::json;

// "K (f16)" in a KV cache line -> "f16"; "" when absent.
std::string TypeAfter(const std::string& line, const std::string& label) {
  std::smatch match;
  if (std::regex_search(line, match, std::regex(label + R"( \(([A-Za-z0-9_]+)\))"))) {
    return match[1];
  }
  return "";
}

bool StartsWith(const char* name, const char* prefix) {
  return std::strncmp(name, prefix, std::strlen(prefix)) == 0;
}

// A KV pair in the coordinate's vocabulary: "f16", or "q8_0/f16" when K and V differ.
std::string KvValue(const std::string& k, const std::string& v) { return k == v ? k : k + "/" + v; }

}  // namespace

EngineObserver& EngineObserver::Instance() {
  static EngineObserver* observer = new EngineObserver();  // outlives the engine's threads
  return *observer;
}

void EngineObserver::Install() { llama_log_set(&EngineObserver::OnLog, this); }

void EngineObserver::OnLog(enum ggml_log_level, const char* text, void* user_data) {
  std::fputs(text, stderr);
  auto* self = static_cast<EngineObserver*>(user_data);
  std::lock_guard<std::mutex> lock(self->mutex_);
  self->partial_ += text;
  for (std::size_t end; (end = self->partial_.find('\n')) != std::string::npos;) {
    self->Line(self->partial_.substr(0, end));
    self->partial_.erase(0, end + 1);
  }
}

// Keeps only the lines it reads; the rest went to stderr.
void EngineObserver::Line(const std::string& line) {
  if (line.find("llama_kv_cache") != std::string::npos && line.find(" K (") != std::string::npos) {
    cache_k_ = TypeAfter(line, "K");
    cache_v_ = TypeAfter(line, "V");
  }
  static const std::regex kBuffer(R"(\s(\S+) model buffer size)");
  std::smatch match;
  if (std::regex_search(line, match, kBuffer)) model_buffers_.push_back(match[1]);
}

void EngineObserver::BeginModel() {
  std::lock_guard<std::mutex> lock(mutex_);
  model_buffers_.clear();
}

void EngineObserver::BeginContext() {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_k_.clear();
  cache_v_.clear();
  saw_attention_ = flash_ = false;
  read_k_.clear();
  read_v_.clear();
}

bool EngineObserver::OnEval(struct ggml_tensor* tensor, bool ask, void* user_data) {
  if (ask) static_cast<EngineObserver*>(user_data)->Attention(tensor);
  return false;  // never asks for data: the graph runs in one piece, as without a callback
}

// Flash attention reads K and V as src[1], src[2]; without it, the "kq" product reads K
// and the "kqv" product reads V as src[0].
void EngineObserver::Attention(const struct ggml_tensor* t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (t->op == GGML_OP_FLASH_ATTN_EXT) {
    saw_attention_ = flash_ = true;
    read_k_ = ggml_type_name(t->src[1]->type);
    read_v_ = ggml_type_name(t->src[2]->type);
  } else if (t->op == GGML_OP_MUL_MAT && StartsWith(t->name, "kq-")) {
    saw_attention_ = true;
    flash_ = false;
    read_k_ = ggml_type_name(t->src[0]->type);
  } else if (t->op == GGML_OP_MUL_MAT && StartsWith(t->name, "kqv-")) {
    saw_attention_ = true;
    read_v_ = ggml_type_name(t->src[0]->type);
  }
}

json EngineObserver::Effective(const LoadedBackend& backend, llama_context* context) const {
  std::lock_guard<std::mutex> lock(mutex_);
  json axes = json::object(), why = json::object(), raw = json::object();
  raw["kv_cache"] = {{"k", cache_k_}, {"v", cache_v_}};
  raw["model_buffers"] = model_buffers_;
  bool repacked = false;
  for (const std::string& name : model_buffers_) {
    repacked = repacked || name.find("REPACK") != std::string::npos ||
               name.find("AARCH64") != std::string::npos || name.find("AMX") != std::string::npos;
  }
  if (!model_buffers_.empty()) axes["repack"] = repacked ? "on" : "off";
  if (saw_attention_) {
    axes["attention"] = flash_ ? "on" : "off";
    raw["flash_attention"] = flash_;
    raw["attention_reads"] = {{"k", read_k_}, {"v", read_v_}};
    if (!read_k_.empty() && !read_v_.empty()) {
      axes["kv"] = KvValue(read_k_, read_v_);
      if (KvValue(read_k_, read_v_) != KvValue(cache_k_, cache_v_) && !cache_k_.empty()) {
        why["kv"] = flash_ ? "under flash attention" : "under attention";
      }
    }
  } else if (!cache_k_.empty()) {
    axes["kv"] = KvValue(cache_k_, cache_v_);
  }
  if (!backend.variant.empty()) axes["cpu_backend"] = backend.variant;
  raw["cpu_variant"] = backend.variant.empty() ? "built-in" : backend.variant;
  if (context != nullptr) {
    raw["threads"] = llama_n_threads(context);
    raw["threads_batch"] = llama_n_threads_batch(context);
    axes["threads"] = std::to_string(llama_n_threads(context));
  }
  return json{{"axes", axes}, {"why", why}, {"raw", raw}};
}

}  // namespace orch::drivers::llamacpp
