// ZeroMQ ROUTER/DEALER transports. zmq::error_t never leaves this file.
#include "protocol/zmq_transport.h"

#include <deque>
#include <set>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "protocol/messages.h"
#include "protocol/zap_handler.h"

namespace orch::protocol {

struct ZmqContext::Impl {
  zmq::context_t context;
};

ZmqContext::ZmqContext() : impl_(std::make_unique<Impl>()) {}
ZmqContext::~ZmqContext() = default;

namespace {

constexpr std::string_view kConnectMark = "C";
constexpr std::string_view kFrameMark = "F";
constexpr std::string_view kDisconnectMark = "D";
// How long a closing client keeps trying to deliver what it queued, "D"
// included.
constexpr int kLingerMs = 200;

std::string ToString(const zmq::message_t& m) {
  return std::string(m.to_string_view());
}

Status ZmqError(std::string_view what, const zmq::error_t& e) {
  return Status(StatusCode::kUnavailable,
                std::string(what) + ": zmq: " + e.what());
}

// Reads one whole multipart message without blocking; empty when none is
// waiting.
std::vector<zmq::message_t> ReceiveParts(zmq::socket_t& socket) {
  std::vector<zmq::message_t> parts;
  zmq::message_t part;
  if (!socket.recv(part, zmq::recv_flags::dontwait)) return parts;
  parts.push_back(std::move(part));
  while (socket.get(zmq::sockopt::rcvmore)) {
    zmq::message_t next;
    // The rest of a multipart message arrives atomically with its first part.
    if (!socket.recv(next, zmq::recv_flags::dontwait)) break;
    parts.push_back(std::move(next));
  }
  return parts;
}

// Shared by both ends: the socket, its endpoint and polling.
class ZmqEnd : public ZmqTransport {
 public:
  ZmqEnd(zmq::socket_t socket, std::string endpoint)
      : socket_(std::move(socket)), endpoint_(std::move(endpoint)) {}

  bool Wait(std::chrono::milliseconds timeout) override {
    if (!ready_.empty()) return true;
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      return zmq::poll(&item, 1, timeout) > 0;
    } catch (const zmq::error_t&) {
      return false;  // EINTR: the caller polls again
    }
  }
  const std::string& endpoint() const override { return endpoint_; }
  int NativeFd() const override { return socket_.get(zmq::sockopt::fd); }
  std::uint64_t dropped() const override { return dropped_; }

  std::optional<TransportEvent> Receive() override {
    while (ready_.empty()) {
      std::vector<zmq::message_t> parts;
      try {
        parts = ReceiveParts(socket_);
      } catch (const zmq::error_t&) {
        return std::nullopt;
      }
      if (parts.empty()) return std::nullopt;
      Accept(parts);
    }
    TransportEvent event = std::move(ready_.front());
    ready_.pop_front();
    return event;
  }

 protected:
  // Turns one received message into events on ready_, or counts it dropped.
  virtual void Accept(std::vector<zmq::message_t>& parts) = 0;

  // Sends `parts` as one message; kUnavailable when ZeroMQ cannot take it now.
  Status SendParts(std::initializer_list<std::string_view> parts) {
    try {
      std::size_t i = 0;
      for (std::string_view part : parts) {
        auto flags = ++i < parts.size()
                         ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                         : zmq::send_flags::dontwait;
        if (!socket_.send(zmq::buffer(part.data(), part.size()), flags)) {
          return Status(StatusCode::kUnavailable, "send queue to peer is full");
        }
      }
    } catch (const zmq::error_t& e) {
      return ZmqError("send", e);
    }
    return Status::Ok();
  }

  zmq::socket_t socket_;
  std::string endpoint_;
  std::deque<TransportEvent> ready_;
  std::uint64_t dropped_ = 0;
};

// The authenticated name ZeroMQ attached to a message (CURVE + ZAP), or "".
std::string UserOf(zmq::message_t& part) {
  const char* user = zmq_msg_gets(part.handle(), "User-Id");
  return user == nullptr ? "" : user;
}

class ZmqServer final : public ZmqEnd {
 public:
  ZmqServer(zmq::socket_t socket, std::string endpoint, std::unique_ptr<ZapHandler> zap)
      : ZmqEnd(std::move(socket), std::move(endpoint)), zap_(std::move(zap)) {}
  ~ZmqServer() override {
    socket_.close();  // before the handler that admitted its peers stops
  }

  Status Send(std::string_view peer, std::string_view frame) override {
    if (!peers_.contains(std::string(peer))) {
      return Status(StatusCode::kUnavailable,
                    "peer " + std::string(peer) + " is not connected");
    }
    return SendParts({peer, frame});
  }

 private:
  void Accept(std::vector<zmq::message_t>& parts) override {
    std::string peer = ToString(parts[0]);
    std::string user = UserOf(parts.back());
    std::string_view mark = parts.size() >= 2 ? parts[1].to_string_view() : "";
    if (parts.size() == 2 && mark == kConnectMark) {
      // A new connection: reported even for a known routing id, whose earlier
      // connection is then gone.
      peers_.insert(peer);
      ready_.push_back({TransportEvent::Kind::kConnected, peer, "", user});
    } else if (parts.size() == 2 && mark == kDisconnectMark) {
      if (peers_.erase(peer) > 0) {
        ready_.push_back({TransportEvent::Kind::kDisconnected, peer, "", user});
      }
    } else if (parts.size() == 3 && mark == kFrameMark) {
      Connected(peer, user);  // a client that reconnected to a restarted server
                              // sends no "C"
      ready_.push_back(
          {TransportEvent::Kind::kFrame, peer, ToString(parts[2]), user});
    } else {
      ++dropped_;
    }
  }

