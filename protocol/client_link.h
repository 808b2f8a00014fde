// ClientLink: what a ZeroMQ client knows of its connection to the server, and when it
// must connect again. Pure: ZeroMQ's socket-monitor events and the time come in;
// a diagnosis, refusals to report and reconnection times come out.
//
// Why it is needed: a CURVE client whose key the server's ZAP handler refuses is cut
// off for good (libzmq ends the session on an authentication failure and never
// reconnects), so an agent would never register, even once its key is admitted, and
// a client could not tell "nothing listens" from "the server refused this key". The
// transport (protocol/zmq_transport.cc) feeds its socket's monitor events here and
// reconnects when ReconnectDue says so: 1 s after a refusal, doubling up to 30 s,
// back to 1 s after a handshake succeeds.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace orch::protocol {

enum class LinkEvent {
  kTcpConnected,        // a TCP connection is up; the handshake follows
  kTcpRetried,          // connecting failed (nothing listens) and is retried
  kHandshakeSucceeded,  // the server admitted this client
  kKeyRefused,          // the server's ZAP handler refused this client's key
  kHandshakeFailed,     // the handshake failed otherwise (another server key, no CURVE)
  kDisconnected,        // an established connection closed
};

class ClientLink final {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirstBackoff{1000};
  static constexpr std::chrono::milliseconds kMaxBackoff{30'000};

  // `curve`: the client has keys (CurveZMQ); else it speaks plain ZMTP.
  ClientLink(std::string endpoint, bool curve) : endpoint_(std::move(endpoint)), curve_(curve) {}

  // Takes one event. Returns the text of a refusal to report, once per streak of
  // refusals (none again until a handshake succeeds), or "".
  std::string On(LinkEvent event, int value, Clock::time_point now);

  // When the transport must connect again (after a key refusal), if ever.
  std::optional<Clock::time_point> reconnect_at() const { return reconnect_at_; }
  bool ReconnectDue(Clock::time_point now) const {
    return reconnect_at_.has_value() && now >= *reconnect_at_;
  }
  // The transport connected again.
  void Reconnected() { reconnect_at_.reset(); }

  bool admitted() const { return admitted_; }
  // Why no answer may have come, for a client that gave up waiting: "" when the
  // server admitted this client or nothing is known yet.
  std::string Problem() const;

 private:
  std::string endpoint_;
  bool curve_;
  bool admitted_ = false;
  bool tcp_seen_ = false;     // a TCP connection was made at least once
  bool tcp_retried_ = false;  // connecting failed at least once since
  std::string refusal_;       // the current streak's refusal; "" when none
  bool reported_ = false;     // the current streak was reported
  std::chrono::milliseconds backoff_ = kFirstBackoff;
  std::optional<Clock::time_point> reconnect_at_;
};

}  // namespace orch::protocol
