// The agent service against a scripted coordinator on the in-memory network.
#include "base/sha256.h"
#include "agent/agent_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "driver_protocol/frames.h"
#include "agent/model_inventory.h"
#include "agent/posix_process_launcher.h"
#include "agent/scripted_process_launcher.h"
#include "digest/record_codec.h"
#include "fingerprint/memory_hash_cache.h"
#include "protocol/codec.h"
#include "protocol/memory_network.h"

namespace orch::agent {
namespace {

using driver_protocol::DriverFrameType;
using driver_protocol::EncodeDriverFrame;

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace std::chrono_literals;
namespace proto = orch::protocol;

std::string ServiceTestDriver() {
  return std::string(ORCH_BINARY_DIR) + "/tests/support/orch-test-driver";
}

std::string DriverOutput(int records) {
  std::string out = EncodeDriverFrame(DriverFrameType::kHello, R"({"engine":"scripted"})");
  for (int i = 0; i < records; ++i) {
    digest::PositionRecord record;
    record.position = static_cast<std::uint64_t>(i);
    out += EncodeDriverFrame(DriverFrameType::kRecord, digest::EncodePositionRecord(record));
  }
  return out + EncodeDriverFrame(DriverFrameType::kDone, "{}");
}

ProcessScript Succeeds(int records) {
  return {{DriverOutput(records)}, {ProcessExit::Reason::kExited, 0, 0, ""}, false};
}

// A driver that dies at once: no frame at all, exit status 1.
ProcessScript FailsAtStartUp() {
  return {{}, {ProcessExit::Reason::kExited, 1, 0, "libengine.so: cannot open\n"}, false};
}

// A driver that refuses the job with a typed error frame, as a healthy one does.
ProcessScript RefusesWith(const std::string& code) {
  std::string out =
      EncodeDriverFrame(DriverFrameType::kHello, R"({"engine":"scripted"})") +
      EncodeDriverFrame(DriverFrameType::kError, R"({"code":")" + code + R"(","message":"no"})");
  return {{out}, {ProcessExit::Reason::kExited, 2, 0, ""}, false};
}

proto::Assign MakeServiceAssign(const std::string& run_id,
                                const std::string& engine = "test-engine@1",
                                std::vector<proto::KeyValue> coordinate = {}) {
  proto::Assign assign;
  assign.run_id = run_id;
  assign.job_id = "job-" + run_id;
  assign.coordinate = std::move(coordinate);
  assign.workload = "w";
  assign.requirements.engine = engine;
  assign.lease = 30s;
  assign.job_spec = R"({"experiment":"exp","workload":{"name":"w"}})";
  return assign;
}

class AgentServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spool_dir_ = (std::filesystem::temp_directory_path() /
                  ("orch-agent-test-" + std::to_string(::getpid()) + "-" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                     .string();
    std::filesystem::remove_all(spool_dir_);
    server_ = std::move(network_.Bind("coord")).value();
    spool_ = std::move(Spool::Open(spool_dir_)).value();
    options_.config.id = "agent-1";
    options_.config.slots = 1;
    options_.config.drivers = {{"test", ServiceTestDriver(), "test-engine@1"}};
    options_.config.run_timeout = 10s;
    options_.fingerprint_id = "fp-1";
    model_cache_ = spool_dir_ + "-models";
    std::filesystem::remove_all(model_cache_);
    models_ =
        std::make_unique<ModelResolver>(ModelResolverOptions{{}, model_cache_}, hashes_, logger_);
  }
  void TearDown() override {
    service_.reset();
    client_.reset();
    std::filesystem::remove_all(spool_dir_);
    std::filesystem::remove_all(model_cache_);
  }

  void StartAgent(ProcessLauncher& launcher) {
    client_ = std::move(network_.Connect("coord", "agent-1")).value();
    service_ = std::make_unique<AgentService>(
        io_, launcher, *spool_, *models_, logger_, options_,
        [this](std::string_view frame) { return client_->Send(proto::kServerPeer, frame); });
    ASSERT_TRUE(service_->Start().ok());
  }

  // Moves frames both ways and runs the loop once; collects what the
  // coordinator got.
  void Pump() {
    network_.DeliverAll();
    while (auto event = client_->Receive()) service_->OnEvent(*event);
    if (io_.stopped()) io_.restart();
    io_.run_for(5ms);
    network_.DeliverAll();
    while (auto event = server_->Receive()) {
      if (event->kind != proto::TransportEvent::Kind::kFrame) continue;
      Result<proto::Message> message = proto::Decode(event->frame);
      ASSERT_TRUE(message.ok()) << message.status().ToString();
      received_.push_back(*message);
    }
  }

  // Pumps until a message of type T arrives (at most 10 s); returns it.
  template <typename T>
  std::optional<T> Expect() {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      for (std::size_t i = 0; i < received_.size(); ++i) {
        if (const T* found = std::get_if<T>(&received_[i])) {
          T value = *found;
          received_.erase(received_.begin() + static_cast<std::ptrdiff_t>(i));
          return value;
        }
      }
      Pump();
    }
    ADD_FAILURE() << "timed out waiting for a message";
    return std::nullopt;
  }

