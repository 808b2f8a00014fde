// What the ZeroMQ server adds to the Transport contract: it survives peers that
// do not speak the wire rules of protocol/zmq_transport.h.
#include "protocol/zmq_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
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
  // A DEALER that writes raw ZeroMQ messages to the server.
  zmq::socket_t RawPeer(const std::string& id) {
    zmq::socket_t peer(raw_context_, zmq::socket_type::dealer);
    peer.set(zmq::sockopt::routing_id, id);
    peer.set(zmq::sockopt::linger, 0);
    peer.connect(server_->endpoint());
    return peer;
  }

  zmq::context_t raw_context_;
  ZmqContext context_;
  std::unique_ptr<ZmqTransport> server_ =
      BindZmqServer(context_, "tcp://127.0.0.1:*").value();
};

TEST_F(ZmqServerTest, DropsMessagesOfTheWrongShapeAndKeepsServing) {
  zmq::socket_t peer = RawPeer("raw");
  ASSERT_TRUE(peer.send(zmq::str_buffer("X"), zmq::send_flags::none));
  ASSERT_TRUE(peer.send(zmq::str_buffer("F"),
                        zmq::send_flags::none));  // frame part missing
  ASSERT_TRUE(peer.send(zmq::str_buffer("F"),
                        zmq::send_flags::sndmore));  // one part too many
  ASSERT_TRUE(peer.send(zmq::str_buffer("a"), zmq::send_flags::sndmore));
  ASSERT_TRUE(peer.send(zmq::str_buffer("b"), zmq::send_flags::none));
  ASSERT_TRUE(peer.send(zmq::str_buffer("F"), zmq::send_flags::sndmore));
  ASSERT_TRUE(peer.send(zmq::str_buffer("good"), zmq::send_flags::none));
  EXPECT_THAT(
      Collect(*server_, 2),
      ::testing::ElementsAre(TransportEvent{Kind::kConnected, "raw", ""},
                             TransportEvent{Kind::kFrame, "raw", "good"}));
  EXPECT_EQ(server_->dropped(), 3u);
}

TEST_F(ZmqServerTest, CutsOffAPeerSendingAnOversizeFrame) {
  zmq::socket_t abuser = RawPeer("abuser");
  zmq::socket_t polite = RawPeer("polite");
  std::string huge(kMaxFrameBytes + 1, 'x');
  ASSERT_TRUE(abuser.send(zmq::str_buffer("F"), zmq::send_flags::sndmore));
  ASSERT_TRUE(abuser.send(zmq::buffer(huge), zmq::send_flags::none));
  ASSERT_TRUE(polite.send(zmq::str_buffer("F"), zmq::send_flags::sndmore));
  ASSERT_TRUE(polite.send(zmq::str_buffer("fine"), zmq::send_flags::none));
  std::vector<TransportEvent> events = Collect(*server_, 2);
  for (const TransportEvent& event : events)
    EXPECT_NE(event.frame.size(), huge.size());
  EXPECT_THAT(events, ::testing::Contains(
                          TransportEvent{Kind::kFrame, "polite", "fine"}));
}

TEST(ZmqTransportTest, RejectsClientIdsZeroMqCannotRoute) {
  ZmqContext context;
  EXPECT_EQ(ConnectZmqClient(context, "inproc://x", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ConnectZmqClient(context, "inproc://x", std::string(256, 'a'))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(ZmqTransportTest, ReportsABadEndpointAsAStatus) {
  ZmqContext context;
  auto server = BindZmqServer(context, "nonsense://");
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(),
              ::testing::HasSubstr("bind nonsense://"));
}


TEST_F(ZmqServerTest, ANewConnectionUnderAKnownRoutingIdIsReportedAsConnected) {
  Result<std::unique_ptr<ZmqTransport>> first =
      ConnectZmqClient(context_, server_->endpoint(), "agent-1");
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(Collect(*server_, 1).size(), 1u);
  Result<std::unique_ptr<ZmqTransport>> second =
      ConnectZmqClient(context_, server_->endpoint(), "agent-1");
  ASSERT_TRUE(second.ok());
  EXPECT_THAT(Collect(*server_, 1),
              ::testing::ElementsAre(TransportEvent{Kind::kConnected, "agent-1", ""}));
}

}  // namespace
}  // namespace orch::protocol
