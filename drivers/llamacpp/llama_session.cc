#include "drivers/llamacpp/llama_session.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/sha256.h"
#include "digest/row_digest.h"
#include "drivers/llamacpp/effective_settings.h"
#include "drivers/llamacpp/llama_types.h"
#include "drivers/llamacpp/printable_text.h"
#include "llama.h"

namespace orch::drivers::llamacpp {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::int32_t Threads(const JobSettings& settings) {
  if (settings.threads > 0) return settings.threads;
  return static_cast<std::int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

// One sequence, positions [first, first + count), logits requested at every
// position when `all_logits`, else only at the last.
struct Batch {
  explicit Batch(std::int32_t capacity) : batch(llama_batch_init(capacity, 0, 1)) {}
  ~Batch() { llama_batch_free(batch); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  void Fill(const std::vector<std::int32_t>& tokens, std::size_t first, std::size_t count,
            bool all_logits) {
    batch.n_tokens = static_cast<std::int32_t>(count);
    for (std::size_t i = 0; i < count; ++i) {
      batch.token[i] = tokens[first + i];
      batch.pos[i] = static_cast<llama_pos>(first + i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = all_logits || i + 1 == count;
    }
  }

  llama_batch batch;
};

struct SamplerDeleter {
  void operator()(llama_sampler* sampler) const { llama_sampler_free(sampler); }
};
using SamplerPtr = std::unique_ptr<llama_sampler, SamplerDeleter>;

llama_sampler* Penalties(const llama_vocab* vocab, const SamplerSettings& s) {
#if ORCH_LLAMA_PENALTIES_TAKE_VOCAB
  return llama_sampler_init_penalties(llama_vocab_n_tokens(vocab), s.repeat_last_n,
                                      static_cast<float>(s.repeat_penalty), 0.0f, 0.0f);
#else
  (void)vocab;
  return llama_sampler_init_penalties(s.repeat_last_n, static_cast<float>(s.repeat_penalty), 0.0f,
                                      0.0f);
#endif
}

// The coordinate's chain: the samplers in `order`, then the seeded draw; or
// greedy (argmax after penalties) at temperature 0.
SamplerPtr BuildSampler(const llama_vocab* vocab, const SamplerSettings& s) {
  SamplerPtr chain(llama_sampler_chain_init(llama_sampler_chain_default_params()));
  for (const std::string& name : s.order) {
    if (name == "penalties" && s.repeat_penalty != 1.0) {
      llama_sampler_chain_add(chain.get(), Penalties(vocab, s));
    } else if (s.greedy()) {
      continue;  // truncation and temperature do not move the argmax
    } else if (name == "top_k" && s.top_k > 0) {
      llama_sampler_chain_add(chain.get(), llama_sampler_init_top_k(s.top_k));
    } else if (name == "top_p" && s.top_p < 1.0) {
      llama_sampler_chain_add(chain.get(),
                              llama_sampler_init_top_p(static_cast<float>(s.top_p), 1));
    } else if (name == "min_p" && s.min_p > 0.0) {
      llama_sampler_chain_add(chain.get(),
                              llama_sampler_init_min_p(static_cast<float>(s.min_p), 1));
    } else if (name == "temperature") {
      llama_sampler_chain_add(chain.get(),
                              llama_sampler_init_temp(static_cast<float>(s.temperature)));
    }
  }
  llama_sampler_chain_add(
      chain.get(), s.greedy() ? llama_sampler_init_greedy() : llama_sampler_init_dist(s.seed));
  return chain;
}

// The engine failed after the rows already submitted: their records go out
// first, as when each row was digested before the next decode, unless one of
// them fails first (an earlier position's failure wins).
Status Drained(DigestPipeline& pipeline, const Status& engine_error) {
  Status earlier = pipeline.Finish();
  return earlier.ok() ? engine_error : earlier;
}

// The first characters of a template, on one line, for an error message.
std::string TemplateOpening(const std::string& chat_template) {
  std::string opening = chat_template.substr(0, 60);
  for (char& c : opening)
    if (c == '\n' || c == '\r') c = ' ';
  return opening + (chat_template.size() > 60 ? "..." : "");
}

}  // namespace

Result<std::string> RenderChat(const std::string& chat_template,
                               const std::vector<ChatMessage>& messages, const std::string& model) {
  if (chat_template.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "workload messages: the model " + model +
                      " has no chat template (GGUF key tokenizer.chat_template); give the "
                      "workload a prompt instead, or use a model with a template");
  }
  std::vector<llama_chat_message> chat;
  for (const ChatMessage& m : messages) chat.push_back({m.role.c_str(), m.content.c_str()});
  std::int32_t needed = llama_chat_apply_template(chat_template.c_str(), chat.data(), chat.size(),
                                                  /*add_ass=*/true, nullptr, 0);
  if (needed < 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "workload messages: the chat template of the model " + model + " (sha256 " +
                      Sha256Hex(chat_template) + ", \"" + TemplateOpening(chat_template) +
                      "\") is none of the template families llama_chat_apply_template of "
                      "this llama.cpp build detects (it renders built-in families, not "
                      "Jinja); give the workload a prompt instead");
  }
  std::string rendered(static_cast<std::size_t>(needed) + 1, '\0');
  llama_chat_apply_template(chat_template.c_str(), chat.data(), chat.size(), true, rendered.data(),
                            static_cast<std::int32_t>(rendered.size()));
  rendered.resize(static_cast<std::size_t>(needed));
  return rendered;
}

Result<ModelHandle> LoadModel(const std::string& model_path, const JobSettings& settings) {
  llama_model_params params = llama_model_default_params();
  params.n_gpu_layers = settings.gpu() ? 999 : 0;
  params.use_extra_bufts = settings.repack;
  if (settings.gpu()) {
    params.split_mode = settings.tp > 1 ? LLAMA_SPLIT_MODE_LAYER : LLAMA_SPLIT_MODE_NONE;
  } else {
    // A CPU cell uses no GPU even where a CUDA build found one: without this,
    // llama.cpp would offload large batches' matrix products to it (op offload).
    static ggml_backend_dev_t no_devices[] = {nullptr};
    params.devices = no_devices;
  }
  EngineObserver::Instance().BeginModel();
  llama_model* model = llama_model_load_from_file(model_path.c_str(), params);
  if (model == nullptr) {
    return Internal("llama.cpp could not load the model " + model_path + " (see the log above)");
  }
  return ModelHandle(model, llama_model_free);
}

LlamaSession::LlamaSession(ModelHandle model, const JobSettings& settings, int digest_workers)
    : model_(std::move(model)), settings_(settings), digest_workers_(digest_workers) {
  n_vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(model_.get()));
}

