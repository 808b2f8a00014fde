// The bare llama.cpp C API teacher-forcing loop that the driver benchmark holds
// orch-driver-llamacpp against (docs/benchmarks.md). It configures the engine
// exactly as the driver configures a teacher-forced job whose axes are at their
// defaults with threads = 1: no GPU layers, repacked weights on, n_ctx = the
// positions rounded up to a multiple of 256 (at least 256), n_batch = n_ctx,
// the engine's default n_ubatch clamped to n_batch, f16 KV cache, flash
// attention "auto", one batch with a logit row requested at every position.
//
// Precondition: the caller has loaded a CPU backend and called
// llama_backend_init() (once per process).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::bench {

// The token ids fed at positions 0 .. positions-1: a fixed pseudo-random
// sequence in [0, vocab), the same in every process.
std::vector<std::int32_t> BenchTokens(std::int32_t vocab, int positions);

// Milliseconds spent in each step of one run.
struct LoopTimings {
  double load_ms = 0;     // llama_model_load_from_file
  double context_ms = 0;  // llama_init_from_model
  double decode_ms = 0;   // filling the batch and llama_decode
  // Per pass over the rows: llama_get_logits_ith and the visitor, every row.
  std::vector<double> pass_ms;
  double free_ms = 0;  // llama_free and llama_model_free
  double compute_ms() const { return load_ms + context_ms + decode_ms; }
};

// Receives each position's raw logit row (n_vocab floats), in position order.
// The span is valid only during the call.
using RowVisitor = std::function<void(std::size_t position, std::span<const float> row)>;

// Loads `model_path`, evaluates BenchTokens(n_vocab, positions), then walks
// every row once per visitor in `passes`, in order, each pass timed on its own
// (every pass sees the same rows of the same decode); fills `timings`. The
// model and context are freed before it returns. kInternal when the engine
// refuses the model, the context or the batch.
Status RunTeacherForcedLoop(const std::string& model_path, int positions,
                            std::span<const RowVisitor> passes, LoopTimings* timings);

// The bare loop's use of a row: the sum of its logits, so that every element is
// read. Accumulated in a fixed order, so equal rows give equal sums.
double SumRow(std::span<const float> row);

// What llamacpp_bare_loop prints on stdout, as one line: the sum of every logit
// and the program's timeline. Steady-clock times are nanoseconds since the
// clock's epoch, which every process on the machine shares.
struct BareProcessReport {
  double sum = 0;
  std::int64_t main_ns = 0;     // main() entered
  std::int64_t backend_ns = 0;  // CPU backend loaded, llama_backend_init done
  LoopTimings loop;
};
std::string FormatBareReport(const BareProcessReport& report);
// False when `text` is not a line FormatBareReport wrote.
bool ParseBareReport(const std::string& text, BareProcessReport* report);

}  // namespace orch::bench