  void Send(const proto::Message& message) {
    ASSERT_TRUE(server_->Send("agent-1", proto::Encode(message)).ok());
  }

  void Welcome() {
    ASSERT_TRUE(Expect<proto::Hello>().has_value());
    Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s});
  }

  // StartAgent, with stopped_ set once the service has stopped, then Welcome.
  void StartWelcomedAgent(ProcessLauncher& launcher) {
    StartAgent(launcher);
    service_->SetOnStopped([this] { stopped_ = true; });
    Welcome();
  }

  boost::asio::io_context io_;
  bool stopped_ = false;  // set by StartWelcomedAgent's on_stopped
  proto::MemoryNetwork network_;
  std::unique_ptr<proto::Transport> server_;
  std::unique_ptr<proto::Transport> client_;
  std::string spool_dir_;
  std::unique_ptr<Spool> spool_;
  spdlog::logger logger_{"agent-test", std::make_shared<spdlog::sinks::null_sink_mt>()};
  fingerprint::MemoryHashCache hashes_;
  std::string model_cache_;
  std::unique_ptr<ModelResolver> models_;
  AgentServiceOptions options_;
  std::unique_ptr<AgentService> service_;
  std::vector<proto::Message> received_;
};

TEST_F(AgentServiceTest, HelloAssignChunksFinish) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(300));
  StartAgent(launcher);
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->agent_id, "agent-1");
  EXPECT_EQ(hello->capabilities.engines, std::vector<std::string>{"test-engine@1"});
  EXPECT_EQ(hello->fingerprint_id, "fp-1");
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s});
  Send(MakeServiceAssign("run-1"));
  ASSERT_TRUE(Expect<proto::RunStarted>().has_value());
  std::optional<proto::DigestChunk> first = Expect<proto::DigestChunk>();
  std::optional<proto::DigestChunk> second = Expect<proto::DigestChunk>();
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(first && second && finished);
  EXPECT_EQ(first->seq, 0u);
  EXPECT_EQ(second->seq, 1u);
  EXPECT_EQ(first->records.size(), kRecordsPerChunk);
  EXPECT_EQ(second->records.size(), 300 - kRecordsPerChunk);
  EXPECT_EQ(finished->status, proto::RunStatus::kSucceeded) << finished->error;
  EXPECT_EQ(finished->chunk_count, 2u);
  EXPECT_THAT(launcher.launched()[0].stdin_bytes, HasSubstr(R"("run_id":"run-1")"));
  service_->WaitForSpool();
  EXPECT_EQ(spool_->unacked(), 3u);
  Send(proto::Ack{"run-1", 0});
  Send(proto::Ack{"run-1", 1});
  Send(proto::Ack{"run-1", proto::kRunFinishedSeq});
  Pump();
  service_->WaitForSpool();
  EXPECT_EQ(spool_->unacked(), 0u);
}

TEST_F(AgentServiceTest, HelloNamesTheHost) {
  options_.host_facts = {{"hostname", "box-7"}};
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->host_facts, (std::vector<proto::KeyValue>{{"hostname", "box-7"}}));
}

TEST_F(AgentServiceTest, RefusesAJobForAnEngineItHasNoDriverFor) {
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  Welcome();
  Send(MakeServiceAssign("run-1", "vllm@0.9"));
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, proto::RunStatus::kFailed);
  EXPECT_THAT(finished->error, HasSubstr("no driver for engine \"vllm@0.9\""));
  EXPECT_TRUE(launcher.launched().empty());
}

TEST_F(AgentServiceTest, ARefusalSaysWhyInItsSummaryForTheCoordinator) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push({{}, {ProcessExit::Reason::kExited, 0, 0, ""}, true});  // runs until cancelled
  StartAgent(launcher);                                                 // one slot
  Welcome();
  Send(MakeServiceAssign("run-1", "vllm@0.9"));
  std::optional<proto::RunFinished> no_engine = Expect<proto::RunFinished>();
  ASSERT_TRUE(no_engine.has_value());
  EXPECT_THAT(no_engine->summary, HasSubstr(R"("code":"agent_no_engine")"));
  Send(MakeServiceAssign("run-2"));
  ASSERT_TRUE(Expect<proto::RunStarted>().has_value());
  Send(MakeServiceAssign("run-3"));  // while run-2 holds the slot
  std::optional<proto::RunFinished> busy;
  while (auto finished = Expect<proto::RunFinished>()) {
    if (finished->run_id == "run-3") {
      busy = finished;
      break;
    }
  }
  ASSERT_TRUE(busy.has_value());
  EXPECT_THAT(busy->summary, HasSubstr(R"("code":"agent_busy")"));
  EXPECT_EQ(busy->chunk_count, 0u);
}

