// ZmqAsioDriver: runs a ZmqTransport on a Boost.Asio io_context (one event loop
// per process; the socket belongs to the loop thread).
//
// ZeroMQ's ZMQ_FD is edge-triggered and only says "look at the socket": the
// driver waits on it, then calls Receive() until it returns nullopt, handing
// each event to the handler. Any send can consume that edge, so sends made on
// the loop go through Send() here, which schedules a drain afterwards.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "base/status.h"
#include "protocol/transport.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::protocol {

class ZmqTransport;

class ZmqAsioDriver final {
 public:
  using Handler = std::function<void(TransportEvent)>;
  using BurstHandler = std::function<void()>;
  static constexpr int kMaxBurst = 512;

  // Borrows `io` and `transport`, which must outlive the driver. `on_event`
  // runs on the thread running `io`, once per event, in arrival order. Nothing
  // happens before Start().
  ZmqAsioDriver(boost::asio::io_context& io, ZmqTransport& transport, Handler on_event);
  // The same, and `on_burst_end` runs after each burst of events handed over in
  // one go (the socket had no more), and after every kMaxBurst events of a longer
  // one: where the coordinator syncs its store once for many messages.
  ZmqAsioDriver(boost::asio::io_context& io, ZmqTransport& transport, Handler on_event,
                BurstHandler on_burst_end);
  // Stops waiting; leaves ZeroMQ's fd open (ZeroMQ owns it). Handlers already
  // queued on `io` become no-ops.
  ~ZmqAsioDriver();
  ZmqAsioDriver(const ZmqAsioDriver&) = delete;
  ZmqAsioDriver& operator=(const ZmqAsioDriver&) = delete;

  // Begins waiting for events; also drains what has arrived already.
  void Start();

  // transport.Send(peer, frame), then a drain so no arrival is missed.
  Status Send(std::string_view peer, std::string_view frame);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with queued completion handlers (weakly)
};

}  // namespace orch::protocol
