// A coordinator with keys, over real sockets on 127.0.0.1 and real processes: an
// agent and users with keys made by `orch keygen` work end to end; a client
// without a key, or with a key the coordinator does not list, is told it was refused;
// an agent refused at first registers once its key is admitted; each
// role is refused what it may not do, with the role it would need.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli/child_process.h"
#include "cli/security_keys.h"
#include "protocol/codec.h"
#include "protocol/zmq_transport.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class SecureClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Keygen("coordinator", "coordinator", false);
    Keygen("agent-1", "agent", true);
    Keygen("alice", "submitter", true);
    Keygen("vera", "viewer", true);
    Keygen("agent-2", "agent", true);    // a real agent key, used by a forger below
    Keygen("stranger", "admin", false);  // a valid key the coordinator does not list
    cluster_.StartCoordinator("tcp://127.0.0.1:*",
                              "key = \"keys/coordinator.key_secret\"\n"
                              "allowed_keys = \"keys/allowed\"\n");
  }

  void Keygen(const std::string& name, const std::string& role, bool allow) {
    cluster_.Keygen(name, role, allow);
  }
  ProcessResult As(const std::string& user, std::vector<std::string> args) {
    return cluster_.As(user, std::move(args));
  }

  std::string Spec() {
    fs::path spec = cluster_.dir() / "spec.toml";
    std::ofstream(spec) << TestEngineSpec("secure", 3, 4, 0);
    return spec.string();
  }

  LocalCluster cluster_{"secure"};
};

