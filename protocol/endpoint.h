// Which ZeroMQ endpoints orch accepts in configs and flags, checked before a
// socket is made so that a typo is an error naming the field, not a failure
// later. Pure.
//   tcp://HOST:PORT   HOST a name, an IPv4 address or [IPv6]; PORT 1..65535,
//                     or * when binding (pick a free port)
//   ipc://PATH        a Unix socket path
//   inproc://NAME     within one process (tests)
#pragma once

#include <string>
#include <string_view>

namespace orch::protocol {

enum class EndpointUse { kBind, kConnect };

// Empty when `endpoint` is acceptable for `use`; otherwise what is wrong and
// what a valid one looks like.
std::string WhyBadEndpoint(std::string_view endpoint, EndpointUse use);

}  // namespace orch::protocol
