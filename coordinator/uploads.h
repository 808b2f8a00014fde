// Uploads: files sent to the coordinator in parts (a plan or a result bundle larger than
// one frame: Submit.upload_id, ImportRequest.upload_id), assembled in memory. Pure: no
// transport, no clock (time is an input).
//
// - Each kind has its bounds: result bundles at most kMaxUploadBytes each and
//   kMaxUploads at once, plans at most kMaxPlanBytes of JSON each and kMaxPlanUploads at
//   once. A file above its bound is refused at its first part, saying what to do
//   instead.
// - An upload is keyed by its kind, the sender's key and its upload id, so two keys'
//   uploads of one id never mix. A part at offset 0 starts the upload over; every other
//   part must start where the last one ended, or the upload is dropped.
// - An upload is dropped when no part came for kUploadIdle; idle ones go before a new
//   one is counted against the bound.
// Every part but the last is answered (received so far, or why it was refused); the
// last one yields the whole file, and its request's own answer is the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "coordinator/options.h"
#include "protocol/messages.h"

namespace orch::coordinator {

inline constexpr std::uint64_t kMaxUploadBytes = std::uint64_t{256} << 20;
inline constexpr std::size_t kMaxUploads = 4;
inline constexpr std::uint64_t kMaxPlanBytes = std::uint64_t{512} << 20;
inline constexpr std::size_t kMaxPlanUploads = 2;
inline constexpr Millis kUploadIdle{60000};

// What is sent in parts, and its bounds.
struct UploadKind {
  const char* what;         // "bundle", "plan": in messages, and the uploads' key
  std::uint64_t max_bytes;  // the whole file's
  std::size_t max_at_once;  // uploads of this kind in progress
  const char* past_bound;   // what to do instead, for a file above max_bytes
};
extern const UploadKind kPlanUpload;
extern const UploadKind kBundleUpload;

// One part of a file sent in parts, whichever message carried it.
struct UploadPart {
  const UploadKind& kind;
  std::string_view name;  // the file's, for messages; may be empty
  std::string_view upload_id;
  std::uint64_t offset = 0;
  std::uint64_t total_size = 0;
  std::string_view bytes;
};

class Uploads final {
 public:
  // What a part brought: the whole file once its last part is in; else the answer to
  // send (a part received, or refused).
  struct Added {
    std::optional<std::string> whole;
    std::optional<protocol::CommandReply> answer;
  };
  // `user`: the sender's key ("" in plain mode).
  Added Add(const std::string& user, const UploadPart& part, Millis now);

  std::size_t in_progress() const { return uploads_.size(); }

 private:
  struct Upload {
    std::string bytes;
    std::uint64_t total = 0;
    Millis last{0};
  };
  std::map<std::string, Upload> uploads_;  // kind + ":" + key name + "/" + upload id
};

}  // namespace orch::coordinator
