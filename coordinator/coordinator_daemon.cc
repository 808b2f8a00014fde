#include "coordinator/coordinator_daemon.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
// clang-format on

#include <chrono>
#include <optional>

#include "coordinator/coordinator_service.h"
#include "protocol/zmq_asio_driver.h"
#include "protocol/zmq_transport.h"

namespace orch::coordinator {
namespace {

Millis WallNow() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch());
}

}  // namespace

struct CoordinatorDaemon::Impl {
  Impl(boost::asio::io_context& io, protocol::ZmqTransport& transport, store::Store& store,
       const CoordinatorOptions& options, spdlog::logger& log)
      : timer(io),
        service(
            options, store,
            [this](std::string_view peer, std::string_view frame) {
              return driver->Send(peer, frame);
            },
            log),
        log(log) {
    driver.emplace(
        io, transport,
        [this](protocol::TransportEvent event) { service.OnEvent(event, WallNow()); },
        [this] {
          service.Commit();
          Arm();
        });
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
      service.Commit();
      Arm();
    });
  }

  boost::asio::steady_timer timer;
  std::optional<protocol::ZmqAsioDriver> driver;  // built after `service`
  CoordinatorService service;
  spdlog::logger& log;
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

Status CoordinatorDaemon::Start() {
  ORCH_RETURN_IF_ERROR(impl_->service.Start(WallNow()));
  impl_->service.Commit();
  impl_->driver->Start();
  impl_->Arm();
  return Status::Ok();
}

void CoordinatorDaemon::Stop() {
  impl_->service.Commit();  // what the last burst wrote and holds goes out durable
  impl_->stopped = true;
  impl_->timer.cancel();
  impl_->driver.reset();
}

}  // namespace orch::coordinator
