// The HTTP listener over a real socket on 127.0.0.1: routes, methods, the viewer token,
// and the listen-address rules the daemons' configs share.
#include "telemetry/http_listener.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
// clang-format on

#include <gtest/gtest.h>

#include <thread>

namespace orch::telemetry {
namespace {

using tcp = boost::asio::ip::tcp;

// Sends `request` to 127.0.0.1:port on a blocking socket of its own io_context and
// returns everything the server wrote before it closed the connection.
std::string Exchange(std::uint16_t port, const std::string& request) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string reply;
  boost::system::error_code error;
  char buffer[4096];
  for (int i = 0; i < 10000; ++i) {
    std::size_t n = socket.read_some(boost::asio::buffer(buffer), error);
    reply.append(buffer, n);
    if (error) break;
  }
  return reply;
}

class HttpListenerTest : public ::testing::Test {
 protected:
  void Serve(std::string token) {
    Result<std::unique_ptr<HttpListener>> started = HttpListener::Start(
        io_, ListenAddress{"127.0.0.1", 0}, std::move(token), [](const HttpRequest& request) {
          if (request.target == "/metrics") return HttpReply{200, "text/plain", "orch_up 1\n"};
          return HttpReply{404, "text/plain", "no page " + request.target + "\n"};
        });
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    listener_ = std::move(started).value();
    guard_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    boost::asio::post(io_, [this] { listener_.reset(); });
    guard_.reset();
    if (thread_.joinable()) thread_.join();
  }
  std::string Get(const std::string& target, const std::string& headers = "") {
    return Exchange(listener_->port(), "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + headers +
                                           "Connection: close\r\n\r\n");
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::unique_ptr<HttpListener> listener_;
  std::thread thread_;
};

TEST_F(HttpListenerTest, AnswersGetsThroughTheHandler) {
  ASSERT_NO_FATAL_FAILURE(Serve(""));
  std::string reply = Get("/metrics");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200")) << reply;
  EXPECT_NE(reply.find("\r\n\r\norch_up 1\n"), std::string::npos) << reply;
  EXPECT_TRUE(Get("/nothing").starts_with("HTTP/1.1 404"));
  std::string post =
      Exchange(listener_->port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_TRUE(post.starts_with("HTTP/1.1 405")) << post;
}

TEST_F(HttpListenerTest, WithATokenRefusesRequestsWithoutIt) {
  ASSERT_NO_FATAL_FAILURE(Serve("s3cret"));
  EXPECT_TRUE(Get("/metrics").starts_with("HTTP/1.1 401"));
  EXPECT_TRUE(Get("/metrics", "Authorization: Bearer wrong\r\n").starts_with("HTTP/1.1 401"));
  std::string reply = Get("/metrics", "Authorization: Bearer s3cret\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200")) << reply;
}

TEST(ListenAddressTest, ParsesHostAndPort) {
  Result<ListenAddress> v4 = ParseListenAddress("127.0.0.1:9464");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 9464);
  Result<ListenAddress> v6 = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_FALSE(ParseListenAddress("127.0.0.1").ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:99999").ok());
  EXPECT_FALSE(ParseListenAddress("example.org:80").ok());
}

TEST(ListenAddressTest, ANonLoopbackAddressNeedsAToken) {
  EXPECT_TRUE(CheckViewerListen("metrics_listen", "127.0.0.1:9464", "t", false).ok());
  EXPECT_TRUE(CheckViewerListen("metrics_listen", "0.0.0.0:9464", "t", true).ok());
  Status open = CheckViewerListen("coordinator.metrics_listen", "0.0.0.0:9464",
                                  "coordinator.metrics_viewer_token_file", false);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.message().find("coordinator.metrics_listen = 0.0.0.0:9464"), std::string::npos)
      << open.message();
  EXPECT_NE(open.message().find("coordinator.metrics_viewer_token_file"), std::string::npos);
}

}  // namespace
}  // namespace orch::telemetry
