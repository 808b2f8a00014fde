// ZeroMQ transports: a ROUTER for the server (coordinator) and a DEALER per
// client (agent, CLI), following the contract in protocol/transport.h.
//
// ZeroMQ gives each connection its own routing id; clients choose none, so no
// connection can take over another's. A client names itself (its peer id) in
// every message: a one-part "C" + name when it starts, "F" + name + frame per
// frame, "D" + name when it is destroyed (sent with a short linger); the server
// sends one part per frame, and an empty part as a liveness probe that clients
// ignore. Which connection holds a name is protocol/peer_names.h: a second live
// connection under a held name speaks under an alias until the first is gone,
// which the server learns from a probe ZeroMQ refuses (its connection closed, or
// missed ZMTP heartbeats for 6 s). A reconnected client (restarted server, lost
// TCP connection) is reported kConnected again. The server drops parts over
// kMaxFrameBytes (ZMQ_MAXMSGSIZE disconnects the sender) and messages of any
// other shape.
//
// Event loop: Wait() polls the one socket (zmq::poll). For an external loop,
// NativeFd() is ZeroMQ's edge-triggered ZMQ_FD: when it turns readable, call
// Receive() until it returns nullopt.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"
#include "protocol/transport.h"
#include "protocol/zap_handler.h"

namespace orch::protocol {

// The ZeroMQ context; inproc:// endpoints connect only within one context.
// Owns the ZeroMQ I/O thread; must outlive every transport made from it.
class ZmqContext final {
 public:
  ZmqContext();
  ~ZmqContext();
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class ZmqTransport : public Transport {
 public:
  // Blocks up to `timeout` until Receive() may return an event; true when it
  // may.
  virtual bool Wait(std::chrono::milliseconds timeout) = 0;

  // The endpoint actually bound or connected ("tcp://127.0.0.1:41234" for a
  // bind to "tcp://127.0.0.1:*").
  virtual const std::string& endpoint() const = 0;

  // ZMQ_FD of the socket, for registering with an event loop (see above).
  virtual int NativeFd() const = 0;

  // Messages from clients that broke the wire rules above, dropped.
  virtual std::uint64_t dropped() const = 0;

  // A client's socket-monitor fd (edge-triggered like NativeFd: when it turns
  // readable, call Receive() until nullopt); -1 on a server.
  virtual int MonitorFd() const { return -1; }
  // A client's best guess why the server has not answered (protocol/client_link.h):
  // "nothing listens at ...", "the server at ... refused this client's key ...", or ""
  // when it was admitted or nothing is known yet. "" on a server.
  virtual std::string LinkProblem() const { return ""; }
  // A CURVE server's handshakes its ZAP handler refused so far; 0 otherwise.
  virtual std::uint64_t refused_handshakes() const { return 0; }
  // A CURVE server admits these keys from now on (public key Z85 -> name); connections
  // already admitted stay. Does nothing on other transports.
  virtual void SetAllowedKeys(std::map<std::string, std::string> allowed) { (void)allowed; }
};

// A ROUTER bound at `endpoint` ("inproc://name", "tcp://127.0.0.1:*").
Result<std::unique_ptr<ZmqTransport>> BindZmqServer(ZmqContext& context,
                                                    const std::string& endpoint);

// CurveZMQ for a server: its secret key and the clients it admits.
struct CurveServerKeys {
  std::string secret_key;                      // Z85 (protocol/identity_key.h)
  std::map<std::string, std::string> allowed;  // client public key (Z85) -> name
  // Called on the handler's thread for each refused handshake, once per client
  // address and key (protocol/zap_handler.h); may be empty.
  RefusedHandshakeHandler on_refused = {};
};
// The same, encrypted and authenticated: a ZAP handler (protocol/zap_handler.h)
// is started before the socket binds, and only clients with an allowed key get
// through; their events carry the key's name in TransportEvent::user.
// kUnavailable when the handler cannot start (another one runs in `context`).
Result<std::unique_ptr<ZmqTransport>> BindZmqServer(ZmqContext& context,
                                                    const std::string& endpoint,
                                                    const CurveServerKeys& curve);

// A DEALER named `self` (protocol/peer_names.h ValidPeerName) connected to
// `endpoint`.
Result<std::unique_ptr<ZmqTransport>> ConnectZmqClient(ZmqContext& context,
                                                       const std::string& endpoint,
                                                       const std::string& self);

// CurveZMQ for a client: the server's public key and the client's own pair.
struct CurveClientKeys {
  std::string server_public;  // Z85
  std::string public_key;     // Z85
  std::string secret_key;     // Z85
};
Result<std::unique_ptr<ZmqTransport>> ConnectZmqClient(ZmqContext& context,
                                                       const std::string& endpoint,
                                                       const std::string& self,
                                                       const CurveClientKeys& curve);

}  // namespace orch::protocol
