#include "drivers/llamacpp/digest_pipeline.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "digest/row_digest.h"
#include "plan_document/job_fields.h"

namespace orch::drivers::llamacpp {

// The planner refuses more logits per position than the digest library keeps, so a
// plan never holds a job the driver must refuse.
static_assert(plan_document::kTopLogits.max == digest::kMaxTopK &&
                  plan_document::kTopLogits.min >= 1,
              "capture.top_logits limits (plan_document/job_fields.h) differ from the digest's");

RowDigester ComputeDigester(std::uint32_t top_k) {
  return [top_k](std::span<const float> row, const RowMeta& meta, digest::PositionRecord* record) {
    digest::DigestOptions options{.top_k = top_k, .target_id = meta.target};
    ORCH_RETURN_IF_ERROR(digest::ComputeRowDigest(row, options, &record->digest));
    if (meta.full_row) {
      record->full_row.assign(row.begin(), row.end());
    } else {
      record->full_row.clear();
    }
    return Status::Ok();
  };
}

int DigestWorkers(int engine_threads, unsigned cores, std::size_t row_size) {
  if (row_size < kMinPipelinedRow) return 0;
  return std::max(1, static_cast<int>(cores) - std::max(engine_threads, 0));
}

int RowsInFlight(int workers) { return std::min(64, 2 * (std::max(workers, 1) + 1)); }

DigestPipeline::DigestPipeline(const PipelineOptions& options, std::size_t row_size,
                               RowDigester digester, RecordSink sink)
    : row_size_(row_size),
      digester_(std::move(digester)),
      sink_(std::move(sink)),
      slots_(static_cast<std::size_t>(options.max_in_flight)) {
  ORCH_CHECK(options.workers >= 0 && options.max_in_flight >= 1);
  // Digesting in turn reads every row where it is: the slots hold no copies.
  if (options.workers > 0) {
    for (Slot& slot : slots_) slot.row.resize(row_size_);
  }
  for (int i = 0; i < options.workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

DigestPipeline::~DigestPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void DigestPipeline::Digest(Slot& slot) {
  slot.record.position = static_cast<std::uint64_t>(slot.meta.position);
  slot.record.input_token = slot.meta.input_token;
  slot.record.output_token = slot.meta.output_token;
  std::span<const float> row = slot.row;
  if (slot.borrowed != nullptr) row = std::span<const float>(slot.borrowed, row_size_);
  slot.status = digester_(row, slot.meta, &slot.record);
}

void DigestPipeline::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Slot& slot = slots_[queue_.front()];
    queue_.pop_front();
    slot.state = State::kRunning;
    lock.unlock();
    Digest(slot);
    lock.lock();
    slot.state = State::kDone;
    done_.notify_one();  // only the calling thread waits on done_
  }
}

Status DigestPipeline::Submit(const RowMeta& meta, std::span<const float> row) {
  return Queue(meta, row, /*borrow=*/false);
}

Status DigestPipeline::SubmitBorrowed(const RowMeta& meta, std::span<const float> row) {
  return Queue(meta, row, /*borrow=*/true);
}

void DigestPipeline::ReleaseBorrowed() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (std::uint64_t sequence = emitted_; sequence < submitted_; ++sequence) {
    Slot& slot = SlotOf(sequence);
    if (slot.borrowed == nullptr) continue;
    if (slot.state == State::kQueued) {
      std::copy(slot.borrowed, slot.borrowed + row_size_, slot.row.begin());
    } else {
      done_.wait(lock, [&slot] { return slot.state == State::kDone; });
    }
    slot.borrowed = nullptr;
  }
}

Status DigestPipeline::Queue(const RowMeta& meta, std::span<const float> row, bool borrow) {
  if (!failed_.ok()) return failed_;
  ORCH_CHECK(row.size() == row_size_)
      << "row of " << row.size() << " floats, expected " << row_size_;
  if (submitted_ - emitted_ == slots_.size()) ORCH_RETURN_IF_ERROR(EmitOldest());
  std::size_t index = submitted_ % slots_.size();
  Slot& slot = slots_[index];  // kFree: no other thread touches it
  slot.meta = meta;
  if (workers_.empty()) {
    // In turn: the row is read only during this call, and no other thread
    // ever touches the slots.
    slot.borrowed = row.data();
    Digest(slot);
    slot.borrowed = nullptr;
    slot.state = State::kDone;
  } else {
    if (borrow) {
      slot.borrowed = row.data();
    } else {
      slot.borrowed = nullptr;
      std::copy(row.begin(), row.end(), slot.row.begin());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot.state = State::kQueued;
      queue_.push_back(index);
    }
    queued_.notify_one();
  }
  ++submitted_;
  return EmitReady();
}

Status DigestPipeline::Finish() {
  while (failed_.ok() && emitted_ < submitted_) ORCH_RETURN_IF_ERROR(EmitOldest());
  return failed_;
}

Status DigestPipeline::EmitOldest() {
  Slot& oldest = SlotOf(emitted_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (oldest.state != State::kDone) {
    if (queue_.empty()) {
      done_.wait(lock);
      continue;
    }
    // Help instead of waiting: the newest queued row, leaving the oldest ones
    // to the workers, which take from the front.
    Slot& slot = slots_[queue_.back()];
    queue_.pop_back();
    slot.state = State::kRunning;
    lock.unlock();
    Digest(slot);
    lock.lock();
    slot.state = State::kDone;
  }
  lock.unlock();
  return Emit(oldest);
}

Status DigestPipeline::EmitReady() {
  while (emitted_ < submitted_) {
    Slot& oldest = SlotOf(emitted_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (oldest.state != State::kDone) return Status::Ok();
    }
    ORCH_RETURN_IF_ERROR(Emit(oldest));
  }
  return Status::Ok();
}

Status DigestPipeline::Emit(Slot& slot) {
  // kDone: no worker touches the slot until it is queued again.
  Status status = slot.status.ok() ? sink_(slot.record) : slot.status;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot.state = State::kFree;
    slot.borrowed = nullptr;
  }
  ++emitted_;
  if (!status.ok()) failed_ = status;
  return status;
}

}  // namespace orch::drivers::llamacpp
