// Builders and a harness for coordinator tests: plans made by the real planner
// from a TOML spec, a CoordinatorService over a MemoryNetwork and the in-memory
// store with a fake clock, and a scripted agent that speaks the protocol
// messages.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/coordinator_service.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"
#include "protocol/codec.h"
#include "protocol/memory_network.h"
#include "store/failing_store.h"
#include "store/memory_store.h"
#include "tests/support/map_source_reader.h"
#include "tests/support/spec_text.h"

namespace orch::coordinator::testing {

using std::chrono::milliseconds;

using orch::testing::SmallSpec;

// SmallSpec's experiment with `workloads` teacher-forced workloads (w0, w1, ...) and
// `repeats` baseline jobs of each: a large plan from a short spec. `padding` more bytes
// of text per workload make the plan larger without more jobs.
inline std::string ManyWorkloadsSpec(const std::string& name, int workloads, int repeats,
                                     std::size_t padding = 0) {
  std::string spec = SmallSpec(name, repeats);
  std::string all;
  const std::string pad(padding, '.');
  for (int i = 0; i < workloads; ++i) {
    all += "[[workloads]]\nname = \"w" + std::to_string(i) +
           "\"\nkind = \"teacher_forced\"\ntext = \"The quick brown fox, take " +
           std::to_string(i) + pad + "\"\npositions = 16\n\n";
  }
  std::size_t at = spec.find("[[workloads]]");
  std::size_t end = spec.find("[baseline]");
  return spec.substr(0, at) + all + spec.substr(end);
}

inline std::string PlanJson(const std::string& spec_text) {
  orch::testing::MapSourceReader reader;
  planner::PlanOutcome outcome = planner::PlanSpec(spec_text, "spec.toml", reader);
  ORCH_CHECK(outcome.plan.has_value()) << "test spec does not plan";
  return planner::PlanToJson(*outcome.plan);
}

inline constexpr const char* kEngine = "llama.cpp@v0.4.0";

inline std::shared_ptr<spdlog::logger> NullLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

inline CoordinatorOptions TestOptions() {
  CoordinatorOptions options;
  options.id = "coord-test";
  options.heartbeat_interval = milliseconds(1000);
  options.agent_timeout = milliseconds(5000);
  options.lease = milliseconds(30000);
  options.retry_budget = 3;
  options.max_bad_frames = 3;
  return options;
}

// One peer (agent or CLI) on the memory network, decoding what it receives.
class ScriptedPeer {
 public:
  ScriptedPeer(protocol::MemoryNetwork& net, const std::string& id) : id_(id) {
    transport_ = std::move(net.Connect("coord", id).value());
  }
  const std::string& id() const { return id_; }

  void Send(const protocol::Message& message) { SendRaw(protocol::Encode(message)); }
  void SendRaw(const std::string& frame) {
    ASSERT_TRUE(transport_->Send(protocol::kServerPeer, frame).ok());
  }

  // Everything received since the last call, decoded.
  std::vector<protocol::Message> Take() {
    std::vector<protocol::Message> out;
    while (auto event = transport_->Receive()) {
      if (event->kind != protocol::TransportEvent::Kind::kFrame) continue;
      Result<protocol::Message> m = protocol::Decode(event->frame);
      EXPECT_TRUE(m.ok()) << m.status().ToString();
      if (m.ok()) out.push_back(std::move(m).value());
    }
    return out;
  }
  void Disconnect() { transport_.reset(); }

  // --- agent script ---
  void Hello(std::vector<std::string> running = {}, int slots = 1,
             std::vector<std::string> engines = {kEngine}) {
    protocol::Hello hello;
    hello.agent_id = id_;
    hello.capabilities = {std::move(engines), "cpu", 0, slots, {}};
    hello.host_facts = {{"hostname", "host-" + id_}};
    hello.running_runs = std::move(running);
    Send(hello);
  }
  void Chunk(const std::string& run, std::uint64_t seq, std::uint64_t positions = 2) {
    std::vector<protocol::ChunkRecord> records;
    for (std::uint64_t p = 0; p < positions; ++p) {
      records.push_back({seq * positions + p, "digest-" + run + "-" + std::to_string(p)});
    }
    Send(protocol::DigestChunk{run, seq, std::move(records)});
  }
  void Finish(const std::string& run, std::uint64_t chunks,
              protocol::RunStatus status = protocol::RunStatus::kSucceeded, std::string error = "",
              std::string summary = "{}") {
    Send(protocol::RunFinished{run, status, std::move(summary), std::move(error), chunks});
  }

