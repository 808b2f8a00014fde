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

#include <map>
#include <memory>
#include <string>

#include "base/status.h"

namespace zmq {
class context_t;
}  // namespace zmq

namespace orch::protocol {

class ZapHandler final {
 public:
  // `allowed`: CURVE public key (Z85, 40 characters) -> the name it authenticates as.
  // kUnavailable when another handler is bound in this context.
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context,
                                                   std::map<std::string, std::string> allowed);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Handshakes refused so far (unknown key or another mechanism).
  std::uint64_t refused() const;

  struct State;

 private:
  explicit ZapHandler(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace orch::protocol
