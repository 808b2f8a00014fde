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
//   orch-driver-llamacpp-RELEASE session [--digest-workers N]
//                                                 session mode: job frames on
//                                                 stdin until end of file, the
//                                                 model kept loaded between jobs
//                                                 with equal load keys
//   orch-driver-llamacpp-RELEASE quantize IN OUT TYPE [THREADS]
//   orch-driver-llamacpp-RELEASE variants         CPU kernel variants + scores (JSON)
//   orch-driver-llamacpp-RELEASE accelerators [DIR]
//                                                 accelerator backend files of the
//                                                 build (or DIR): loaded here or
//                                                 why not, and the devices (JSON)
//   orch-driver-llamacpp-RELEASE version          the hello object (JSON)
//   orch-driver-llamacpp-RELEASE capabilities --json
//                                                 axes, values and invalid
//                                                 combinations (capabilities.h)
//
// Frames go to the original stdout; file descriptor 1 is pointed at stderr
// before the engine loads, so nothing the engine prints can corrupt them.
// Exit codes: 0 ok, 2 invalid job or coordinate, 3 engine error.
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "driver_protocol/frames.h"
#include "digest/record_codec.h"
#include "drivers/llamacpp/capabilities_json.h"
#include "drivers/llamacpp/cpu_backend.h"
#include "drivers/llamacpp/effective_settings.h"
#include "drivers/llamacpp/job_settings.h"
#include "drivers/llamacpp/llama_session.h"
#include "drivers/llamacpp/model_file.h"
#include "drivers/llamacpp/tool_commands.h"
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

