#include "bench/llamacpp_bare_loop.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "llama.h"

namespace orch::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

llama_context_params DriverContextParams(int positions) {
  const std::uint32_t n_ctx =
      static_cast<std::uint32_t>(std::max(256, (positions + 255) / 256 * 256));
  llama_context_params params = llama_context_default_params();
  params.n_ctx = n_ctx;
  params.n_batch = n_ctx;
  params.n_ubatch = std::min(params.n_ubatch, params.n_batch);
  params.n_threads = params.n_threads_batch = 1;
  params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
  params.type_k = params.type_v = GGML_TYPE_F16;
  params.no_perf = true;
  return params;
}

// Owns a model and its context.
struct Loaded {
  ~Loaded() { Free(); }
  void Free() {
    if (context != nullptr) llama_free(context);
    if (model != nullptr) llama_model_free(model);
    context = nullptr;
    model = nullptr;
  }
  llama_model* model = nullptr;
  llama_context* context = nullptr;
};

struct BatchOwner {
  explicit BatchOwner(int capacity) : batch(llama_batch_init(capacity, 0, 1)) {}
  ~BatchOwner() { llama_batch_free(batch); }
  BatchOwner(const BatchOwner&) = delete;
  BatchOwner& operator=(const BatchOwner&) = delete;
  llama_batch batch;
};

Status Decode(llama_context* context, const std::vector<std::int32_t>& tokens) {
  BatchOwner owner(static_cast<int>(tokens.size()));
  llama_batch& batch = owner.batch;
  batch.n_tokens = static_cast<std::int32_t>(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = static_cast<llama_pos>(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  if (int rc = llama_decode(context, batch); rc != 0)
    return Internal("llama_decode failed with " + std::to_string(rc));
  return Status::Ok();
}

Status VisitRows(llama_context* context, int positions, std::int32_t n_vocab,
                 const RowVisitor& visit) {
  for (int i = 0; i < positions; ++i) {
    const float* row = llama_get_logits_ith(context, i);
    if (row == nullptr) return Internal("no logits at position " + std::to_string(i));
    visit(static_cast<std::size_t>(i), {row, static_cast<std::size_t>(n_vocab)});
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::int32_t> BenchTokens(std::int32_t vocab, int positions) {
  std::vector<std::int32_t> tokens;
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < positions; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    tokens.push_back(static_cast<std::int32_t>((state >> 33) % static_cast<std::uint64_t>(vocab)));
  }
  return tokens;
}

Status RunTeacherForcedLoop(const std::string& model_path, int positions,
                            std::span<const RowVisitor> passes, LoopTimings* timings) {
  Loaded loaded;
  auto start = Clock::now();
  llama_model_params model_params = llama_model_default_params();
  model_params.n_gpu_layers = 0;
  model_params.use_extra_bufts = true;
  loaded.model = llama_model_load_from_file(model_path.c_str(), model_params);
  if (loaded.model == nullptr) return Internal("llama.cpp could not load " + model_path);
  timings->load_ms = MillisecondsSince(start);

  start = Clock::now();
  loaded.context = llama_init_from_model(loaded.model, DriverContextParams(positions));
  if (loaded.context == nullptr) return Internal("llama.cpp refused the context");
  timings->context_ms = MillisecondsSince(start);

  const std::int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(loaded.model));
  start = Clock::now();
  ORCH_RETURN_IF_ERROR(Decode(loaded.context, BenchTokens(n_vocab, positions)));
  timings->decode_ms = MillisecondsSince(start);

  timings->pass_ms.clear();
  for (const RowVisitor& visit : passes) {
    start = Clock::now();
    ORCH_RETURN_IF_ERROR(VisitRows(loaded.context, positions, n_vocab, visit));
    timings->pass_ms.push_back(MillisecondsSince(start));
  }

  start = Clock::now();
  loaded.Free();
  timings->free_ms = MillisecondsSince(start);
  return Status::Ok();
}

double SumRow(std::span<const float> row) {
  // Independent partial sums: the loop is not one long dependency chain.
  std::array<float, 8> partial{};
  std::size_t i = 0;
  for (; i + partial.size() <= row.size(); i += partial.size()) {
    for (std::size_t lane = 0; lane < partial.size(); ++lane) partial[lane] += row[i + lane];
  }
  double sum = 0;
  for (; i < row.size(); ++i) sum += row[i];
  for (float p : partial) sum += p;
  return sum;
}

std::string FormatBareReport(const BareProcessReport& r) {
  const double rows_ms = r.loop.pass_ms.empty() ? 0.0 : r.loop.pass_ms[0];
  char line[256];
  std::snprintf(line, sizeof(line), "%.17g %" PRId64 " %" PRId64 " %.6f %.6f %.6f %.6f %.6f\n",
                r.sum, r.main_ns, r.backend_ns, r.loop.load_ms, r.loop.context_ms, r.loop.decode_ms,
                rows_ms, r.loop.free_ms);
  return line;
}

bool ParseBareReport(const std::string& text, BareProcessReport* r) {
  double rows_ms = 0;
  bool ok = std::sscanf(text.c_str(), "%lg %" SCNd64 " %" SCNd64 " %lg %lg %lg %lg %lg", &r->sum,
                        &r->main_ns, &r->backend_ns, &r->loop.load_ms, &r->loop.context_ms,
                        &r->loop.decode_ms, &rows_ms, &r->loop.free_ms) == 8;
  r->loop.pass_ms = {rows_ms};
  return ok;
}

}  // namespace orch::bench
