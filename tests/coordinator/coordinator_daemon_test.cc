// The daemon on a real Boost.Asio loop and real ZeroMQ sockets (inproc), polled
// with a bounded number of short loop turns; no sleeps.
#include "coordinator/coordinator_daemon.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
// clang-format on

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocol/codec.h"
#include "protocol/zmq_transport.h"
#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::SizeIs;
using namespace testing;  // NOLINT: the fixture's builders

// Turns the loop until `client` has a decodable message, at most ~5 s.
std::optional<protocol::Message> AwaitMessage(boost::asio::io_context& io,
                                              protocol::ZmqTransport& client) {
  for (int turn = 0; turn < 500; ++turn) {
    io.run_for(std::chrono::milliseconds(5));
    if (io.stopped()) io.restart();
    if (!client.Wait(std::chrono::milliseconds(5))) continue;
    while (auto event = client.Receive()) {
      if (event->kind != protocol::TransportEvent::Kind::kFrame) continue;
      Result<protocol::Message> m = protocol::Decode(event->frame);
      if (m.ok()) return std::move(m).value();
    }
  }
  return std::nullopt;
}

TEST(CoordinatorDaemonTest, WelcomesAnAgentAndAssignsItAJobOverZeroMq) {
  protocol::ZmqContext zmq;
  auto server = protocol::BindZmqServer(zmq, "inproc://coordinator-daemon-test");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto store = store::MakeMemoryStore();
  auto log = NullLogger();
  boost::asio::io_context io;
  CoordinatorDaemon daemon(io, **server, *store, TestOptions(), *log);
  ASSERT_TRUE(daemon.Start().ok());

  auto cli = protocol::ConnectZmqClient(zmq, "inproc://coordinator-daemon-test", "cli-1");
  ASSERT_TRUE(cli.ok());
  ASSERT_TRUE(
      (*cli)
          ->Send(protocol::kServerPeer, protocol::Encode(protocol::Submit{PlanJson(SmallSpec())}))
          .ok());
  auto reply = AwaitMessage(io, **cli);
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(std::get<protocol::CommandReply>(*reply).ok);

  auto agent = protocol::ConnectZmqClient(zmq, "inproc://coordinator-daemon-test", "agent-1");
  ASSERT_TRUE(agent.ok());
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  ASSERT_TRUE((*agent)->Send(protocol::kServerPeer, protocol::Encode(hello)).ok());
  auto welcome = AwaitMessage(io, **agent);
  ASSERT_TRUE(welcome.has_value());
  EXPECT_TRUE(std::holds_alternative<protocol::Welcome>(*welcome));
  auto assign = AwaitMessage(io, **agent);
  ASSERT_TRUE(assign.has_value());
  EXPECT_TRUE(std::holds_alternative<protocol::Assign>(*assign));
  daemon.Stop();
  io.run_for(std::chrono::milliseconds(10));
}

}  // namespace
}  // namespace orch::coordinator
