// Valid example messages for protocol tests; each test changes only what it is
// about.
#pragma once

#include <chrono>
#include <vector>

#include "protocol/messages.h"

namespace orch::protocol::testing {

inline Hello ValidHello() {
  Hello m;
  m.agent_id = "gpu-box-3";
  m.capabilities = {
      {"llama.cpp@b8390", "vllm@0.9.1"}, "gpu:h100", 4, 2, {"sha256:" + std::string(64, 'a')}};
  m.fingerprint_id = "fp-1234";
  m.fingerprint_json = "{\"host\":{}}";
  m.host_facts = {{"cpu.model", "AMD EPYC 9654"}, {"driver", "560.35.03"}, {"empty", ""}};
  m.running_runs = {"run-7"};
  m.delivering_runs = {"run-6"};
  m.incarnation = "5f3a9c0e1d2b4a68";
  m.warm_sessions = {{"llama.cpp@b8390", "sha256:" + std::string(64, 'a'), {{"quant", "q4_0"}}},
                     {"vllm@0.9.1", "", {}}};
  return m;
}

inline Assign ValidAssign() {
  Assign m;
  m.run_id = "run-42";
  m.job_id = "0123456789abcdef0123456789abcdef";
  m.coordinate = {{"engine", "llama.cpp@b8390"}, {"kv", "q8_0"}, {"tp", "2"}};
  m.workload = "teacher-forced-1";
  m.requirements = {"llama.cpp@b8390", "gpu:h100", 2, "sha256:" + std::string(64, 'b')};
  m.lease = std::chrono::minutes(10);
  m.job_spec = R"({"kind":"teacher_forced","tokens":512})";
  return m;
}

inline StatusReply ValidStatusReply() {
  StatusReply m;
  m.experiments = {{"exp-1", 30, 10, 3, 16, 1, std::chrono::seconds(90)}};
  m.experiments[0].cancelled = 2;
  m.experiments[0].eta_known = true;
  m.experiments[0].unrunnable = 4;
  m.agents = {{"cpu-1",
               "node7",
               "cpu",
               {"llama.cpp@b8390"},
               AgentState::kDraining,
               {"run-9"},
               std::chrono::milliseconds(1500)}};
  m.agents[0].positions_per_second = 1234.5;
  m.agents[0].slots = 3;
  m.agents[0].model_count = 2;
  m.agents[0].delivering_runs = 1;
  m.agents[0].quarantined = "llamacpp-b8390 (llama.cpp@b8390): 3 runs in a row failed";
  JobStatus job;
  job.job_id = "0123456789abcdef0123456789abcdef";
  job.experiment = "exp-1";
  job.cell = "kv=q8_0";
  job.workload = "readme-128";
  job.repeat = 1;
  job.state = "pending";
  job.attempts = 2;
  job.elapsed = std::chrono::milliseconds(700);
  job.reason = "no agent offers engine llama.cpp@b8391 (offered: llama.cpp@b8390)";
  job.runnable = false;
  m.jobs = {job};
  m.security = "curve";
  m.jobs_omitted = 7;
  m.recent_failures = {"run-3: driver exited with status 2"};
  return m;
}

// One valid example of every message kind, in Message's order.
inline std::vector<Message> OneOfEachMessage() {
  std::string records("\x00\x01\xff binary \x00", 12);
  return {
      ValidHello(),
      Welcome{kProtocolVersion, "coord-1", std::chrono::milliseconds(5000)},
      Reject{kProtocolVersion, "agent gpu-box-3 speaks protocol 2, coordinator 1"},
      Heartbeat{
          "gpu-box-3", {"run-1", "run-2"}, 0, {{"llama.cpp@b8390", "synth:tiny", {{"kv", "f16"}}}}},
      ValidAssign(),
      RunStarted{"run-42"},
      DigestChunk{"run-42", 17, {{0, records}, {1, ""}, {std::uint64_t{1} << 40, "xyz"}}},
      RunFinished{"run-42", RunStatus::kFailed, "12 positions", "driver crashed", 3},
      Ack{"run-42", 17},
      CancelRun{"run-42"},
      Drain{"gpu-box-3"},
      Submit{R"({"jobs":[]})"},
      StatusRequest{"exp-1", true},
      ValidStatusReply(),
      CommandReply{true, "submitted exp-1: 30 jobs, 30 new"},
      Retry{"exp-1", true, true},
      ExportRequest{"exp-1", {"baseline", "kv=q8_0"}, 86'400'000},
      ExportReply{true, "plan bundle of exp-1", std::string("ORCHBNDL\x01\x00\xff", 11)},
      ImportRequest{std::string("ORCHBNDL\x01\x00", 10), "results.orchb"},
      CancelExperiment{"exp-1"}};
}

}  // namespace orch::protocol::testing
