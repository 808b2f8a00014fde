// CurveZMQ with the ZAP handler over real sockets on 127.0.0.1: only clients with an
// allowed key get through, every event names the key it authenticated with, and a
// CURVE server is never bound without its handler.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace orch::protocol
