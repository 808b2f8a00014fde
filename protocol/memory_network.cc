// MemoryNetwork and the transports it hands out.
#include "protocol/memory_network.h"

#include <utility>

namespace orch::protocol {

// One end on a MemoryNetwork. Borrows the network, which outlives it.
class MemoryTransport final : public Transport {
 public:
  MemoryTransport(MemoryNetwork& network, std::uint64_t node) : network_(network), node_(node) {}
  ~MemoryTransport() override { network_.RemoveNode(node_); }

  Status Send(std::string_view peer, std::string_view frame) override {
    ORCH_RETURN_IF_ERROR(FrameFits(frame));
    MemoryNetwork::Node& self = *network_.Find(node_);
    TransportEvent event{TransportEvent::Kind::kFrame, "", std::string(frame)};
    if (self.is_server) {
      const std::string* client = self.clients.ConnectionOf(std::string(peer));
      if (client == nullptr) {
        return Status(StatusCode::kUnavailable, "peer " + std::string(peer) + " is not connected");
      }
      event.peer = std::string(kServerPeer);
      network_.in_flight_.push_back({std::stoull(*client), node_, self.endpoint, std::move(event)});
      return Status::Ok();
    }
    if (peer != kServerPeer) {
      return InvalidArgument("a client sends only to \"server\", not " + std::string(peer));
    }
    event.peer = self.self;
    network_.in_flight_.push_back({0, node_, self.endpoint, std::move(event)});
    return Status::Ok();
  }

  std::optional<TransportEvent> Receive() override {
    auto& inbox = network_.Find(node_)->inbox;
    if (inbox.empty()) return std::nullopt;
    TransportEvent event = std::move(inbox.front());
    inbox.pop_front();
    return event;
  }

 private:
  MemoryNetwork& network_;
  std::uint64_t node_;
};

MemoryNetwork::~MemoryNetwork() {
  ORCH_CHECK(nodes_.empty()) << "a transport outlived its MemoryNetwork";
}

Result<std::unique_ptr<Transport>> MemoryNetwork::Bind(const std::string& endpoint) {
  if (servers_.contains(endpoint)) {
    return Status(StatusCode::kAlreadyExists, "endpoint " + endpoint + " is already bound");
  }
  Node node;
  node.is_server = true;
  node.endpoint = endpoint;
  std::uint64_t id = AddNode(std::move(node));
  servers_[endpoint] = id;
  return std::unique_ptr<Transport>(std::make_unique<MemoryTransport>(*this, id));
}

Result<std::unique_ptr<Transport>> MemoryNetwork::Connect(const std::string& endpoint,
                                                          const std::string& self) {
  if (!ValidPeerName(self)) {
    return InvalidArgument("client peer id \"" + self +
                           "\" must be 1..200 characters of A-Z a-z 0-9 . _ : @ -");
  }
  Node node;
  node.endpoint = endpoint;
  node.self = self;
  std::uint64_t id = AddNode(std::move(node));
  in_flight_.push_back({0, id, endpoint, {TransportEvent::Kind::kConnected, self, ""}});
  return std::unique_ptr<Transport>(std::make_unique<MemoryTransport>(*this, id));
}

int MemoryNetwork::DeliverAll() {
  std::deque<InFlight> batch;
  batch.swap(in_flight_);
  int moved = 0;
  for (InFlight& item : batch) {
    std::uint64_t to = item.to_node;
    if (to == 0) {
      auto server = servers_.find(item.endpoint);
      if (server == servers_.end()) {
        in_flight_.push_back(std::move(item));  // nobody listens yet
        continue;
      }
      to = server->second;
    }
    Node* node = Find(to);
    if (node == nullptr) continue;  // the receiver is gone
    if (node->is_server) {
      DeliverToServer(*node, item.from_node, std::move(item.event));
    } else {
      node->inbox.push_back(std::move(item.event));
    }
    ++moved;
  }
  return moved;
}

void MemoryNetwork::DeliverToServer(Node& server, std::uint64_t from, TransportEvent event) {
  std::string connection = std::to_string(from);
  if (event.kind == TransportEvent::Kind::kDisconnected) {
    server.clients.Release(connection, "", server.inbox);
    return;
  }
  auto alive = [this](const std::string& holder) { return Find(std::stoull(holder)) != nullptr; };
  std::optional<std::string> peer =
      server.clients.Claim(connection, event.peer, "", alive, server.inbox);
  if (!peer || event.kind != TransportEvent::Kind::kFrame) return;
  event.peer = *peer;
  server.inbox.push_back(std::move(event));
}

std::uint64_t MemoryNetwork::AddNode(Node node) {
  std::uint64_t id = next_id_++;
  nodes_.emplace(id, std::move(node));
  return id;
}

void MemoryNetwork::RemoveNode(std::uint64_t id) {
  Node& node = nodes_.at(id);
  if (node.is_server) {
    servers_.erase(node.endpoint);
  } else {
    in_flight_.push_back(
        {0, id, node.endpoint, {TransportEvent::Kind::kDisconnected, node.self, ""}});
  }
  nodes_.erase(id);
}

MemoryNetwork::Node* MemoryNetwork::Find(std::uint64_t id) {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

}  // namespace orch::protocol
