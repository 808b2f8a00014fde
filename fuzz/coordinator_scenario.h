// CoordinatorScenario: a CoordinatorService over an in-memory store and a fake
// clock, brought into a state where every message handler reaches real state,
// for the message fuzzers. Every scenario starts from the same state: the set-up
// runs once per process, and each scenario is a snapshot of it (a copy of its
// memory tables and CoordinatorService's snapshot constructor), so an input costs
// what it does, not the set-up's plan parsing.
//
// The state: the plan of kSpec (two jobs of one workload) was submitted by a
// CLI peer, agent kAgent connected, said Hello with one slot and was assigned
// the first job's run (run_id()); the second job is pending. Every frame the
// service sends back must decode (protocol/codec.h): one that does not aborts,
// as a bug.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>
#include <string_view>

#include "coordinator/coordinator_service.h"
#include "store/memory_store.h"
#include "store/store.h"

namespace orch::fuzz {

// The agent that holds run_id(), a second agent that never said Hello, and a
// CLI peer.
inline constexpr std::string_view kAgent = "agent-1";
inline constexpr std::string_view kStranger = "agent-2";
inline constexpr std::string_view kCli = "cli";

// The engine, hardware and plan the scenario uses (the seeds name them).
inline constexpr std::string_view kEngine = "llama.cpp@v0.4.0";
std::string_view ScenarioPlanJson();

class CoordinatorScenario final {
 public:
  // A snapshot of the process's one set-up scenario.
  CoordinatorScenario();

  void Connect(std::string_view peer);
  void Disconnect(std::string_view peer);
  // Hands `frame` to the service as one frame from `peer`.
  void Frame(std::string_view peer, std::string frame);
  // Advances the fake clock by `by` and ticks the service.
  void Advance(coordinator::Millis by);

  // The run the coordinator assigned to kAgent.
  const std::string& run_id() const { return run_id_; }
  coordinator::Millis now() const { return now_; }

 private:
  struct SetUp {};
  // Performs the set-up.
  explicit CoordinatorScenario(SetUp);
  // The set-up, made on first use and kept for the process.
  static const CoordinatorScenario& Original();
  Status Sent(std::string_view peer, std::string_view frame);

  std::shared_ptr<spdlog::logger> log_;
  store::MemoryTables tables_;
  std::unique_ptr<store::Store> store_;  // over tables_
  std::unique_ptr<coordinator::CoordinatorService> service_;
  coordinator::Millis now_{1'000'000};
  std::string run_id_;
};

}  // namespace orch::fuzz
