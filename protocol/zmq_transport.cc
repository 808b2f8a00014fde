// ZeroMQ ROUTER/DEALER transports. zmq::error_t never leaves this file.
#include "protocol/zmq_transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <set>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "protocol/client_link.h"
#include "protocol/messages.h"
#include "protocol/peer_names.h"
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
constexpr int kReconnectFirstMs = 10;  // a client's first reconnect, doubled each time
constexpr int kReconnectMaxMs = 100;   // ... up to ZeroMQ's default
// ZMTP heartbeats on the server: a connection silent this long is closed.
constexpr int kHeartbeatMs = 2000;
constexpr int kHeartbeatTimeoutMs = 6000;

std::string ToString(const zmq::message_t& m) { return std::string(m.to_string_view()); }

Status ZmqError(std::string_view what, const zmq::error_t& e) {
  return Status(StatusCode::kUnavailable, std::string(what) + ": zmq: " + e.what());
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
        auto flags = ++i < parts.size() ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
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
    ORCH_RETURN_IF_ERROR(FrameFits(frame));
    const std::string* connection = names_.ConnectionOf(std::string(peer));
    if (connection == nullptr) {
      return Status(StatusCode::kUnavailable, "peer " + std::string(peer) + " is not connected");
    }
    return SendParts({*connection, frame});
  }

 private:
  // parts: [connection, mark, name] or [connection, "F", name, frame].
  void Accept(std::vector<zmq::message_t>& parts) override {
    std::string_view mark = parts.size() >= 3 ? parts[1].to_string_view() : "";
    bool connect = parts.size() == 3 && mark == kConnectMark;
    bool disconnect = parts.size() == 3 && mark == kDisconnectMark;
    bool frame = parts.size() == 4 && mark == kFrameMark;
    if (!connect && !disconnect && !frame) {
      ++dropped_;
      return;
    }
    std::string connection = ToString(parts[0]);
    std::string user = UserOf(parts.back());
    if (disconnect) return names_.Release(connection, user, ready_);
    auto alive = [this](const std::string& holder) { return Reachable(holder); };
    std::optional<std::string> peer =
        names_.Claim(connection, ToString(parts[2]), user, alive, ready_);
    if (!peer) {
      ++dropped_;
      return;
    }
    if (frame) ready_.push_back({TransportEvent::Kind::kFrame, *peer, ToString(parts[3]), user});
  }

  // Whether the connection is still there: an empty probe, which clients
  // ignore, is refused by ZeroMQ (router_mandatory) once its pipe is gone.
  bool Reachable(const std::string& connection) {
    try {
      if (!socket_.send(zmq::buffer(connection),
                        zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        return true;  // its queue is full: there
      (void)socket_.send(zmq::message_t(), zmq::send_flags::dontwait);
      return true;
    } catch (const zmq::error_t& e) {
      return e.num() != EHOSTUNREACH;
    }
  }

  std::uint64_t refused_handshakes() const override { return zap_ ? zap_->refused() : 0; }
  void SetAllowedKeys(std::map<std::string, std::string> allowed) override {
    if (zap_) zap_->SetAllowed(std::move(allowed));
  }

  std::unique_ptr<ZapHandler> zap_;  // null without CURVE
  PeerNames names_;                  // which connection speaks as whom
};

// The socket-monitor events a client watches (ClientLink says what they mean).
constexpr int kClientMonitorEvents =
    ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_DISCONNECTED |
    ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

std::optional<LinkEvent> ToLinkEvent(std::uint16_t event) {
  switch (event) {
    case ZMQ_EVENT_CONNECTED:
      return LinkEvent::kTcpConnected;
    case ZMQ_EVENT_CONNECT_RETRIED:
      return LinkEvent::kTcpRetried;
    case ZMQ_EVENT_DISCONNECTED:
      return LinkEvent::kDisconnected;
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
      return LinkEvent::kHandshakeSucceeded;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      return LinkEvent::kKeyRefused;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      return LinkEvent::kHandshakeFailed;
    default:
      return std::nullopt;
  }
}

class ZmqClient final : public ZmqEnd {
 public:
  ZmqClient(zmq::socket_t socket, std::string endpoint, std::string self, zmq::socket_t monitor,
            bool curve)
      : ZmqEnd(std::move(socket), std::move(endpoint)),
        self_(std::move(self)),
        monitor_(std::move(monitor)),
        link_(endpoint_, curve) {}
  ~ZmqClient() override {
    (void)SendParts({kDisconnectMark, self_});
    try {
      socket_.set(zmq::sockopt::linger, kLingerMs);
    } catch (const zmq::error_t&) {
    }
  }

  Status Start() { return SendParts({kConnectMark, self_}); }

  Status Send(std::string_view peer, std::string_view frame) override {
    if (peer != kServerPeer) {
      return InvalidArgument("a client sends only to \"server\", not " + std::string(peer));
    }
    ORCH_RETURN_IF_ERROR(FrameFits(frame));
    WatchLink();
    return SendParts({kFrameMark, self_, frame});
  }

  std::optional<TransportEvent> Receive() override {
    WatchLink();
    return ZmqEnd::Receive();
  }

  bool Wait(std::chrono::milliseconds timeout) override {
    WatchLink();
    if (!ready_.empty()) return true;
    if (auto at = link_.reconnect_at()) {
      auto until =
          std::chrono::duration_cast<std::chrono::milliseconds>(*at - ClientLink::Clock::now());
      timeout = std::clamp(until, std::chrono::milliseconds(0), timeout);
    }
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                               {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      if (zmq::poll(items, 2, timeout) <= 0) return false;
    } catch (const zmq::error_t&) {
      return false;  // EINTR: the caller polls again
    }
    WatchLink();
    return !ready_.empty() || (items[0].revents & ZMQ_POLLIN) != 0;
  }

  int MonitorFd() const override { return monitor_.get(zmq::sockopt::fd); }
  std::string LinkProblem() const override { return link_.Problem(); }

 private:
  void Accept(std::vector<zmq::message_t>& parts) override {
    if (parts.size() == 1 && parts[0].size() == 0) return;  // the server's probe
    if (parts.size() != 1) {
      ++dropped_;
      return;
    }
    ready_.push_back({TransportEvent::Kind::kFrame, std::string(kServerPeer), ToString(parts[0])});
  }

  // Reads the monitor's events into the link, queues a refusal to report, and
  // connects again when the link says so.
  void WatchLink() {
    auto now = ClientLink::Clock::now();
    try {
      for (;;) {
        std::vector<zmq::message_t> parts = ReceiveParts(monitor_);
        if (parts.empty()) break;
        // [u16 event, u32 value], then the endpoint.
        if (parts[0].size() < 6) continue;
        std::uint16_t event = 0;
        std::uint32_t value = 0;
        std::memcpy(&event, parts[0].data(), 2);
        std::memcpy(&value, static_cast<const char*>(parts[0].data()) + 2, 4);
        std::optional<LinkEvent> link_event = ToLinkEvent(event);
        if (!link_event) continue;
        std::string refusal = link_.On(*link_event, static_cast<int>(value), now);
        if (!refusal.empty()) {
          ready_.push_back({TransportEvent::Kind::kRefused, std::string(kServerPeer), refusal});
        }
      }
      if (link_.ReconnectDue(now)) {
        link_.Reconnected();
        socket_.disconnect(endpoint_);
        socket_.connect(endpoint_);
        (void)Start();  // the server must learn the name again
      }
    } catch (const zmq::error_t&) {
      // The context is ending: nothing more to watch.
    }
  }

  std::string self_;
  zmq::socket_t monitor_;
  ClientLink link_;
};

Result<std::unique_ptr<ZmqTransport>> BindServer(ZmqContext& context, const std::string& endpoint,
                                                 const CurveServerKeys* curve) {
  std::unique_ptr<ZapHandler> zap;
  if (curve != nullptr) {
    ORCH_ASSIGN_OR_RETURN(
        zap, ZapHandler::Start(context.impl().context, curve->allowed, curve->on_refused));
  }
  try {
    zmq::socket_t socket(context.impl().context, zmq::socket_type::router);
    if (curve != nullptr) {
      socket.set(zmq::sockopt::curve_server, true);
      socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
      socket.set(zmq::sockopt::zap_domain, "orch");
    }
    socket.set(zmq::sockopt::router_mandatory, true);
    // A peer that stops answering (paused, cut off) loses its connection, so
    // its name is free for its next one.
    socket.set(zmq::sockopt::heartbeat_ivl, kHeartbeatMs);
    socket.set(zmq::sockopt::heartbeat_timeout, kHeartbeatTimeoutMs);
    socket.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(kMaxFrameBytes));
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
  if (!ValidPeerName(self)) {
    return InvalidArgument("client peer id \"" + self +
                           "\" must be 1..200 characters of A-Z a-z 0-9 . _ : @ -");
  }
  try {
    zmq::socket_t socket(context.impl().context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    // A server not listening yet (`orch run` starts its agents beside the coordinator)
    // is tried again after 10 ms, then 20, 40, 80 and every 100 ms (ZeroMQ's default,
    // kept as the steady pace), instead of 100 ms from the first refusal.
    socket.set(zmq::sockopt::reconnect_ivl, kReconnectFirstMs);
    socket.set(zmq::sockopt::reconnect_ivl_max, kReconnectMaxMs);
    if (curve != nullptr) {
      socket.set(zmq::sockopt::curve_serverkey, curve->server_public);
      socket.set(zmq::sockopt::curve_publickey, curve->public_key);
      socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
    }
    // Its own inproc endpoint per client: monitors are per context.
    static std::atomic<std::uint64_t> monitors{0};
    std::string monitor_endpoint = "inproc://orch-client-monitor-" + std::to_string(++monitors);
    if (zmq_socket_monitor(socket.handle(), monitor_endpoint.c_str(), kClientMonitorEvents) != 0) {
      throw zmq::error_t();
    }
    zmq::socket_t monitor(context.impl().context, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(monitor_endpoint);
    socket.connect(endpoint);
    auto client = std::make_unique<ZmqClient>(std::move(socket), endpoint, self, std::move(monitor),
                                              curve != nullptr);
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
