// orch-driver-llamacpp-RELEASE: the llama.cpp engine driver, compiled once per
// engine build against that build's headers (docs/drivers.md).
//
//   orch-driver-llamacpp-RELEASE                  run the job on stdin
//                                                 (docs/driver-protocol.md)
//   orch-driver-llamacpp-RELEASE --digest-workers N
//                                                 the same with N row-digest
//                                                 threads (default: the cores
//                                                 the engine's threads leave,
//                                                 at least 1, or none below a
//                                                 vocabulary of 8,192;
//                                                 digest_pipeline.h)
//   orch-driver-llamacpp-RELEASE quantize IN OUT TYPE [THREADS]
//   orch-driver-llamacpp-RELEASE variants         CPU kernel variants + scores (JSON)
//   orch-driver-llamacpp-RELEASE version          the hello object (JSON)
//   orch-driver-llamacpp-RELEASE capabilities --json
//                                                 axes, values and invalid
//                                                 combinations (capabilities.h)
//
// Frames go to the original stdout; file descriptor 1 is pointed at stderr
// before the engine loads, so nothing the engine prints can corrupt them.
// Exit codes: 0 ok, 2 invalid job or coordinate, 3 engine error.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "driver_protocol/frames.h"
#include "digest/record_codec.h"
#include "drivers/llamacpp/capabilities.h"
#include "drivers/llamacpp/cpu_backend.h"
#include "drivers/llamacpp/effective_settings.h"
#include "drivers/llamacpp/job_settings.h"
#include "drivers/llamacpp/llama_session.h"
#include "drivers/llamacpp/model_file.h"
#include "fingerprint/file_hash_cache.h"
#include "fingerprint/memory_hash_cache.h"
#include "llama.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORCH_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ORCH_ASAN)
#define ORCH_DRIVER_SANITIZED 1
// The engine keeps its backend registry until exit; that is not a leak of ours.
extern "C" const char* __lsan_default_suppressions() { return "leak:libllama\nleak:libggml\n"; }
#endif

namespace {

using nlohmann::json;
using orch::Status;
using orch::driver_protocol::DriverFrameType;
namespace llamacpp = orch::drivers::llamacpp;

constexpr int kExitInvalid = 2;
constexpr int kExitEngine = 3;

class FrameWriter final {
 public:
  // Takes the real stdout for frames and points fd 1 at stderr.
  FrameWriter() : out_(fdopen(dup(1), "wb")) { dup2(2, 1); }
  ~FrameWriter() { std::fclose(out_); }

  // Records are flushed in groups (one write per kFlushEvery records instead
  // of one per record); every other frame is flushed at once.
  bool Write(DriverFrameType type, const std::string& payload) {
    std::string frame = orch::driver_protocol::EncodeDriverFrame(type, payload);
    if (std::fwrite(frame.data(), 1, frame.size(), out_) != frame.size()) return false;
    if (type == DriverFrameType::kRecord && ++unflushed_ < kFlushEvery) return true;
    unflushed_ = 0;
    return std::fflush(out_) == 0;
  }