LlamaSession::~LlamaSession() {
  if (context_ != nullptr) llama_free(context_);
}

std::unique_ptr<LlamaSession> LlamaSession::Open(ModelHandle model, const JobSettings& settings,
                                                 int digest_workers) {
  return std::unique_ptr<LlamaSession>(
      new LlamaSession(std::move(model), settings, digest_workers));
}

Status LlamaSession::CreateContext(std::int64_t tokens_needed) {
  std::int64_t n_ctx = settings_.ctx > 0
                           ? settings_.ctx
                           : std::max<std::int64_t>(256, (tokens_needed + 255) / 256 * 256);
  if (tokens_needed > n_ctx) {
    return InvalidArgument("coordinate.ctx = " + std::to_string(n_ctx) +
                           " is smaller than the workload's " + std::to_string(tokens_needed) +
                           " tokens");
  }
  llama_context_params params = llama_context_default_params();
  params.n_ctx = static_cast<std::uint32_t>(n_ctx);
  params.n_batch = static_cast<std::uint32_t>(settings_.batch > 0 ? settings_.batch : n_ctx);
  params.n_ubatch = settings_.ubatch > 0 ? static_cast<std::uint32_t>(settings_.ubatch)
                                         : std::min(params.n_ubatch, params.n_batch);
  params.n_threads = params.n_threads_batch = Threads(settings_);
  params.flash_attn_type = FlashAttentionType(settings_.attention);
  ORCH_ASSIGN_OR_RETURN(params.type_k, CacheType("kv", settings_.type_k));
  ORCH_ASSIGN_OR_RETURN(params.type_v, CacheType("kv", settings_.type_v));
  params.no_perf = true;
  params.op_offload = settings_.gpu();
  EngineObserver::Instance().BeginContext();
  params.cb_eval = &EngineObserver::OnEval;  // reads what attention ran (effective_settings.h)
  params.cb_eval_user_data = &EngineObserver::Instance();
  context_ = llama_init_from_model(model_.get(), params);
  if (context_ == nullptr) {
    return Internal("llama.cpp refused the context (kv " + settings_.type_k + "/" +
                    settings_.type_v + ", n_ctx " + std::to_string(n_ctx) + "); see the log above");
  }
  n_batch_ = params.n_batch;
  return Status::Ok();
}

