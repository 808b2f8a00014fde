#include "agent/driver_run.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "digest/record_codec.h"

namespace orch::agent {
namespace {

using nlohmann::json;

// A driver's JSON payload, or the raw text as a string when it is not JSON.
json AsJson(const std::string& payload) {
  // Raw text is kept as a string so that a driver's non-JSON payload still shows in
  // the run summary.
  if (payload.empty()) return nullptr;
  json value = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? json(payload) : value;
}

std::string Field(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The last few non-empty lines of the driver's stderr: what it said last.
std::string LastLines(const std::string& tail, std::size_t count) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < tail.size()) {
    std::size_t end = tail.find('\n', start);
    if (end == std::string::npos) end = tail.size();
    std::string line = tail.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  std::string out;
  std::size_t from = lines.size() > count ? lines.size() - count : 0;
  for (std::size_t i = from; i < lines.size(); ++i) out += "\n  " + lines[i];
  return out;
}

std::string LogNote(const std::string& log_path) {
  return log_path.empty() ? "" : " (driver log: " + log_path + ")";
}

}  // namespace

Status DriverRun::Feed(std::string_view bytes, std::vector<protocol::DigestChunk>* chunks) {
  // Sticky: after malformed output the driver is being killed; what it still
  // writes is not read.
  if (!failure_.ok()) return failure_;
  std::vector<DriverFrame> frames;
  Status status = parser_.Feed(bytes, &frames);
  for (const DriverFrame& frame : frames) {
    if (!failure_.ok()) break;
    failure_ = Take(frame, chunks);
  }
  // Frames completed before a parse error are still taken; the parser's own error
  // counts only when they were fine.
  if (failure_.ok()) failure_ = status;
  return failure_;
}

Status DriverRun::Take(const DriverFrame& frame, std::vector<protocol::DigestChunk>* chunks) {
  switch (frame.type) {
    case DriverFrameType::kHello:
      hello_ = frame.payload;
      return Status::Ok();
    case DriverFrameType::kDone:
      done_ = frame.payload;
      return Status::Ok();
    case DriverFrameType::kError:
      // Never empty once an error frame came: an empty error_ means there was none.
      error_ = frame.payload.empty() ? "{}" : frame.payload;
      return Status::Ok();
    case DriverFrameType::kRecord:
      break;
    case DriverFrameType::kJob:  // the parser accepts no such frame on stdout
      return Status(StatusCode::kDataLoss, "driver output: a job frame");
  }
  // Decoded only to check it and read its position: the chunk carries the
  // payload's bytes as the driver wrote them.
  Result<digest::PositionRecord> record = digest::DecodePositionRecord(frame.payload);
  if (!record.ok()) {
    return record.status().WithContext("driver output: record " + std::to_string(records_));
  }
  if (!pending_.empty() && pending_bytes_ + frame.payload.size() > kMaxChunkRecordBytes) {
    chunks->push_back(MakeChunk());
  }
  pending_bytes_ += frame.payload.size();
  pending_.push_back({record->position, frame.payload});
  ++records_;
  if (pending_.size() >= records_per_chunk_) chunks->push_back(MakeChunk());
  return Status::Ok();
}

protocol::DigestChunk DriverRun::MakeChunk() {
  protocol::DigestChunk chunk{run_id_, next_seq_++, std::move(pending_)};
  // A moved-from vector is valid but unspecified: cleared to start the next chunk.
  pending_.clear();
  pending_bytes_ = 0;
  return chunk;
}

std::optional<protocol::DigestChunk> DriverRun::Flush() {
  if (pending_.empty()) return std::nullopt;
  return MakeChunk();
}

std::string DriverRun::error_code() const { return Field(AsJson(error_), "code"); }

std::string DriverRun::Summary(const ProcessExit& exit) const {
  json summary = {{"driver", driver_name_},
                  {"hello", AsJson(hello_)},
                  {"done", AsJson(done_)},
                  {"records", records_},
                  {"exit", session_goes_on_ ? "none: the warm session goes on" : exit.Describe()}};
  if (!error_.empty()) summary["error"] = AsJson(error_);
  if (!server_.empty()) summary["server"] = AsJson(server_);
  return summary.dump();
}

protocol::RunFinished DriverRun::Finish(const ProcessExit& exit,
                                        const std::string& log_path) const {
  auto with_tail = [&](std::string message) {
    return message + LogNote(log_path) + LastLines(exit.stderr_tail, 3);
  };
  // next_seq_ counts every chunk made; the caller flushes the last partial one
  // first.
  protocol::RunFinished finished{run_id_, protocol::RunStatus::kSucceeded, Summary(exit), "",
                                 next_seq_};
  std::string prefix = "driver " + driver_name_ + ": ";
  // Finish() fails on a stream cut off inside a frame.
  Status output = failure_.ok() ? parser_.Finish() : failure_;
  // The order matters: a driver the agent killed for bad output exits as
  // cancelled, but must be reported as failed; a typed error frame says more than
  // the exit status that follows it; a cut-off stream fails even an exit status
  // of 0.
  if (!failure_.ok()) {  // the agent killed the driver for malformed output
    finished.status = protocol::RunStatus::kFailed;
    finished.error = with_tail(prefix + failure_.message());
  } else if (exit.reason == ProcessExit::Reason::kCancelled) {
    finished.status = protocol::RunStatus::kCancelled;
    finished.error = prefix + "cancelled";
  } else if (exit.reason == ProcessExit::Reason::kTimedOut) {
    finished.status = protocol::RunStatus::kTimedOut;
    finished.error = with_tail(prefix + exit.Describe());
  } else if (!error_.empty()) {
    json error = AsJson(error_);
    finished.status = protocol::RunStatus::kFailed;
    finished.error =
        prefix + Field(error, "code") + ": " + Field(error, "message") + LogNote(log_path);
  } else if (!output.ok() && exit.reason == ProcessExit::Reason::kExited && exit.exit_code == 0) {
    finished.status = protocol::RunStatus::kFailed;
    finished.error = with_tail(prefix + output.message() + " (exit status 0)");
  } else if (exit.reason != ProcessExit::Reason::kExited || exit.exit_code != 0) {
    finished.status = protocol::RunStatus::kFailed;
    finished.error = with_tail(prefix + exit.Describe());
  }
  return finished;
}

}  // namespace orch::agent
