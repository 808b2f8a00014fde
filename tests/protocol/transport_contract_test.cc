// The Transport contract (protocol/transport.h), run against the in-memory
// network and against ZeroMQ over inproc:// and tcp://127.0.0.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "protocol/codec.h"
#include "protocol/memory_network.h"
#include "protocol/transport.h"
#include "protocol/zmq_transport.h"
#include "tests/protocol/message_builders.h"

namespace orch::protocol {
namespace {

using Kind = TransportEvent::Kind;

// Makes a server and its clients, and lets queued traffic move.
class TransportHarness {
 public:
  virtual ~TransportHarness() = default;
  virtual std::unique_ptr<Transport> Server() = 0;
  virtual std::unique_ptr<Transport> Client(const std::string& id) = 0;
  // How making a client with `id` fails (OK when it does not).
  virtual Status TryClient(const std::string& id) = 0;
  // Gives `receiver` a chance to get what was sent: one DeliverAll, or a short
  // poll.
  virtual void Settle(Transport& receiver) = 0;
};

class MemoryHarness final : public TransportHarness {
 public:
  std::unique_ptr<Transport> Server() override { return Unwrap(network_.Bind("coordinator")); }
  std::unique_ptr<Transport> Client(const std::string& id) override {
    return Unwrap(network_.Connect("coordinator", id));
  }
  Status TryClient(const std::string& id) override {
    return network_.Connect("coordinator", id).status();
  }
  void Settle(Transport&) override { network_.DeliverAll(); }

 private:
  static std::unique_ptr<Transport> Unwrap(Result<std::unique_ptr<Transport>> r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }
  MemoryNetwork network_;
};

class ZmqHarness final : public TransportHarness {
 public:
  explicit ZmqHarness(std::string bind) : bind_(std::move(bind)) {}
  std::unique_ptr<Transport> Server() override {
    auto server = BindZmqServer(context_, bind_);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return nullptr;
    endpoint_ = (*server)->endpoint();
    return std::move(server).value();
  }
  std::unique_ptr<Transport> Client(const std::string& id) override {
    auto client = ConnectZmqClient(context_, endpoint_, id);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }
  Status TryClient(const std::string& id) override {
    return ConnectZmqClient(context_, endpoint_, id).status();
  }
  void Settle(Transport& receiver) override {
    (void)static_cast<ZmqTransport&>(receiver).Wait(std::chrono::milliseconds(10));
  }

 private:
  ZmqContext context_;  // declared first: outlives nothing but must outlive the
                        // sockets
  std::string bind_;
  std::string endpoint_;
};

struct HarnessCase {
  std::string name;
  std::function<std::unique_ptr<TransportHarness>()> make;
  friend void PrintTo(const HarnessCase& c, std::ostream* out) { *out << c.name; }  // not bytes
};

class TransportContractTest : public ::testing::TestWithParam<HarnessCase> {
 protected:
  void SetUp() override { harness_ = GetParam().make(); }

  // Receives until `count` events arrived or a bounded number of rounds passed.
  std::vector<TransportEvent> Collect(Transport& receiver, std::size_t count) {
    std::vector<TransportEvent> events;
    for (int round = 0; round < 500 && events.size() < count; ++round) {
      harness_->Settle(receiver);
      while (auto event = receiver.Receive()) events.push_back(std::move(*event));
    }
    return events;
  }

  // A server with one client whose connection the server has seen.
  void ConnectOne(std::unique_ptr<Transport>& server, std::unique_ptr<Transport>& client,
                  const std::string& id) {
    if (!server) server = harness_->Server();
    client = harness_->Client(id);
    ASSERT_THAT(Collect(*server, 1),
                ::testing::ElementsAre(TransportEvent{Kind::kConnected, id, ""}));
  }

