// What the ZeroMQ server adds to the Transport contract: it survives peers that
// do not speak the wire rules of protocol/zmq_transport.h.
#include "protocol/zmq_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "protocol/messages.h"

namespace orch::protocol {
namespace {

using Kind = TransportEvent::Kind;

// Polls `server` (bounded) until `count` events arrived.
std::vector<TransportEvent> Collect(ZmqTransport& server, std::size_t count) {
  std::vector<TransportEvent> events;
  for (int round = 0; round < 500 && events.size() < count; ++round) {
    (void)server.Wait(std::chrono::milliseconds(10));
    while (auto event = server.Receive()) events.push_back(std::move(*event));
  }
  return events;
}

class ZmqServerTest : public ::testing::Test {
 protected:
  // A DEALER that writes raw ZeroMQ messages to the server, under a routing id
  // of its choosing when `id` is not empty.
  zmq::socket_t RawPeer(const std::string& id = "") {
    zmq::socket_t peer(raw_context_, zmq::socket_type::dealer);
    if (!id.empty()) peer.set(zmq::sockopt::routing_id, id);
    peer.set(zmq::sockopt::linger, 0);
    peer.connect(server_->endpoint());
    return peer;
  }

  // Sends `parts` as one message.
  static void Send(zmq::socket_t& peer, std::vector<std::string> parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto flags = i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
      ASSERT_TRUE(peer.send(zmq::buffer(parts[i]), flags));
    }
  }

  zmq::context_t raw_context_;
  ZmqContext context_;
  std::unique_ptr<ZmqTransport> server_ = BindZmqServer(context_, "tcp://127.0.0.1:*").value();
};

TEST_F(ZmqServerTest, DropsMessagesOfTheWrongShapeAndKeepsServing) {
  zmq::socket_t peer = RawPeer();
  Send(peer, {"X"});
  Send(peer, {"F", "raw"});               // frame part missing
  Send(peer, {"F", "raw", "a", "b"});     // one part too many
  Send(peer, {"F", "raw~00", "forged"});  // a name no client may have
  Send(peer, {"F", "raw", "good"});
  Send(peer, {"F", "other", "second name"});  // a connection keeps its first name
  EXPECT_THAT(Collect(*server_, 2),
              ::testing::ElementsAre(TransportEvent{Kind::kConnected, "raw", ""},
                                     TransportEvent{Kind::kFrame, "raw", "good"}));
  EXPECT_EQ(server_->dropped(), 5u);
}

TEST_F(ZmqServerTest, CutsOffAPeerSendingAnOversizeFrame) {
  zmq::socket_t abuser = RawPeer();
  zmq::socket_t polite = RawPeer();
  std::string huge(kMaxFrameBytes + 1, 'x');
  Send(abuser, {"F", "abuser", huge});
  Send(polite, {"F", "polite", "fine"});
  std::vector<TransportEvent> events = Collect(*server_, 2);
  for (const TransportEvent& event : events) EXPECT_NE(event.frame.size(), huge.size());
  EXPECT_THAT(events, ::testing::Contains(TransportEvent{Kind::kFrame, "polite", "fine"}));
}

// A routing id chosen by the client is only a name in a message: it neither
// takes over nor blocks the connection that holds the name.
TEST_F(ZmqServerTest, AChosenRoutingIdTakesNothingOver) {
  Result<std::unique_ptr<ZmqTransport>> agent =
      ConnectZmqClient(context_, server_->endpoint(), "agent-1");
  ASSERT_TRUE(agent.ok());
  ASSERT_EQ(Collect(*server_, 1).size(), 1u);
  zmq::socket_t impostor = RawPeer("agent-1");
  Send(impostor, {"F", "agent-1", "forged"});
  std::vector<TransportEvent> events = Collect(*server_, 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[1].peer, "agent-1");
  ASSERT_TRUE(server_->Send("agent-1", "for the agent").ok());
  // Collect, not one Wait + Receive: a wake-up may carry no event (1 run in
  // ~10 under ASan saw Receive() empty after Wait() returned true).
  EXPECT_THAT(Collect(**agent, 1), ::testing::ElementsAre(TransportEvent{
                                       Kind::kFrame, std::string(kServerPeer), "for the agent"}));
}

// A holder that vanished without "D" (killed) leaves its name to the next
// connection that uses it, as soon as ZeroMQ has seen its connection close.
TEST_F(ZmqServerTest, ACrashedHoldersIdGoesToItsNextConnection) {
  {
    zmq::socket_t crashed = RawPeer();
    Send(crashed, {"C", "agent-1"});
    ASSERT_EQ(Collect(*server_, 1),
              (std::vector<TransportEvent>{{Kind::kConnected, "agent-1", ""}}));
  }  // closed with linger 0: no "D"
  Result<std::unique_ptr<ZmqTransport>> restarted =
      ConnectZmqClient(context_, server_->endpoint(), "agent-1");
  ASSERT_TRUE(restarted.ok());
  // How soon ZeroMQ sees the closed connection depends on the machine's load: the bound
  // is time (10 s), not a number of rounds, which a loaded machine ran through first.
  bool took_over = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int round = 0; round < 1000 && !took_over && std::chrono::steady_clock::now() < deadline;
       ++round) {
    ASSERT_TRUE((*restarted)->Send(kServerPeer, "hello").ok());
    for (const TransportEvent& event : Collect(*server_, 1)) {
      took_over = took_over || (event.kind == Kind::kFrame && event.peer == "agent-1");
    }
    if (!took_over) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(took_over);
}

TEST(ZmqTransportTest, ReportsABadEndpointAsAStatus) {
  ZmqContext context;
  auto server = BindZmqServer(context, "nonsense://");
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), ::testing::HasSubstr("bind nonsense://"));
}

}  // namespace
}  // namespace orch::protocol
