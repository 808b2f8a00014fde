// What the in-memory network adds to the Transport contract: determinism.
#include "protocol/memory_network.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::protocol {
namespace {

using Kind = TransportEvent::Kind;

TEST(MemoryNetworkTest, NothingMovesUntilDeliverAll) {
  MemoryNetwork network;
  auto server = network.Bind("c").value();
  auto client = network.Connect("c", "a").value();
  ASSERT_TRUE(client->Send(kServerPeer, "x").ok());
  EXPECT_FALSE(server->Receive().has_value());
  EXPECT_EQ(network.pending(), 2u);
  EXPECT_EQ(network.DeliverAll(), 2);
  EXPECT_EQ(server->Receive(), (TransportEvent{Kind::kConnected, "a", ""}));
  EXPECT_EQ(server->Receive(), (TransportEvent{Kind::kFrame, "a", "x"}));
}

TEST(MemoryNetworkTest, HoldsTrafficForAnEndpointUntilItIsBound) {
  MemoryNetwork network;
  auto client = network.Connect("c", "a").value();
  ASSERT_TRUE(client->Send(kServerPeer, "early").ok());
  EXPECT_EQ(network.DeliverAll(), 0);
  auto server = network.Bind("c").value();
  EXPECT_EQ(network.DeliverAll(), 2);
  EXPECT_EQ(server->Receive(), (TransportEvent{Kind::kConnected, "a", ""}));
  EXPECT_EQ(server->Receive(), (TransportEvent{Kind::kFrame, "a", "early"}));
}

TEST(MemoryNetworkTest, RefusesASecondServerOnOneEndpoint) {
  MemoryNetwork network;
  auto server = network.Bind("c").value();
  EXPECT_EQ(network.Bind("c").status().code(), StatusCode::kAlreadyExists);
}

TEST(MemoryNetworkTest, DropsFramesToATransportDestroyedBeforeDelivery) {
  MemoryNetwork network;
  auto server = network.Bind("c").value();
  auto client = network.Connect("c", "a").value();
  network.DeliverAll();
  ASSERT_TRUE(server->Send("a", "x").ok());
  client.reset();
  EXPECT_EQ(network.DeliverAll(), 1);  // only the disconnect
  EXPECT_EQ(server->Receive(), (TransportEvent{Kind::kConnected, "a", ""}));
  EXPECT_EQ(server->Receive(), (TransportEvent{Kind::kDisconnected, "a", ""}));
}

}  // namespace
}  // namespace orch::protocol
