// MemoryNetwork: the in-memory twin of the ZeroMQ transport, for tests.
//
// Deterministic: nothing moves until DeliverAll(), which hands every queued
// frame and connection event to its receiver in the order they were sent. The
// network owns all queues; transports it makes borrow it and must be destroyed
// before it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"
#include "protocol/peer_names.h"
#include "protocol/transport.h"

namespace orch::protocol {

class MemoryNetwork final {
 public:
  MemoryNetwork() = default;
  MemoryNetwork(const MemoryNetwork&) = delete;
  MemoryNetwork& operator=(const MemoryNetwork&) = delete;
  ~MemoryNetwork();

  // A server listening at `endpoint` (any name). kAlreadyExists when taken.
  Result<std::unique_ptr<Transport>> Bind(const std::string& endpoint);

  // A client with id `self` (non-empty) talking to the server at `endpoint`.
  // The server need not exist yet: what the client sends waits until it is
  // bound, as with ZeroMQ.
  Result<std::unique_ptr<Transport>> Connect(const std::string& endpoint, const std::string& self);

  // Delivers everything queued so far; returns how many events moved. Events
  // for an endpoint nobody has bound stay queued; events for a destroyed
  // transport are dropped.
  int DeliverAll();

  // Events sent and not yet delivered.
  std::size_t pending() const { return in_flight_.size(); }

 private:
  friend class MemoryTransport;
  struct Node {
    bool is_server = false;
    std::string endpoint;  // the server's endpoint; for clients the one they talk to
    std::string self;      // the client's id; empty for servers
    std::deque<TransportEvent> inbox;
    PeerNames clients;  // servers: which client node speaks as whom
  };
  struct InFlight {
    std::uint64_t to_node = 0;  // 0: the server at `endpoint`
    std::uint64_t from_node = 0;
    std::string endpoint;
    TransportEvent event;
  };

  std::uint64_t AddNode(Node node);
  // Hands an event from a client to its server under the peer id it holds.
  void DeliverToServer(Node& server, std::uint64_t from, TransportEvent event);
  void RemoveNode(std::uint64_t id);
  Node* Find(std::uint64_t id);

  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, Node> nodes_;
  std::map<std::string, std::uint64_t> servers_;  // endpoint -> node id
  std::deque<InFlight> in_flight_;
};

}  // namespace orch::protocol
