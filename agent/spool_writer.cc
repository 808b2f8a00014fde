#include "agent/spool_writer.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <utility>

namespace orch::agent {

std::size_t SpooledBytes(const protocol::Message& message) {
  std::size_t bytes = 0;
  if (const auto* chunk = std::get_if<protocol::DigestChunk>(&message)) {
    for (const protocol::ChunkRecord& record : chunk->records) bytes += record.bytes.size();
  }
  return bytes;
}

SpoolWriter::SpoolWriter(boost::asio::io_context& io, Spool& spool, std::size_t max_queued_bytes)
    : io_(io), spool_(spool), max_queued_bytes_(max_queued_bytes), thread_([this] { Run(); }) {}

SpoolWriter::~SpoolWriter() {
  alive_.reset();  // results posted from now on do nothing
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void SpoolWriter::Post(std::size_t bytes, Op op) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock,
                [&] { return queued_bytes_ == 0 || queued_bytes_ + bytes <= max_queued_bytes_; });
  queue_.push_back({bytes, std::move(op)});
  queued_bytes_ += bytes;
  lock.unlock();
  changed_.notify_all();
}

void SpoolWriter::WaitIdle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

std::size_t SpoolWriter::QueuedBytes() {
  std::lock_guard lock(mutex_);
  return queued_bytes_;
}

void SpoolWriter::Run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    // Stopping drains the queue first: what was handed over is made durable.
    if (queue_.empty()) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::function<void()> done = item.op(spool_);
    item.op = nullptr;  // frees what it held before the next one runs
    if (done) {
      boost::asio::post(io_, [token = token_, done = std::move(done)] {
        if (!token.expired()) done();
      });
    }
    lock.lock();
    busy_ = false;
    queued_bytes_ -= item.bytes;
    changed_.notify_all();
  }
}

}  // namespace orch::agent
