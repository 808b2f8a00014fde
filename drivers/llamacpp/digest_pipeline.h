// Digests logit rows on worker threads while the engine goes on decoding, and
// hands the records to a sink in submission (position) order. The records are
// byte for byte those of digesting each row on the calling thread: every row is
// digested alone by the same deterministic code, only on another thread.
//
// Submit copies the row into one of `max_in_flight` reused slots (the engine's
// logits are only valid until its next decode) and queues it; workers digest
// queued rows oldest first. SubmitBorrowed queues the row without copying it,
// for the rows of a batch that stay valid until the next decode: before that
// decode ReleaseBorrowed copies the few still queued and waits for those being
// digested, so a batch costs at most max_in_flight copies instead of one per row.
// At most `max_in_flight` rows are in flight: when all slots are taken, Submit
// (or SubmitBorrowed) waits for the oldest, and while it waits the calling
// thread digests queued rows itself (newest first), so a burst of rows (one
// teacher-forced batch) is digested by the workers and the caller together once
// the engine is idle. Memory: max_in_flight rows of `row_size` floats, allocated
// once.
//
// Threads: the sink runs only on the calling thread, in order; the digester runs
// on the workers and on the calling thread (it must be safe to call
// concurrently on different rows). One thread calls Submit and Finish.
//
// With no workers the pipeline digests each row in Submit (or SubmitBorrowed)
// on the calling thread, copying nothing: for rows too short to be worth a
// hand-off (DigestWorkers).
//
// Errors: the first failure in submission order (the digester's for a row, or
// the sink's) stops the stream: records after it are never emitted, and Submit
// and Finish return that status from then on. Records before it have all been
// emitted by the time it is returned.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/status.h"
#include "digest/record_codec.h"
#include "digest/row_digest.h"

namespace orch::drivers::llamacpp {

// Receives each record once, in order; an error stops the run.
using RecordSink = std::function<Status(const digest::PositionRecord&)>;

// What a record holds besides the row's digest.
struct RowMeta {
  std::int64_t position = 0;
  std::int32_t input_token = -1;
  std::int32_t output_token = -1;
  std::int32_t target = digest::kNoTarget;
  bool full_row = false;  // keep the whole row in the record (capture policy)
};

// Fills record->digest and record->full_row from `row`; the pipeline sets the
// position and tokens. Called concurrently on different rows and records.
using RowDigester = std::function<Status(std::span<const float> row, const RowMeta& meta,
                                         digest::PositionRecord* record)>;

// The driver's digester: digest::ComputeRowDigest with `top_k` and the row's
// target; the full row copied when meta.full_row.
RowDigester ComputeDigester(std::uint32_t top_k);

// Digest workers beside an engine that runs `engine_threads` threads on a
// machine of `cores` hardware threads (0 = unknown): the cores the engine
// leaves, at least 1. The calling thread digests too while the engine is idle.
// Rows shorter than kMinPipelinedRow get none: they are digested in turn.
int DigestWorkers(int engine_threads, unsigned cores, std::size_t row_size);

// A row of fewer logits digests in about the time a hand-off to a worker
// costs (a lock and a wake-up, a few microseconds): in turn is faster. At a
// vocabulary of 1,000 the pipeline measured 0.88-0.90 of a bare engine loop,
// digesting in turn 0.94 (docs/benchmarks.md).
inline constexpr std::size_t kMinPipelinedRow = 8192;

// Rows in flight for `workers` workers: enough to keep every worker and the
// caller busy across one decode, bounded so memory stays a few rows per thread.
int RowsInFlight(int workers);

struct PipelineOptions {
  int workers = 1;        // >= 0 threads started by the constructor; 0: in turn
  int max_in_flight = 4;  // >= 1 slots of row_size floats
};

class DigestPipeline final {
 public:
  // Starts the workers. Rows must have exactly `row_size` floats.
  DigestPipeline(const PipelineOptions& options, std::size_t row_size, RowDigester digester,
                 RecordSink sink);
  // Stops and joins the workers; rows not yet emitted are dropped.
  ~DigestPipeline();
  DigestPipeline(const DigestPipeline&) = delete;
  DigestPipeline& operator=(const DigestPipeline&) = delete;

  // Copies `row` (only read during the call) and queues it; emits the records
  // that are ready at the head. Waits (helping) when max_in_flight rows are out.
  Status Submit(const RowMeta& meta, std::span<const float> row);
  // The same without the copy: `row` must stay valid and unchanged until the
  // next ReleaseBorrowed or Finish returns.
  Status SubmitBorrowed(const RowMeta& meta, std::span<const float> row);
  // Ends every borrow: rows still queued are copied into their slots, rows
  // being digested are waited for. Afterwards no borrowed memory is read.
  void ReleaseBorrowed();
  // Emits every submitted record in order; returns the first failure, if any.
  Status Finish();

 private:
  enum class State { kFree, kQueued, kRunning, kDone };
  struct Slot {
    State state = State::kFree;
    RowMeta meta;
    const float* borrowed = nullptr;  // the row when borrowed, else in `row`
    std::vector<float> row;
    digest::PositionRecord record;
    Status status;
  };

  Status Queue(const RowMeta& meta, std::span<const float> row, bool borrow);
  void WorkerLoop();
  void Digest(Slot& slot);
  Status EmitOldest();  // waits for (and helps towards) the oldest slot
  Status EmitReady();   // emits done slots at the head, without waiting
  Status Emit(Slot& slot);
  Slot& SlotOf(std::uint64_t sequence) { return slots_[sequence % slots_.size()]; }

  const std::size_t row_size_;
  const RowDigester digester_;
  const RecordSink sink_;
  std::vector<Slot> slots_;
  std::uint64_t submitted_ = 0;     // calling thread only
  std::uint64_t emitted_ = 0;       // calling thread only
  Status failed_;                   // calling thread only
  std::mutex mutex_;                // guards the slots' states, queue_ and stopping_
  std::condition_variable queued_;  // workers wait for a queued row
  std::condition_variable done_;    // the caller waits for a digested row
  std::deque<std::size_t> queue_;   // slot indexes, oldest first
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace orch::drivers::llamacpp
