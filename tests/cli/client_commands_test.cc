// What the client commands say before and instead of waiting for a coordinator: a
// message larger than a frame is an error at once, and a plan above the coordinator's
// bound is refused before anything is sent. And what a CoordinatorClient keeps: one
// connection for many requests, a new one after a request that went unanswered.
#include "cli/client_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "coordinator/coordinator_service.h"
#include "protocol/codec.h"
#include "protocol/messages.h"
#include "protocol/zmq_transport.h"

namespace orch::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Nothing listens there: only an answer-less wait could come of sending.
ClientOptions Nowhere() { return ClientOptions{"tcp://127.0.0.1:9", 5, "", ""}; }

TEST(ClientCommandsTest, AMessageLargerThanAFrameIsAnErrorNamingTheSizes) {
  std::string plan(protocol::kMaxFrameBytes, 'x');
  Result<protocol::Message> reply = Request(Nowhere(), protocol::Submit{plan});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(reply.status().message(),
              AllOf(HasSubstr("message too large"),
                    HasSubstr("limit of " + std::to_string(protocol::kMaxFrameBytes) + " bytes")))
      << "not a wait for an answer that cannot come";
}

TEST(ClientCommandsTest, APlanAboveTheCoordinatorsBoundIsRefusedNamingBoth) {
  EXPECT_TRUE(PlanFits("big", coordinator::kMaxPlanBytes).ok());
  Status fits = PlanFits("big", coordinator::kMaxPlanBytes + 1);
  EXPECT_EQ(fits.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fits.message(),
            "the plan of experiment big is 513 MiB of JSON (" +
                std::to_string(coordinator::kMaxPlanBytes + 1) +
                " bytes), above the 512 MiB a coordinator takes: split the experiment into "
                "smaller ones (fewer workloads, cells or repeats per spec)");
}

// A server on 127.0.0.1 (a real ZeroMQ ROUTER, on its own thread) that answers each
// StatusRequest with a StatusReply naming the request's experiment, except one named
// "unanswered", which it answers only after the next request has come (too late). It
// counts the connections it saw.
class EchoServer {
 public:
  EchoServer() {
    auto bound = protocol::BindZmqServer(context_, "tcp://127.0.0.1:*");
    EXPECT_TRUE(bound.ok()) << bound.status().ToString();
    server_ = std::move(bound).value();
    endpoint_ = server_->endpoint();
    thread_ = std::thread([this] { Serve(); });
  }
  ~EchoServer() {
    stop_ = true;
    thread_.join();
    server_.reset();
  }
  const std::string& endpoint() const { return endpoint_; }
  int connections() const { return connections_.load(); }

 private:
  void Serve() {
    std::vector<std::string> held;  // peers whose "unanswered" request waits
    while (!stop_) {
      if (!server_->Wait(std::chrono::milliseconds(10))) continue;
      while (auto event = server_->Receive()) {
        if (event->kind == protocol::TransportEvent::Kind::kConnected) ++connections_;
        if (event->kind != protocol::TransportEvent::Kind::kFrame) continue;
        Result<protocol::Message> request = protocol::Decode(event->frame);
        const auto* status =
            request.ok() ? std::get_if<protocol::StatusRequest>(&*request) : nullptr;
        if (status == nullptr) continue;
        if (status->experiment == "unanswered") {
          held.push_back(event->peer);
          continue;
        }
        for (const std::string& peer : held) (void)server_->Send(peer, Reply("unanswered"));
        held.clear();
        (void)server_->Send(event->peer, Reply(status->experiment));
      }
    }
  }
  static std::string Reply(const std::string& experiment) {
    protocol::StatusReply reply;
    reply.experiments.emplace_back().experiment = experiment;
    return protocol::Encode(reply);
  }

  protocol::ZmqContext context_;
  std::unique_ptr<protocol::ZmqTransport> server_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

std::string AnsweredExperiment(const Result<protocol::StatusReply>& reply) {
  if (!reply.ok()) return "error: " + reply.status().message();
  return reply->experiments.empty() ? "no experiment" : reply->experiments[0].experiment;
}

TEST(CoordinatorClientTest, ManyRequestsShareOneConnection) {
  EchoServer server;
  CoordinatorClient client(ClientOptions{server.endpoint(), 5, "", ""});
  for (const std::string name : {"a", "b", "c", "d", "e"}) {
    EXPECT_EQ(AnsweredExperiment(RequestStatus(client, protocol::StatusRequest{name, false})),
              name);
  }
  EXPECT_EQ(server.connections(), 1);
}

// A reply that comes after its request gave up must not be taken for the next one's.
TEST(CoordinatorClientTest, AfterAnUnansweredRequestTheNextGetsItsOwnAnswerOnANewConnection) {
  EchoServer server;
  CoordinatorClient client(ClientOptions{server.endpoint(), 1, "", ""});
  Result<protocol::StatusReply> first =
      RequestStatus(client, protocol::StatusRequest{"unanswered", false});
  ASSERT_FALSE(first.ok());
  EXPECT_THAT(first.status().message(), HasSubstr("no answer from the coordinator"));
  EXPECT_EQ(AnsweredExperiment(RequestStatus(client, protocol::StatusRequest{"next", false})),
            "next");
  EXPECT_EQ(AnsweredExperiment(RequestStatus(client, protocol::StatusRequest{"after", false})),
            "after");
  EXPECT_EQ(server.connections(), 2);
}

}  // namespace
}  // namespace orch::cli
