// CurveZMQ with the ZAP handler over real sockets on 127.0.0.1: only clients with an
// allowed key get through, every event names the key it authenticated with, and a
// CURVE server is never bound without its handler.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <vector>

#include "protocol/identity_key.h"
#include "protocol/zmq_transport.h"

namespace orch::protocol {
namespace {

using Kind = TransportEvent::Kind;
using namespace std::chrono_literals;

SecretIdentity Key(const std::string& name, const std::string& role) {
  return *GenerateIdentity(name, role);
}

CurveClientKeys ClientKeys(const SecretIdentity& server, const SecretIdentity& client) {
  return {server.identity.curve_public, client.identity.curve_public, client.curve_secret};
}

// Every event the server gets within `within`.
std::vector<TransportEvent> Drain(ZmqTransport& server, std::chrono::milliseconds within) {
  std::vector<TransportEvent> events;
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    (void)server.Wait(20ms);
    while (auto event = server.Receive()) events.push_back(std::move(*event));
  }
  return events;
}

class ZmqCurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CurveServerKeys keys{coordinator_.curve_secret,
                         {{agent_.identity.curve_public, agent_.identity.name}}};
    Result<std::unique_ptr<ZmqTransport>> server =
        BindZmqServer(context_, "tcp://127.0.0.1:*", keys);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  SecretIdentity coordinator_ = Key("coordinator", "coordinator");
  SecretIdentity agent_ = Key("agent-1", "agent");
  ZmqContext context_;
  ZmqContext client_context_;  // clients in their own context, as in their own process
  std::unique_ptr<ZmqTransport> server_;
};

TEST_F(ZmqCurveTest, AnAllowedKeyGetsThroughAndEveryEventNamesIt) {
  auto client = ConnectZmqClient(client_context_, server_->endpoint(), "agent-1",
                                 ClientKeys(coordinator_, agent_));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE((*client)->Send(kServerPeer, "hello").ok());
  std::vector<TransportEvent> events;
  for (int i = 0; i < 100 && events.size() < 2; ++i) {
    std::vector<TransportEvent> more = Drain(*server_, 50ms);
    events.insert(events.end(), more.begin(), more.end());
  }
  EXPECT_THAT(events,
              ::testing::ElementsAre(TransportEvent{Kind::kConnected, "agent-1", "", "agent-1"},
                                     TransportEvent{Kind::kFrame, "agent-1", "hello", "agent-1"}));
  ASSERT_TRUE(server_->Send("agent-1", "welcome").ok());
  ASSERT_TRUE((*client)->Wait(5s));
  EXPECT_EQ((*client)->Receive()->frame, "welcome");
}

TEST_F(ZmqCurveTest, AnUnknownKeyIsRefused) {
  SecretIdentity stranger = Key("stranger", "agent");
  auto client = ConnectZmqClient(client_context_, server_->endpoint(), "agent-1",
                                 ClientKeys(coordinator_, stranger));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(kServerPeer, "let me in").ok());
  EXPECT_THAT(Drain(*server_, 500ms), ::testing::IsEmpty());
}

TEST_F(ZmqCurveTest, APlainClientIsRefused) {
  auto client = ConnectZmqClient(client_context_, server_->endpoint(), "agent-1");
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(kServerPeer, "no keys").ok());
  EXPECT_THAT(Drain(*server_, 500ms), ::testing::IsEmpty());
}

TEST_F(ZmqCurveTest, AClientThatDoesNotKnowTheServersKeyGetsNowhere) {
  SecretIdentity impostor_server = Key("fake", "coordinator");
  auto client = ConnectZmqClient(client_context_, server_->endpoint(), "agent-1",
                                 ClientKeys(impostor_server, agent_));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(kServerPeer, "hello").ok());
  EXPECT_THAT(Drain(*server_, 500ms), ::testing::IsEmpty());
}

// The handler must run before the socket binds; when it cannot start (another
// one holds the context's ZAP endpoint) no CURVE server is made at all.
TEST_F(ZmqCurveTest, NoCurveServerIsBoundWithoutItsOwnHandler) {
  CurveServerKeys keys{coordinator_.curve_secret, {}};
  Result<std::unique_ptr<ZmqTransport>> second = BindZmqServer(context_, "tcp://127.0.0.1:*", keys);
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), ::testing::HasSubstr("ZAP handler"));
}

// Receives on a client until a kRefused event comes (true) or `within` passes.
std::optional<TransportEvent> AwaitRefusal(ZmqTransport& client, std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    (void)client.Wait(20ms);
    while (auto event = client.Receive()) {
      if (event->kind == Kind::kRefused) return event;
    }
  }
  return std::nullopt;
}