TEST_F(SecureClusterTest, AgentsAndUsersWithKeysRunAnExperimentEndToEnd) {
  fs::path keys = cluster_.dir() / "keys";
  cluster_.StartAgent("agent-1", {{"test", "test-engine@1", TestDriverBinary()}},
                      "key = \"" + (keys / "agent-1.key_secret").string() +
                          "\"\ncoordinator_key = \"" + (keys / "coordinator.key").string() +
                          "\"\n");
  ProcessResult submitted = As("alice", {"submit", Spec()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err << cluster_.Logs();
  bool done = LocalCluster::WaitUntil(
      [&] { return As("vera", {"status"}).out.find("3/3 succeeded") != std::string::npos; },
      std::chrono::seconds(60));
  EXPECT_TRUE(done) << As("vera", {"status"}).out << cluster_.Logs();
  ProcessResult status = As("vera", {"status"});
  EXPECT_THAT(status.out, HasSubstr("agent-1"));
}

// Refused clients are told so at once (not after their timeout), and why.
TEST_F(SecureClusterTest, ClientsWithoutAnAllowedKeyAreToldTheyWereRefused) {
  ProcessResult plain = cluster_.Client({"status", "--timeout", "60"});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.err, HasSubstr("uses keys (CurveZMQ) and this client gave none"));
  ProcessResult stranger = As("stranger", {"submit", Spec()});
  EXPECT_EQ(stranger.exit_code, 1);
  EXPECT_THAT(stranger.err, HasSubstr("refused this client's key (ZAP status 400)"));
  EXPECT_THAT(stranger.err, HasSubstr("allowed_keys"));
  EXPECT_THAT(As("vera", {"experiments"}).out, HasSubstr("(no experiments submitted)"))
      << "nothing was submitted";
}

// An agent whose key is not admitted says so and keeps trying; once its public key is
// put in allowed_keys (no restart of either), it registers. The coordinator logs the
// refusal once for that address and key, however often the agent tried.
TEST_F(SecureClusterTest, ARefusedAgentRegistersOnceItsKeyIsAdmittedWithoutARestart) {
  Keygen("agent-3", "agent", false);
  fs::path keys = cluster_.dir() / "keys";
  cluster_.StartAgent("agent-3", {{"test", "test-engine@1", TestDriverBinary()}},
                      "key = \"" + (keys / "agent-3.key_secret").string() +
                          "\"\ncoordinator_key = \"" + (keys / "coordinator.key").string() +
                          "\"\n");
  auto agent_log = [&] {
    std::ifstream in(cluster_.dir() / "agent-agent-3.log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  bool told = LocalCluster::WaitUntil(
      [&] { return agent_log().find("refused this client's key") != std::string::npos; },
      std::chrono::seconds(30));
  ASSERT_TRUE(told) << cluster_.Logs();
  EXPECT_THAT(As("vera", {"status"}).out, Not(HasSubstr("agent-3")));
  fs::copy_file(keys / "agent-3.key", keys / "allowed" / "agent-3.key");
  bool registered = LocalCluster::WaitUntil(
      [&] { return As("vera", {"status"}).out.find("agent-3") != std::string::npos; },
      std::chrono::seconds(60));
  EXPECT_TRUE(registered) << As("vera", {"status"}).out << cluster_.Logs();
  std::ifstream log_file(cluster_.dir() / "coordinator.log");
  std::string logs((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  std::size_t refusals = 0;
  for (std::size_t at = logs.find("refused a handshake from 127.0.0.1"); at != std::string::npos;
       at = logs.find("refused a handshake from 127.0.0.1", at + 1)) {
    ++refusals;
  }
  EXPECT_EQ(refusals, 1u) << logs;
  EXPECT_THAT(logs, HasSubstr("allowed_keys re-read"));
}

TEST_F(SecureClusterTest, EachRoleIsRefusedWhatItMayNotDoAndToldTheRoleItNeeds) {
  ProcessResult viewer_submit = As("vera", {"submit", Spec()});
  EXPECT_EQ(viewer_submit.exit_code, 1);
  EXPECT_THAT(viewer_submit.err,
              HasSubstr("refused: key vera (role viewer) may not send submit: needs role "
                        "submitter or admin"));
  ASSERT_EQ(As("alice", {"submit", Spec()}).exit_code, 0);
  ProcessResult viewer_cancel = As("vera", {"cancel", "secure"});
  EXPECT_EQ(viewer_cancel.exit_code, 1);
  EXPECT_THAT(viewer_cancel.err, HasSubstr("(role viewer)"));
  ProcessResult drain = As("alice", {"drain", "agent-1"});
  EXPECT_EQ(drain.exit_code, 1);
  EXPECT_THAT(drain.err, HasSubstr("needs role admin"));
  ProcessResult own = As("alice", {"cancel", "secure"});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_THAT(own.out, HasSubstr("3 jobs cancelled"));
}

// A second agent with the same id and key (a copied config, a stolen key) gets
// neither the id nor the first agent's work, and cannot lock the first one out.
TEST_F(SecureClusterTest, ASecondAgentUnderAConnectedAgentsIdIsRefusedAndTheFirstFinishes) {
  fs::path keys = cluster_.dir() / "keys";
  std::string key_lines = "key = \"" + (keys / "agent-1.key_secret").string() +
                          "\"\ncoordinator_key = \"" + (keys / "coordinator.key").string() + "\"\n";
  cluster_.StartAgent("agent-1", {{"test", "test-engine@1", TestDriverBinary()}}, key_lines);
  ASSERT_TRUE(LocalCluster::WaitUntil(
      [&] { return As("vera", {"status"}).out.find("agent-1") != std::string::npos; },
      std::chrono::seconds(30)))
      << cluster_.Logs();
  fs::path twin_config = cluster_.dir() / "twin.toml";
  std::ofstream(twin_config) << "[agent]\nid = \"agent-1\"\ncoordinator = \"" << cluster_.endpoint()
                             << "\"\nspool_dir = \"spool-twin\"\n"
                             << key_lines << "\n[[drivers]]\nname = \"test\"\nexecutable = \""
                             << TestDriverBinary() << "\"\nengine = \"test-engine@1\"\n";
  fs::path twin_log = cluster_.dir() / "twin.log";
  Result<cli::ChildProcess> twin = cli::ChildProcess::Start(
      {OrchBinary(), "agent", "--config", twin_config.string()}, twin_log.string());
  ASSERT_TRUE(twin.ok()) << twin.status().ToString();
  auto twin_says = [&](const std::string& text) {
    std::ifstream in(twin_log);
    std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return log.find(text) != std::string::npos;
  };
  ASSERT_TRUE(LocalCluster::WaitUntil(
      [&] { return twin_says("coordinator rejected agent agent-1"); }, std::chrono::seconds(30)))
      << cluster_.Logs();

  ASSERT_EQ(As("alice", {"submit", Spec()}).exit_code, 0) << cluster_.Logs();
  bool done = LocalCluster::WaitUntil(
      [&] { return As("vera", {"status"}).out.find("3/3 succeeded") != std::string::npos; },
      std::chrono::seconds(60));
  EXPECT_TRUE(done) << As("vera", {"status"}).out << cluster_.Logs();
  EXPECT_FALSE(twin_says("on driver")) << "the twin ran nothing";
  EXPECT_TRUE(
      twin_says("agent id agent-1 is in use by another connected agent: two agents "
                "were given one id and key"));
  std::ifstream in(twin_log);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t told = 0;
  for (std::size_t at = log.find("coordinator rejected agent"); at != std::string::npos;
       at = log.find("coordinator rejected agent", at + 1)) {
    ++told;
  }
  EXPECT_EQ(told, 1u) << "said once, not once a second:\n" << log;
  (void)twin->Stop(std::chrono::seconds(5));
}

// Another allowed agent key finishes agent-1's run in flight with a forged
// success, over a real CURVE socket: nothing is acknowledged, and agent-1's own
// run completes the job.
TEST_F(SecureClusterTest, AForgedResultFromAnotherAgentKeyIsRefusedAndTheRealRunCompletes) {
  fs::path keys = cluster_.dir() / "keys";
  cluster_.StartAgent("agent-1", {{"test", "test-engine@1", TestDriverBinary()}},
                      "key = \"" + (keys / "agent-1.key_secret").string() +
                          "\"\ncoordinator_key = \"" + (keys / "coordinator.key").string() +
                          "\"\n");
  fs::path spec = cluster_.dir() / "slow.toml";
  std::ofstream(spec) << TestEngineSpec("slow", 3, 20, 100);  // 2 s per run
  ASSERT_EQ(As("alice", {"submit", spec.string()}).exit_code, 0) << cluster_.Logs();
  std::string run_id;
  ASSERT_TRUE(LocalCluster::WaitUntil(
      [&] {
        ProcessResult jobs = As("vera", {"status", "--jobs", "--json"});
        nlohmann::json doc = nlohmann::json::parse(jobs.out, nullptr, false);
        if (!doc.is_object() || !doc.contains("jobs")) return false;
        for (const nlohmann::json& job : doc["jobs"]) {
          if (job.value("state", "") == "running" && !job.value("run", "").empty()) {
            run_id = job["run"].get<std::string>();
          }
        }
        return !run_id.empty();
      },
      std::chrono::seconds(30)))
      << As("vera", {"status", "--jobs", "--json"}).out << cluster_.Logs();

  Result<std::optional<protocol::CurveClientKeys>> curve = cli::LoadClientKeys(
      (keys / "agent-2.key_secret").string(), (keys / "coordinator.key").string(), "test");
  ASSERT_TRUE(curve.ok() && curve->has_value()) << curve.status().ToString();
  protocol::ZmqContext context;
  Result<std::unique_ptr<protocol::ZmqTransport>> forger =
      protocol::ConnectZmqClient(context, cluster_.endpoint(), "agent-2", **curve);
  ASSERT_TRUE(forger.ok()) << forger.status().ToString();
  protocol::Hello hello;
  hello.agent_id = "agent-2";
  hello.capabilities = {{"test-engine@1"}, "cpu", 0, 1, {}};
  ASSERT_TRUE((*forger)->Send(protocol::kServerPeer, protocol::Encode(hello)).ok());
  protocol::RunFinished forged{run_id, protocol::RunStatus::kSucceeded, "{}", "", 1};
  ASSERT_TRUE((*forger)->Send(protocol::kServerPeer, protocol::Encode(forged)).ok());
  bool acknowledged = false;
  for (int round = 0; round < 20; ++round) {  // 2 s
    (void)(*forger)->Wait(std::chrono::milliseconds(100));
    while (auto event = (*forger)->Receive()) {
      Result<protocol::Message> message = protocol::Decode(event->frame);
      auto* ack = message.ok() ? std::get_if<protocol::Ack>(&*message) : nullptr;
      acknowledged = acknowledged || (ack != nullptr && ack->run_id == run_id);
    }
  }
  EXPECT_FALSE(acknowledged) << "the forged finish was acknowledged";

  bool done = LocalCluster::WaitUntil(
      [&] { return As("vera", {"status"}).out.find("3/3 succeeded") != std::string::npos; },
      std::chrono::seconds(60));
  EXPECT_TRUE(done) << As("vera", {"status"}).out << cluster_.Logs();
  std::ifstream log(cluster_.dir() / "coordinator.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("refusing runFinished of run " + run_id +
                              " from agent-2: the run belongs to agent agent-1"));
}

TEST_F(SecureClusterTest, AnAgentWhoseKeyIsNamedOtherwiseRefusesToStart) {
  fs::path keys = cluster_.dir() / "keys";
  std::ofstream(cluster_.dir() / "agent-x.toml")
      << "[agent]\nid = \"agent-2\"\ncoordinator = \"" << cluster_.endpoint() << "\"\n"
      << "key = \"" << (keys / "agent-1.key_secret").string() << "\"\n"
      << "coordinator_key = \"" << (keys / "coordinator.key").string() << "\"\n"
      << "\n[[drivers]]\nname = \"test\"\nexecutable = \"" << TestDriverBinary()
      << "\"\nengine = \"test-engine@1\"\n";
  ProcessResult agent =
      RunProcess({OrchBinary(), "agent", "--config", (cluster_.dir() / "agent-x.toml").string()});
  EXPECT_EQ(agent.exit_code, 2);
  EXPECT_THAT(agent.err, HasSubstr("agent.id is agent-2 but its key"));
}

}  // namespace
}  // namespace orch::testing
