#include "protocol/client_link.h"

#include <algorithm>

namespace orch::protocol {

std::string ClientLink::On(LinkEvent event, int value, Clock::time_point now) {
  switch (event) {
    case LinkEvent::kTcpConnected:
      tcp_seen_ = true;
      tcp_retried_ = false;
      return "";
    case LinkEvent::kTcpRetried:
      tcp_retried_ = true;
      return "";
    case LinkEvent::kDisconnected:
      admitted_ = false;
      return "";
    case LinkEvent::kHandshakeSucceeded:
      admitted_ = true;
      refusal_.clear();
      reported_ = false;
      backoff_ = kFirstBackoff;
      reconnect_at_.reset();
      return "";
    case LinkEvent::kKeyRefused:
      admitted_ = false;
      refusal_ = "the server at " + endpoint_ + " refused this client's key (ZAP status " +
                 std::to_string(value) + "): its public key is not in the server's allowed keys";
      // libzmq does not reconnect after this: the transport must.
      reconnect_at_ = now + backoff_;
      backoff_ = std::min(backoff_ * 2, kMaxBackoff);
      break;
    case LinkEvent::kHandshakeFailed:
      admitted_ = false;
      refusal_ = curve_ ? "the secure handshake with " + endpoint_ +
                              " failed: the server there is not the one whose public key this "
                              "client was given, or it does not use keys"
                        : "the handshake with " + endpoint_ +
                              " failed: the server there uses keys (CurveZMQ) and this client "
                              "gave none";
      break;  // libzmq reconnects on its own
  }
  if (reported_) return "";
  reported_ = true;
  return refusal_;
}

std::string ClientLink::Problem() const {
  if (admitted_) return "";
  if (!refusal_.empty()) return refusal_;
  if (tcp_retried_ && !tcp_seen_) {
    return "nothing listens at " + endpoint_ + " (connection refused)";
  }
  if (tcp_retried_) return "the connection to " + endpoint_ + " was lost and is being retried";
  if (!tcp_seen_) {
    return "nothing answers at " + endpoint_ +
           " (no connection was made: no such host, or a firewall drops the packets)";
  }
  return "";
}

}  // namespace orch::protocol
