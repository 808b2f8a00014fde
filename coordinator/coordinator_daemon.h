// CoordinatorDaemon: runs a CoordinatorService on one Boost.Asio io_context,
// over a ZeroMQ server transport, with one steady_timer armed for the core's
// next deadline.
//
// Time: the service is given wall-clock milliseconds since the Unix epoch, so
// that the lease expiries it stores mean the same after a restart. The timer is
// re-armed after every event. Stop() cancels the timer and stops the driver;
// io.run() then returns once nothing else is pending. All on the thread that
// runs `io`.
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "base/status.h"
#include "coordinator/access_policy.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/options.h"
#include "store/store.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::protocol {
class ZmqTransport;
}  // namespace orch::protocol

namespace orch::coordinator {

class CoordinatorDaemon final {
 public:
  // Borrows everything; all must outlive the daemon.
  CoordinatorDaemon(boost::asio::io_context& io, protocol::ZmqTransport& transport,
                    store::Store& store, const CoordinatorOptions& options, spdlog::logger& log);
  ~CoordinatorDaemon();
  CoordinatorDaemon(const CoordinatorDaemon&) = delete;
  CoordinatorDaemon& operator=(const CoordinatorDaemon&) = delete;

  // Who may say what (coordinator/access_policy.h); before Start.
  void SetAccessPolicy(AccessPolicy policy);
  // The keys bundles need (coordinator_service.h); before Start.
  void SetBundleKeys(BundleKeys keys);
  // Rebuilds state from the store and starts serving.
  Status Start();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch::coordinator