 private:
  static constexpr int kFlushEvery = 64;
  std::FILE* out_;
  int unflushed_ = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The release the linked library says it is: its build metadata when the
// build ships one, else the library's own version string, else the headers'.
std::string LinkedRelease(const std::string& library_dir) {
  json metadata = json::parse(ReadFile(library_dir + "/_nlcBuildMetadata.json"), nullptr, false);
  if (metadata.is_object()) {
    const json* release = &metadata;
    for (const char* key : {"buildOptions", "llamaCpp", "release"}) {
      if (!release->is_object() || !release->contains(key)) break;
      release = &(*release)[key];
    }
    if (release->is_string()) return release->get<std::string>();
  }
#if ORCH_LLAMA_HAS_VERSION
  return llama_version();
#else
  return ORCH_LLAMACPP_RELEASE;
#endif
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

// Engine strings (generated text, paths) need not be valid UTF-8: invalid
// bytes become U+FFFD instead of aborting the run.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json HelloObject(const llamacpp::LoadedBackend* backend) {
  std::string dir = llamacpp::EngineLibraryDir();
  json hello = {{"engine", "llama.cpp"},
                {"version", LinkedRelease(dir)},
                {"commit", ORCH_LLAMACPP_COMMIT},
                {"build",
                 {{"driver", "orch-driver-llamacpp"},
                  {"headers_release", ORCH_LLAMACPP_RELEASE},
                  {"compiler", __VERSION__},
                  {"library_dir", dir},
                  {"system_info", backend != nullptr ? llama_print_system_info() : ""}}},
                {"kernel_path", "unknown (backend not loaded)"},
                {"hardware", "cpu: " + CpuModel()}};
  if (backend != nullptr) {
    hello["kernel_path"] = backend->variant.empty() ? "cpu: built-in" : "cpu: " + backend->variant;
    hello["build"]["backend_file"] = backend->path;
    hello["hardware"] = json(backend->devices);
  }
  return hello;
}

int Fail(FrameWriter& frames, const Status& status) {
  std::string code(llamacpp::ErrorCodeFor(status));
  std::fprintf(stderr, "orch-driver-llamacpp: %s: %s\n", code.c_str(), status.message().c_str());
  frames.Write(DriverFrameType::kError, Dump(json{{"code", code}, {"message", status.message()}}));
  return code == "engine_error" ? kExitEngine : kExitInvalid;
}

json DoneObject(const llamacpp::JobSettings& settings, const llamacpp::WorkloadSummary& summary,
                const llamacpp::PreparedModel& model, const llamacpp::LlamaSession& session,
                const llamacpp::LoadedBackend& backend) {
  json done = {{"positions", summary.positions},
               {"nan_rows", summary.nan_rows},
               {"eval_ms", summary.eval_ms},
               {"context", session.Describe()},
               {"model",
                {{"path", model.path},
                 {"sha256", model.sha256},
                 {"type", model.type},
                 {"quantized_from", model.source},
                 {"cache_hit", model.cache_hit}}}};
  done["effective"] = llamacpp::EngineObserver::Instance().Effective(backend, session.context());
  if (summary.nan_rows > 0) done["first_nan_position"] = summary.first_nan_position;
  json token_text = json::object();
  for (const auto& [id, text] : summary.token_text) token_text[std::to_string(id)] = text;
  done["token_text"] = token_text;
  if (settings.workload.kind == llamacpp::WorkloadSettings::Kind::kGenerate) {
    done["generated_ids"] = summary.generated_ids;
    done["generated_text"] = summary.generated_text;
    done["stop"] = summary.stop;  // "eos" or "max_tokens"
    done["generated_tokens"] = summary.generated_ids.size();
    done["max_tokens"] = settings.workload.max_tokens;
  }
  return done;
}

// The agent's hash cache (model.hash_cache), else one for this run: a cache that
// cannot be opened only costs reading the files again.
std::unique_ptr<orch::fingerprint::HashCache> OpenHashCache(const std::string& path) {
  if (!path.empty()) {
    orch::Result<std::unique_ptr<orch::fingerprint::HashCache>> cache =
        orch::fingerprint::OpenFileHashCache(path);
    if (cache.ok()) return std::move(cache).value();
    std::fprintf(stderr, "hash cache not used: %s\n", cache.status().message().c_str());
  }
  return std::make_unique<orch::fingerprint::MemoryHashCache>();
}

int RunJob(int digest_workers) {
  FrameWriter frames;
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  orch::Result<llamacpp::JobSettings> settings = llamacpp::ParseJob(input);
  if (!settings.ok()) {
    frames.Write(DriverFrameType::kHello, Dump(HelloObject(nullptr)));
    return Fail(frames, settings.status());
  }
  orch::Result<llamacpp::LoadedBackend> backend = llamacpp::LoadCpuBackend(settings->cpu_backend);
  if (!backend.ok()) {
    frames.Write(DriverFrameType::kHello, Dump(HelloObject(nullptr)));
    return Fail(frames, backend.status());
  }
  llamacpp::EngineObserver::Instance().Install();
  llama_backend_init();
  frames.Write(DriverFrameType::kHello, Dump(HelloObject(&*backend)));
  std::unique_ptr<orch::fingerprint::HashCache> hashes = OpenHashCache(settings->hash_cache);
  orch::Result<llamacpp::PreparedModel> model =
      llamacpp::PrepareModel(*settings, ORCH_LLAMACPP_RELEASE, *hashes);
  if (!model.ok()) return Fail(frames, model.status());
  auto session = llamacpp::LlamaSession::Open(model->path, *settings, digest_workers);
  if (!session.ok()) return Fail(frames, session.status());
  auto summary = (*session)->Run([&frames](const orch::digest::PositionRecord& r) {
    if (!frames.Write(DriverFrameType::kRecord, orch::digest::EncodePositionRecord(r)))
      return orch::IoError("writing a record to stdout failed");
    return Status::Ok();
  });
  if (!summary.ok()) return Fail(frames, summary.status());
  if (summary->nan_rows > 0) {
    std::fprintf(stderr,
                 "orch-driver-llamacpp: %lld rows are not distributions (NaN or "
                 "+inf logits), first at position %lld\n",
                 static_cast<long long>(summary->nan_rows),
                 static_cast<long long>(summary->first_nan_position));
  }
  frames.Write(DriverFrameType::kDone,
               Dump(DoneObject(*settings, *summary, *model, **session, *backend)));
#if !defined(ORCH_DRIVER_SANITIZED)
  // The stream is complete and flushed; tearing the engine down would only cost
  // time (about 10 ms for a 32k vocabulary). Sanitized builds tear down to
  // check for leaks.
  std::fflush(nullptr);
  _exit(0);
#endif
  return 0;
}

int Quantize(int argc, char** argv) {
  if (argc < 5 || argc > 6) {
    std::fprintf(stderr, "usage: %s quantize IN OUT TYPE [THREADS]\n", argv[0]);
    return kExitInvalid;
  }
  llama_backend_init();
  int threads = argc == 6 ? std::atoi(argv[5]) : 0;
  Status status = llamacpp::QuantizeModel(argv[2], argv[3], argv[4], threads);
  if (!status.ok()) {
    std::fprintf(stderr, "%s quantize: %s\n", argv[0], status.message().c_str());
    return status.code() == orch::StatusCode::kInvalidArgument ? kExitInvalid : kExitEngine;
  }
  return 0;
}

int Variants() {
  json variants = json::array();
  for (const auto& v : llamacpp::ScoreCpuVariants(llamacpp::EngineLibraryDir()))
    variants.push_back({{"variant", v.variant}, {"score", v.score}, {"path", v.path}});
  std::cout << variants.dump(1) << "\n";
  return 0;
}

void Usage(const char* self) {
  std::printf(
      "usage: %s                 run the job document on stdin (driver protocol)\n"
      "       %s --digest-workers N   the same, digesting rows on N threads\n"
      "       %s quantize IN OUT TYPE [THREADS]\n"
      "       %s variants        CPU kernel variants and their scores here\n"
      "       %s version         engine version, commit and build (JSON)\n"
      "       %s capabilities --json   axes, values, invalid combinations\n"
      "llama.cpp %s, commit %s\n",
      self, self, self, self, self, self, ORCH_LLAMACPP_RELEASE, ORCH_LLAMACPP_COMMIT);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return RunJob(0);
  std::string command = argv[1];
  if (command == "--digest-workers" && argc == 3) {
    char* end = nullptr;
    long workers = std::strtol(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || workers < 1 || workers > 256) {
      std::fprintf(stderr, "%s: --digest-workers '%s': expected 1 to 256\n", argv[0], argv[2]);
      return kExitInvalid;
    }
    return RunJob(static_cast<int>(workers));
  }
  if (command == "quantize") return Quantize(argc, argv);
  if (command == "variants") return Variants();
  if (command == "version") {
    std::cout << HelloObject(nullptr).dump(1) << "\n";
    return 0;
  }
  if (command == "capabilities" && (argc == 2 || (argc == 3 && std::string(argv[2]) == "--json"))) {
    std::cout << llamacpp::CapabilitiesJson();
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    Usage(argv[0]);
    return 0;
  }
  std::fprintf(stderr, "%s: unknown command '%s' (try --help)\n", argv[0], command.c_str());
  return kExitInvalid;
}
