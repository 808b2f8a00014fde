#include "agent/driver_run.h"

#include <nlohmann/json.hpp>

#include "digest/record_codec.h"

namespace orch::agent {
namespace {

using nlohmann::json;

// A driver's JSON payload, or the raw text as a string when it is not JSON.
json AsJson(const std::string& payload) {
  if (payload.empty()) return nullptr;
  json value = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? json(payload) : value;
}

std::string Field(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string WithTail(std::string message, const ProcessExit& exit) {
  if (exit.stderr_tail.empty()) return message;
  return message + "; driver log tail:\n" + exit.stderr_tail;
}

}  // namespace

Status DriverRun::Feed(std::string_view bytes,
                       std::vector<protocol::DigestChunk>* chunks) {
  if (!failure_.ok()) return failure_;
  std::vector<DriverFrame> frames;
  Status status = parser_.Feed(bytes, &frames);
  for (const DriverFrame& frame : frames) {
    if (!failure_.ok()) break;
    failure_ = Take(frame, chunks);
  }
  if (failure_.ok()) failure_ = status;
  return failure_;
}

Status DriverRun::Take(const DriverFrame& frame,
                       std::vector<protocol::DigestChunk>* chunks) {
  switch (frame.type) {
    case DriverFrameType::kHello:
      hello_ = frame.payload;
      return Status::Ok();
    case DriverFrameType::kDone:
      done_ = frame.payload;
      return Status::Ok();
    case DriverFrameType::kError:
      error_ = frame.payload.empty() ? "{}" : frame.payload;
      return Status::Ok();
    case DriverFrameType::kRecord:
      break;
  }
  Result<digest::PositionRecord> record =
      digest::DecodePositionRecord(frame.payload);
  if (!record.ok()) {
    return record.status().WithContext("driver output: record " +
                                       std::to_string(records_));
  }
  pending_.push_back({record->position, frame.payload});
  ++records_;
  if (pending_.size() >= records_per_chunk_) chunks->push_back(MakeChunk());
  return Status::Ok();
}

protocol::DigestChunk DriverRun::MakeChunk() {
  protocol::DigestChunk chunk{run_id_, next_seq_++,
                              protocol::EncodeChunkRecords(pending_)};
  pending_.clear();
  return chunk;
}

std::optional<protocol::DigestChunk> DriverRun::Flush() {
  if (pending_.empty()) return std::nullopt;
  return MakeChunk();
}

std::string DriverRun::Summary(const ProcessExit& exit) const {
  json summary = {{"driver", driver_name_},
                  {"hello", AsJson(hello_)},
                  {"done", AsJson(done_)},
                  {"records", records_},
                  {"exit", exit.Describe()}};
  if (!error_.empty()) summary["error"] = AsJson(error_);
  return summary.dump();
}

protocol::RunFinished DriverRun::Finish(const ProcessExit& exit) const {
  protocol::RunFinished finished{run_id_, protocol::RunStatus::kSucceeded,
                                 Summary(exit), "", next_seq_};
  std::string prefix = "driver " + driver_name_ + ": ";
  Status output = failure_.ok() ? parser_.Finish() : failure_;
  if (!failure_.ok()) {  // the agent killed the driver for malformed output
    finished.status = protocol::RunStatus::kFailed;
    finished.error = WithTail(prefix + failure_.message(), exit);
  } else if (exit.reason == ProcessExit::Reason::kCancelled) {
    finished.status = protocol::RunStatus::kCancelled;
    finished.error = prefix + "cancelled";
  } else if (exit.reason == ProcessExit::Reason::kTimedOut) {
    finished.status = protocol::RunStatus::kTimedOut;
    finished.error = WithTail(prefix + exit.Describe(), exit);
  } else if (!error_.empty()) {
    json error = AsJson(error_);
    finished.status = protocol::RunStatus::kFailed;
    finished.error =
        WithTail(prefix + "error " + Field(error, "code") + ": " +
                     Field(error, "message") + " (" + exit.Describe() + ")",
                 exit);
  } else if (!output.ok() && exit.reason == ProcessExit::Reason::kExited &&
             exit.exit_code == 0) {
    finished.status = protocol::RunStatus::kFailed;
    finished.error =
        WithTail(prefix + output.message() + " (exit status 0)", exit);
  } else if (exit.reason != ProcessExit::Reason::kExited ||
             exit.exit_code != 0) {
    finished.status = protocol::RunStatus::kFailed;
    finished.error = WithTail(prefix + exit.Describe(), exit);
  }
  return finished;
}

}  // namespace orch::agent