TEST_F(AgentServiceTest, GivesTheDriverAGeneratedModelForASynthRequirement) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  Welcome();
  proto::Assign assign = MakeServiceAssign("run-1");
  assign.requirements.model = "synth:llama:vocab=300,embd=32,layers=1,ff=32";
  Send(assign);
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, proto::RunStatus::kSucceeded) << finished->error;
  ASSERT_EQ(launcher.launched().size(), 1u);
  nlohmann::json job = nlohmann::json::parse(launcher.launched()[0].stdin_bytes);
  std::string path = job["model"]["path"];
  EXPECT_EQ(std::filesystem::path(path).parent_path(), model_cache_);
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
  EXPECT_EQ(job["model"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(job["model"]["cache_dir"], model_cache_);
}

TEST_F(AgentServiceTest, RefusesAJobWhoseSynthRecipeIsInvalid) {
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  Welcome();
  proto::Assign assign = MakeServiceAssign("run-1");
  assign.requirements.model = "synth:llama:vocab=7";
  Send(assign);
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, proto::RunStatus::kFailed);
  EXPECT_THAT(finished->error, HasSubstr("model synth:llama:vocab=7: synth key vocab"));
  EXPECT_TRUE(launcher.launched().empty());
}

TEST_F(AgentServiceTest, ResendsUnackedMessagesAfterReconnect) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(3));
  StartAgent(launcher);
  Welcome();
  Send(MakeServiceAssign("run-1"));
  ASSERT_TRUE(Expect<proto::RunFinished>().has_value());
  Send(proto::Ack{"run-1", 0});
  Pump();
  received_.clear();
  // The connection goes away; a new one is made.
  client_.reset();
  network_.DeliverAll();
  while (server_->Receive()) {
  }
  client_ = std::move(network_.Connect("coord", "agent-1")).value();
  service_->Reconnect(
      [this](std::string_view frame) { return client_->Send(proto::kServerPeer, frame); });
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_THAT(hello->running_runs, ::testing::IsEmpty());
  EXPECT_THAT(hello->delivering_runs, ::testing::ElementsAre("run-1"))
      << "finished, its RunFinished not acknowledged: kept, holding no slot";
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s});
  std::optional<proto::RunFinished> again = Expect<proto::RunFinished>();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->run_id, "run-1");
  for (const proto::Message& message : received_) {
    EXPECT_FALSE(std::holds_alternative<proto::DigestChunk>(message));  // chunk 0 was acked
  }
}

TEST_F(AgentServiceTest, RestartedAgentFailsItsUnfinishedRunAndResendsTheSpool) {
  ASSERT_TRUE(spool_->BeginRun("old-run").ok());
  ASSERT_TRUE(spool_->AddChunk({"old-run", 0, {}}).ok());
  spool_.reset();  // the agent stops (releasing the spool's lock) and a new one starts
  spool_ = std::move(Spool::Open(spool_dir_)).value();
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  Welcome();
  std::optional<proto::DigestChunk> chunk = Expect<proto::DigestChunk>();
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(chunk && finished);
  EXPECT_EQ(chunk->run_id, "old-run");
  EXPECT_EQ(finished->status, proto::RunStatus::kFailed);
  EXPECT_THAT(finished->error, HasSubstr("restarted"));
  EXPECT_EQ(finished->chunk_count, 1u);
}

TEST_F(AgentServiceTest, DriverCrashFailsTheRunAndTheAgentLivesOn) {
  auto launcher = MakePosixProcessLauncher(io_);
  StartAgent(*launcher);
  Welcome();
  Send(MakeServiceAssign("run-1", "test-engine@1", {{"knob.behaviour", "crash"}}));
  std::optional<proto::RunFinished> crashed = Expect<proto::RunFinished>();
  ASSERT_TRUE(crashed.has_value());
  EXPECT_EQ(crashed->status, proto::RunStatus::kFailed);
  EXPECT_THAT(crashed->error, HasSubstr("killed by signal 6"));
  EXPECT_THAT(crashed->error, HasSubstr("crashing after 2 records"));
  std::string log = spool_dir_ + "/logs/run-1.log";
  EXPECT_THAT(crashed->error, HasSubstr("(driver log: " + log + ")"));
  std::ifstream kept(log);
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("crashing after 2 records")) << "a failed run keeps its whole log";
  received_.clear();
  Send(MakeServiceAssign("run-2", "test-engine@1", {{"knob.positions", "5"}}));
  std::optional<proto::RunFinished> ok = Expect<proto::RunFinished>();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->run_id, "run-2");
  EXPECT_EQ(ok->status, proto::RunStatus::kSucceeded) << ok->error;
  EXPECT_THAT(ok->summary, HasSubstr("orch-test-driver"));
  EXPECT_FALSE(std::filesystem::exists(spool_dir_ + "/logs/run-2.log"))
      << "a succeeded run's log is removed";
}

TEST_F(AgentServiceTest, CancelKillsTheDriverAndReportsCancelled) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push({{DriverOutput(0).substr(0, 10)}, {}, /*hang=*/true});
  StartAgent(launcher);
  Welcome();
  Send(MakeServiceAssign("run-1"));
  ASSERT_TRUE(Expect<proto::RunStarted>().has_value());
  Send(proto::CancelRun{"run-1"});
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, proto::RunStatus::kCancelled);
}