  void Connected(const std::string& peer, const std::string& user) {
    if (peers_.insert(peer).second) {
      ready_.push_back({TransportEvent::Kind::kConnected, peer, "", user});
    }
  }

  std::unique_ptr<ZapHandler> zap_;  // null without CURVE
  std::set<std::string> peers_;      // connected clients
};

class ZmqClient final : public ZmqEnd {
 public:
  using ZmqEnd::ZmqEnd;
  ~ZmqClient() override {
    (void)SendParts({kDisconnectMark});
    try {
      socket_.set(zmq::sockopt::linger, kLingerMs);
    } catch (const zmq::error_t&) {
    }
  }

  Status Start() { return SendParts({kConnectMark}); }

  Status Send(std::string_view peer, std::string_view frame) override {
    if (peer != kServerPeer) {
      return InvalidArgument("a client sends only to \"server\", not " +
                             std::string(peer));
    }
    return SendParts({kFrameMark, frame});
  }

 private:
  void Accept(std::vector<zmq::message_t>& parts) override {
    if (parts.size() != 1) {
      ++dropped_;
      return;
    }
    ready_.push_back({TransportEvent::Kind::kFrame, std::string(kServerPeer),
                      ToString(parts[0])});
  }
};


Result<std::unique_ptr<ZmqTransport>> BindServer(ZmqContext& context,
                                                const std::string& endpoint,
                                                const CurveServerKeys* curve) {
  std::unique_ptr<ZapHandler> zap;
  if (curve != nullptr) {
    ORCH_ASSIGN_OR_RETURN(zap, ZapHandler::Start(context.impl().context, curve->allowed));
  }
  try {
    zmq::socket_t socket(context.impl().context, zmq::socket_type::router);
    if (curve != nullptr) {
      socket.set(zmq::sockopt::curve_server, true);
      socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
      socket.set(zmq::sockopt::zap_domain, "orch");
    }
    socket.set(zmq::sockopt::router_mandatory, true);
    // A restarted agent reconnecting under its id takes over from its stale
    // connection. (Without handover libzmq leaves the second connection
    // unread for good, even after the first is gone: it consumes the second
    // peer's routing id when it refuses it.)
    socket.set(zmq::sockopt::router_handover, true);
    socket.set(zmq::sockopt::maxmsgsize,
               static_cast<std::int64_t>(kMaxFrameBytes));
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(endpoint);
    std::string bound = socket.get(zmq::sockopt::last_endpoint);
    return std::unique_ptr<ZmqTransport>(
        std::make_unique<ZmqServer>(std::move(socket), bound, std::move(zap)));
  } catch (const zmq::error_t& e) {
    return ZmqError("bind " + endpoint, e);
  }
}

Result<std::unique_ptr<ZmqTransport>> ConnectClient(ZmqContext& context,
                                                    const std::string& endpoint,
                                                    const std::string& self,
                                                    const CurveClientKeys* curve) {
  if (self.empty() || self.size() > 255 || self[0] == '\0') {
    return InvalidArgument(
        "client peer id must be 1..255 bytes and not start with NUL");
  }
  try {
    zmq::socket_t socket(context.impl().context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::routing_id, self);
    socket.set(zmq::sockopt::linger, 0);
    if (curve != nullptr) {
      socket.set(zmq::sockopt::curve_serverkey, curve->server_public);
      socket.set(zmq::sockopt::curve_publickey, curve->public_key);
      socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
    }
    socket.connect(endpoint);
    auto client = std::make_unique<ZmqClient>(std::move(socket), endpoint);
    ORCH_RETURN_IF_ERROR(client->Start().WithContext("connect " + endpoint));
    return std::unique_ptr<ZmqTransport>(std::move(client));
  } catch (const zmq::error_t& e) {
    return ZmqError("connect " + endpoint, e);
  }
}

}  // namespace

Result<std::unique_ptr<ZmqTransport>> BindZmqServer(ZmqContext& context,
                                                    const std::string& endpoint) {
  return BindServer(context, endpoint, nullptr);
}

Result<std::unique_ptr<ZmqTransport>> BindZmqServer(ZmqContext& context,
                                                    const std::string& endpoint,
                                                    const CurveServerKeys& curve) {
  return BindServer(context, endpoint, &curve);
}

Result<std::unique_ptr<ZmqTransport>> ConnectZmqClient(ZmqContext& context,
                                                       const std::string& endpoint,
                                                       const std::string& self) {
  return ConnectClient(context, endpoint, self, nullptr);
}

Result<std::unique_ptr<ZmqTransport>> ConnectZmqClient(ZmqContext& context,
                                                       const std::string& endpoint,
                                                       const std::string& self,
                                                       const CurveClientKeys& curve) {
  return ConnectClient(context, endpoint, self, &curve);
}

}  // namespace orch::protocol
