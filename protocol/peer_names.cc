#include "protocol/peer_names.h"

#include <cctype>

namespace orch::protocol {

bool ValidPeerName(std::string_view name) {
  if (name.empty() || name.size() > 200) return false;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
              c == ':' || c == '@' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string PeerNames::Alias(const std::string& connection, const std::string& name) const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string alias = name + "~";
  for (char c : connection) {
    alias.push_back(kHex[(static_cast<unsigned char>(c) >> 4) & 0xf]);
    alias.push_back(kHex[static_cast<unsigned char>(c) & 0xf]);
  }
  return alias;
}

std::optional<std::string> PeerNames::Claim(const std::string& connection, const std::string& name,
                                            const std::string& user, const Alive& alive,
                                            std::deque<TransportEvent>& out) {
  if (!ValidPeerName(name)) return std::nullopt;
  auto [it, fresh] = speakers_.try_emplace(connection, Speaker{name, ""});
  Speaker& speaker = it->second;
  if (speaker.name != name) return std::nullopt;
  if (speaker.peer == name) return name;
  auto held = holder_.find(name);
  bool free = held == holder_.end() || !alive(held->second);
  if (free) {
    if (held != holder_.end()) speakers_.erase(held->second);  // gone without a word
    Hold(connection, speaker, name, user, out);
  } else if (fresh) {
    Hold(connection, speaker, Alias(connection, name), user, out);
  }
  return speaker.peer;
}

void PeerNames::Hold(const std::string& connection, Speaker& speaker, const std::string& peer,
                     const std::string& user, std::deque<TransportEvent>& out) {
  if (!speaker.peer.empty()) {
    holder_.erase(speaker.peer);
    out.push_back({TransportEvent::Kind::kDisconnected, speaker.peer, "", user});
  }
  speaker.peer = peer;
  holder_[peer] = connection;
  out.push_back({TransportEvent::Kind::kConnected, peer, "", user});
}

void PeerNames::Release(const std::string& connection, const std::string& user,
                        std::deque<TransportEvent>& out) {
  auto it = speakers_.find(connection);
  if (it == speakers_.end()) return;
  auto held = holder_.find(it->second.peer);
  if (held != holder_.end() && held->second == connection) {
    holder_.erase(held);
    out.push_back({TransportEvent::Kind::kDisconnected, it->second.peer, "", user});
  }
  speakers_.erase(it);
}

const std::string* PeerNames::ConnectionOf(const std::string& peer) const {
  auto it = holder_.find(peer);
  return it == holder_.end() ? nullptr : &it->second;
}

}  // namespace orch::protocol