TEST_F(AgentServiceTest, DrainFinishesRunsWaitsForAcksAndStops) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(1));
  StartWelcomedAgent(launcher);
  Send(MakeServiceAssign("run-1"));
  Send(proto::Drain{"agent-1"});
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  Pump();
  EXPECT_FALSE(stopped_);  // still unacknowledged
  Send(proto::Ack{"run-1", 0});
  Send(proto::Ack{"run-1", proto::kRunFinishedSeq});
  for (int i = 0; i < 20 && !stopped_; ++i) Pump();
  EXPECT_TRUE(stopped_);
  Send(MakeServiceAssign("run-2"));
  Pump();
  EXPECT_EQ(launcher.launched().size(), 1u);
}

// Every Hello of one agent process carries the same incarnation; a restarted
// agent another (the coordinator ends a drain on it).
TEST_F(AgentServiceTest, HelloCarriesOneIncarnationPerProcess) {
  options_.hello_retry = 20ms;
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  std::optional<proto::Hello> first = Expect<proto::Hello>();
  ASSERT_TRUE(first.has_value());
  std::optional<proto::Hello> again = Expect<proto::Hello>();  // not welcomed: retried
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(first->incarnation.size(), 16u);
  EXPECT_EQ(again->incarnation, first->incarnation);
  service_.reset();
  client_.reset();
  StartAgent(launcher);
  std::optional<proto::Hello> restarted = Expect<proto::Hello>();
  ASSERT_TRUE(restarted.has_value());
  EXPECT_NE(restarted->incarnation, first->incarnation);
}

// SIGTERM with stop_drain_ms: the running run goes on to its end and is
// acknowledged before the agent stops, and no new run starts meanwhile.
TEST_F(AgentServiceTest, LocalDrainLetsARunFinishAndRefusesNewWork) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(1));
  StartWelcomedAgent(launcher);
  Send(MakeServiceAssign("run-1"));
  ASSERT_TRUE(Expect<proto::RunStarted>().has_value());
  service_->Drain(60s);
  Send(MakeServiceAssign("run-2"));
  std::optional<proto::RunFinished> first = Expect<proto::RunFinished>();
  ASSERT_TRUE(first.has_value());
  std::optional<proto::RunFinished> second = Expect<proto::RunFinished>();
  ASSERT_TRUE(second.has_value());
  const proto::RunFinished& ok = first->run_id == "run-1" ? *first : *second;
  const proto::RunFinished& refused = first->run_id == "run-1" ? *second : *first;
  EXPECT_EQ(ok.status, proto::RunStatus::kSucceeded) << ok.error;
  EXPECT_EQ(refused.run_id, "run-2");
  EXPECT_THAT(refused.summary, HasSubstr(proto::kRefusedDraining));
  Pump();
  EXPECT_FALSE(stopped_);  // run-1 is not acknowledged yet
  Send(proto::Ack{"run-1", 0});
  Send(proto::Ack{"run-1", proto::kRunFinishedSeq});
  Send(proto::Ack{"run-2", proto::kRunFinishedSeq});
  for (int i = 0; i < 20 && !stopped_; ++i) Pump();
  EXPECT_TRUE(stopped_);
  EXPECT_EQ(launcher.launched().size(), 1u);
}

// When the drain time is up, what still runs is cancelled and the agent stops.
TEST_F(AgentServiceTest, LocalDrainCancelsWhatStillRunsWhenItsTimeIsUp) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push({{DriverOutput(0).substr(0, 10)}, {}, /*hang=*/true});
  StartWelcomedAgent(launcher);
  Send(MakeServiceAssign("run-1"));
  ASSERT_TRUE(Expect<proto::RunStarted>().has_value());
  service_->Drain(20ms);
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, proto::RunStatus::kCancelled);
  Send(proto::Ack{"run-1", proto::kRunFinishedSeq});
  for (int i = 0; i < 40 && !stopped_; ++i) Pump();
  EXPECT_TRUE(stopped_);
}

// A message the coordinator never acknowledges (it could not store it) is sent
// again even while acknowledgements for other messages keep coming.
TEST_F(AgentServiceTest, ResendsAMessageLeftUnacknowledgedWhileOthersAreAcknowledged) {
  options_.resend_after = 50ms;
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  ASSERT_TRUE(Expect<proto::Hello>().has_value());
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 10ms});
  Send(MakeServiceAssign("run-1"));
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  Send(proto::Ack{"run-1", proto::kRunFinishedSeq});  // chunk 0 is never acknowledged
  received_.clear();
  bool hello_again = false;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!hello_again && std::chrono::steady_clock::now() < deadline) {
    Send(proto::Ack{"other-run", 0});  // the coordinator acknowledges something else
    Pump();
    for (const proto::Message& m : received_)
      hello_again |= std::holds_alternative<proto::Hello>(m);
  }
  EXPECT_TRUE(hello_again) << "chunk 0 of run-1 waits for ever";
}

TEST_F(AgentServiceTest, RegistersAgainAndResendsWhenAcksStall) {
  options_.resend_after = 50ms;
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  ASSERT_TRUE(Expect<proto::Hello>().has_value());
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 10ms});
  Send(MakeServiceAssign("run-1"));
  ASSERT_TRUE(Expect<proto::RunFinished>().has_value());
  received_.clear();
  // No Ack comes (say the coordinator restarted): the agent says Hello again.
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_THAT(hello->running_runs, ::testing::IsEmpty());
  EXPECT_THAT(hello->delivering_runs, ::testing::ElementsAre("run-1"))
      << "finished, its RunFinished not acknowledged: kept, holding no slot";
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s});
  std::optional<proto::RunFinished> again = Expect<proto::RunFinished>();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->run_id, "run-1");
}

