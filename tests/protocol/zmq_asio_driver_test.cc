// ZeroMQ transports driven from one Boost.Asio io_context, as the daemons run
// them.
#include "protocol/zmq_asio_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio/io_context.hpp>
// clang-format on
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "protocol/codec.h"
#include "protocol/zmq_transport.h"
#include "tests/protocol/message_builders.h"

namespace orch::protocol {
namespace {

using Kind = TransportEvent::Kind;

class ZmqAsioDriverTest : public ::testing::TestWithParam<std::string> {};

// Hello -> Welcome -> several DigestChunks -> Acks, all on one loop.
TEST_P(ZmqAsioDriverTest, RunsAConversationOnOneEventLoop) {
  constexpr int kChunks = 50;
  ZmqContext context;
  auto server = BindZmqServer(context, GetParam()).value();
  auto client = ConnectZmqClient(context, server->endpoint(), "gpu-box-3").value();
  boost::asio::io_context io;

  std::vector<std::string> server_log;
  std::optional<ZmqAsioDriver> server_loop;
  server_loop.emplace(io, *server, [&](TransportEvent event) {
    if (event.kind != Kind::kFrame) {
      server_log.push_back(event.kind == Kind::kConnected ? "connected" : "disconnected");
      return;
    }
    Result<Message> message = Decode(event.frame);
    ASSERT_TRUE(message.ok()) << message.status().ToString();
    server_log.push_back(MessageName(*message));
    if (std::holds_alternative<Hello>(*message)) {
      Welcome welcome{kProtocolVersion, "coord", std::chrono::seconds(5)};
      ASSERT_TRUE(server_loop->Send(event.peer, Encode(welcome)).ok());
    } else if (auto* chunk = std::get_if<DigestChunk>(&*message)) {
      ASSERT_TRUE(server_loop->Send(event.peer, Encode(Ack{chunk->run_id, chunk->seq})).ok());
    }
  });

  int acks = 0;
  std::optional<ZmqAsioDriver> client_loop;
  client_loop.emplace(io, *client, [&](TransportEvent event) {
    Result<Message> message = Decode(event.frame);
    ASSERT_TRUE(message.ok()) << message.status().ToString();
    if (std::holds_alternative<Welcome>(*message)) {
      for (int seq = 0; seq < kChunks; ++seq) {
        DigestChunk chunk{"run-1",
                          static_cast<std::uint64_t>(seq),
                          {{static_cast<std::uint64_t>(seq), std::string(300, 'd')}}};
        ASSERT_TRUE(client_loop->Send(kServerPeer, Encode(chunk)).ok());
      }
    } else if (std::holds_alternative<Ack>(*message) && ++acks == kChunks) {
      io.stop();
    }
  });

  server_loop->Start();
  client_loop->Start();
  ASSERT_TRUE(client_loop->Send(kServerPeer, Encode(testing::ValidHello())).ok());
  io.run_for(std::chrono::seconds(10));

  EXPECT_EQ(acks, kChunks);
  ASSERT_EQ(server_log.size(), 2u + kChunks);
  EXPECT_EQ(server_log[0], "connected");
  EXPECT_EQ(server_log[1], "hello");
  EXPECT_EQ(server_log.back(), "digestChunk");
  client_loop.reset();
  server_loop.reset();
}

TEST_P(ZmqAsioDriverTest, DestroyingADriverWithWorkQueuedIsSafe) {
  ZmqContext context;
  auto server = BindZmqServer(context, GetParam()).value();
  auto client = ConnectZmqClient(context, server->endpoint(), "a").value();
  boost::asio::io_context io;
  int events = 0;
  {
    ZmqAsioDriver driver(io, *server, [&](TransportEvent) { ++events; });
    driver.Start();
  }
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(events, 0);
}

INSTANTIATE_TEST_SUITE_P(Endpoints, ZmqAsioDriverTest,
                         ::testing::Values("inproc://asio-driver", "tcp://127.0.0.1:*"),
                         [](const auto& info) {
                           return info.param.starts_with("tcp") ? "Tcp" : "Inproc";
                         });

}  // namespace
}  // namespace orch::protocol
