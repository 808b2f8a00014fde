// Runs a real orch-driver-llamacpp-RELEASE on a job document and decodes its
// frames, for tests of the driver against the real engine.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "digest/record_codec.h"
#include "digest/stream_compare.h"

namespace orch::testing {

struct DriverOutput {
  int exit_code = -1;
  std::string stream_error;  // empty when the frames were well formed
  nlohmann::json hello;
  nlohmann::json done;   // null unless the run ended with done
  nlohmann::json error;  // null unless the run ended with an error frame
  std::vector<digest::PositionRecord> records;
  std::string log;  // stderr

  std::vector<digest::RowDigest> Digests() const;
  std::vector<std::int32_t> InputTokens() const;
};

std::string LlamaDriverBinary(const std::string& release);

// Writes `job` to `dir`/job-N.json and runs the driver on it, with `args`
// after the program name (none: as the agent runs it).
DriverOutput RunLlamaDriver(const std::string& release, const nlohmann::json& job,
                            const std::string& dir, const std::vector<std::string>& args = {});

// A session run (`DRIVER session`, docs/driver-protocol.md "Sessions"): every
// job's stream, split at its done or error frame, and the process's exit.
struct SessionOutput {
  int exit_code = -1;
  std::vector<DriverOutput> jobs;
  std::string trailing_error;  // bytes after the last complete job stream
  std::string log;
};

// Writes `jobs` as job frames to `dir`/session-N.frames, runs `program` with
// `args` on it (stdin ends after the last frame) and splits its stdout.
SessionOutput RunDriverSession(const std::vector<std::string>& argv,
                               const std::vector<nlohmann::json>& jobs, const std::string& dir);
SessionOutput RunLlamaDriverSession(const std::string& release,
                                    const std::vector<nlohmann::json>& jobs,
                                    const std::string& dir);

// Generates the synth model `recipe` with `orch model synth` into `path`.
void SynthModel(const std::string& recipe, const std::string& path);

// The generated model the driver tests run (the example's: f32, vocabulary 1024).
inline constexpr char kTinyModelRecipe[] =
    "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1";

// A test suite's scratch folder, TMP/`prefix`-PID, made with kTinyModelRecipe's model
// in it as tiny.gguf (TinyModel) and removed by RemoveDriverTestDir.
std::string MakeDriverTestDir(const std::string& prefix);
void RemoveDriverTestDir(const std::string& dir);
inline std::string TinyModel(const std::string& dir) { return dir + "/tiny.gguf"; }
inline std::string ModelCache(const std::string& dir) { return dir + "/cache"; }

// A teacher-forced job over the example README text on `model_path`: the
// coordinate has every axis at the example baseline (f32 weights, f16 KV,
// attention off, best CPU variant, 1 thread); `overrides` replaces axes.
nlohmann::json TeacherForcedJob(const std::string& model_path, const std::string& cache_dir,
                                const nlohmann::json& overrides, int positions = 128);

// Owns the stream views for CompareStreams.
struct StreamView {
  explicit StreamView(const DriverOutput& output);
  std::vector<digest::RowDigest> digests;
  std::vector<digest::FullRow> full_rows;
  digest::DigestStream stream() const { return {digests, full_rows}; }
};

digest::StreamSummary Compare(const DriverOutput& reference, const DriverOutput& other);

}  // namespace orch::testing