TEST_F(AgentServiceTest, RegistersAgainWithANewFingerprintWhenItChanges) {
  options_.fingerprint_json = "{\"engines\":\"v1\"}";
  options_.fingerprint_check = 20ms;
  std::string current = options_.fingerprint_json;
  std::mutex current_mu;  // the provider runs on the agent's worker thread
  options_.fingerprint_json_provider = [&current, &current_mu] {
    std::lock_guard lock(current_mu);
    return current;
  };
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  std::optional<proto::Hello> first = Expect<proto::Hello>();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->fingerprint_json, "{\"engines\":\"v1\"}");
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 10ms});
  ASSERT_TRUE(Expect<proto::Heartbeat>().has_value());  // unchanged: just heartbeats
  std::string upgraded = "{\"engines\":\"v2\"}";        // say a driver was upgraded
  {
    std::lock_guard lock(current_mu);
    current = upgraded;
  }
  std::optional<proto::Hello> again = Expect<proto::Hello>();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->fingerprint_json, upgraded);
  EXPECT_EQ(again->fingerprint_id, "fp-" + Sha256Hex(upgraded).substr(0, 32));
}

TEST_F(AgentServiceTest, MalformedDriverOutputFailsTheRun) {
  auto launcher = MakePosixProcessLauncher(io_);
  StartAgent(*launcher);
  Welcome();
  Send(MakeServiceAssign("run-1", "test-engine@1", {{"knob.behaviour", "garbage"}}));
  std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->status, proto::RunStatus::kFailed);
  EXPECT_THAT(finished->error, HasSubstr("after done"));
}

}  // namespace
}  // namespace orch::agent

namespace orch::agent {
namespace {

using driver_protocol::DriverFrameType;
using driver_protocol::EncodeDriverFrame;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_F(AgentServiceTest, AdvertisesTheSha256OfEveryFileInItsModelDirs) {
  std::string dir = spool_dir_ + "-model-dir";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/tiny.gguf", "GGUF model bytes");
  WriteFile(dir + "/tiny.gguf.sha256", "bookkeeping, not a model");
  options_.config.model_dirs = {dir};
  options_.model_scan = [this, dir] { return ScanModelHashes({dir}, hashes_, logger_); };
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->capabilities.model_hashes,
            std::vector<std::string>{"sha256:" + Sha256Hex("GGUF model bytes")});
  std::filesystem::remove_all(dir);
}

TEST_F(AgentServiceTest, HeartbeatsGoOnWhileModelsAreHashedAndANewSetIsAnnounced) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> scans{0};
  options_.model_rescan = 0ms;
  options_.model_scan = [&scans, released]() -> std::vector<std::string> {
    if (scans++ == 0) return {};
    released.wait();  // a slow hash of a big new file
    return {"sha256:" + std::string(64, 'c')};
  };
  ScriptedProcessLauncher launcher(io_);
  StartAgent(launcher);
  ASSERT_TRUE(Expect<proto::Hello>().has_value());
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 20ms});
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Expect<proto::Heartbeat>().has_value()) << "heartbeat " << i;
  }
  EXPECT_GE(scans.load(), 2) << "a rescan is running";
  release.set_value();
  std::optional<proto::Hello> again = Expect<proto::Hello>();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->capabilities.model_hashes,
            std::vector<std::string>{"sha256:" + std::string(64, 'c')});
}

class QuarantineTest : public AgentServiceTest {
 protected:
  void SetUp() override {
    AgentServiceTest::SetUp();
    options_.config.drivers = {{"broken", ServiceTestDriver(), "test-engine@1"},
                               {"other", ServiceTestDriver(), "other-engine@1"}};
  }

  std::optional<proto::RunFinished> Run(const std::string& run_id,
                                        const std::string& engine = "test-engine@1") {
    Send(MakeServiceAssign(run_id, engine));
    while (std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>()) {
      if (finished->run_id == run_id) return finished;
    }
    return std::nullopt;
  }

  // The Hellos the coordinator got so far.
  std::vector<proto::Hello> Hellos() {
    Pump();
    std::vector<proto::Hello> hellos;
    for (const proto::Message& message : received_) {
      if (const auto* hello = std::get_if<proto::Hello>(&message)) hellos.push_back(*hello);
    }
    return hellos;
  }
};

TEST_F(QuarantineTest, ThreeFastFailuresInARowStopTheAgentOfferingTheDriversEngine) {
  ScriptedProcessLauncher launcher(io_);
  for (int i = 0; i < 3; ++i) launcher.Push(FailsAtStartUp());
  StartAgent(launcher);
  Welcome();
  for (const char* run : {"run-1", "run-2"}) ASSERT_TRUE(Run(run).has_value());
  EXPECT_TRUE(Hellos().empty()) << "two failures are not yet a quarantine";
  ASSERT_TRUE(Run("run-3").has_value());
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->capabilities.engines, std::vector<std::string>{"other-engine@1"});
  ASSERT_EQ(hello->host_facts.size(), 1u);
  EXPECT_EQ(hello->host_facts[0].key, "quarantined_drivers");
  EXPECT_THAT(hello->host_facts[0].value,
              AllOf(HasSubstr("broken (test-engine@1)"), HasSubstr("3 runs in a row"),
                    HasSubstr("exit status 1")));
}

