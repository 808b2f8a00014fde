// Endpoint syntax (protocol/endpoint.h).
#include "protocol/endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::protocol {
namespace {

using ::testing::HasSubstr;

TEST(EndpointTest, AcceptsWhatZeroMqAcceptsForEachUse) {
  for (const char* ok : {"tcp://127.0.0.1:5555", "tcp://coord.lab:1", "tcp://[::1]:65535",
                         "ipc:///run/orch.sock", "inproc://x"}) {
    EXPECT_EQ(WhyBadEndpoint(ok, EndpointUse::kConnect), "") << ok;
    EXPECT_EQ(WhyBadEndpoint(ok, EndpointUse::kBind), "") << ok;
  }
  EXPECT_EQ(WhyBadEndpoint("tcp://0.0.0.0:*", EndpointUse::kBind), "");
  EXPECT_EQ(WhyBadEndpoint("tcp://*:5555", EndpointUse::kBind), "");
}

TEST(EndpointTest, RefusesTyposNamingWhatIsWrong) {
  EXPECT_THAT(WhyBadEndpoint("not-an-endpoint", EndpointUse::kConnect),
              HasSubstr("\"not-an-endpoint\": unknown transport; expected tcp://HOST:PORT"));
  EXPECT_THAT(WhyBadEndpoint("tcp://127.0.0.1", EndpointUse::kConnect), HasSubstr("no port"));
  EXPECT_THAT(WhyBadEndpoint("tcp://127.0.0.1:0", EndpointUse::kBind), HasSubstr("not 1..65535"));
  EXPECT_THAT(WhyBadEndpoint("tcp://127.0.0.1:70000", EndpointUse::kBind),
              HasSubstr("not 1..65535"));
  EXPECT_THAT(WhyBadEndpoint("tcp://127.0.0.1:ab", EndpointUse::kBind), HasSubstr("not a number"));
  EXPECT_THAT(WhyBadEndpoint("tcp://127.0.0.1:*", EndpointUse::kConnect),
              HasSubstr("only makes sense to listen on"));
  EXPECT_THAT(WhyBadEndpoint("tcp://*:5555", EndpointUse::kConnect),
              HasSubstr("can only be listened on"));
  EXPECT_THAT(WhyBadEndpoint("tcp://a b:1", EndpointUse::kConnect), HasSubstr("host \"a b\""));
  EXPECT_THAT(WhyBadEndpoint("ipc://", EndpointUse::kBind), HasSubstr("no path or name"));
}

}  // namespace
}  // namespace orch::protocol
