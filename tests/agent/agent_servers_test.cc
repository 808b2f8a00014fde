// The agent with [[servers]] entries, with real processes: the test driver
// (which echoes the job's `server` object in its done frame) and a real HTTP
// server launched by the agent (tests/support/fake_inference_server.py), against
// a scripted coordinator on the in-memory network.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>  // before Boost.Asio under C++20 (Debian 12)

#include "agent/agent_service.h"
#include "agent/posix_process_launcher.h"
#include "agent/server_keeper.h"
#include "fingerprint/memory_hash_cache.h"
#include "protocol/codec.h"
#include "protocol/memory_network.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;
namespace proto = orch::protocol;
using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kEngine[] = "llama-server@b1";

std::string ServersTestDriver() {
  return std::string(ORCH_BINARY_DIR) + "/tests/support/orch-test-driver";
}

std::string FakeServer() {
  return std::string(ORCH_SOURCE_DIR) + "/tests/support/fake_inference_server.py";
}

bool Gone(int pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// Waits (at most 10 s) until `pid`, killed, is a zombie or gone: it has died.
void AwaitDeath(int pid) {
  for (int i = 0; i < 1000 && !Gone(pid); ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::size_t close = text.rfind(')');
    if (close != std::string::npos && text.size() > close + 2 && text[close + 2] == 'Z') return;
    std::this_thread::sleep_for(10ms);
  }
}

class AgentServersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("orch-agent-servers-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "pids");
    std::ofstream(root_ / "model.gguf") << "weights";
    server_ = std::move(network_.Bind("coord")).value();
    spool_ = std::move(Spool::Open((root_ / "spool").string())).value();
    options_.config.id = "agent-1";
    options_.config.slots = 1;
    options_.config.run_timeout = 30s;
    options_.config.drivers = {{"llama-server", ServersTestDriver(), kEngine},
                               {"vllm", ServersTestDriver(), "vllm@0.11.0"}};
    StartAgent(LaunchedEntry());
  }

  // The launched entry of kEngine the agent is configured with.
  virtual ServerConfig LaunchedEntry() {
    ServerConfig launched;
    launched.engine = kEngine;
    launched.where = "agent.toml:9";
    launched.launch = {"python3",   FakeServer(), "--port",  "{port}",
                       "--pid-dir", PidDir(),     "--model", "{model}"};
    launched.axes["attention"] = {{"on", {{"--tag", "fa-on"}, {}}},
                                  {"off", {{"--tag", "fa-off"}, {}}}};
    launched.axes["knob.health"] = {{"ok", {}},
                                    {"never", {{"--mode", "never-healthy"}, {}}},
                                    {"exit", {{"--mode", "exit"}, {}}}};
    launched.start_timeout = 8000ms;
    launched.stop_timeout = 5000ms;
    return launched;
  }

  void StartAgent(const ServerConfig& launched) {
    ServerConfig attached;
    attached.engine = "vllm@0.11.0";
    attached.url = "http://127.0.0.1:9";
    attached.api_key_file = "/etc/orch/vllm.key";
    options_.config.servers = {launched, attached};
    options_.fingerprint_id = "fp-1";
    models_ = std::make_unique<ModelResolver>(ModelResolverOptions{{}, (root_ / "cache").string()},
                                              hashes_, logger_);
    launcher_ = MakePosixProcessLauncher(io_);
    client_ = std::move(network_.Connect("coord", "agent-1")).value();
    service_ = std::make_unique<AgentService>(
        io_, *launcher_, *spool_, *models_, logger_, options_,
        [this](std::string_view frame) { return client_->Send(proto::kServerPeer, frame); });
    ASSERT_TRUE(service_->Start().ok());
    ASSERT_TRUE(Expect<proto::Hello>().has_value());
    Send(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s});
  }

  void TearDown() override {
    service_.reset();
    if (!root_.empty()) fs::remove_all(root_);
  }

  std::string PidDir() const { return (root_ / "pids").string(); }

  // The pids of every server launched so far (each writes DIR/<pid>).
  std::set<int> ServerPids() const {
    std::set<int> pids;
    for (const auto& entry : fs::directory_iterator(root_ / "pids")) {
      pids.insert(std::stoi(entry.path().filename().string()));
    }
    return pids;
  }

  void Pump() {
    network_.DeliverAll();
    while (auto event = client_->Receive()) service_->OnEvent(*event);
    if (io_.stopped()) io_.restart();
    io_.run_for(10ms);
    network_.DeliverAll();
    while (auto event = server_->Receive()) {
      if (event->kind != proto::TransportEvent::Kind::kFrame) continue;
      Result<proto::Message> message = proto::Decode(event->frame);
      ASSERT_TRUE(message.ok()) << message.status().ToString();
      received_.push_back(*message);
    }
  }

  // Pumps until a message of type T arrives (at most 60 s: a loaded machine
  // starts Python slowly); returns it.
  template <typename T>
  std::optional<T> Expect() {
    auto deadline = std::chrono::steady_clock::now() + 60s;
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

  // Runs one job to its RunFinished (acknowledged) and returns it.
  proto::RunFinished Run(const std::string& run_id, std::vector<proto::KeyValue> coordinate,
                         const std::string& engine = kEngine) {
    proto::Assign assign;
    assign.run_id = run_id;
    assign.job_id = "job-" + run_id;
    assign.coordinate = std::move(coordinate);
    assign.coordinate.push_back({"knob.positions", "2"});
    assign.workload = "w";
    assign.requirements.engine = engine;
    assign.requirements.model = (root_ / "model.gguf").string();
    assign.lease = 30s;
    assign.job_spec = R"({"experiment":"exp","workload":{"name":"w"}})";
    Send(assign);
    std::optional<proto::RunFinished> finished = Expect<proto::RunFinished>();
    if (!finished) return {};
    Send(proto::Ack{run_id, finished->chunk_count});
    for (std::uint64_t seq = 0; seq < finished->chunk_count; ++seq) Send(proto::Ack{run_id, seq});
    received_.clear();
    return *finished;
  }

  // The `server` object the driver got, as it echoed it.
  static json ServerOf(const proto::RunFinished& finished) {
    json summary = json::parse(finished.summary);
    EXPECT_EQ(finished.status, proto::RunStatus::kSucceeded) << finished.error;
    EXPECT_EQ(summary["server"], summary["done"]["server"]);  // recorded in the summary too
    return summary["done"]["server"];
  }

  static json ErrorOf(const proto::RunFinished& finished) {
    EXPECT_EQ(finished.status, proto::RunStatus::kFailed);
    return json::parse(finished.summary)["error"];
  }

  fs::path root_;
  boost::asio::io_context io_;
  proto::MemoryNetwork network_;
  std::unique_ptr<proto::Transport> server_;
  std::unique_ptr<proto::Transport> client_;
  std::unique_ptr<Spool> spool_;
  spdlog::logger logger_{"agent-test", std::make_shared<spdlog::sinks::null_sink_mt>()};
  fingerprint::MemoryHashCache hashes_;
  std::unique_ptr<ModelResolver> models_;
  std::unique_ptr<ProcessLauncher> launcher_;
  AgentServiceOptions options_;
  std::unique_ptr<AgentService> service_;
  std::vector<proto::Message> received_;
};