  std::unique_ptr<TransportHarness> harness_;
};

TEST_P(TransportContractTest, ServerSeesConnectThenFramesInSendOrder) {
  auto server = harness_->Server();
  auto client = harness_->Client("agent-1");
  for (std::string frame : {"one", "two", "three"}) {
    ASSERT_TRUE(client->Send(kServerPeer, frame).ok());
  }
  EXPECT_THAT(Collect(*server, 4),
              ::testing::ElementsAre(TransportEvent{Kind::kConnected, "agent-1", ""},
                                     TransportEvent{Kind::kFrame, "agent-1", "one"},
                                     TransportEvent{Kind::kFrame, "agent-1", "two"},
                                     TransportEvent{Kind::kFrame, "agent-1", "three"}));
}

TEST_P(TransportContractTest, ServerRepliesToEachClientByPeerId) {
  std::unique_ptr<Transport> server, a, b;
  ConnectOne(server, a, "agent-a");
  ConnectOne(server, b, "agent-b");
  ASSERT_TRUE(server->Send("agent-b", "for b").ok());
  ASSERT_TRUE(server->Send("agent-a", "for a").ok());
  EXPECT_THAT(Collect(*a, 1), ::testing::ElementsAre(
                                  TransportEvent{Kind::kFrame, std::string(kServerPeer), "for a"}));
  EXPECT_THAT(Collect(*b, 1), ::testing::ElementsAre(
                                  TransportEvent{Kind::kFrame, std::string(kServerPeer), "for b"}));
}

TEST_P(TransportContractTest, SendToAPeerThatNeverConnectedIsUnavailable) {
  auto server = harness_->Server();
  Status sent = server->Send("nobody", "x");
  EXPECT_EQ(sent.code(), StatusCode::kUnavailable) << sent.ToString();
}

TEST_P(TransportContractTest, ClientSendsOnlyToTheServer) {
  auto server = harness_->Server();
  auto client = harness_->Client("agent-1");
  EXPECT_EQ(client->Send("agent-2", "x").code(), StatusCode::kInvalidArgument);
}

TEST_P(TransportContractTest, DestroyedClientIsReportedAndNoLongerAddressable) {
  std::unique_ptr<Transport> server, client;
  ConnectOne(server, client, "agent-1");
  ASSERT_TRUE(client->Send(kServerPeer, "last words").ok());
  client.reset();
  EXPECT_THAT(Collect(*server, 2),
              ::testing::ElementsAre(TransportEvent{Kind::kFrame, "agent-1", "last words"},
                                     TransportEvent{Kind::kDisconnected, "agent-1", ""}));
  EXPECT_EQ(server->Send("agent-1", "x").code(), StatusCode::kUnavailable);
}

TEST_P(TransportContractTest, ASecondClientUnderAHeldIdIsKeptApartUntilTheFirstIsGone) {
  std::unique_ptr<Transport> server, first;
  ConnectOne(server, first, "agent-1");
  std::unique_ptr<Transport> second = harness_->Client("agent-1");
  ASSERT_TRUE(second->Send(kServerPeer, "it is me").ok());
  std::vector<TransportEvent> events = Collect(*server, 2);
  ASSERT_EQ(events.size(), 2u);
  std::string alias = events[0].peer;
  EXPECT_THAT(alias, ::testing::StartsWith("agent-1~"));
  EXPECT_THAT(events, ::testing::ElementsAre(TransportEvent{Kind::kConnected, alias, ""},
                                             TransportEvent{Kind::kFrame, alias, "it is me"}));

  // What is meant for the id reaches the first client only.
  ASSERT_TRUE(server->Send("agent-1", "for the first").ok());
  ASSERT_TRUE(server->Send(alias, "for the second").ok());
  EXPECT_THAT(Collect(*first, 1), ::testing::ElementsAre(TransportEvent{
                                      Kind::kFrame, std::string(kServerPeer), "for the first"}));
  EXPECT_THAT(Collect(*second, 1), ::testing::ElementsAre(TransportEvent{
                                       Kind::kFrame, std::string(kServerPeer), "for the second"}));

  // Once the first is gone, the second's next frame gets it the id.
  first.reset();
  EXPECT_THAT(Collect(*server, 1),
              ::testing::ElementsAre(TransportEvent{Kind::kDisconnected, "agent-1", ""}));
  ASSERT_TRUE(second->Send(kServerPeer, "still me").ok());
  EXPECT_THAT(Collect(*server, 3),
              ::testing::ElementsAre(TransportEvent{Kind::kDisconnected, alias, ""},
                                     TransportEvent{Kind::kConnected, "agent-1", ""},
                                     TransportEvent{Kind::kFrame, "agent-1", "still me"}));
  ASSERT_TRUE(server->Send("agent-1", "yours now").ok());
  EXPECT_THAT(Collect(*second, 1), ::testing::ElementsAre(TransportEvent{
                                       Kind::kFrame, std::string(kServerPeer), "yours now"}));
}

TEST_P(TransportContractTest, ClientIdsAreLimitedToWhatAnAliasCannotBe) {
  auto server = harness_->Server();
  for (const std::string& id :
       {std::string(), std::string("agent-1~00"), std::string("a b"), std::string(201, 'a')}) {
    EXPECT_EQ(harness_->TryClient(id).code(), StatusCode::kInvalidArgument) << id;
  }
}

TEST_P(TransportContractTest, BinaryAndLargeFramesArriveIntact) {
  std::unique_ptr<Transport> server, client;
  ConnectOne(server, client, "agent-1");
  std::string binary("\0\xff\0 frame \0", 11);
  std::string large(1 << 20, 'x');
  for (std::size_t i = 0; i < large.size(); i += 4093) large[i] = static_cast<char>(i);
  ASSERT_TRUE(client->Send(kServerPeer, binary).ok());
  ASSERT_TRUE(server->Send("agent-1", large).ok());
  EXPECT_THAT(Collect(*server, 1),
              ::testing::ElementsAre(TransportEvent{Kind::kFrame, "agent-1", binary}));
  auto received = Collect(*client, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_TRUE(received[0].frame == large);
}

// A frame the receiver would drop (kMaxFrameBytes) is refused at Send, naming both sizes,
// instead of leaving the sender waiting for an answer that never comes; a frame of
// exactly the limit still goes.
TEST_P(TransportContractTest, AFrameOverTheLimitIsRefusedAtSendNamingItsSize) {
  std::unique_ptr<Transport> server, client;
  ConnectOne(server, client, "agent-1");
  std::string over(kMaxFrameBytes + 1, 'x');
  for (Status sent : {client->Send(kServerPeer, over), server->Send("agent-1", over)}) {
    EXPECT_EQ(sent.code(), StatusCode::kInvalidArgument) << sent.ToString();
    EXPECT_THAT(
        sent.message(),
        ::testing::AllOf(::testing::HasSubstr("message too large"),
                         ::testing::HasSubstr(std::to_string(kMaxFrameBytes + 1) + " bytes"),
                         ::testing::HasSubstr("limit of " + std::to_string(kMaxFrameBytes))));
  }
  std::string limit(kMaxFrameBytes, 'y');
  ASSERT_TRUE(client->Send(kServerPeer, limit).ok());
  auto received = Collect(*server, 1);
  ASSERT_EQ(received.size(), 1u) << "only the frame within the limit arrives";
  EXPECT_EQ(received[0].frame.size(), kMaxFrameBytes);
}

TEST_P(TransportContractTest, CarriesCodecFramesBothWays) {
  std::unique_ptr<Transport> server, client;
  ConnectOne(server, client, "gpu-box-3");
  ASSERT_TRUE(client->Send(kServerPeer, Encode(testing::ValidHello())).ok());
  auto hello = Collect(*server, 1);
  ASSERT_EQ(hello.size(), 1u);
  Result<Message> decoded = Decode(hello[0].frame);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, Message(testing::ValidHello()));

  ASSERT_TRUE(server->Send("gpu-box-3", Encode(testing::ValidAssign())).ok());
  auto assign = Collect(*client, 1);
  ASSERT_EQ(assign.size(), 1u);
  decoded = Decode(assign[0].frame);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, Message(testing::ValidAssign()));
}

TEST_P(TransportContractTest, ReceiveOnAnIdleTransportReturnsNothing) {
  auto server = harness_->Server();
  harness_->Settle(*server);
  EXPECT_FALSE(server->Receive().has_value());
}

int inproc_counter = 0;

INSTANTIATE_TEST_SUITE_P(
    Transports, TransportContractTest,
    ::testing::Values(
        HarnessCase{"Memory", [] { return std::make_unique<MemoryHarness>(); }},
        HarnessCase{"ZmqInproc",
                    [] {
                      return std::make_unique<ZmqHarness>("inproc://contract-" +
                                                          std::to_string(++inproc_counter));
                    }},
        HarnessCase{"ZmqTcp", [] { return std::make_unique<ZmqHarness>("tcp://127.0.0.1:*"); }}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace orch::protocol