TEST_F(QuarantineTest, AQuarantinedDriversAssignsAreRefusedWithoutStartingIt) {
  ScriptedProcessLauncher launcher(io_);
  for (int i = 0; i < 3; ++i) launcher.Push(FailsAtStartUp());
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  Welcome();
  for (const char* run : {"run-1", "run-2", "run-3"}) ASSERT_TRUE(Run(run).has_value());
  Welcome();  // the new Hello
  std::optional<proto::RunFinished> refused = Run("run-4");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, proto::RunStatus::kFailed);
  EXPECT_THAT(refused->summary, HasSubstr(R"("code":"agent_no_engine")"));
  EXPECT_THAT(refused->error, AllOf(HasSubstr("driver broken for engine \"test-engine@1\" "
                                              "is quarantined"),
                                    HasSubstr("restart the agent")));
  EXPECT_EQ(launcher.launched().size(), 3u);
  std::optional<proto::RunFinished> other = Run("run-5", "other-engine@1");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->status, proto::RunStatus::kSucceeded) << other->error;
}

TEST_F(QuarantineTest, TypedJobErrorsAreNotDriverFaults) {
  ScriptedProcessLauncher launcher(io_);
  for (const char* code :
       {"invalid_job", "model_missing", "sha256_mismatch", "invalid_combination"}) {
    launcher.Push(RefusesWith(code));
  }
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  Welcome();
  for (const char* run : {"run-1", "run-2", "run-3", "run-4"}) {
    std::optional<proto::RunFinished> finished = Run(run);
    ASSERT_TRUE(finished.has_value());
    EXPECT_EQ(finished->status, proto::RunStatus::kFailed);
  }
  std::optional<proto::RunFinished> fifth = Run("run-5");
  ASSERT_TRUE(fifth.has_value());
  EXPECT_EQ(fifth->status, proto::RunStatus::kSucceeded) << fifth->error;
  EXPECT_TRUE(Hellos().empty());
}

TEST_F(QuarantineTest, ASucceededRunBetweenFailuresResetsTheCount) {
  ScriptedProcessLauncher launcher(io_);
  launcher.Push(FailsAtStartUp());
  launcher.Push(FailsAtStartUp());
  launcher.Push(Succeeds(1));
  launcher.Push(FailsAtStartUp());
  launcher.Push(FailsAtStartUp());
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  Welcome();
  for (const char* run : {"run-1", "run-2", "run-3", "run-4", "run-5"}) {
    ASSERT_TRUE(Run(run).has_value());
  }
  std::optional<proto::RunFinished> sixth = Run("run-6");
  ASSERT_TRUE(sixth.has_value());
  EXPECT_EQ(sixth->status, proto::RunStatus::kSucceeded) << sixth->error;
  EXPECT_TRUE(Hellos().empty());
}

TEST_F(QuarantineTest, AFailureLaterThanTheStartUpWindowIsNotCounted) {
  options_.quarantine.fast = 0ms;  // every run counts as slow
  ScriptedProcessLauncher launcher(io_);
  for (int i = 0; i < 3; ++i) launcher.Push(FailsAtStartUp());
  launcher.Push(Succeeds(1));
  StartAgent(launcher);
  Welcome();
  for (const char* run : {"run-1", "run-2", "run-3"}) ASSERT_TRUE(Run(run).has_value());
  std::optional<proto::RunFinished> fourth = Run("run-4");
  ASSERT_TRUE(fourth.has_value());
  EXPECT_EQ(fourth->status, proto::RunStatus::kSucceeded) << fourth->error;
}

TEST_F(QuarantineTest, ADriverThatCannotBeStartedIsQuarantined) {
  ScriptedProcessLauncher launcher(io_);  // no scripts: every Launch fails
  StartAgent(launcher);
  Welcome();
  for (const char* run : {"run-1", "run-2", "run-3"}) ASSERT_TRUE(Run(run).has_value());
  std::optional<proto::Hello> hello = Expect<proto::Hello>();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->capabilities.engines, std::vector<std::string>{"other-engine@1"});
}

// Warm sessions with the real launcher and the test driver in session mode (its
// load axis is knob.load).
class WarmSessionTest : public AgentServiceTest {
 protected:
  void SetUp() override {
    AgentServiceTest::SetUp();
    options_.config.drivers = {
        {"test", ServiceTestDriver(), "test-engine@1", std::vector<std::string>{"knob.load"}}};
    launcher_ = MakePosixProcessLauncher(io_);
  }

  void Start() {
    StartAgent(*launcher_);
    Welcome();
  }

  // Runs one job on the agent; its RunFinished.
  proto::RunFinished Run(const std::string& run_id, std::vector<proto::KeyValue> coordinate) {
    Send(MakeServiceAssign(run_id, "test-engine@1", std::move(coordinate)));
    while (std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>()) {
      if (finished->run_id == run_id) return *finished;
    }
    ADD_FAILURE() << "no RunFinished for " << run_id;
    return {};
  }