TEST_F(AgentServersTest, LaunchesReusesRelaunchesForAnotherAxisValueAndStopsEveryServer) {
  json first = ServerOf(Run("r1", {{"attention", "on"}}));
  EXPECT_EQ(first["mode"], "launched");
  EXPECT_EQ(first["jobs_before"], 0);
  EXPECT_EQ(first["coordinate"], json({{"attention", "on"}}));
  EXPECT_THAT(first["url"].get<std::string>(), HasSubstr("http://127.0.0.1:"));
  std::string log = first["log"];
  EXPECT_EQ(fs::path(log).parent_path(), root_ / "spool" / "servers");
  std::set<int> pids = ServerPids();
  ASSERT_EQ(pids.size(), 1u);
  int on_pid = *pids.begin();
  {
    std::ifstream args(root_ / "pids" / std::to_string(on_pid));
    std::string line;
    std::getline(args, line);
    EXPECT_THAT(line, AllOf(HasSubstr("--model " + (root_ / "model.gguf").string()),
                            HasSubstr("--tag fa-on")));
  }

  json second = ServerOf(Run("r2", {{"attention", "on"}}));
  EXPECT_EQ(second["jobs_before"], 1);
  EXPECT_EQ(second["url"], first["url"]);
  EXPECT_EQ(ServerPids().size(), 1u);

  json other = ServerOf(Run("r3", {{"attention", "off"}}));
  EXPECT_EQ(other["jobs_before"], 0);
  EXPECT_EQ(other["coordinate"], json({{"attention", "off"}}));
  EXPECT_NE(other["log"], first["log"]);
  EXPECT_TRUE(Gone(on_pid)) << "the attention=on server still runs";
  pids = ServerPids();
  ASSERT_EQ(pids.size(), 2u);

  service_.reset();
  for (int pid : pids) EXPECT_TRUE(Gone(pid)) << "server pid " << pid << " outlived the agent";
}

