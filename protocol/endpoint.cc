#include "protocol/endpoint.h"

#include <cctype>

namespace orch::protocol {
namespace {

constexpr std::string_view kExamples =
    "expected tcp://HOST:PORT (e.g. tcp://127.0.0.1:5555), ipc://PATH or inproc://NAME";

bool ValidHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.size() > 2;
  if (host.empty() || host.size() > 253) return false;
  for (char c : host) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' ||
              c == '_' || (c == '*');
    if (!ok) return false;
  }
  return true;
}

std::string WhyBadPort(std::string_view port, EndpointUse use) {
  if (port == "*") {
    return use == EndpointUse::kBind ? "" : "port * (any free port) only makes sense to listen on";
  }
  if (port.empty() || port.size() > 5) return "port \"" + std::string(port) + "\" is not 1..65535";
  int value = 0;
  for (char c : port) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) {
      return "port \"" + std::string(port) + "\" is not a number";
    }
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return "port " + std::string(port) + " is not 1..65535";
  return "";
}

std::string WhyBadTcp(std::string_view rest, EndpointUse use) {
  std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return "no port";
  std::string_view host = rest.substr(0, colon);
  if (!ValidHost(host)) return "host \"" + std::string(host) + "\" is not a name or address";
  if (host == "*" && use == EndpointUse::kConnect) return "host * can only be listened on";
  return WhyBadPort(rest.substr(colon + 1), use);
}

}  // namespace

std::string WhyBadEndpoint(std::string_view endpoint, EndpointUse use) {
  std::string why;
  if (endpoint.starts_with("tcp://")) {
    why = WhyBadTcp(endpoint.substr(6), use);
  } else if (endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://")) {
    why = endpoint.substr(endpoint.find("://") + 3).empty() ? "no path or name" : "";
  } else {
    why = "unknown transport";
  }
  if (why.empty()) return "";
  return "\"" + std::string(endpoint) + "\": " + why + "; " + std::string(kExamples);
}

}  // namespace orch::protocol
