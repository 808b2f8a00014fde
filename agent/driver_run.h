// DriverRun: the pure part of one run. Consumes the driver's stdout bytes and
// exit, and produces the DigestChunks and the RunFinished the agent must send.
// No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver_protocol/frames.h"
#include "agent/process_launcher.h"
#include "base/status.h"
#include "protocol/messages.h"

namespace orch::agent {

// A chunk is cut before its records' bytes would pass this, whatever records_per_chunk
// says: full logit rows (up to 4 MiB each) must not make a chunk's frame exceed
// protocol::kMaxFrameBytes (16 MiB). A chunk always holds at least one record.
inline constexpr std::size_t kMaxChunkRecordBytes = std::size_t{8} << 20;

// The driver's frames (driver_protocol/frames.h), as the agent reads them.
using driver_protocol::DriverFrame;
using driver_protocol::DriverFrameParser;
using driver_protocol::DriverFrameType;

class DriverRun final {
 public:
  DriverRun(std::string run_id, std::string driver_name, std::size_t records_per_chunk)
      : run_id_(std::move(run_id)),
        driver_name_(std::move(driver_name)),
        records_per_chunk_(records_per_chunk) {}

  // Appends the full chunks completed by `bytes` to `chunks`: records_per_chunk records,
  // or fewer when the next one would take the chunk past kMaxChunkRecordBytes. A malformed
  // stream fails the run (the Status says why; the caller kills the driver).
  Status Feed(std::string_view bytes, std::vector<protocol::DigestChunk>* chunks);

  // The last partial chunk, if any.
  std::optional<protocol::DigestChunk> Flush();

  // The RunFinished for how the driver ended; chunk_count counts every chunk
  // produced. The error is the meaningful part: a typed error's code and
  // message, else what went wrong and the last lines of the driver's stderr;
  // `log_path` (the whole stderr, may be empty) is named in it.
  protocol::RunFinished Finish(const ProcessExit& exit, const std::string& log_path) const;

  // The job's `server` object (JSON; agent/driver_job.h): the run summary
  // records which server the job ran against. Empty: none.
  void set_server(std::string json) { server_ = std::move(json); }

  // The driver's last frame (done or error) came: a session driver's job is over
  // (the process goes on).
  bool finished() const { return parser_.finished(); }
  // The job ran in a warm session that outlives it: the summary's "exit" says so
  // rather than describing an exit that did not happen.
  void set_session_goes_on() { session_goes_on_ = true; }

  const std::string& run_id() const { return run_id_; }
  std::uint64_t records() const { return records_; }
  // The code of the driver's typed error frame ("invalid_job"); empty without one.
  std::string error_code() const;

 private:
  Status Take(const DriverFrame& frame, std::vector<protocol::DigestChunk>* chunks);
  protocol::DigestChunk MakeChunk();
  std::string Summary(const ProcessExit& exit) const;

  std::string run_id_;
  std::string driver_name_;
  std::size_t records_per_chunk_;
  DriverFrameParser parser_;
  Status failure_;  // malformed output
  std::vector<protocol::ChunkRecord> pending_;
  std::size_t pending_bytes_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t records_ = 0;
  std::string hello_;  // JSON payloads as the driver sent them
  std::string done_;
  std::string error_;
  std::string server_;
  bool session_goes_on_ = false;
};

}  // namespace orch::agent
