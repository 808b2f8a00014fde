// The driver output stream (docs/driver-protocol.md): what an engine driver
// writes on stdout, split into frames and checked for order.
//
// Frame = u32 little-endian payload length + u8 type + payload. Order: exactly
// one hello first, any number of records, then done or error last; nothing may
// follow. The parser is pure and incremental (bytes arrive in arbitrary pieces)
// and never trusts the driver: an oversized length, an unknown type, a
// misplaced frame or a stream that ends mid-frame is a kDataLoss Status that
// names the defect; it never crashes.
//
// Session mode (`DRIVER session`): the driver's stdin carries frames of the same
// layout, each of type kJobFrameType whose payload is one job document; the
// driver answers each job with one such stream (hello, records, done|error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::driver_protocol {

// kJob travels the other way: the agent writes it on a session driver's stdin
// (`DRIVER session`), one job document per frame, in the same frame layout.
enum class DriverFrameType : std::uint8_t {
  kHello = 1,
  kRecord = 2,
  kDone = 3,
  kError = 4,
  kJob = 16,
};

// kJob's byte, for readers of a session driver's stdin; the stdout parser refuses it.
inline constexpr std::uint8_t kJobFrameType = static_cast<std::uint8_t>(DriverFrameType::kJob);

// Largest payload accepted: a full float row of a 4M-token vocabulary fits.
inline constexpr std::uint32_t kMaxDriverFramePayload = 16u << 20;

struct DriverFrame {
  DriverFrameType type = DriverFrameType::kHello;
  std::string payload;
};

// One frame's bytes; for drivers and tests.
std::string EncodeDriverFrame(DriverFrameType type, std::string_view payload);

// One job frame's bytes, for the agent writing a session driver's stdin.
std::string EncodeJobFrame(std::string_view job_document);

// The payload length of a frame header (its first 5 bytes), for a reader of
// job frames: kDataLoss naming the defect when the type is not kJobFrameType
// or the length exceeds kMaxDriverFramePayload.
Result<std::uint32_t> JobFrameLength(std::string_view header);
inline constexpr std::size_t kFrameHeaderBytes = 5;

class DriverFrameParser final {
 public:
  // Appends the complete frames in `bytes` to `out`. After an error the parser
  // stays failed and returns the same Status.
  Status Feed(std::string_view bytes, std::vector<DriverFrame>* out);

  // The driver closed stdout: OK only when the stream ended right after done or
  // error.
  Status Finish() const;

  bool saw_hello() const { return saw_hello_; }
  bool finished() const { return saw_last_; }
  std::uint64_t frames() const { return frames_; }

 private:
  Status Fail(std::string message);
  Status Accept(DriverFrameType type);

  std::string buffer_;
  Status error_;
  bool saw_hello_ = false;
  bool saw_last_ = false;
  std::uint64_t frames_ = 0;
};

}  // namespace orch::driver_protocol
