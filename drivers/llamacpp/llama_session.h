// One loaded model and context of the linked llama.cpp build, configured from a
// job's settings, and the two workloads run on it.
//
// The model (LoadModel) is shared: a session driver keeps it loaded across jobs
// with equal ModelLoadKey (job_settings.h) and opens a LlamaSession per job,
// each with a fresh context (and sampler), so no KV cache or sampler state
// crosses jobs and a job's records do not depend on the jobs before it.
//
// Teacher forcing feeds the workload's tokens in batches of n_batch with a logit
// row requested at every position and digests each row (the target is the next
// fed token). Generation decodes the prompt, then per step samples with the
// coordinate's sampler chain from the raw row, digests that row and feeds the
// sample back.
//
// Digests run on a DigestPipeline (digest_pipeline.h), on worker threads while
// the engine decodes on, the calling thread helping whenever it would wait. The
// rows of one teacher-forced batch are digested in parallel, in place in the
// engine's logits; before the next decode the few still queued are copied out
// (the logits are only valid until then). A generation step's row is copied at
// once and digested while the next step decodes.
// Records go to the sink in position order, byte for byte as if each row were
// digested in turn. Workers: `digest_workers` when > 0, else DigestWorkers(the
// engine's threads, hardware concurrency, vocabulary), i.e. the cores the
// engine leaves, at least one, or none (in turn) for a vocabulary under
// kMinPipelinedRow; RowsInFlight(workers) rows in flight at most.
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
#include "drivers/llamacpp/digest_pipeline.h"
#include "drivers/llamacpp/job_settings.h"

struct llama_model;
struct llama_context;

namespace orch::drivers::llamacpp {

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
  // Generation from messages: the model's chat template (its SHA-256) and the
  // prompt it rendered (has_chat).
  bool has_chat = false;
  std::string chat_template_sha256;
  std::string rendered_prompt;
  // Teacher forcing of a context + continuation: the position whose record
  // targets the continuation's first token, and its token count (has_continuation).
  bool has_continuation = false;
  std::int64_t continuation_first_position = 0;
  std::int64_t continuation_tokens = 0;
};

// The chat of `messages` rendered by llama_chat_apply_template with
// `chat_template` (the model's tokenizer.chat_template) and the assistant-turn
// prefix. kFailedPrecondition (invalid_combination) naming `model` when the
// template is empty or is none of the families this llama.cpp build recognises.
Result<std::string> RenderChat(const std::string& chat_template,
                               const std::vector<ChatMessage>& messages, const std::string& model);

// A loaded llama_model, freed when the last holder lets go.
using ModelHandle = std::shared_ptr<llama_model>;

// Loads `model_path` with the load-time settings of `settings` (hardware, tp,
// repack). kInternal when the engine refuses the file.
Result<ModelHandle> LoadModel(const std::string& model_path, const JobSettings& settings);

class LlamaSession final {
 public:
  // One job on `model` (loaded by LoadModel with the same load key); Run
  // creates a context sized for the workload. Errors from Run:
  // kInvalidArgument (a setting the build lacks, a context too small),
  // kInternal (the engine refused the context). `digest_workers`: threads that
  // digest rows, 0 = the cores the engine leaves (see above).
  static std::unique_ptr<LlamaSession> Open(ModelHandle model, const JobSettings& settings,
                                            int digest_workers);
  ~LlamaSession();

  Result<WorkloadSummary> Run(const RecordSink& sink);

  // What the context actually uses, for the hello/done reports.
  std::string Describe() const;
  // The context of the last Run; null before it.
  llama_context* context() const { return context_; }

 private:
  LlamaSession(ModelHandle model, const JobSettings& settings, int digest_workers);
  // add_special: BOS (as the model asks); parse_special: control-token text
  // (e.g. "<|im_start|>") becomes those tokens, as for a rendered chat.
  Result<std::vector<std::int32_t>> Tokenize(const std::string& text, bool add_special = true,
                                             bool parse_special = false) const;
  // The teacher-forced tokens: given, the text's, or context + continuation
  // (recorded in `summary`).
  Result<std::vector<std::int32_t>> TeacherForcedTokens(WorkloadSummary* summary) const;
  // The prompt's tokens: the prompt's, or the rendered chat's (recorded in `summary`).
  Result<std::vector<std::int32_t>> PromptTokens(WorkloadSummary* summary) const;
  Result<WorkloadSummary> TeacherForce(const RecordSink& sink);
  Result<WorkloadSummary> Generate(const RecordSink& sink);
  Status CreateContext(std::int64_t tokens_needed);
  // A pipeline whose records are counted into `summary`, then go to `sink`.
  std::unique_ptr<DigestPipeline> StartPipeline(const RecordSink& sink,
                                                WorkloadSummary* summary) const;
  // Queues the row at `row` (n_vocab floats; null: the engine gave none),
  // borrowed (valid until the pipeline's ReleaseBorrowed) or copied.
  Status SubmitRow(DigestPipeline& pipeline, const RowMeta& meta, const float* row,
                   bool borrow) const;
  std::string Piece(std::int32_t token) const;
  void AddTokenTexts(WorkloadSummary* summary) const;

  ModelHandle model_;
  llama_context* context_ = nullptr;  // owned
  JobSettings settings_;
  std::int32_t n_vocab_ = 0;
  std::uint32_t n_batch_ = 0;
  int digest_workers_ = 0;  // 0 = DigestWorkers(engine threads, cores, vocabulary)
};

}  // namespace orch::drivers::llamacpp