 private:
  std::string id_;
  std::unique_ptr<protocol::Transport> transport_;
};

template <typename T>
std::vector<T> OfKind(const std::vector<protocol::Message>& messages) {
  std::vector<T> out;
  for (const auto& m : messages) {
    if (auto* t = std::get_if<T>(&m)) out.push_back(*t);
  }
  return out;
}

// A coordinator service over a memory network and a memory store, with a fake
// clock.
class CoordinatorHarness {
 public:
  explicit CoordinatorHarness(CoordinatorOptions options = TestOptions())
      : options_(options), failing_(*MakeInner()) {
    server_ = std::move(net_.Bind("coord").value());
    StartService();
  }

  void StartService() {
    service_ = std::make_unique<CoordinatorService>(
        options_, failing_,
        [this](std::string_view peer, std::string_view frame) {
          return server_->Send(peer, frame);
        },
        *log_);
    Status started = service_->Start(now_);
    ORCH_CHECK(started.ok()) << started.ToString();
  }
  // A new service over the same store, as after a coordinator restart.
  void Restart() {
    service_.reset();
    StartService();
  }

  // Moves every message until nothing moves.
  void Pump() {
    for (int round = 0; round < 100; ++round) {
      int moved = net_.DeliverAll();
      while (auto event = server_->Receive()) {
        service_->OnEvent(*event, now_);
        ++moved;
      }
      if (moved == 0) return;
    }
    FAIL() << "the network did not settle";
  }
  // Advances the clock, ticks when a deadline passed, and pumps.
  void Advance(milliseconds by) {
    now_ += by;
    std::optional<milliseconds> deadline = service_->NextDeadline();
    if (deadline && *deadline <= now_) service_->Tick(now_);
    Pump();
  }

  std::unique_ptr<ScriptedPeer> Peer(const std::string& id) {
    return std::make_unique<ScriptedPeer>(net_, id);
  }
  // Submits `spec_text`'s plan from a CLI peer and returns the reply.
  protocol::CommandReply Submit(const std::string& spec_text) {
    auto cli = Peer("cli-submit");
    cli->Send(protocol::Submit{PlanJson(spec_text)});
    Pump();
    auto replies = OfKind<protocol::CommandReply>(cli->Take());
    EXPECT_EQ(replies.size(), 1u);
    cli->Disconnect();
    Pump();
    return replies.empty() ? protocol::CommandReply{} : replies[0];
  }

  // Sends `request` from a CLI peer and returns its one reply of type T.
  template <typename T>
  T Ask(const protocol::Message& request) {
    auto cli = Peer("cli-ask");
    cli->Send(request);
    Pump();
    auto replies = OfKind<T>(cli->Take());
    EXPECT_EQ(replies.size(), 1u);
    cli->Disconnect();
    Pump();
    return replies.empty() ? T{} : replies[0];
  }
  protocol::StatusReply AllJobs() {
    return Ask<protocol::StatusReply>(protocol::StatusRequest{"", true});
  }

  store::Store& store() { return failing_; }
  store::FailingStore& failing() { return failing_; }
  CoordinatorService& service() { return *service_; }
  milliseconds now() const { return now_; }

 private:
  store::Store* MakeInner() {
    inner_ = store::MakeMemoryStore(tables_);
    return inner_.get();
  }

  CoordinatorOptions options_;
  std::shared_ptr<spdlog::logger> log_ = NullLogger();
  store::MemoryTables tables_;
  std::unique_ptr<store::Store> inner_;
  store::FailingStore failing_;
  protocol::MemoryNetwork net_;
  std::unique_ptr<protocol::Transport> server_;
  std::unique_ptr<CoordinatorService> service_;
  milliseconds now_{1'000'000};
};

}  // namespace orch::coordinator::testing
