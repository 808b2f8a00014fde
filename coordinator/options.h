// CoordinatorOptions: the knobs of the coordinator core, as read from the
// [coordinator] table of its config file (coordinator/config.h). Durations
// carry their unit.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace orch::coordinator {

using Millis = std::chrono::milliseconds;  // a time on the coordinator's clock

struct CoordinatorOptions {
  std::string id = "coord-1";                          // named in Welcome
  std::chrono::milliseconds heartbeat_interval{1000};  // agents heartbeat this often
  std::chrono::milliseconds agent_timeout{5000};       // silent this long: agent is lost
  std::chrono::milliseconds lease{30000};              // a run's lease, renewed by heartbeats
  std::int32_t retry_budget = 3;                       // runs per job before it fails for good
  // Mixed into run ids so that ids from two coordinator lifetimes never
  // collide.
  std::string run_id_salt = "0";
  // Bad frames a peer may send before it is ignored for good.
  std::int32_t max_bad_frames = 10;
  // How many failures StatusReply lists.
  std::size_t recent_failures = 20;
  // How the sockets are protected, as StatusReply says it ("curve", ...).
  std::string security = "plain (loopback)";
  // Group commit: the store is written without a sync per write, and the service
  // holds every message it sends until CoordinatorService::Commit() has synced the
  // store once for the whole burst (so an Ack still means durable). Off: every write
  // is synced by the store and messages go out at once (the tests' default).
  bool group_commit = false;
};

}  // namespace orch::coordinator
