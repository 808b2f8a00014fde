// ZmqAsioDriver: ZeroMQ's notification fd on an Asio stream_descriptor.
#include "protocol/zmq_asio_driver.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio/io_context.hpp>
// clang-format on
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include "protocol/zmq_transport.h"

namespace orch::protocol {

struct ZmqAsioDriver::Impl : std::enable_shared_from_this<ZmqAsioDriver::Impl> {
  Impl(boost::asio::io_context& io, ZmqTransport& transport, Handler on_event,
       BurstHandler on_burst_end)
      : io(io),
        transport(transport),
        on_event(std::move(on_event)),
        on_burst_end(std::move(on_burst_end)),
        descriptor(io, transport.NativeFd()),
        monitor(io) {
    if (transport.MonitorFd() >= 0) monitor.assign(transport.MonitorFd());
  }

  void Wait() { WaitOn(descriptor); }

  void WaitOn(boost::asio::posix::stream_descriptor& fd) {
    // Weak: a wait still queued when the driver is destroyed must not touch it.
    fd.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                  [weak = weak_from_this(), &fd](const boost::system::error_code& error) {
                    auto self = weak.lock();
                    if (!self || self->stopped || error) return;
                    // The fd is edge-triggered: only reading until Receive() has
                    // nothing re-arms it; stopping early could strand events that
                    // never signal.
                    self->Drain();
                    self->WaitOn(fd);
                  });
  }

  void Drain() {
    // Cleared first: a Send from an event handler below must be able to post the
    // next drain.
    drain_posted = false;
    int in_burst = 0;
    while (!stopped) {
      auto event = transport.Receive();
      if (!event) break;
      on_event(std::move(*event));
      // A long burst is cut every kMaxBurst events so that the store sync and the
      // replies it holds back (group commit) do not wait for the socket to go quiet.
      if (++in_burst == kMaxBurst) EndBurst(in_burst);
    }
    EndBurst(in_burst);
  }

  void EndBurst(int& in_burst) {
    if (in_burst > 0 && !stopped && on_burst_end) on_burst_end();
    in_burst = 0;
  }

  void PostDrain() {
    // One drain queued at a time: many sends in one handler need only one.
    if (drain_posted || stopped) return;
    drain_posted = true;
    boost::asio::post(io, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->Drain();
    });
  }

  boost::asio::io_context& io;
  ZmqTransport& transport;
  Handler on_event;
  BurstHandler on_burst_end;  // may be empty
  boost::asio::posix::stream_descriptor descriptor;
  // A client's socket monitor (ZmqTransport::MonitorFd): refusals and reconnections.
  boost::asio::posix::stream_descriptor monitor;
  bool drain_posted = false;
  bool stopped = false;  // the driver is gone; queued handlers do nothing
};

ZmqAsioDriver::ZmqAsioDriver(boost::asio::io_context& io, ZmqTransport& transport, Handler on_event)
    : ZmqAsioDriver(io, transport, std::move(on_event), BurstHandler()) {}

ZmqAsioDriver::ZmqAsioDriver(boost::asio::io_context& io, ZmqTransport& transport, Handler on_event,
                             BurstHandler on_burst_end)
    : impl_(std::make_shared<Impl>(io, transport, std::move(on_event), std::move(on_burst_end))) {}

ZmqAsioDriver::~ZmqAsioDriver() {
  impl_->stopped = true;
  boost::system::error_code ignored;
  impl_->descriptor.cancel(ignored);
  impl_->descriptor.release();  // the fd belongs to ZeroMQ
  if (impl_->monitor.is_open()) {
    impl_->monitor.cancel(ignored);
    impl_->monitor.release();
  }
}

void ZmqAsioDriver::Start() {
  impl_->Wait();
  if (impl_->monitor.is_open()) impl_->WaitOn(impl_->monitor);
  // Events may have arrived before the wait began: their edge is already spent.
  impl_->PostDrain();
}

Status ZmqAsioDriver::Send(std::string_view peer, std::string_view frame) {
  Status sent = impl_->transport.Send(peer, frame);
  impl_->PostDrain();
  return sent;
}

}  // namespace orch::protocol