using llamacpp::kExitEngine;
using llamacpp::kExitInvalid;

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
    if (!backend->accelerators.empty())
      hello["build"]["accelerators"] = llamacpp::AcceleratorsJson(backend->accelerators);
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
  if (summary.has_chat) {
    done["chat_template"] = {{"source", "model"}, {"sha256", summary.chat_template_sha256}};
    done["rendered_prompt"] = summary.rendered_prompt;
  }
  if (summary.has_continuation) {
    done["continuation"] = {{"first_position", summary.continuation_first_position},
                            {"tokens", summary.continuation_tokens}};
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

// What a driver process keeps from one job to the next (session mode): the CPU
// backend (loaded once per process), the model with the key it was loaded with,
// its hello, the weight types of files read and a memory hash cache.
struct EngineState {
  std::optional<llamacpp::LoadedBackend> backend;
  std::string backend_requested;  // the cpu_backend value it was loaded for
  llamacpp::ModelHandle model;
  std::string model_key;
  std::string hash_cache_path;
  std::unique_ptr<orch::fingerprint::HashCache> hashes;
  // The hello of the loaded backend (it cannot change within the process).
  std::optional<json> hello;
  // Weight types of files already read, by path and the sha256 the agent gave:
  // the same bytes have the same type, so its metadata is not parsed again.
  std::map<std::pair<std::string, std::string>, std::string> weight_types;
  int jobs_before = 0;
};

json BackendHello(EngineState& state) {
  if (!state.backend) return HelloObject(nullptr);
  if (!state.hello) state.hello = HelloObject(&*state.backend);
  return *state.hello;
}

// The agent's hash cache file is read anew for every job: an open cache does not
// see what the agent appended since (fingerprint/file_hash_cache.h). Without
// one, a memory cache lives as long as the process.
orch::fingerprint::HashCache& HashesFor(const std::string& path, EngineState& state) {
  if (state.hashes == nullptr || !path.empty() || !state.hash_cache_path.empty()) {
    state.hashes = OpenHashCache(path);
    state.hash_cache_path = path;
  }
  return *state.hashes;
}

// The model file for the job (model_file.h), its weight type taken from an
// earlier job of the same file and sha256 when there was one.
orch::Result<llamacpp::PreparedModel> Prepare(llamacpp::JobSettings& settings, EngineState& state) {
  std::pair<std::string, std::string> file{settings.model_path, settings.model_sha256};
  if (settings.model_type.empty() && !file.second.empty()) {
    auto known = state.weight_types.find(file);
    if (known != state.weight_types.end()) settings.model_type = known->second;
  }
  orch::Result<llamacpp::PreparedModel> model = llamacpp::PrepareModel(
      settings, ORCH_LLAMACPP_RELEASE, HashesFor(settings.hash_cache, state));
  if (model.ok() && !file.second.empty() && !model->resolved_type.empty())
    state.weight_types[file] = model->resolved_type;
  return model;
}

// The process's CPU backend: loaded by the first job that gets this far; a
// later job must ask for the same one (a process cannot swap it).
Status EnsureBackend(const llamacpp::JobSettings& settings, EngineState& state) {
  if (state.backend.has_value()) {
    if (settings.cpu_backend == state.backend_requested ||
        settings.cpu_backend == state.backend->variant)
      return Status::Ok();
    return Status(orch::StatusCode::kFailedPrecondition,
                  "cpu_backend = \"" + settings.cpu_backend + "\": this driver process runs the " +
                      "CPU backend \"" + state.backend_requested +
                      "\" loaded for an earlier job of its session; a session runs one CPU " +
                      "backend (start another session for this job)");
  }
  orch::Result<llamacpp::LoadedBackend> backend = llamacpp::LoadCpuBackend(settings.cpu_backend);
  if (!backend.ok()) return backend.status();
  llamacpp::EngineObserver::Instance().Install();  // before the engine logs (effective_settings.h)
  llama_backend_init();
  state.backend = std::move(backend).value();
  state.backend_requested = settings.cpu_backend;
  return Status::Ok();
}

// The model for this job: the loaded one when its key is equal, else loaded
// anew (the old one freed first).
orch::Result<llamacpp::ModelHandle> ModelFor(const llamacpp::JobSettings& settings,
                                             const std::string& path, const std::string& key,
                                             EngineState& state) {
  if (state.model != nullptr && key == state.model_key) return state.model;
  state.model.reset();
  state.model_key.clear();
  ORCH_ASSIGN_OR_RETURN(state.model, llamacpp::LoadModel(path, settings));
  state.model_key = key;
  return state.model;
}

// One job: hello, records, done or error; returns the exit status a single run
// has (0, kExitInvalid, kExitEngine). `session`: the hello carries the session
// object and the model is prepared before it (whether the job runs warm is known
// then); a single run writes its hello before preparing the model, as always.
int RunJob(FrameWriter& frames, const std::string& input, int digest_workers, EngineState& state,
           bool session) {
  json session_object = {{"warm", false}, {"jobs_before", state.jobs_before}};
  auto hello = [&]() {
    json object = BackendHello(state);
    if (session) object["session"] = session_object;
    frames.Write(DriverFrameType::kHello, Dump(object));
  };
  orch::Result<llamacpp::JobSettings> settings = llamacpp::ParseJob(input);
  if (!settings.ok()) {
    hello();
    return Fail(frames, settings.status());
  }
  if (Status backend = EnsureBackend(*settings, state); !backend.ok()) {
    hello();
    return Fail(frames, backend);
  }
  if (settings->gpu() && llamacpp::GpuDeviceCount() == 0) {
    hello();
    return Fail(frames, llamacpp::NoGpuDevice(settings->hardware, *state.backend,
                                              llamacpp::EngineLibraryDir()));
  }
  // The backend by what was loaded: "best" and the variant it chose are one
  // backend, so their jobs share the loaded model (ModelLoadKey).
  if (!state.backend->variant.empty()) settings->cpu_backend = state.backend->variant;
  if (!session) hello();
  orch::Result<llamacpp::PreparedModel> model = Prepare(*settings, state);
  std::string key =
      model.ok() ? llamacpp::ModelLoadKey(*settings, model->path, model->sha256) : std::string();
  if (session) {
    session_object["warm"] = model.ok() && state.model != nullptr && key == state.model_key;
    hello();
  }
  if (!model.ok()) return Fail(frames, model.status());
  orch::Result<llamacpp::ModelHandle> loaded = ModelFor(*settings, model->path, key, state);
  if (!loaded.ok()) return Fail(frames, loaded.status());
  auto engine = llamacpp::LlamaSession::Open(*loaded, *settings, digest_workers);
  auto summary = engine->Run([&frames](const orch::digest::PositionRecord& r) {
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
               Dump(DoneObject(*settings, *summary, *model, *engine, *state.backend)));
  return 0;
}

// The stream is complete and flushed; tearing the engine down would only cost
// time (about 10 ms for a 32k vocabulary). Sanitized builds tear down to check
// for leaks.
int ExitFast(int status) {
#if !defined(ORCH_DRIVER_SANITIZED)
  std::fflush(nullptr);
  _exit(status);
#endif
  return status;
}

int RunSingleJob(int digest_workers) {
  FrameWriter frames;
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  EngineState state;
  int status = RunJob(frames, input, digest_workers, state, /*session=*/false);
  return status == 0 ? ExitFast(0) : status;
}

// Reads exactly `size` bytes from stdin; returns how many it got (fewer only at
// end of file or on an error).
std::size_t ReadStdin(char* data, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = read(0, data + got, size - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  return got;
}

// The next job document of a session's stdin; nullopt at end of file between
// frames; kDataLoss for anything else (a truncated frame, another type).
orch::Result<std::optional<std::string>> NextJob() {
  char header[orch::driver_protocol::kFrameHeaderBytes];
  std::size_t got = ReadStdin(header, sizeof(header));
  if (got == 0) return std::optional<std::string>();
  ORCH_ASSIGN_OR_RETURN(std::uint32_t length,
                        orch::driver_protocol::JobFrameLength(std::string_view(header, got)));
  std::string job(length, '\0');
  if (std::size_t read = ReadStdin(job.data(), length); read != length) {
    return Status(orch::StatusCode::kDataLoss, "job frame: stdin ended after " +
                                                   std::to_string(read) + " of its " +
                                                   std::to_string(length) + " payload bytes");
  }
  return std::optional<std::string>(std::move(job));
}

// Session mode (docs/driver-protocol.md, "Sessions"): jobs from stdin frames
// until end of file, the model kept loaded between jobs with equal load keys.
int RunSession(int digest_workers) {
  FrameWriter frames;
  EngineState state;
  for (;;) {
    orch::Result<std::optional<std::string>> job = NextJob();
    if (!job.ok()) {
      // Nothing to answer the agent but this: the stream of a job that never came.
      json hello = BackendHello(state);
      hello["session"] = {{"warm", false}, {"jobs_before", state.jobs_before}};
      frames.Write(DriverFrameType::kHello, Dump(hello));
      return Fail(frames, Status(orch::StatusCode::kInvalidArgument, job.status().message()));
    }
    if (!job->has_value()) return ExitFast(0);
    int status = RunJob(frames, **job, digest_workers, state, /*session=*/true);
    ++state.jobs_before;
    if (status == kExitEngine) return ExitFast(kExitEngine);
  }
}

void Usage(const char* self) {
  std::printf(
      "usage: %s                 run the job document on stdin (driver protocol)\n"
      "       %s --digest-workers N   the same, digesting rows on N threads\n"
      "       %s session [--digest-workers N]   run job frames from stdin until end of\n"
      "                          file, the model kept loaded (session mode)\n"
      "       %s quantize IN OUT TYPE [THREADS]\n"
      "       %s variants        CPU kernel variants and their scores here\n"
      "       %s accelerators [DIR]   accelerator backends (libggml-cuda.so, ...) of the\n"
      "                          build or of DIR: whether each loads here, and why not\n"
      "       %s version         engine version, commit and build (JSON)\n"
      "       %s capabilities --json   axes, values, invalid combinations\n"
      "llama.cpp %s, commit %s\n",
      self, self, self, self, self, self, self, self, ORCH_LLAMACPP_RELEASE, ORCH_LLAMACPP_COMMIT);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return RunSingleJob(0);
  std::string command = argv[1];
  if (command == "session" && argc == 2) return RunSession(0);
  bool session = command == "session" && argc == 4 && std::string(argv[2]) == "--digest-workers";
  if ((command == "--digest-workers" && argc == 3) || session) {
    const char* value = argv[session ? 3 : 2];
    char* end = nullptr;
    long workers = std::strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || workers < 1 || workers > 256) {
      std::fprintf(stderr, "%s: --digest-workers '%s': expected 1 to 256\n", argv[0], value);
      return kExitInvalid;
    }
    return session ? RunSession(static_cast<int>(workers))
                   : RunSingleJob(static_cast<int>(workers));
  }
  if (command == "quantize") return llamacpp::QuantizeCommand(argc, argv);
  if (command == "variants") return llamacpp::VariantsCommand();
  if (command == "accelerators" && argc <= 3) return llamacpp::AcceleratorsCommand(argc, argv);
  if (command == "version") {
    json hello = HelloObject(nullptr);
    hello["session"] = {{"load_axes", llamacpp::LoadAxes()}};
    std::cout << hello.dump(1) << "\n";
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
