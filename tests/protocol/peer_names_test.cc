// PeerNames: one live connection per peer id (protocol/peer_names.h).
#include "protocol/peer_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace orch::protocol {
namespace {

using Kind = TransportEvent::Kind;
using ::testing::ElementsAre;

class PeerNamesTest : public ::testing::Test {
 protected:
  std::optional<std::string> Claim(const std::string& connection, const std::string& name) {
    return names_.Claim(connection, name, "key", alive_, events_);
  }
  std::vector<TransportEvent> Events() {
    std::vector<TransportEvent> events(events_.begin(), events_.end());
    events_.clear();
    return events;
  }

  std::set<std::string> gone_;
  PeerNames::Alive alive_ = [this](const std::string& c) { return !gone_.contains(c); };
  PeerNames names_;
  std::deque<TransportEvent> events_;
};

TEST_F(PeerNamesTest, TheFirstConnectionHoldsTheNameAndANewcomerGetsAnAlias) {
  EXPECT_EQ(Claim("c1", "agent-1"), "agent-1");
  EXPECT_EQ(Claim("c1", "agent-1"), "agent-1");
  EXPECT_EQ(Claim("c2", "agent-1"), "agent-1~6332");
  EXPECT_THAT(Events(), ElementsAre(TransportEvent{Kind::kConnected, "agent-1", "", "key"},
                                    TransportEvent{Kind::kConnected, "agent-1~6332", "", "key"}));
  EXPECT_EQ(*names_.ConnectionOf("agent-1"), "c1");
  EXPECT_EQ(*names_.ConnectionOf("agent-1~6332"), "c2");
}

TEST_F(PeerNamesTest, AHolderThatVanishedWithoutAWordLeavesTheNameToTheNextClaim) {
  Claim("c1", "agent-1");
  gone_.insert("c1");
  EXPECT_EQ(Claim("c2", "agent-1"), "agent-1");
  names_.Release("c1", "key", events_);  // a late close of the old one changes nothing
  EXPECT_THAT(Events(), ElementsAre(TransportEvent{Kind::kConnected, "agent-1", "", "key"},
                                    TransportEvent{Kind::kConnected, "agent-1", "", "key"}));
  EXPECT_EQ(*names_.ConnectionOf("agent-1"), "c2");
}

TEST_F(PeerNamesTest, AConnectionKeepsItsFirstNameAndInvalidNamesAreRefused) {
  Claim("c1", "agent-1");
  EXPECT_EQ(Claim("c1", "agent-2"), std::nullopt);
  EXPECT_EQ(Claim("c3", "agent-1~6332"), std::nullopt);
  EXPECT_EQ(Claim("c4", ""), std::nullopt);
  EXPECT_EQ(names_.ConnectionOf("agent-2"), nullptr);
}

TEST_F(PeerNamesTest, ReleasingAnAliasDoesNotTouchTheHolder) {
  Claim("c1", "agent-1");
  Claim("c2", "agent-1");
  Events();
  names_.Release("c2", "key", events_);
  EXPECT_THAT(Events(),
              ElementsAre(TransportEvent{Kind::kDisconnected, "agent-1~6332", "", "key"}));
  EXPECT_EQ(*names_.ConnectionOf("agent-1"), "c1");
}

}  // namespace
}  // namespace orch::protocol
