// fuzz_corpus_writer CORPUS_DIR: writes the seed inputs of the binary fuzz
// targets into CORPUS_DIR/<target>/ from the real encoders, so that the seeds
// follow the formats as they change. The spec seeds (CORPUS_DIR/spec_fuzzer/)
// are written by hand; their plans become the plan_json_fuzzer seeds. So is
// digest_chunk_fuzzer/version_1, a DigestChunk of protocol version 1, which no
// encoder writes any more. Exits non-zero naming what failed.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "driver_protocol/frames.h"
#include "fuzz/coordinator_scenario.h"
#include "model/gguf_writer.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"
#include "protocol/codec.h"
#include "store/codec.h"
#include "tests/support/map_source_reader.h"

namespace fs = std::filesystem;
namespace {

using namespace orch;

void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string Chunk(const std::string& run, std::uint64_t seq) {
  return protocol::Encode(
      protocol::DigestChunk{run, seq, {{seq * 2, "digest-a"}, {seq * 2 + 1, "digest-b"}}});
}

protocol::Hello HelloFrom(std::string_view agent, std::vector<std::string> running) {
  protocol::Hello hello;
  hello.agent_id = std::string(agent);
  hello.capabilities = {{std::string(fuzz::kEngine)}, "cpu", 0, 1, {}};
  hello.host_facts = {{"hostname", "host"}};
  hello.running_runs = std::move(running);
  return hello;
}

protocol::StatusReply AnyStatusReply() {
  protocol::StatusReply reply;
  reply.experiments.push_back({.experiment = "exp", .total = 2, .running = 1, .pending = 1});
  reply.agents.push_back({.agent_id = std::string(fuzz::kAgent), .host = "host"});
  reply.jobs.push_back({.job_id = "job", .experiment = "exp", .state = "pending"});
  return reply;
}

std::vector<std::pair<std::string, protocol::Message>> Messages(const std::string& run) {
  using namespace protocol;
  std::string agent(fuzz::kAgent);
  return {
      {"hello", HelloFrom(agent, {run})},
      {"welcome", Welcome{kProtocolVersion, "coord", std::chrono::milliseconds(1000)}},
      {"reject", Reject{kProtocolVersion, "no"}},
      {"heartbeat", Heartbeat{agent, {run}, 0}},
      {"assign", Assign{run,
                        "job",
                        {{"kv", "f16"}},
                        "readme",
                        {"e", "cpu", 0, "m"},
                        std::chrono::milliseconds(30000),
                        "{}"}},
      {"run_started", RunStarted{run}},
      {"run_finished", RunFinished{run, RunStatus::kSucceeded, "{}", "", 1}},
      {"run_failed", RunFinished{run, RunStatus::kFailed, "{}", "driver exited 1", 0}},
      {"ack", Ack{run, 0}},
      {"cancel_run", CancelRun{run}},
      {"cancel_experiment", CancelExperiment{"exp"}},
      {"drain", Drain{agent}},
      {"submit", Submit{std::string(fuzz::ScenarioPlanJson())}},
      {"status_request", StatusRequest{"", true}},
      {"status_reply", AnyStatusReply()},
      {"command_reply", CommandReply{true, "ok"}},
      {"retry", Retry{"exp", true, true}},
  };
}

// One record of a frame_stream_fuzzer script (see frame_stream_fuzzer.cc).
std::string Op(int peer, int event, const std::string& bytes = "", std::uint16_t n = 0) {
  if (event == 0) n = static_cast<std::uint16_t>(bytes.size());
  std::string out{static_cast<char>(peer | event << 2), static_cast<char>(n & 0xff),
                  static_cast<char>(n >> 8)};
  return out + bytes;
}

void WriteMessageSeeds(const fs::path& root) {
  fuzz::CoordinatorScenario scenario;
  const std::string& run = scenario.run_id();
  for (const auto& [name, message] : Messages(run)) {
    Write(root / "message_fuzzer", name, protocol::Encode(message));
  }
  Write(root / "message_fuzzer", "digest_chunk", Chunk(run, 0));
  using protocol::Encode;
  fs::path dir = root / "frame_stream_fuzzer";
  Write(dir, "chunks_then_finish",
        Op(0, 0, Encode(protocol::RunStarted{run})) + Op(0, 0, Chunk(run, 0)) +
            Op(0, 0, Chunk(run, 1)) +
            Op(0, 0,
               Encode(protocol::RunFinished{run, protocol::RunStatus::kSucceeded, "{}", "", 2})));
  Write(dir, "lease_expires",
        Op(0, 0, Chunk(run, 0)) + Op(0, 3, "", 400) + Op(0, 0, Chunk(run, 1)));
  Write(dir, "bad_frames_then_hello",
        Op(1, 0, "x") + Op(1, 0, "yy") + Op(1, 0, "zzz") +
            Op(1, 0, Encode(HelloFrom(fuzz::kStranger, {}))) + Op(1, 1) +
            Op(1, 0, Encode(HelloFrom(fuzz::kStranger, {}))));
  Write(dir, "reconnect",
        Op(0, 2) + Op(0, 1) + Op(0, 0, Encode(HelloFrom(fuzz::kAgent, {run}))) +
            Op(0, 0, Encode(protocol::Heartbeat{std::string(fuzz::kAgent), {run}, 0})));
  Write(dir, "cli_requests",
        Op(2, 0, Encode(protocol::StatusRequest{"", true})) +
            Op(2, 0, Encode(protocol::CancelExperiment{"exp"})) +
            Op(2, 0, Encode(protocol::Retry{"exp", true, true})));
}

void WriteGgufSeeds(const fs::path& root) {
  model::GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddU32("llama.block_count", 1);
  w.AddI32("a.i32", -1);
  w.AddF32("a.f32", 0.5f);
  w.AddBool("a.bool", true);
  w.AddStringArray("tokenizer.ggml.tokens", {"a", "b"});
  w.AddI32Array("a.i32s", {1, 2});
  w.AddF32Array("a.f32s", {1.5f});
  w.AddTensor("token_embd.weight", {4, 2}, model::GgmlType::kF32);
  w.AddTensor("output_norm.weight", {4}, model::GgmlType::kF32);
  std::string file = w.Header();
  file.resize(static_cast<std::size_t>(w.FileBytes()), '\0');
  Write(root / "gguf_fuzzer", "two_tensors.gguf", file);
  model::GgufWriter empty;
  Write(root / "gguf_fuzzer", "empty.gguf", empty.Header());
}

void WriteDriverSeeds(const fs::path& root) {
  using driver_protocol::DriverFrameType;
  std::string hello =
      driver_protocol::EncodeDriverFrame(DriverFrameType::kHello, R"({"engine":"e"})");
  std::string record =
      driver_protocol::EncodeDriverFrame(DriverFrameType::kRecord, std::string(16, 'r'));
  fs::path dir = root / "driver_frames_fuzzer";
  Write(dir, "done",
        "\x03" + hello + record + record +
            driver_protocol::EncodeDriverFrame(DriverFrameType::kDone, "{}"));
  Write(dir, "error",
        std::string(1, '\0') + hello +
            driver_protocol::EncodeDriverFrame(DriverFrameType::kError, "oom"));
  Write(dir, "cut_short", "\x07" + hello + record.substr(0, 9));
}

void WriteRecordSeeds(const fs::path& root) {
  fs::path dir = root / "digest_chunk_fuzzer";
  Write(dir, "none", protocol::Encode(protocol::DigestChunk{"run-1", 0, {}}));
  Write(dir, "three",
        protocol::Encode(protocol::DigestChunk{
            "run-1", 4, {{0, "a"}, {1, ""}, {7, std::string("digest\0\xff", 8)}}}));
  dir = root / "store_codec_fuzzer";
  Write(dir, "plan", '\0' + store::EncodePlan({"exp", "{}", "alice"}));
  Write(dir, "job",
        '\1' + store::EncodeJob({"job", "exp", store::JobState::kFailed, 2, "boom", "run-1"}));
  store::RunRecord run{"run-1", "job", "agent-1", -5,       store::RunState::kSucceeded,
                       1,       "err", "host",    "engine", 3,
                       2,       true,  "{}"};
  Write(dir, "run", '\2' + store::EncodeRun(run));
  Write(dir, "event", '\3' + store::EncodeEvent({0, -7, "job.assigned", "job", "{}"}));
  Write(dir, "bundle",
        '\4' + store::EncodeBundle(
                   {std::string(64, 'a'), "carol", "key", 3, "exp", "n", 5, {"r1", "r2"}}));
  Write(dir, "signer", '\5' + store::EncodeSigner({"key", 3, std::string(64, 'a')}));

  // bundle_fuzzer: a signed result bundle of one run of j1 (the fuzzer substitutes the
  // plan bundle and its nonce), and the same as a raw file would start.
  std::string digests;
  for (uint64_t position = 0; position < 3; ++position) {
    digests +=
        std::string(7, '\0') + static_cast<char>(position) + std::string(3, '\0') + '\x02' + "dg";
  }
  std::string fields =
      R"({"experiment":"exp","nonce":"@nonce","sequence":1,"runs":[{"run":"r1","job":"j1",)"
      R"("agent":"local-1","state":"succeeded","exit_status":0,"positions":3,)"
      R"("host_fingerprint":"","fingerprint":"","summary":"runs/0/summary",)"
      R"("digests":"runs/0/digests"}]})";
  auto part = [](const std::string& bytes) {
    return std::string{static_cast<char>(bytes.size() & 0xff),
                       static_cast<char>(bytes.size() >> 8)} +
           bytes;
  };
  dir = root / "bundle_fuzzer";
  Write(dir, "signed_one_run",
        "\x01" + part(fields) + part("@plan") + part("unused") + part("{}") + part(digests));
  Write(dir, "raw_header", std::string(1, '\0') + "ORCHBNDL\x01MANI" + std::string(8, '\0'));
  // Frames taken as they are: the 1 GiB bomb declared as 1 GiB, and as 64 KiB.
  auto framed = [](char pick, uint32_t kib) {
    std::string out(1, pick);
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((kib >> (8 * b)) & 0xff));
    return out;
  };
  Write(dir, "framed_bomb",
        "\x02" + part(fields) + part(framed(0, 0) + "unused") + part("x") +
            part(framed(3, 1 << 20)) + part(framed(2, 64)));
}