  // The run summary's hello.session (null when the driver ran without one).
  static nlohmann::json Session(const proto::RunFinished& finished) {
    nlohmann::json summary = nlohmann::json::parse(finished.summary, nullptr, false);
    if (!summary.is_object() || !summary["hello"].is_object()) return nullptr;
    return summary["hello"].value("session", nlohmann::json());
  }

  // Jobs the run's driver process ran before it: 0 for a fresh process.
  static int JobsBefore(const proto::RunFinished& finished) {
    nlohmann::json session = Session(finished);
    return session.is_object() ? session.value("jobs_before", -1) : -1;
  }

  std::unique_ptr<ProcessLauncher> launcher_;
};

TEST_F(WarmSessionTest, ConsecutiveMatchingJobsReuseOneDriverProcess) {
  Start();
  proto::RunFinished first = Run("run-1", {{"knob.load", "a"}, {"knob.positions", "3"}});
  proto::RunFinished second = Run("run-2", {{"knob.load", "a"}, {"knob.positions", "5"}});
  ASSERT_EQ(first.status, proto::RunStatus::kSucceeded) << first.error;
  ASSERT_EQ(second.status, proto::RunStatus::kSucceeded) << second.error;
  EXPECT_EQ(Session(first), (nlohmann::json{{"warm", false}, {"jobs_before", 0}}));
  EXPECT_EQ(Session(second), (nlohmann::json{{"warm", true}, {"jobs_before", 1}}));
  EXPECT_EQ(second.chunk_count, 1u);
  EXPECT_THAT(second.summary, HasSubstr("the warm session goes on"));
}

TEST_F(WarmSessionTest, ANonMatchingJobStartsAnotherProcessAndTheFirstStaysWarm) {
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  EXPECT_EQ(JobsBefore(Run("run-2", {{"knob.load", "b"}})), 0);
  EXPECT_EQ(JobsBefore(Run("run-3", {{"knob.load", "a"}})), 1);
  EXPECT_EQ(JobsBefore(Run("run-4", {{"knob.load", "b"}})), 1);
}

TEST_F(WarmSessionTest, AtTheLimitTheLeastRecentlyUsedSessionIsClosed) {
  options_.config.warm_sessions = 1;
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  EXPECT_EQ(JobsBefore(Run("run-2", {{"knob.load", "b"}})), 0);
  EXPECT_EQ(JobsBefore(Run("run-3", {{"knob.load", "a"}})), 0) << "a was closed for b";
  EXPECT_EQ(JobsBefore(Run("run-4", {{"knob.load", "a"}})), 1);
}

TEST_F(WarmSessionTest, TheSessionClosedAtTheLimitIsTheLeastRecentlyUsed) {
  Start();  // warm_sessions = 2
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  EXPECT_EQ(JobsBefore(Run("run-2", {{"knob.load", "b"}})), 0);
  EXPECT_EQ(JobsBefore(Run("run-3", {{"knob.load", "a"}})), 1);  // b is now the older
  EXPECT_EQ(JobsBefore(Run("run-4", {{"knob.load", "c"}})), 0);  // closes b
  EXPECT_EQ(JobsBefore(Run("run-5", {{"knob.load", "a"}})), 2);
  EXPECT_EQ(JobsBefore(Run("run-6", {{"knob.load", "b"}})), 0);
}

TEST_F(WarmSessionTest, ACrashMidSessionFailsOnlyThatJobAndTheNextRunsInAFreshProcess) {
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  proto::RunFinished crashed = Run("run-2", {{"knob.load", "a"}, {"knob.behaviour", "crash"}});
  EXPECT_EQ(crashed.status, proto::RunStatus::kFailed);
  EXPECT_THAT(crashed.error, HasSubstr("killed by signal 6"));
  EXPECT_THAT(crashed.error, HasSubstr("crashing after 2 records"));
  EXPECT_EQ(JobsBefore(crashed), 1);
  proto::RunFinished next = Run("run-3", {{"knob.load", "a"}});
  EXPECT_EQ(next.status, proto::RunStatus::kSucceeded) << next.error;
  EXPECT_EQ(JobsBefore(next), 0);
}

TEST_F(WarmSessionTest, AJobErrorKeepsTheSessionAndAnEngineErrorEndsIt) {
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  proto::RunFinished refused = Run("run-2", {{"knob.load", "a"},
                                             {"knob.behaviour", "error"},
                                             {"knob.error_code", "invalid_combination"}});
  EXPECT_EQ(refused.status, proto::RunStatus::kFailed);
  EXPECT_THAT(refused.error, HasSubstr("invalid_combination"));
  EXPECT_EQ(JobsBefore(Run("run-3", {{"knob.load", "a"}})), 2);
  proto::RunFinished broken = Run("run-4", {{"knob.load", "a"}, {"knob.behaviour", "error"}});
  EXPECT_THAT(broken.error, HasSubstr("engine_error"));
  EXPECT_EQ(JobsBefore(Run("run-5", {{"knob.load", "a"}})), 0);
}

