// A network namespace joined to this host by a veth pair on a private /30, for running
// one agent behind a link a test can cut: host side HOST_ADDR (x.x.x.1), namespace side
// x.x.x.2, both up, and `lo` up inside. Down() / Up() set the host end of the pair down
// and up again (packets in both directions are dropped meanwhile; sockets stay open).
// The destructor deletes the veth pair and the namespace, also when the test failed or
// a step of the set-up did not complete. Needs root and `ip` (iproute2): Create says why
// not otherwise.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace orch::testing {

class NetnsLink {
 public:
  // `tag`: a short name (at most 8 characters) that makes the namespace and interface
  // names unique on this host together with the pid; `subnet`: 1..254, the third octet
  // of 10.231.SUBNET.0/30.
  static std::unique_ptr<NetnsLink> Create(const std::string& tag, int subnet, std::string* why);
  ~NetnsLink();
  NetnsLink(const NetnsLink&) = delete;
  NetnsLink& operator=(const NetnsLink&) = delete;

  const std::string& ns() const { return ns_; }
  const std::string& host_address() const { return host_address_; }  // e.g. 10.231.7.1
  // The command prefix that runs a program inside the namespace.
  std::vector<std::string> Exec() const { return {"ip", "netns", "exec", ns_}; }

  bool Down(std::string* why);
  bool Up(std::string* why);

 private:
  NetnsLink() = default;
  bool SetUp(int subnet, std::string* why);

  std::string ns_;
  std::string host_if_;
  std::string ns_if_;
  std::string host_address_;
  bool ns_made_ = false;
  bool veth_made_ = false;
};

// Runs `ip ARGS...` to completion; false with its stderr in `why` when it failed.
bool RunIp(const std::vector<std::string>& args, std::string* why);

}  // namespace orch::testing
