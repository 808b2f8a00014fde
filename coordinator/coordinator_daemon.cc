#include "coordinator/coordinator_daemon.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
// clang-format on

#include <chrono>
#include <filesystem>
#include <optional>

#include "coordinator/coordinator_service.h"
#include "coordinator/metrics_page.h"
#include "protocol/zmq_asio_driver.h"
#include "protocol/zmq_transport.h"

namespace orch::coordinator {
namespace {

Millis WallNow() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch());
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::optional<std::uint64_t> FilesBytes(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  std::error_code error;
  std::uint64_t total = 0;
  std::filesystem::recursive_directory_iterator it(dir, error), end;
  for (; !error && it != end; it.increment(error)) {
    std::error_code size_error;
    if (it->is_regular_file(size_error)) {
      std::uintmax_t size = it->file_size(size_error);
      if (!size_error) total += size;
    }
  }
  if (error) return std::nullopt;
  return total;
}

constexpr int kPageRefreshSeconds = 5;

}  // namespace

struct CoordinatorDaemon::Impl {
  Impl(boost::asio::io_context& io, protocol::ZmqTransport& transport, store::Store& store,
       const CoordinatorOptions& options, spdlog::logger& log)
      : timer(io),
        transport(transport),
        service(
            options, store,
            [this](std::string_view peer, std::string_view frame) {
              return driver->Send(peer, frame);
            },
            log),
        log(log),
        options(options),
        io(io) {
    driver.emplace(
        io, transport,
        [this](protocol::TransportEvent event) {
          auto start = std::chrono::steady_clock::now();
          service.OnEvent(event, WallNow());
          measures.message_seconds.Observe(SecondsSince(start));
        },
        [this] {
          Commit();
          Arm();
        });
  }

  void Commit() {
    auto start = std::chrono::steady_clock::now();
    service.Commit();
    measures.commit_seconds.Observe(SecondsSince(start));
  }

  telemetry::HttpReply Serve(const telemetry::HttpRequest& request) {
    std::string path = request.target.substr(0, request.target.find('?'));
    if (path == "/metrics") {
      measures.store_bytes = FilesBytes(metrics.store_dir);
      measures.bad_frames = service.bad_frames();
      measures.failed_writes = service.failed_writes();
      measures.refused_handshakes = transport.refused_handshakes();
      protocol::StatusReply status = service.core().Status({}, WallNow());
      return {200, telemetry::kExpositionContentType,
              CoordinatorMetricsText(status, service.counters(), measures)};
    }
    if (path == "/") {
      protocol::StatusReply status = service.core().Status(
          protocol::StatusRequest{.experiment = "", .all_jobs = true}, WallNow());
      return {200, "text/html; charset=utf-8",
              StatusPageHtml(status, options.id, kPageRefreshSeconds)};
    }
    if (path.starts_with("/report/")) return Report(path.substr(8));
    return {404, "text/plain; charset=utf-8", "not found: " + path + "\n"};
  }

  telemetry::HttpReply Report(std::string_view segment) {
    std::optional<std::string> experiment = DecodePathSegment(segment);
    if (!experiment || experiment->empty() || !service.core().HasExperiment(*experiment) ||
        !metrics.report_html) {
      return {404, "text/plain; charset=utf-8",
              "no experiment " + std::string(segment) + " on this coordinator\n"};
    }
    Result<std::string> html = metrics.report_html(*experiment);
    if (!html.ok()) {
      int code = html.status().code() == StatusCode::kNotFound ? 404 : 500;
      return {code, "text/plain; charset=utf-8", html.status().message() + "\n"};
    }
    return {200, "text/html; charset=utf-8", std::move(html).value()};
  }

  void Arm() {
    if (stopped) return;
    std::optional<Millis> deadline = service.NextDeadline();
    if (!deadline) {
      timer.cancel();
      return;
    }
    Millis wait = std::max(Millis(0), *deadline - WallNow());
    timer.expires_after(wait);
    timer.async_wait([this](const boost::system::error_code& error) {
      if (error || stopped) return;
      service.Tick(WallNow());
      Commit();
      Arm();
    });
  }

  boost::asio::steady_timer timer;
  protocol::ZmqTransport& transport;
  std::optional<protocol::ZmqAsioDriver> driver;  // built after `service`
  CoordinatorService service;
  spdlog::logger& log;
  CoordinatorOptions options;
  DaemonMeasures measures;
  std::optional<MetricsOptions> wanted;  // ServeMetrics
  MetricsOptions metrics;
  std::unique_ptr<telemetry::HttpListener> listener;
  boost::asio::io_context& io;
  bool stopped = false;
};

CoordinatorDaemon::CoordinatorDaemon(boost::asio::io_context& io, protocol::ZmqTransport& transport,
                                     store::Store& store, const CoordinatorOptions& options,
                                     spdlog::logger& log)
    : impl_(std::make_unique<Impl>(io, transport, store, options, log)) {}

CoordinatorDaemon::~CoordinatorDaemon() = default;

void CoordinatorDaemon::SetAccessPolicy(AccessPolicy policy) {
  impl_->service.SetAccessPolicy(std::move(policy));
}

void CoordinatorDaemon::SetBundleKeys(BundleKeys keys) {
  impl_->service.SetBundleKeys(std::move(keys));
}

void CoordinatorDaemon::ServeMetrics(MetricsOptions options) { impl_->wanted = std::move(options); }

std::string CoordinatorDaemon::metrics_url() const {
  return impl_->listener ? impl_->listener->url() : std::string();
}

Status CoordinatorDaemon::Start() {
  ORCH_RETURN_IF_ERROR(impl_->service.Start(WallNow()));
  impl_->service.Commit();
  if (impl_->wanted) {
    impl_->metrics = std::move(*impl_->wanted);
    Result<std::unique_ptr<telemetry::HttpListener>> listener = telemetry::HttpListener::Start(
        impl_->io, impl_->metrics.listen, impl_->metrics.viewer_token,
        [impl = impl_.get()](const telemetry::HttpRequest& request) {
          return impl->Serve(request);
        });
    if (!listener.ok()) return listener.status();
    impl_->listener = std::move(listener).value();
  }
  impl_->driver->Start();
  impl_->Arm();
  return Status::Ok();
}

void CoordinatorDaemon::Stop() {
  impl_->service.Commit();  // what the last burst wrote and holds goes out durable
  impl_->stopped = true;
  impl_->timer.cancel();
  impl_->driver.reset();
  impl_->listener.reset();
}

}  // namespace orch::coordinator