std::string LlamaSession::Describe() const {
  if (context_ == nullptr) return "";
  return "n_ctx=" + std::to_string(llama_n_ctx(context_)) +
         " n_batch=" + std::to_string(llama_n_batch(context_)) +
         " n_ubatch=" + std::to_string(llama_n_ubatch(context_)) + " type_k=" + settings_.type_k +
         " type_v=" + settings_.type_v;
}

Result<std::vector<std::int32_t>> LlamaSession::Tokenize(const std::string& text, bool add_special,
                                                         bool parse_special) const {
  const llama_vocab* vocab = llama_model_get_vocab(model_.get());
  auto length = static_cast<std::int32_t>(text.size());
  std::int32_t needed =
      -llama_tokenize(vocab, text.data(), length, nullptr, 0, add_special, parse_special);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(std::max(needed, 0)));
  std::int32_t got =
      llama_tokenize(vocab, text.data(), length, tokens.data(),
                     static_cast<std::int32_t>(tokens.size()), add_special, parse_special);
  if (got < 0) return Internal("tokenizing the workload text failed");
  tokens.resize(static_cast<std::size_t>(got));
  return tokens;
}

std::string LlamaSession::Piece(std::int32_t token) const {
  char buffer[256];
  std::int32_t n = llama_token_to_piece(llama_model_get_vocab(model_.get()), token, buffer,
                                        sizeof(buffer), 0, false);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
}

std::unique_ptr<DigestPipeline> LlamaSession::StartPipeline(const RecordSink& sink,
                                                            WorkloadSummary* summary) const {
  int workers = digest_workers_ > 0
                    ? digest_workers_
                    : DigestWorkers(Threads(settings_), std::thread::hardware_concurrency(),
                                    static_cast<std::size_t>(n_vocab_));
  // Runs on this thread, in position order.
  RecordSink counted = [&sink, summary](const digest::PositionRecord& record) {
    for (std::int32_t id : {record.input_token, record.output_token, record.digest.argmax})
      if (id >= 0) summary->token_text.emplace(id, std::string());
    if (!record.digest.is_distribution()) {
      if (summary->nan_rows++ == 0)
        summary->first_nan_position = static_cast<std::int64_t>(record.position);
    }
    ++summary->positions;
    return sink(record);
  };
  return std::make_unique<DigestPipeline>(
      PipelineOptions{.workers = workers, .max_in_flight = RowsInFlight(workers)},
      static_cast<std::size_t>(n_vocab_), ComputeDigester(settings_.capture.top_logits),
      std::move(counted));
}

Status LlamaSession::SubmitRow(DigestPipeline& pipeline, const RowMeta& meta, const float* row,
                               bool borrow) const {
  if (row == nullptr)
    return Internal("llama.cpp returned no logits at position " + std::to_string(meta.position));
  std::span<const float> logits(row, static_cast<std::size_t>(n_vocab_));
  return borrow ? pipeline.SubmitBorrowed(meta, logits) : pipeline.Submit(meta, logits);
}

void LlamaSession::AddTokenTexts(WorkloadSummary* summary) const {
  for (auto& [id, text] : summary->token_text) text = PrintableText(Piece(id));
}

Result<WorkloadSummary> LlamaSession::Run(const RecordSink& sink) {
  Result<WorkloadSummary> summary = settings_.workload.kind == WorkloadSettings::Kind::kGenerate
                                        ? Generate(sink)
                                        : TeacherForce(sink);
  if (summary.ok()) AddTokenTexts(&*summary);
  return summary;
}

