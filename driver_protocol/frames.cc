#include "driver_protocol/frames.h"

namespace orch::driver_protocol {
namespace {

constexpr std::size_t kHeaderBytes = kFrameHeaderBytes;

std::uint32_t ReadLength(std::string_view bytes) {
  std::uint32_t length = 0;
  for (int i = 3; i >= 0; --i) {
    length = (length << 8) | static_cast<std::uint8_t>(bytes[static_cast<std::size_t>(i)]);
  }
  return length;
}

}  // namespace

std::string EncodeDriverFrame(DriverFrameType type, std::string_view payload) {
  std::string frame;
  frame.reserve(kHeaderBytes + payload.size());
  auto length = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  frame.push_back(static_cast<char>(type));
  frame.append(payload);
  return frame;
}

std::string EncodeJobFrame(std::string_view job_document) {
  return EncodeDriverFrame(DriverFrameType::kJob, job_document);
}

Result<std::uint32_t> JobFrameLength(std::string_view header) {
  if (header.size() < kHeaderBytes) {
    return Status(StatusCode::kDataLoss, "job frame: a header of " + std::to_string(header.size()) +
                                             " bytes, expected " + std::to_string(kHeaderBytes));
  }
  auto type = static_cast<std::uint8_t>(header[4]);
  if (type != kJobFrameType) {
    return Status(StatusCode::kDataLoss, "job frame: type " + std::to_string(type) + ", expected " +
                                             std::to_string(kJobFrameType) + " (job)");
  }
  std::uint32_t length = ReadLength(header);
  if (length > kMaxDriverFramePayload) {
    return Status(StatusCode::kDataLoss, "job frame: payload of " + std::to_string(length) +
                                             " bytes exceeds the limit of " +
                                             std::to_string(kMaxDriverFramePayload));
  }
  return length;
}

Status DriverFrameParser::Fail(std::string message) {
  error_ = Status(StatusCode::kDataLoss, "driver output: " + std::move(message));
  buffer_.clear();
  return error_;
}

Status DriverFrameParser::Accept(DriverFrameType type) {
  std::string index = "frame " + std::to_string(frames_);
  if (saw_last_) return Fail(index + ": bytes after done/error");
  if (!saw_hello_ && type != DriverFrameType::kHello) {
    return Fail(index + ": the first frame must be hello");
  }
  if (saw_hello_ && type == DriverFrameType::kHello) return Fail(index + ": second hello");
  saw_hello_ = true;
  saw_last_ = type == DriverFrameType::kDone || type == DriverFrameType::kError;
  ++frames_;
  return Status::Ok();
}

Status DriverFrameParser::Feed(std::string_view bytes, std::vector<DriverFrame>* out) {
  if (!error_.ok()) return error_;
  if (saw_last_ && !bytes.empty()) {
    return Fail("frame " + std::to_string(frames_) + ": bytes after done/error");
  }
  buffer_.append(bytes);
  std::size_t offset = 0;
  while (buffer_.size() - offset >= kHeaderBytes) {
    std::string_view rest = std::string_view(buffer_).substr(offset);
    std::uint32_t length = ReadLength(rest);
    auto type = static_cast<std::uint8_t>(rest[4]);
    if (length > kMaxDriverFramePayload) {
      return Fail("frame " + std::to_string(frames_) + ": payload of " + std::to_string(length) +
                  " bytes exceeds the limit of " + std::to_string(kMaxDriverFramePayload));
    }
    if (type < 1 || type > 4) {
      return Fail("frame " + std::to_string(frames_) + ": unknown type " + std::to_string(type));
    }
    if (rest.size() - kHeaderBytes < length) break;
    ORCH_RETURN_IF_ERROR(Accept(static_cast<DriverFrameType>(type)));
    out->push_back(
        {static_cast<DriverFrameType>(type), std::string(rest.substr(kHeaderBytes, length))});
    offset += kHeaderBytes + length;
  }
  buffer_.erase(0, offset);
  if (saw_last_ && !buffer_.empty()) {
    return Fail("frame " + std::to_string(frames_) + ": bytes after done/error");
  }
  return Status::Ok();
}

Status DriverFrameParser::Finish() const {
  if (!error_.ok()) return error_;
  if (!buffer_.empty()) {
    return Status(StatusCode::kDataLoss, "driver output: truncated frame (" +
                                             std::to_string(buffer_.size()) +
                                             " bytes of an incomplete frame at the end)");
  }
  if (!saw_hello_) return Status(StatusCode::kDataLoss, "driver output: no hello frame");
  if (!saw_last_) {
    return Status(StatusCode::kDataLoss, "driver output: ended without done or error");
  }
  return Status::Ok();
}

}  // namespace orch::driver_protocol
