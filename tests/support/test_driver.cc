// orch-test-driver: a deterministic test double that speaks the driver protocol
// (docs/driver-protocol.md). It is not an engine: its hello names engine
// "test-engine" version "1" (build.driver "orch-test-driver"), and its rows are
// pseudo-random numbers seeded by the job's coordinate, never model outputs. Like
// a real engine on one exact configuration, repeats of one coordinate give
// bit-identical rows.
//
// Knobs, read from the job's coordinate (values are strings):
//   knob.positions  records to emit (default 4)
//   knob.behaviour  ok (default) | crash (abort after half the records) | hang
//                   (emit half, start a sleeping grandchild in the same process
//                   group, then sleep) | error (typed error frame, exit 3 unless
//                   a session goes on after its code) | exit3 (exit 3 without
//                   done) | garbage (bytes after done)
//   knob.delay_ms   sleep before each record (default 0)
//   knob.error_code the code of the `error` behaviour's frame (default engine_error)
//   knob.load       a load axis: what a real engine would load once per session
// The done frame echoes the job's `server` object, when it has one, as "server".
// `orch-test-driver version` prints the hello object as JSON and exits 0, as
// every driver does (the agent checks it before advertising the engine); it
// offers sessions with load axis knob.load.
// `orch-test-driver session` runs jobs from `job` frames on stdin, one after
// another, until end of file (exit 0); each job's hello says
// session.warm (the previous job had the same knob.load and model) and
// session.jobs_before. After a typed error whose code leaves the engine sound
// (invalid_job, invalid_combination, model_missing, sha256_mismatch) the
// session goes on; after any other it exits 3.
// Exit codes: 0 ok, 2 the job could not be read, 3 engine error.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "driver_protocol/frames.h"
#include "digest/record_codec.h"
#include "digest/row_digest.h"