Result<std::vector<std::int32_t>> LlamaSession::TeacherForcedTokens(
    WorkloadSummary* summary) const {
  const WorkloadSettings& w = settings_.workload;
  if (w.has_tokens) return w.tokens;
  if (!w.has_continuation) return Tokenize(w.text);
  // As lm-evaluation-harness: each part tokenized alone, the context with BOS.
  ORCH_ASSIGN_OR_RETURN(std::vector<std::int32_t> tokens, Tokenize(w.context));
  ORCH_ASSIGN_OR_RETURN(std::vector<std::int32_t> continuation,
                        Tokenize(w.continuation, /*add_special=*/false));
  if (tokens.empty()) {
    return InvalidArgument("workload " + w.name +
                           ".context: no tokens for this model (it adds no BOS); the first "
                           "continuation token needs a position before it");
  }
  if (continuation.empty())
    return InvalidArgument("workload " + w.name + ".continuation: no tokens");
  std::int64_t total = static_cast<std::int64_t>(tokens.size() + continuation.size());
  if (w.positions != 0 && w.positions != total) {
    return InvalidArgument("workload " + w.name + ".positions = " + std::to_string(w.positions) +
                           ": a context + continuation run evaluates all its " +
                           std::to_string(total) + " tokens; leave positions out or give " +
                           std::to_string(total));
  }
  summary->has_continuation = true;
  summary->continuation_first_position = static_cast<std::int64_t>(tokens.size()) - 1;
  summary->continuation_tokens = static_cast<std::int64_t>(continuation.size());
  tokens.insert(tokens.end(), continuation.begin(), continuation.end());
  return tokens;
}

Result<WorkloadSummary> LlamaSession::TeacherForce(const RecordSink& sink) {
  WorkloadSummary summary;
  ORCH_ASSIGN_OR_RETURN(std::vector<std::int32_t> tokens, TeacherForcedTokens(&summary));
  auto wanted = static_cast<std::size_t>(std::max<std::int64_t>(0, settings_.workload.positions));
  if (wanted > 0 && tokens.size() > wanted) tokens.resize(wanted);
  if (tokens.empty()) return InvalidArgument("workload: no tokens to evaluate");
  if (tokens.size() < wanted) {
    // A short run would look complete and compare as bit-identical on fewer
    // positions than the spec asked for.
    return InvalidArgument("workload: the text is " + std::to_string(tokens.size()) +
                           " tokens for this model, fewer than positions = " +
                           std::to_string(wanted) + "; use a longer text or fewer positions");
  }
  for (std::int32_t token : tokens) {
    if (token >= n_vocab_) {
      return InvalidArgument("workload.tokens: id " + std::to_string(token) +
                             " is outside the model's vocabulary of " + std::to_string(n_vocab_));
    }
  }
  ORCH_RETURN_IF_ERROR(CreateContext(static_cast<std::int64_t>(tokens.size())));
  const CaptureSettings capture =
      settings_.capture.ForRun(static_cast<std::int64_t>(tokens.size()), n_vocab_);
  std::unique_ptr<DigestPipeline> pipeline = StartPipeline(sink, &summary);
  auto start = Clock::now();
  Batch batch(static_cast<std::int32_t>(n_batch_));
  for (std::size_t first = 0; first < tokens.size(); first += n_batch_) {
    std::size_t count = std::min<std::size_t>(n_batch_, tokens.size() - first);
    batch.Fill(tokens, first, count, /*all_logits=*/true);
    pipeline->ReleaseBorrowed();  // the decode overwrites the previous batch's rows
    if (int rc = llama_decode(context_, batch.batch); rc != 0) {
      return Drained(*pipeline, Internal("llama_decode failed with " + std::to_string(rc) +
                                         " at positions " + std::to_string(first) + ".."));
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t position = first + i;
      RowMeta meta{
          .position = static_cast<std::int64_t>(position),
          .input_token = tokens[position],
          .output_token = -1,
          .target = position + 1 < tokens.size() ? tokens[position + 1] : digest::kNoTarget,
          .full_row = capture.WantsFullRow(static_cast<std::int64_t>(position))};
      Status submitted =
          SubmitRow(*pipeline, meta, llama_get_logits_ith(context_, static_cast<std::int32_t>(i)),
                    /*borrow=*/true);
      if (!submitted.ok()) return Drained(*pipeline, submitted);
    }
  }
  ORCH_RETURN_IF_ERROR(pipeline->Finish());
  summary.eval_ms = MillisecondsSince(start);
  return summary;
}

