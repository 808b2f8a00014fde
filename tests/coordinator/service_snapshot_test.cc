// CoordinatorService's snapshot constructor: a service made from another's state over
// a copy of its store behaves exactly as the original would, and what it does leaves
// the original and its store untouched. The fuzz targets start every input from such a
// snapshot, so a member the snapshot forgot would make them fuzz another coordinator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>

#include "coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using namespace testing;  // NOLINT: the fixture's builders

// A service over its own memory tables that records every frame it sends.
struct RecordedService {
  RecordedService() : store(store::MakeMemoryStore(tables)) {
    service = std::make_unique<CoordinatorService>(TestOptions(), *store, Recorder(), *log);
    ORCH_CHECK(service->Start(now).ok());
  }
  // A snapshot of `original` over a copy of its tables.
  explicit RecordedService(const RecordedService& original) : log(original.log), now(original.now) {
    tables.tables = original.tables.tables;
    store = store::MakeMemoryStore(tables);
    service = std::make_unique<CoordinatorService>(*original.service, *store, Recorder());
  }

  CoordinatorService::Sender Recorder() {
    return [this](std::string_view peer, std::string_view frame) {
      sent.emplace_back(std::string(peer), std::string(frame));
      return Status::Ok();
    };
  }
  void Event(protocol::TransportEvent::Kind kind, const std::string& peer, std::string frame = "") {
    service->OnEvent({kind, peer, std::move(frame)}, now);
  }
  void Frame(const std::string& peer, const protocol::Message& message) {
    Event(protocol::TransportEvent::Kind::kFrame, peer, protocol::Encode(message));
  }
  std::string AssignedRun() const {
    for (const auto& [peer, frame] : sent) {
      Result<protocol::Message> message = protocol::Decode(frame);
      if (message.ok() && std::holds_alternative<protocol::Assign>(*message)) {
        return std::get<protocol::Assign>(*message).run_id;
      }
    }
    return "";
  }

  std::shared_ptr<spdlog::logger> log = NullLogger();
  store::MemoryTables tables;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<CoordinatorService> service;
  milliseconds now{1'000'000};
  std::vector<std::pair<std::string, std::string>> sent;
};

void ScriptedHello(RecordedService& s) {
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.host_facts = {{"hostname", "host-1"}};
  s.Frame("agent-1", hello);
}

// Two jobs submitted, agent-1 holding the first one's run, the second pending.
void BringToTheFuzzScenario(RecordedService& s) {
  s.Event(protocol::TransportEvent::Kind::kConnected, "cli");
  s.Frame("cli", protocol::Submit{PlanJson(SmallSpec("exp", 2))});
  s.Event(protocol::TransportEvent::Kind::kConnected, "agent-1");
  ScriptedHello(s);
  ASSERT_FALSE(s.AssignedRun().empty());
  s.Event(protocol::TransportEvent::Kind::kConnected, "agent-2");
  s.Event(protocol::TransportEvent::Kind::kFrame, "agent-2", "not a frame");
  s.Event(protocol::TransportEvent::Kind::kFrame, "agent-2", "nor this");
}

// What the rest of the test does to a service: the run's results, a third bad frame
// from agent-2 (which then is ignored), a third agent, a lease that runs out, a status
// request.
void Continue(RecordedService& s, const std::string& run) {
  s.Frame("agent-1", protocol::DigestChunk{run, 0, {{0, "d0"}}});
  s.Frame("agent-1", protocol::RunFinished{run, protocol::RunStatus::kSucceeded, "{}", "", 1});
  s.Event(protocol::TransportEvent::Kind::kFrame, "agent-2", "a third bad one");
  for (std::string agent : {"agent-2", "agent-3"}) {
    protocol::Hello hello;
    hello.agent_id = agent;
    hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
    hello.host_facts = {{"hostname", "host-" + agent}};
    s.Frame(agent, hello);
  }
  s.now += milliseconds(60000);
  s.service->Tick(s.now);
  s.Frame("cli", protocol::StatusRequest{"", true});
}

TEST(ServiceSnapshotTest, ASnapshotDoesWhatTheOriginalDoesAndLeavesItAlone) {
  RecordedService original;
  BringToTheFuzzScenario(original);
  std::string run = original.AssignedRun();
  auto stored_before = original.tables.tables;

  RecordedService snapshot(original);
  snapshot.sent.clear();
  Continue(snapshot, run);
  EXPECT_EQ(original.tables.tables, stored_before) << "the snapshot wrote to its own copy";

  original.sent.clear();
  Continue(original, run);
  EXPECT_EQ(snapshot.sent, original.sent) << "the same frames to the same peers";
  EXPECT_EQ(snapshot.tables.tables, original.tables.tables) << "the same records stored";
  EXPECT_GE(snapshot.sent.size(), 4u) << "acks, an assign for agent-3 and a status reply";
}

}  // namespace
}  // namespace orch::coordinator
