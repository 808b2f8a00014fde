// One loaded model and context of the linked llama.cpp build, configured from a
// job's settings, and the two workloads run on it.
//
// Teacher forcing feeds the workload's tokens in batches of n_batch with a logit
// row requested at every position and digests each row as it is read (the
// target is the next fed token). Generation decodes the prompt, then per step
// digests the row, samples with the coordinate's sampler chain and feeds the
// sample back. Records go to the sink in position order as they are computed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "digest/record_codec.h"
#include "drivers/llamacpp/job_settings.h"

struct llama_model;
struct llama_context;

namespace orch::drivers::llamacpp {

using RecordSink = std::function<Status(const digest::PositionRecord&)>;


struct WorkloadSummary {
  std::int64_t positions = 0;
  std::int64_t nan_rows = 0;  // rows that are not distributions (NaN, +inf)
  std::int64_t first_nan_position = -1;
  std::vector<std::int32_t> generated_ids;
  std::string generated_text;
  // Generation only: why it stopped, "eos" (the model emitted an end-of-generation
  // token, which is the last generated id) or "max_tokens" (the workload's limit).
  std::string stop;
  // Text of every token a record names as input, argmax or output, so a report
  // can show tokens without the model's tokenizer (raw bytes; may be partial
  // UTF-8 for byte-level tokens).
  std::map<std::int32_t, std::string> token_text;
  double eval_ms = 0;
};

class LlamaSession final {
 public:
  // Loads `model_path` and creates a context sized for the workload. Errors:
  // kInvalidArgument (a setting the build lacks, a context too small),
  // kInternal (the engine refused the model or the context).
  static Result<std::unique_ptr<LlamaSession>> Open(
      const std::string& model_path, const JobSettings& settings);
  ~LlamaSession();

  Result<WorkloadSummary> Run(const RecordSink& sink);

  // What the context actually uses, for the hello/done reports.
  std::string Describe() const;

 private:
  LlamaSession(llama_model* model, const JobSettings& settings);
  Result<std::vector<std::int32_t>> Tokenize(const std::string& text) const;
  Result<WorkloadSummary> TeacherForce(const RecordSink& sink);
  Result<WorkloadSummary> Generate(const RecordSink& sink);
  Status CreateContext(std::int64_t tokens_needed);
  Status DigestRow(std::int64_t position, const float* row,
                   std::int32_t input_token, std::int32_t output_token,
                   std::int32_t target, const RecordSink& sink,
                   WorkloadSummary* summary);
  std::string Piece(std::int32_t token) const;
  void AddTokenTexts(WorkloadSummary* summary) const;

  llama_model* model_;      // owned
  llama_context* context_ = nullptr;  // owned
  JobSettings settings_;
  std::int32_t n_vocab_ = 0;
  std::uint32_t n_batch_ = 0;
  digest::PositionRecord record_;  // reused across rows
};

}  // namespace orch::drivers::llamacpp
