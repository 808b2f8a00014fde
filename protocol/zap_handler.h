// ZapHandler: the ZeroMQ authentication handler (ZAP, ZeroMQ RFC 27) of a CURVE
// server: deny by default, allow the CURVE public keys it was given, and name
// each admitted peer by its key's name, which ZeroMQ then attaches to every
// message of that connection as the "User-Id" property.
//
// It must run before the server socket binds: a CURVE server without a ZAP
// handler admits every client that knows the server's public key (libzmq
// #2594). BindZmqServer with CURVE keys therefore starts one first and fails
// when it cannot. One per ZeroMQ context (the endpoint inproc://zeromq.zap.01
// is fixed by the RFC). It answers on its own thread; the destructor stops it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"

namespace zmq {
class context_t;
}  // namespace zmq

namespace orch::protocol {

// A refused handshake: the client's address (IP, no port), its public key (Z85, or
// "" for a client without CURVE) and why.
struct RefusedHandshake {
  std::string address;
  std::string key;
  std::string reason;
};
using RefusedHandshakeHandler = std::function<void(const RefusedHandshake&)>;

class ZapHandler final {
 public:
  // `allowed`: CURVE public key (Z85, 40 characters) -> the name it authenticates as.
  // `on_refused` (may be empty) is called on the handler's thread for the first
  // refusal of each (address, key): a client retrying every second is told about
  // once, not every second (at most kMaxRefusalsRemembered pairs are remembered;
  // past that they are forgotten and reported once more). kUnavailable when
  // another handler is bound in this context.
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context,
                                                   std::map<std::string, std::string> allowed,
                                                   RefusedHandshakeHandler on_refused = {});
  static constexpr std::size_t kMaxRefusalsRemembered = 4096;
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Handshakes refused so far (unknown key or another mechanism), every one counted.
  std::uint64_t refused() const;
  // Admits these keys from the next handshake on (a reloaded allowed_keys file).
  void SetAllowed(std::map<std::string, std::string> allowed);

  struct State;

 private:
  explicit ZapHandler(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace orch::protocol