// A client whose key is not admitted is told so (once), keeps trying with backoff, and
// gets through as soon as the server admits its key, without a new transport. The
// server reports the refusal once per address and key, and counts every one.
TEST(ZmqCurveRefusalTest, ARefusedClientIsToldOnceAndGetsThroughOnceItsKeyIsAdmitted) {
  SecretIdentity coordinator = Key("coordinator", "coordinator");
  SecretIdentity late = Key("agent-9", "agent");
  std::mutex mutex;
  std::vector<RefusedHandshake> reported;
  CurveServerKeys keys{coordinator.curve_secret, {}, [&](const RefusedHandshake& refused) {
                         std::lock_guard lock(mutex);
                         reported.push_back(refused);
                       }};
  ZmqContext server_context, client_context;
  auto server = BindZmqServer(server_context, "tcp://127.0.0.1:*", keys);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto client = ConnectZmqClient(client_context, (*server)->endpoint(), "agent-9",
                                 ClientKeys(coordinator, late));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(kServerPeer, "hello").ok());
  std::optional<TransportEvent> refused = AwaitRefusal(**client, 5s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->peer, kServerPeer);
  EXPECT_THAT(refused->frame, ::testing::HasSubstr("refused this client's key (ZAP status 400)"));
  EXPECT_THAT((*client)->LinkProblem(), ::testing::HasSubstr("refused this client's key"));
  // The client connects again after 1 s (then 2 s): a second refusal, not reported again
  // by either side.
  auto second = std::chrono::steady_clock::now() + 10s;
  while ((*server)->refused_handshakes() < 2 && std::chrono::steady_clock::now() < second) {
    (void)(*client)->Send(kServerPeer, "hello");
    EXPECT_FALSE(AwaitRefusal(**client, 100ms).has_value()) << "told once per streak";
    (void)Drain(**server, 100ms);
  }
  EXPECT_GE((*server)->refused_handshakes(), 2u);
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_EQ(reported[0].address, "127.0.0.1");
    EXPECT_EQ(reported[0].key, late.identity.curve_public);
    EXPECT_EQ(reported[0].reason, "unknown key");
  }
  (*server)->SetAllowedKeys({{late.identity.curve_public, "agent-9"}});
  bool through = false;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!through && std::chrono::steady_clock::now() < deadline) {
    (void)(*client)->Send(kServerPeer, "hello");
    for (const TransportEvent& event : Drain(**server, 200ms)) {
      through = through || (event.kind == Kind::kFrame && event.user == "agent-9");
    }
  }
  EXPECT_TRUE(through) << "admitted without a new client transport";
  // The client learns it was admitted from its socket monitor, as it next polls.
  auto admitted = std::chrono::steady_clock::now() + 5s;
  while (!(*client)->LinkProblem().empty() && std::chrono::steady_clock::now() < admitted) {
    (void)(*client)->Wait(20ms);
    while ((*client)->Receive()) {
    }
  }
  EXPECT_EQ((*client)->LinkProblem(), "");
}

TEST(ZmqCurveRefusalTest, AClientWithoutKeysIsToldTheServerUsesKeys) {
  SecretIdentity coordinator = Key("coordinator", "coordinator");
  ZmqContext server_context, client_context;
  auto server = BindZmqServer(server_context, "tcp://127.0.0.1:*",
                              CurveServerKeys{coordinator.curve_secret, {}});
  ASSERT_TRUE(server.ok());
  auto client = ConnectZmqClient(client_context, (*server)->endpoint(), "cli-1");
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(kServerPeer, "status?").ok());
  std::optional<TransportEvent> refused = AwaitRefusal(**client, 5s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_THAT(refused->frame,
              ::testing::HasSubstr("uses keys (CurveZMQ) and this client gave none"));
}

TEST(ZmqCurveRefusalTest, NothingListeningIsToldApartFromARefusal) {
  std::string endpoint;
  {
    ZmqContext gone;
    auto server = BindZmqServer(gone, "tcp://127.0.0.1:*");
    ASSERT_TRUE(server.ok());
    endpoint = (*server)->endpoint();
  }
  ZmqContext client_context;
  auto client = ConnectZmqClient(client_context, endpoint, "cli-1");
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(kServerPeer, "status?").ok());
  std::string problem;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (problem.find("nothing listens") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    EXPECT_FALSE(AwaitRefusal(**client, 100ms).has_value());
    problem = (*client)->LinkProblem();
  }
  EXPECT_EQ(problem, "nothing listens at " + endpoint + " (connection refused)");
}

}  // namespace
}  // namespace orch::protocol