TEST_F(AgentServersTest, AServerKilledBetweenJobsIsLaunchedAgain) {
  json first = ServerOf(Run("r1", {{"attention", "on"}}));
  int pid = *ServerPids().begin();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  AwaitDeath(pid);
  json again = ServerOf(Run("r2", {{"attention", "on"}}));
  EXPECT_EQ(again["jobs_before"], 0);
  EXPECT_EQ(ServerPids().size(), 2u);
  EXPECT_TRUE(Gone(pid));
  service_.reset();
  for (int each : ServerPids()) EXPECT_TRUE(Gone(each));
}

TEST_F(AgentServersTest, AServerThatNeverBecomesHealthyFailsTheRunNamingItsLog) {
  proto::RunFinished finished = Run("r1", {{"knob.health", "never"}});
  json error = ErrorOf(finished);
  EXPECT_EQ(error["code"], "engine_error");
  std::string message = error["message"];
  EXPECT_THAT(message, AllOf(HasSubstr("did not answer GET /health with 200 within "
                                       "start_timeout_ms = 8000 (last: HTTP 503)"),
                             HasSubstr("server log " + (root_ / "spool" / "servers").string()),
                             HasSubstr("listening on 127.0.0.1:")));
  EXPECT_EQ(finished.chunk_count, 0u);
  std::set<int> pids = ServerPids();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(Gone(*pids.begin()));
  // The agent goes on: the next job launches a healthy server.
  EXPECT_EQ(ServerOf(Run("r2", {}))["jobs_before"], 0);
}

TEST_F(AgentServersTest, AServerThatExitsAtStartFailsTheRunWithItsLastLines) {
  json error = ErrorOf(Run("r1", {{"knob.health", "exit"}}));
  EXPECT_EQ(error["code"], "engine_error");
  EXPECT_THAT(error["message"].get<std::string>(),
              AllOf(HasSubstr("server exited (exit status 1) before it answered GET /health"),
                    HasSubstr("fatal: cannot load model " + (root_ / "model.gguf").string())));
}

TEST_F(AgentServersTest, AnUnmappedAxisValueIsRefusedAsAnInvalidCombination) {
  json error = ErrorOf(Run("r1", {{"attention", "auto"}}));
  EXPECT_EQ(error["code"], "invalid_combination");
  EXPECT_THAT(error["message"].get<std::string>(),
              AllOf(HasSubstr("axis attention = \"auto\""), HasSubstr("agent.toml:9")));
  EXPECT_TRUE(ServerPids().empty());
}

TEST_F(AgentServersTest, AnAttachedServerIsNamedInTheJobAndNothingIsLaunched) {
  json server = ServerOf(Run("r1", {{"attention", "on"}}, "vllm@0.11.0"));
  EXPECT_EQ(server, json::parse(R"({"url": "http://127.0.0.1:9",
      "api_key_file": "/etc/orch/vllm.key", "mode": "attached", "jobs_before": 0})"));
  EXPECT_TRUE(ServerPids().empty());
}

// The real llama-server (scripts/setup-engines builds it) launched through a
// [[servers]] entry on the tiny example model. scripts/setup builds it: a missing
// binary fails the test, naming that step.
class RealLlamaServerTest : public AgentServersTest {
 protected:
  static std::string Binary() {
    return std::string(ORCH_SOURCE_DIR) +
           "/third_party/engines/llama.cpp-b8390/server/llama-server";
  }
  void SetUp() override {
    ASSERT_EQ(::access(Binary().c_str(), X_OK), 0)
        << Binary() << " is not built: run scripts/setup (scripts/setup-engines builds it)";
    AgentServersTest::SetUp();
  }
  ServerConfig LaunchedEntry() override {
    ServerConfig launched;
    launched.engine = kEngine;
    launched.where = "agent.toml:9";
    launched.launch = {Binary(), "-m", "{model}", "--host", "{host}", "--port", "{port}"};
    launched.start_timeout = 50000ms;
    return launched;
  }
};

TEST_F(RealLlamaServerTest, LaunchesLlamaServerOnTheExampleModelAndReusesIt) {
  fs::copy_file(fs::path(ORCH_SOURCE_DIR) / "examples/models/kjv-tiny-f32.gguf",
                root_ / "model.gguf", fs::copy_options::overwrite_existing);
  json first = ServerOf(Run("r1", {}));
  EXPECT_EQ(first["mode"], "launched");
  EXPECT_EQ(first["jobs_before"], 0);
  std::string url = first["url"];
  int port = std::stoi(url.substr(url.rfind(':') + 1));
  EXPECT_EQ(HttpGetStatus(port, "/health", 2000ms), 200);
  EXPECT_EQ(ServerOf(Run("r2", {}))["jobs_before"], 1);
}

}  // namespace
}  // namespace orch::agent
