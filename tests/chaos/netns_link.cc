#include "tests/chaos/netns_link.h"

#include <unistd.h>

#include <chrono>

#include "tests/support/subprocess.h"

namespace orch::testing {

bool RunIp(const std::vector<std::string>& args, std::string* why) {
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = RunProcess(argv, std::chrono::seconds(10));
  if (r.exit_code == 0) return true;
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  if (why != nullptr) *why = command + ": exit " + std::to_string(r.exit_code) + ": " + r.err;
  return false;
}

std::unique_ptr<NetnsLink> NetnsLink::Create(const std::string& tag, int subnet, std::string* why) {
  if (::geteuid() != 0) {
    *why = "network namespaces need root";
    return nullptr;
  }
  std::unique_ptr<NetnsLink> link(new NetnsLink());
  std::string unique = tag + std::to_string(::getpid() % 100000);
  link->ns_ = "orch-chaos-" + unique;
  link->host_if_ = "oh" + unique;  // interface names: at most 15 characters
  link->ns_if_ = "on" + unique;
  if (!link->SetUp(subnet, why)) return nullptr;  // the destructor undoes what was made
  return link;
}

bool NetnsLink::SetUp(int subnet, std::string* why) {
  const std::string prefix = "10.231." + std::to_string(subnet) + ".";
  host_address_ = prefix + "1";
  if (!RunIp({"netns", "add", ns_}, why)) return false;
  ns_made_ = true;
  if (!RunIp({"link", "add", host_if_, "type", "veth", "peer", "name", ns_if_}, why)) return false;
  veth_made_ = true;
  return RunIp({"link", "set", ns_if_, "netns", ns_}, why) &&
         RunIp({"addr", "add", host_address_ + "/30", "dev", host_if_}, why) &&
         RunIp({"link", "set", host_if_, "up"}, why) &&
         RunIp({"-n", ns_, "addr", "add", prefix + "2/30", "dev", ns_if_}, why) &&
         RunIp({"-n", ns_, "link", "set", ns_if_, "up"}, why) &&
         RunIp({"-n", ns_, "link", "set", "lo", "up"}, why);
}

NetnsLink::~NetnsLink() {
  std::string ignored;
  if (veth_made_) RunIp({"link", "del", host_if_}, &ignored);  // deletes both ends
  if (ns_made_) RunIp({"netns", "del", ns_}, &ignored);
}

bool NetnsLink::Down(std::string* why) { return RunIp({"link", "set", host_if_, "down"}, why); }

bool NetnsLink::Up(std::string* why) { return RunIp({"link", "set", host_if_, "up"}, why); }

}  // namespace orch::testing