TEST_F(WarmSessionTest, BytesAfterDoneEndTheSession) {
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  // The junk is read with the done (run-2 fails), while the session is idle (it is
  // closed), or once run-3 was handed to it (run-3 fails as malformed, the session is
  // killed): whichever, no job runs in that process after it.
  Run("run-2", {{"knob.load", "a"}, {"knob.behaviour", "garbage"}});
  proto::RunFinished next = Run("run-3", {{"knob.load", "a"}});
  if (next.status == proto::RunStatus::kSucceeded) {
    EXPECT_EQ(JobsBefore(next), 0);
  } else {
    EXPECT_THAT(next.error, HasSubstr("driver output"));
  }
  EXPECT_LE(JobsBefore(Run("run-4", {{"knob.load", "a"}})), 1);
}

TEST_F(WarmSessionTest, CancellingASessionsJobKillsItsProcessGroup) {
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  Send(MakeServiceAssign("run-2", "test-engine@1",
                         {{"knob.load", "a"}, {"knob.behaviour", "hang"}}));
  ASSERT_TRUE(Expect<proto::RunStarted>().has_value());
  Send(proto::CancelRun{"run-2"});
  std::optional<proto::RunFinished> cancelled = Expect<proto::RunFinished>();
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->status, proto::RunStatus::kCancelled);
  EXPECT_EQ(JobsBefore(Run("run-3", {{"knob.load", "a"}})), 0);
}

TEST_F(WarmSessionTest, ATimedOutSessionJobFailsAndTheNextStartsAfresh) {
  options_.config.run_timeout = 300ms;
  Start();
  EXPECT_EQ(JobsBefore(Run("run-1", {{"knob.load", "a"}})), 0);
  proto::RunFinished hung = Run("run-2", {{"knob.load", "a"}, {"knob.behaviour", "hang"}});
  EXPECT_EQ(hung.status, proto::RunStatus::kTimedOut);
  EXPECT_EQ(JobsBefore(Run("run-3", {{"knob.load", "a"}})), 0);
}

TEST_F(WarmSessionTest, IdleSessionsAreAdvertisedAndClosedAfterWarmIdle) {
  options_.config.warm_idle = 200ms;
  StartAgent(*launcher_);
  ASSERT_TRUE(Expect<proto::Hello>().has_value());
  Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 20ms});
  Send(MakeServiceAssign("run-1", "test-engine@1", {{"knob.load", "a"}, {"other", "x"}}));
  // The heartbeat sent as the session went idle: the last one before the RunFinished.
  auto finished = [&] {
    return std::find_if(received_.begin(), received_.end(), [](const proto::Message& m) {
      return std::holds_alternative<proto::RunFinished>(m);
    });
  };
  for (int i = 0; i < 2000 && finished() == received_.end(); ++i) Pump();
  ASSERT_NE(finished(), received_.end());
  std::optional<proto::Heartbeat> beat;
  for (auto it = received_.begin(); it != finished(); ++it) {
    if (const auto* heartbeat = std::get_if<proto::Heartbeat>(&*it)) beat = *heartbeat;
  }
  ASSERT_TRUE(beat.has_value());
  EXPECT_EQ(beat->warm_sessions,
            (std::vector<proto::WarmSession>{{"test-engine@1", "", {{"knob.load", "a"}}}}));
  // It frees the run's slot: the coordinator may assign the next job at once.
  EXPECT_EQ(beat->free_slots, 1);
  EXPECT_THAT(beat->running_runs, IsEmpty());
  received_.clear();
  // Heartbeats every 20 ms: one after warm_idle advertises no session.
  bool closed = false;
  for (int i = 0; i < 500 && !closed; ++i) {
    std::optional<proto::Heartbeat> later = Expect<proto::Heartbeat>();
    ASSERT_TRUE(later.has_value());
    closed = later->warm_sessions.empty();
  }
  ASSERT_TRUE(closed);
  EXPECT_EQ(JobsBefore(Run("run-2", {{"knob.load", "a"}})), 0);
}

TEST_F(WarmSessionTest, WithWarmSessionsZeroEveryJobStartsItsDriverAlone) {
  options_.config.warm_sessions = 0;
  Start();
  proto::RunFinished first = Run("run-1", {{"knob.load", "a"}});
  proto::RunFinished second = Run("run-2", {{"knob.load", "a"}});
  EXPECT_EQ(second.status, proto::RunStatus::kSucceeded) << second.error;
  EXPECT_TRUE(Session(first).is_null()) << first.summary;
  EXPECT_TRUE(Session(second).is_null()) << second.summary;
  EXPECT_THAT(second.summary, HasSubstr("exit status 0"));
}

TEST_F(WarmSessionTest, ADriverWithoutSessionsRunsEachJobAlone) {
  options_.config.drivers = {{"test", ServiceTestDriver(), "test-engine@1"}};
  Start();
  EXPECT_TRUE(Session(Run("run-1", {{"knob.load", "a"}})).is_null());
  EXPECT_TRUE(Session(Run("run-2", {{"knob.load", "a"}})).is_null());
}

}  // namespace
}  // namespace orch::agent
