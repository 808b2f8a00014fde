// The scenario's setup: the real planner plans kSpec once; each scenario
// submits that plan and lets kAgent say Hello, as
// tests/coordinator/coordinator_fixture.h does.
#include "fuzz/coordinator_scenario.h"

#include <spdlog/sinks/null_sink.h>

#include <cstdlib>
#include <iostream>
#include <utility>

#include "base/check.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"
#include "protocol/codec.h"
#include "tests/support/map_source_reader.h"
#include "tests/support/spec_text.h"

namespace orch::fuzz {
namespace {

// The coordinator tests' small spec: one teacher-forced workload, two baseline jobs.
const std::string& ScenarioSpec() {
  static const std::string spec = orch::testing::SmallSpec("exp", 2);
  return spec;
}

coordinator::CoordinatorOptions Options() {
  coordinator::CoordinatorOptions options;
  options.id = "coord-fuzz";
  options.max_bad_frames = 3;
  return options;
}

protocol::Hello AgentHello() {
  protocol::Hello hello;
  hello.agent_id = std::string(kAgent);
  hello.capabilities = {{std::string(kEngine)}, "cpu", 0, 1, {}};
  hello.host_facts = {{"hostname", "host-1"}};
  return hello;
}

}  // namespace

std::string_view ScenarioPlanJson() {
  static const std::string json = [] {
    orch::testing::MapSourceReader reader;
    planner::PlanOutcome outcome = planner::PlanSpec(ScenarioSpec(), "spec.toml", reader);
    ORCH_CHECK(outcome.plan.has_value()) << "the scenario's spec does not plan";
    return planner::PlanToJson(*outcome.plan);
  }();
  return json;
}

const CoordinatorScenario& CoordinatorScenario::Original() {
  static const CoordinatorScenario* original = new CoordinatorScenario(SetUp{});
  return *original;
}

CoordinatorScenario::CoordinatorScenario() : log_(Original().log_) {
  const CoordinatorScenario& original = Original();
  tables_.tables = original.tables_.tables;
  store_ = store::MakeMemoryStore(tables_);
  service_ = std::make_unique<coordinator::CoordinatorService>(
      *original.service_, *store_,
      [this](std::string_view peer, std::string_view frame) { return Sent(peer, frame); });
  now_ = original.now_;
  run_id_ = original.run_id_;
}

CoordinatorScenario::CoordinatorScenario(SetUp)
    : log_(std::make_shared<spdlog::logger>("fuzz",
                                            std::make_shared<spdlog::sinks::null_sink_mt>())),
      store_(store::MakeMemoryStore(tables_)) {
  log_->set_level(spdlog::level::off);
  service_ = std::make_unique<coordinator::CoordinatorService>(
      Options(), *store_,
      [this](std::string_view peer, std::string_view frame) { return Sent(peer, frame); }, *log_);
  Status started = service_->Start(now_);
  ORCH_CHECK(started.ok()) << started.ToString();
  Connect(kCli);
  Frame(kCli, protocol::Encode(protocol::Submit{std::string(ScenarioPlanJson())}));
  Connect(kAgent);
  Connect(kStranger);
  Frame(kAgent, protocol::Encode(AgentHello()));
  ORCH_CHECK(!run_id_.empty()) << "the scenario's agent was assigned no run";
}

void CoordinatorScenario::Connect(std::string_view peer) {
  service_->OnEvent({protocol::TransportEvent::Kind::kConnected, std::string(peer), ""}, now_);
}

void CoordinatorScenario::Disconnect(std::string_view peer) {
  service_->OnEvent({protocol::TransportEvent::Kind::kDisconnected, std::string(peer), ""}, now_);
}

void CoordinatorScenario::Frame(std::string_view peer, std::string frame) {
  service_->OnEvent({protocol::TransportEvent::Kind::kFrame, std::string(peer), std::move(frame)},
                    now_);
}

void CoordinatorScenario::Advance(coordinator::Millis by) {
  now_ += by;
  service_->Tick(now_);
}

// The coordinator must only ever send frames its peers can decode.
Status CoordinatorScenario::Sent(std::string_view peer, std::string_view frame) {
  Result<protocol::Message> message = protocol::Decode(frame);
  if (!message.ok()) {
    std::cerr << "coordinator sent " << peer
              << " a frame that does not decode: " << message.status().ToString() << "\n";
    std::abort();
  }
  if (auto* assign = std::get_if<protocol::Assign>(&*message); assign && run_id_.empty()) {
    run_id_ = assign->run_id;
  }
  return Status::Ok();
}

}  // namespace orch::fuzz