namespace {

using nlohmann::json;
using orch::driver_protocol::DriverFrameType;

constexpr std::size_t kVocab = 64;

void Write(DriverFrameType type, const std::string& payload) {
  std::string frame = orch::driver_protocol::EncodeDriverFrame(type, payload);
  std::fwrite(frame.data(), 1, frame.size(), stdout);
  std::fflush(stdout);
}

std::string Knob(const json& job, const std::string& name, const std::string& fallback) {
  const json& coordinate = job["coordinate"];
  auto it = coordinate.find(name);
  return it != coordinate.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::uint64_t Seed(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

std::string Record(const std::string& seed_text, std::uint64_t position) {
  std::uint64_t state = Seed(seed_text) ^ (position * 0x9e3779b97f4a7c15ull);
  std::vector<float> row(kVocab);
  for (float& logit : row) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    logit = static_cast<float>(state >> 40) / static_cast<float>(1u << 24) * 10.0f - 5.0f;
  }
  orch::digest::PositionRecord record;
  record.position = position;
  record.input_token = static_cast<std::int32_t>(position % kVocab);
  orch::digest::DigestOptions options{.top_k = 8};
  if (!orch::digest::ComputeRowDigest(row, options, &record.digest).ok()) std::abort();
  return orch::digest::EncodePositionRecord(record);
}

json HelloObject() {
  return {{"engine", "test-engine"},
          {"version", "1"},
          {"commit", "none"},
          {"build", {{"kind", "test double"}, {"driver", "orch-test-driver"}}},
          {"kernel_path", "none"},
          {"hardware", "none"}};
}

// What one process remembers between the jobs of a session.
struct Session {
  bool active = false;  // started as `orch-test-driver session`
  std::uint64_t jobs_before = 0;
  std::string loaded;  // the load key of the last job ("" before the first)
};

void Hello(const Session& session, const std::string& load_key) {
  json hello = HelloObject();
  if (session.active) {
    hello["session"] = {{"warm", session.jobs_before > 0 && session.loaded == load_key},
                        {"jobs_before", session.jobs_before}};
  }
  Write(DriverFrameType::kHello, hello.dump());
}

// What a real engine loads once: the model and the load axes' values.
std::string LoadKey(const json& job) {
  if (!job.is_object() || !job.contains("coordinate") || !job["coordinate"].is_object()) return "";
  std::string model = job.contains("model") ? job["model"].dump() : "";
  return model + "\n" + Knob(job, "knob.load", "");
}

// Codes after which a session goes on (the engine is sound).
bool SessionSurvives(const std::string& code) {
  return code == "invalid_job" || code == "invalid_combination" || code == "model_missing" ||
         code == "sha256_mismatch";
}

// Runs one job; returns the exit status to end the process with, or -1 when a
// session goes on to its next job.
int RunJob(const json& job, Session& session) {
  std::string load_key = LoadKey(job);
  Hello(session, load_key);
  session.loaded = load_key;
  ++session.jobs_before;
  if (!job.is_object() || !job.contains("job_id") || !job["job_id"].is_string() ||
      !job.contains("coordinate") || !job["coordinate"].is_object()) {
    Write(DriverFrameType::kError,
          json{{"code", "invalid_job"}, {"message", "the job is not a valid job document"}}.dump());
    std::fprintf(stderr, "orch-test-driver: invalid job\n");
    return session.active ? -1 : 2;
  }
  std::string job_id = job["job_id"].get<std::string>();
  std::uint64_t positions = std::strtoull(Knob(job, "knob.positions", "4").c_str(), nullptr, 10);
  std::string behaviour = Knob(job, "knob.behaviour", "ok");
  auto delay = std::chrono::milliseconds(std::atoi(Knob(job, "knob.delay_ms", "0").c_str()));
  std::fprintf(stderr, "orch-test-driver: job %s, %llu positions, behaviour %s\n", job_id.c_str(),
               static_cast<unsigned long long>(positions), behaviour.c_str());
  std::fflush(stderr);
  if (behaviour == "error") {
    std::string code = Knob(job, "knob.error_code", "engine_error");
    Write(DriverFrameType::kError,
          json{{"code", code}, {"message", "the test driver was told to fail"}}.dump());
    return session.active && SessionSurvives(code) ? -1 : 3;
  }
  bool partial = behaviour == "crash" || behaviour == "hang";
  std::uint64_t emit = partial ? positions / 2 : positions;
  for (std::uint64_t position = 0; position < emit; ++position) {
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    Write(DriverFrameType::kRecord, Record(job["coordinate"].dump(), position));
  }
  if (behaviour == "crash") {
    std::fprintf(stderr, "orch-test-driver: crashing after %llu records\n",
                 static_cast<unsigned long long>(emit));
    std::fflush(stderr);
    std::abort();
  }
  if (behaviour == "hang") {
    pid_t child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    std::fprintf(stderr, "orch-test-driver: hanging; grandchild pid %d\n", static_cast<int>(child));
    std::fflush(stderr);
    for (;;) pause();
  }
  if (behaviour == "exit3") {
    std::fprintf(stderr, "orch-test-driver: exiting 3 without done\n");
    return 3;
  }
  json done = {{"positions", emit}};
  // The server object the agent gave a server engine's job, echoed for tests.
  if (job.contains("server")) done["server"] = job["server"];
  Write(DriverFrameType::kDone, done.dump());
  if (behaviour == "garbage") {
    std::fwrite("junk", 1, 4, stdout);
    std::fflush(stdout);
  }
  return session.active ? -1 : 0;
}

// Reads exactly `size` bytes from stdin; false at end of file.
bool ReadExactly(char* out, std::size_t size) { return std::fread(out, 1, size, stdin) == size; }

// `orch-test-driver session`: job frames until end of file.
int RunSession() {
  Session session;
  session.active = true;
  for (;;) {
    unsigned char header[5];
    if (!ReadExactly(reinterpret_cast<char*>(header), sizeof header)) return 0;
    std::uint32_t length = header[0] | (header[1] << 8) | (header[2] << 16) |
                           (static_cast<std::uint32_t>(header[3]) << 24);
    std::string payload(length, '\0');
    if (header[4] != static_cast<unsigned char>(DriverFrameType::kJob) ||
        !ReadExactly(payload.data(), length)) {
      std::fprintf(stderr, "orch-test-driver: bad job frame on stdin\n");
      return 2;
    }
    int status = RunJob(json::parse(payload, nullptr, /*allow_exceptions=*/false), session);
    if (status >= 0) return status;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "version") {
    json hello = HelloObject();
    hello["session"] = {{"load_axes", {"knob.load"}}};
    std::cout << hello.dump() << "\n";
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "session") return RunSession();
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  Session single;
  return RunJob(json::parse(input, nullptr, /*allow_exceptions=*/false), single);
}
