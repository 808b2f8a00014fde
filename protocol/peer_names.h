// PeerNames: which peer id each client connection of a server speaks as, so
// that one live connection holds an id at a time (protocol/transport.h). Shared
// by the ZeroMQ server and the memory network. Pure; not thread-safe.
//
// A connection (an opaque key the transport chooses: ZeroMQ's routing id, a
// node number) names itself on every message. It gets that name as its peer id
// when nobody holds it, when it holds it already, or when the connection that
// held it is gone (`alive` says so). While the holder is alive, the newcomer
// speaks under an alias, "NAME~CONNECTION" in hex, which no client may choose
// (ValidPeerName), so whatever it says is attributed to the alias and never to
// the holder; its first message after the holder went away moves it to NAME.
// A connection keeps the first name it used; a message under another name is
// refused (nullopt).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "protocol/transport.h"

namespace orch::protocol {

// Names a client may give itself: 1..200 bytes of [A-Za-z0-9._:@-].
bool ValidPeerName(std::string_view name);

class PeerNames final {
 public:
  using Alive = std::function<bool(const std::string& connection)>;

  // The peer id a message from `connection` calling itself `name` belongs to;
  // appends to `out` a kConnected for a peer id the connection newly holds (and
  // a kDisconnected for an alias it gives up). nullopt when refused: an invalid
  // name, or not the name this connection used before.
  std::optional<std::string> Claim(const std::string& connection, const std::string& name,
                                   const std::string& user, const Alive& alive,
                                   std::deque<TransportEvent>& out);

  // The connection closed: appends kDisconnected for the peer id it held.
  void Release(const std::string& connection, const std::string& user,
               std::deque<TransportEvent>& out);

  // The connection a peer id reaches now; nullptr when none.
  const std::string* ConnectionOf(const std::string& peer) const;

 private:
  struct Speaker {
    std::string name;  // what it calls itself
    std::string peer;  // the name, or its alias while another holds the name
  };
  std::string Alias(const std::string& connection, const std::string& name) const;
  void Hold(const std::string& connection, Speaker& speaker, const std::string& peer,
            const std::string& user, std::deque<TransportEvent>& out);

  std::map<std::string, std::string> holder_;  // peer id -> connection
  std::map<std::string, Speaker> speakers_;    // connection -> who it is
};

}  // namespace orch::protocol
