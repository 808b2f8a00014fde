// Transport: moves opaque frames between named peers. One server (the
// coordinator) and many clients (agents, the CLI); a client's only peer is the
// server.
//
// Contract shared by every implementation
// (tests/protocol/transport_contract_test.cc):
// - A client may Send to kServerPeer at once; frames are queued until
// connected.
// - The server sees a client as TransportEvent::kConnected (named by the client's peer
//   id) before that client's first frame, and as kDisconnected when the client
//   transport is destroyed. A crashed client is never reported: its heartbeats
//   stop.
// - One live client holds a peer id at a time: a second client under the id of a
//   connected one is reported under another peer id (protocol/peer_names.h)
//   until the first is gone, and never receives what is sent to the id.
// - Frames between two peers arrive whole, once, in send order (or not at all when a
//   peer goes away). Frames are opaque; protocol/codec.h gives them meaning.
// - The server may Send only to peers it has seen connect and not yet disconnect;
//   otherwise Send returns kUnavailable and sends nothing.
// - Send refuses a frame over kMaxFrameBytes (protocol/messages.h) with
//   kInvalidArgument naming its size and the limit (FrameFits), and sends nothing: a
//   receiver would drop it, leaving the sender waiting for an answer.
// - Neither Send nor Receive blocks. How events arrive (DeliverAll for the memory
//   network, Wait for ZeroMQ) belongs to each implementation.
// Not thread-safe: each transport belongs to one thread (the event loop).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace orch::protocol {

// OK when `frame` is at most kMaxFrameBytes; else kInvalidArgument "message too large:
// a frame of N bytes, above the limit of M bytes (16 MiB)".
Status FrameFits(std::string_view frame);

// A client's peer id for the server.
inline constexpr std::string_view kServerPeer = "server";

struct TransportEvent {
  // kRefused: on a ZeroMQ client only, once per streak of failed handshakes: the
  // server refused this client's key, or the secure handshake failed (`frame` says
  // which, for people). The client keeps trying (zmq_transport.h).
  enum class Kind { kConnected, kFrame, kDisconnected, kRefused };
  Kind kind = Kind::kFrame;
  std::string peer;   // who: a client id on the server, kServerPeer on a client
  std::string frame;  // the bytes, for kFrame; empty otherwise
  // On a CURVE server: the name of the key the client authenticated with (its
  // ZAP User-Id), for every event of that connection. Empty without CURVE.
  std::string user = {};
  friend bool operator==(const TransportEvent&, const TransportEvent&) = default;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Queues `frame` for `peer`. kUnavailable for a peer that is not connected,
  // kInvalidArgument for a client addressing anyone but kServerPeer.
  virtual Status Send(std::string_view peer, std::string_view frame) = 0;

  // The next event that has arrived, or nullopt. Never blocks.
  virtual std::optional<TransportEvent> Receive() = 0;
};

}  // namespace orch::protocol
