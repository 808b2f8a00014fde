// CoordinatorDaemon: runs a CoordinatorService on one Boost.Asio io_context,
// over a ZeroMQ server transport, with one steady_timer armed for the core's
// next deadline.
//
// Time: the service is given wall-clock milliseconds since the Unix epoch, so
// that the lease expiries it stores mean the same after a restart. The timer is
// re-armed after every event. Stop() cancels the timer and stops the driver;
// io.run() then returns once nothing else is pending. All on the thread that
// runs `io`.
//
// Metrics (ServeMetrics, docs/metrics-endpoint.md): an HTTP listener on the same
// io_context serves /metrics, the status page `/` and /report/EXPERIMENT; its handler
// runs on the loop's thread, so it reads the service's state between events, without
// locks. The daemon times each frame's handling and each group commit for it.
#pragma once

#include <spdlog/logger.h>

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "coordinator/access_policy.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/options.h"
#include "store/store.h"
#include "telemetry/http_listener.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::protocol {
class ZmqTransport;
}  // namespace orch::protocol

namespace orch::coordinator {

struct MetricsOptions {
  telemetry::ListenAddress listen;
  std::string viewer_token;  // empty: none (then `listen` is a loopback address)
  std::string store_dir;     // orch_store_size_bytes sums its files; empty: not reported
  // The HTML report of an experiment (/report/EXPERIMENT); a NotFound error answers 404.
  // Unset: 404 for every report.
  std::function<Result<std::string>(const std::string& experiment)> report_html;
};

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
  // Serve metrics and the status page (above); before Start, which binds the listener.
  void ServeMetrics(MetricsOptions options);
  // Rebuilds state from the store and starts serving.
  Status Start();
  // "http://HOST:PORT" of the metrics listener once started; empty without one.
  std::string metrics_url() const;
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch::coordinator
