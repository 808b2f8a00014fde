#include "tests/drivers/llamacpp/driver_harness.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "driver_protocol/frames.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void DecodeFrames(const std::string& bytes, DriverOutput* output) {
  driver_protocol::DriverFrameParser parser;
  std::vector<driver_protocol::DriverFrame> frames;
  Status status = parser.Feed(bytes, &frames);
  if (status.ok()) status = parser.Finish();
  if (!status.ok()) output->stream_error = status.ToString();
  for (const driver_protocol::DriverFrame& frame : frames) {
    switch (frame.type) {
      case driver_protocol::DriverFrameType::kHello:
        output->hello = json::parse(frame.payload);
        break;
      case driver_protocol::DriverFrameType::kDone:
        output->done = json::parse(frame.payload);
        break;
      case driver_protocol::DriverFrameType::kError:
        output->error = json::parse(frame.payload);
        break;
      case driver_protocol::DriverFrameType::kJob:  // the parser accepts no such frame on stdout
        break;
      case driver_protocol::DriverFrameType::kRecord: {
        Result<digest::PositionRecord> record = digest::DecodePositionRecord(frame.payload);
        if (!record.ok()) {
          output->stream_error = record.status().ToString();
        } else {
          output->records.push_back(std::move(*record));
        }
        break;
      }
    }
  }
}

}  // namespace

std::vector<digest::RowDigest> DriverOutput::Digests() const {
  std::vector<digest::RowDigest> digests;
  for (const auto& record : records) digests.push_back(record.digest);
  return digests;
}

std::vector<std::int32_t> DriverOutput::InputTokens() const {
  std::vector<std::int32_t> tokens;
  for (const auto& record : records) tokens.push_back(record.input_token);
  return tokens;
}

std::string LlamaDriverBinary(const std::string& release) {
  return std::string(ORCH_BINARY_DIR) + "/drivers/llamacpp/orch-driver-llamacpp-" + release;
}

DriverOutput RunLlamaDriver(const std::string& release, const json& job, const std::string& dir,
                            const std::vector<std::string>& args) {
  static std::atomic<int> counter{0};
  std::string path = dir + "/job-" + std::to_string(counter++) + ".json";
  std::ofstream(path) << job.dump();
  std::vector<std::string> argv = {LlamaDriverBinary(release)};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult result = RunProcess(argv, std::chrono::seconds(120), "", path);
  DriverOutput output;
  output.exit_code = result.exit_code;
  output.log = result.err;
  DecodeFrames(result.out, &output);
  return output;
}

namespace {

// The end of the job stream that starts at `offset`: just after its done or
// error frame, or npos when `bytes` ends first.
std::size_t JobStreamEnd(const std::string& bytes, std::size_t offset) {
  while (bytes.size() - offset >= 5) {
    std::uint32_t length = 0;
    for (int i = 3; i >= 0; --i)
      length =
          (length << 8) | static_cast<std::uint8_t>(bytes[offset + static_cast<std::size_t>(i)]);
    auto type = static_cast<std::uint8_t>(bytes[offset + 4]);
    if (bytes.size() - offset - 5 < length) return std::string::npos;
    offset += 5 + length;
    if (type == 3 || type == 4) return offset;
  }
  return std::string::npos;
}

}  // namespace

SessionOutput RunDriverSession(const std::vector<std::string>& argv, const std::vector<json>& jobs,
                               const std::string& dir) {
  static std::atomic<int> counter{0};
  std::string path = dir + "/session-" + std::to_string(counter++) + ".frames";
  {
    std::ofstream out(path, std::ios::binary);
    for (const json& job : jobs) out << driver_protocol::EncodeJobFrame(job.dump());
  }
  ProcessResult result = RunProcess(argv, std::chrono::seconds(120), "", path);
  SessionOutput output;
  output.exit_code = result.exit_code;
  output.log = result.err;
  std::size_t offset = 0;
  while (offset < result.out.size()) {
    std::size_t end = JobStreamEnd(result.out, offset);
    if (end == std::string::npos) {
      output.trailing_error =
          std::to_string(result.out.size() - offset) + " bytes of no job stream";
      break;
    }
    DriverOutput job;
    job.exit_code = result.exit_code;
    DecodeFrames(result.out.substr(offset, end - offset), &job);
    output.jobs.push_back(std::move(job));
    offset = end;
  }
  return output;
}

SessionOutput RunLlamaDriverSession(const std::string& release, const std::vector<json>& jobs,
                                    const std::string& dir) {
  return RunDriverSession({LlamaDriverBinary(release), "session"}, jobs, dir);
}

void SynthModel(const std::string& recipe, const std::string& path) {
  ProcessResult result = RunProcess({OrchBinary(), "model", "synth", recipe, "-o", path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
}

std::string MakeDriverTestDir(const std::string& prefix) {
  std::string dir =
      std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  SynthModel(kTinyModelRecipe, TinyModel(dir));
  return dir;
}

void RemoveDriverTestDir(const std::string& dir) { std::filesystem::remove_all(dir); }

json TeacherForcedJob(const std::string& model_path, const std::string& cache_dir,
                      const json& overrides, int positions) {
  json coordinate = {{"engine", "llama.cpp@v0.4.0"},
                     {"quant", "f32"},
                     {"kv", "f16"},
                     {"attention", "off"},
                     {"tp", "1"},
                     {"hardware", "cpu"},
                     {"threads", "1"},
                     {"cpu_backend", "best"}};
  for (const auto& [axis, value] : overrides.items()) coordinate[axis] = value;
  json capture = {{"top_logits", 20},
                  {"full_every", 0},
                  {"full_windows", json::array()},
                  {"full_row_budget_bytes", 0}};
  return {{"run_id", "test-run"},
          {"job_id", "test-job"},
          {"experiment", "driver-test"},
          {"coordinate", coordinate},
          {"workload",
           {{"name", "readme"},
            {"kind", "teacher_forced"},
            {"positions", positions},
            {"text", ReadFile(std::string(ORCH_SOURCE_DIR) + "/examples/texts/readme.txt")},
            {"capture", capture}}},
          {"model",
           {{"requirement",
             "synth:llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,"
             "ctx=512,seed=1,type=f32"},
            {"path", model_path},
            {"cache_dir", cache_dir},
            {"spec", json::object()}}},
          {"capture", capture},
          {"requirements", {{"engine", coordinate["engine"]}, {"hardware", "cpu"}, {"gpus", 0}}}};
}

StreamView::StreamView(const DriverOutput& output) {
  digests = output.Digests();
  for (const auto& record : output.records) {
    if (!record.full_row.empty()) full_rows.push_back({record.position, record.full_row});
  }
}

digest::StreamSummary Compare(const DriverOutput& reference, const DriverOutput& other) {
  StreamView p(reference), q(other);
  Result<digest::StreamComparison> comparison = digest::CompareStreams(p.stream(), q.stream());
  EXPECT_TRUE(comparison.ok()) << comparison.status().ToString();
  return comparison.ok() ? comparison->summary : digest::StreamSummary{};
}

}  // namespace orch::testing