// Logit rows for row_digest_fuzzer: byte 0 is the mode (top_k and how the rest
// reads, see the target), then the row.
void WriteRowSeeds(const fs::path& root) {
  const fs::path dir = root / "row_digest_fuzzer";
  std::string gaussian(1, '\x27');  // raw floats, top_k 20
  std::uint64_t state = 0x2545f4914f6cdd1dull;
  for (int i = 0; i < 5000; ++i) {  // three blocks and a tail
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    float x = static_cast<float>(static_cast<std::int64_t>(state >> 40) - (1 << 23)) / 1e6f;
    if (i == 4321) x += 15.0f;  // one confident token
    gaussian.append(reinterpret_cast<const char*>(&x), sizeof(x));
  }
  Write(dir, "raw_row", gaussian);
  std::string ties(1, '\x10');  // the palette, top_k 9
  for (int i = 0; i < 3000; ++i) ties.push_back(static_cast<char>(5 + (i * 7) % 11));
  Write(dir, "palette_ties", ties);
  Write(dir, "non_finite", std::string("\x02") + std::string(40, '\0') + "\x01\x02\x01");
}

// Plans every spec seed; the plans seed plan_json_fuzzer.
bool WritePlanSeeds(const fs::path& root) {
  for (const auto& entry : fs::directory_iterator(root / "spec_fuzzer")) {
    std::stringstream text;
    text << std::ifstream(entry.path()).rdbuf();
    testing::MapSourceReader reader;
    std::string fox;  // long enough for the seeds' positions
    for (int i = 0; i < 64; ++i) fox += "The quick brown fox jumps over the lazy dog. ";
    reader.Add("texts/fox.txt", fox);
    planner::PlanOutcome outcome = planner::PlanSpec(text.str(), "spec.toml", reader);
    if (!outcome.plan) {
      std::cerr << "fuzz_corpus_writer: " << entry.path() << " does not plan\n";
      return false;
    }
    Write(root / "plan_json_fuzzer", entry.path().stem().string() + ".json",
          planner::PlanToJson(*outcome.plan));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_corpus_writer CORPUS_DIR\n";
    return 2;
  }
  fs::path root = argv[1];
  WriteMessageSeeds(root);
  WriteGgufSeeds(root);
  WriteDriverSeeds(root);
  WriteRecordSeeds(root);
  WriteRowSeeds(root);
  return WritePlanSeeds(root) ? 0 : 1;
}
