// ClientLink, the pure part of a ZeroMQ client's connection diagnosis: what it says
// for each situation, that a refusal is reported once per streak, and when it
// connects again after a key refusal (1 s, doubling to 30 s, back to 1 s once in).
#include "protocol/client_link.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::protocol {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
constexpr const char* kEndpoint = "tcp://10.0.0.5:7700";

TEST(ClientLinkTest, SaysNothingAnswersUntilATcpConnectionWasTried) {
  ClientLink link(kEndpoint, true);
  EXPECT_THAT(link.Problem(), HasSubstr("nothing answers at tcp://10.0.0.5:7700"));
  link.On(LinkEvent::kTcpRetried, 111, ClientLink::Clock::now());
  EXPECT_EQ(link.Problem(), "nothing listens at tcp://10.0.0.5:7700 (connection refused)");
  link.On(LinkEvent::kTcpConnected, 0, ClientLink::Clock::now());
  link.On(LinkEvent::kHandshakeSucceeded, 0, ClientLink::Clock::now());
  EXPECT_TRUE(link.admitted());
  EXPECT_EQ(link.Problem(), "");
}

TEST(ClientLinkTest, AKeyRefusalIsReportedOncePerStreakAndReconnectsWithBackoff) {
  ClientLink link(kEndpoint, true);
  auto t0 = ClientLink::Clock::time_point{} + 1000s;
  std::string first = link.On(LinkEvent::kKeyRefused, 400, t0);
  EXPECT_THAT(first, HasSubstr("refused this client's key (ZAP status 400)"));
  EXPECT_EQ(link.Problem(), first);
  ASSERT_TRUE(link.reconnect_at().has_value());
  EXPECT_EQ(*link.reconnect_at(), t0 + 1s);
  EXPECT_FALSE(link.ReconnectDue(t0 + 999ms));
  EXPECT_TRUE(link.ReconnectDue(t0 + 1s));
  link.Reconnected();
  EXPECT_FALSE(link.reconnect_at().has_value());
  std::chrono::seconds expected[] = {2s, 4s, 8s, 16s, 30s, 30s};
  for (std::chrono::seconds wait : expected) {
    EXPECT_EQ(link.On(LinkEvent::kKeyRefused, 400, t0), "") << "reported once";
    EXPECT_EQ(*link.reconnect_at(), t0 + wait);
    link.Reconnected();
  }
  link.On(LinkEvent::kHandshakeSucceeded, 0, t0);
  EXPECT_EQ(link.Problem(), "");
  // A new streak is reported again, and backs off from 1 s again.
  EXPECT_NE(link.On(LinkEvent::kKeyRefused, 400, t0), "");
  EXPECT_EQ(*link.reconnect_at(), t0 + 1s);
}

TEST(ClientLinkTest, AFailedHandshakeSaysWhichSideLacksTheKeysAndLeavesReconnectingToZeroMq) {
  ClientLink with_keys(kEndpoint, true);
  EXPECT_THAT(with_keys.On(LinkEvent::kHandshakeFailed, 0, ClientLink::Clock::now()),
              HasSubstr("not the one whose public key this client was given"));
  EXPECT_FALSE(with_keys.reconnect_at().has_value());
  ClientLink plain(kEndpoint, false);
  EXPECT_THAT(plain.On(LinkEvent::kHandshakeFailed, 0, ClientLink::Clock::now()),
              HasSubstr("uses keys (CurveZMQ) and this client gave none"));
}

}  // namespace
}  // namespace orch::protocol