Result<std::vector<std::int32_t>> LlamaSession::PromptTokens(WorkloadSummary* summary) const {
  const WorkloadSettings& w = settings_.workload;
  if (!w.has_messages()) return Tokenize(w.prompt);
  const char* found = llama_model_chat_template(model_.get(), /*name=*/nullptr);
  std::string chat_template = found != nullptr ? found : "";
  std::string model =
      settings_.model_path.empty() ? settings_.model_requirement : settings_.model_path;
  ORCH_ASSIGN_OR_RETURN(summary->rendered_prompt, RenderChat(chat_template, w.messages, model));
  summary->has_chat = true;
  summary->chat_template_sha256 = Sha256Hex(chat_template);
  // The rendered turn markers are the template's special tokens, as llama.cpp's
  // own chat front ends tokenize them.
  return Tokenize(summary->rendered_prompt, /*add_special=*/true, /*parse_special=*/true);
}

Result<WorkloadSummary> LlamaSession::Generate(const RecordSink& sink) {
  WorkloadSummary summary;
  ORCH_ASSIGN_OR_RETURN(std::vector<std::int32_t> tokens, PromptTokens(&summary));
  if (tokens.empty()) return InvalidArgument("workload.prompt: no tokens");
  const std::int64_t max_tokens = settings_.workload.max_tokens;
  ORCH_RETURN_IF_ERROR(CreateContext(static_cast<std::int64_t>(tokens.size()) + max_tokens));
  const llama_vocab* vocab = llama_model_get_vocab(model_.get());
  SamplerPtr sampler = BuildSampler(vocab, settings_.sampler);
  const CaptureSettings capture = settings_.capture.ForRun(max_tokens, n_vocab_);
  std::unique_ptr<DigestPipeline> pipeline = StartPipeline(sink, &summary);
  auto start = Clock::now();
  Batch batch(static_cast<std::int32_t>(std::max<std::size_t>(n_batch_, 1)));
  std::size_t fed = 0;
  for (std::int64_t step = 0; step < max_tokens; ++step) {
    for (std::size_t first = fed; first < tokens.size(); first += n_batch_) {
      std::size_t count = std::min<std::size_t>(n_batch_, tokens.size() - first);
      batch.Fill(tokens, first, count, /*all_logits=*/false);
      if (int rc = llama_decode(context_, batch.batch); rc != 0) {
        return Drained(*pipeline, Internal("llama_decode failed with " + std::to_string(rc) +
                                           " at generation step " + std::to_string(step)));
      }
    }
    fed = tokens.size();
    const float* row = llama_get_logits_ith(context_, -1);
    // The sampler works on its own copy of the row: the digest is of the raw
    // logits, copied by the pipeline before the next decode and digested
    // while it runs.
    std::int32_t input = tokens.back();
    std::int32_t next = llama_sampler_sample(sampler.get(), context_, -1);
    RowMeta meta{.position = step,
                 .input_token = input,
                 .output_token = next,
                 .target = digest::kNoTarget,
                 .full_row = capture.WantsFullRow(step)};
    if (Status submitted = SubmitRow(*pipeline, meta, row, /*borrow=*/false); !submitted.ok())
      return Drained(*pipeline, submitted);
    summary.generated_ids.push_back(next);
    summary.generated_text += Piece(next);
    if (llama_vocab_is_eog(vocab, next)) {
      summary.stop = "eos";
      break;
    }
    tokens.push_back(next);
  }
  ORCH_RETURN_IF_ERROR(pipeline->Finish());
  if (summary.stop.empty()) summary.stop = "max_tokens";
  summary.eval_ms = MillisecondsSince(start);
  return summary;
}

}  // namespace orch::drivers::llamacpp
