// SpoolWriter: the spool's own thread. The agent's loop hands it spool operations
// (writes, acknowledgements, reads for a resend); it runs them one at a time, in the
// order given, and posts what each returns back to the loop, in the same order. So
// the loop never waits for a write or an fsync: a teacher-forced job's full rows are
// megabytes, hundreds of milliseconds of fsync on a slow disk, and while they are
// made durable the loop hands the next job to a warm session (docs/agent.md,
// "Spool"). Messages still go out only once written, in the order they were spooled.
//
// Backpressure: an operation that would bring the bytes waiting past
// `max_queued_bytes` blocks Post until the thread has caught up (one operation is
// always admitted, however large), so a disk slower than the driver slows the agent
// as it did when it wrote on the loop, and memory stays bounded.
//
// The Spool is the thread's alone while the writer lives: the loop touches it only
// before the first Post (AgentService::Start) or after WaitIdle.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/spool.h"
#include "protocol/messages.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::agent {

// Bytes of spool work the agent's loop may hand ahead of the spool's thread before it
// waits (SpoolWriter's bound).
inline constexpr std::size_t kMaxSpoolQueuedBytes = std::size_t{64} << 20;

// What a message to be spooled holds, roughly (a DigestChunk's record bytes; 0 for
// the others), for the bound.
std::size_t SpooledBytes(const protocol::Message& message);

class SpoolWriter final {
 public:
  // Runs on the spool's thread; what it returns runs on the loop afterwards.
  using Op = std::function<std::function<void()>(Spool&)>;

  // Borrows `io` (where results are posted) and `spool`; both must outlive it.
  SpoolWriter(boost::asio::io_context& io, Spool& spool, std::size_t max_queued_bytes);
  // Runs every operation handed over (they are durable then); their results are
  // not delivered any more.
  ~SpoolWriter();
  SpoolWriter(const SpoolWriter&) = delete;
  SpoolWriter& operator=(const SpoolWriter&) = delete;

  // Hands `op` to the thread; `bytes` is what it holds (a message's records), for
  // the bound above.
  void Post(std::size_t bytes, Op op);
  // Blocks until every operation handed over so far has run on the thread.
  void WaitIdle();
  // The bytes of the operations handed over and not yet run (or running).
  std::size_t QueuedBytes();

 private:
  struct Item {
    std::size_t bytes = 0;
    Op op;
  };
  void Run();

  boost::asio::io_context& io_;
  Spool& spool_;
  const std::size_t max_queued_bytes_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  const std::weak_ptr<bool> token_ = alive_;  // copied by the thread; alive_ is the loop's
  std::mutex mutex_;
  std::condition_variable changed_;  // an item queued or done, or stopping
  std::deque<Item> queue_;
  std::size_t queued_bytes_ = 0;  // of the items queued or running
  bool busy_ = false;             // an item is running
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above are
};

}  // namespace orch::agent
