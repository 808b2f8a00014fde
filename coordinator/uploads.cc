#include "coordinator/uploads.h"

#include <algorithm>

namespace orch::coordinator {

const UploadKind kPlanUpload{
    "plan", kMaxPlanBytes, kMaxPlanUploads,
    "split the experiment into smaller ones (fewer workloads, cells or repeats per spec)"};
const UploadKind kBundleUpload{"bundle", kMaxUploadBytes, kMaxUploads,
                               "stop it and import with orch import --data-dir"};

Uploads::Added Uploads::Add(const std::string& user, const UploadPart& part, Millis now) {
  auto refused = [](std::string message) {
    return Added{std::nullopt, protocol::CommandReply{false, std::move(message)}};
  };
  const UploadKind& kind = part.kind;
  std::string what =
      std::string(kind.what) + (part.name.empty() ? "" : " ") + std::string(part.name);
  // Idle uploads go first so that they do not count against the bound.
  std::erase_if(uploads_,
                [now](const auto& entry) { return now - entry.second.last > kUploadIdle; });
  std::string prefix = std::string(kind.what) + ":";
  std::string id = prefix + user + "/" + std::string(part.upload_id);
  auto it = uploads_.find(id);
  if (part.offset == 0) {
    if (part.total_size > kind.max_bytes) {
      return refused(what + " is " + std::to_string((part.total_size + (1 << 20) - 1) >> 20) +
                     " MiB (" + std::to_string(part.total_size) + " bytes), above the " +
                     std::to_string(kind.max_bytes >> 20) +
                     " MiB the coordinator takes over the network: " + kind.past_bound);
    }
    std::size_t in_progress = std::count_if(uploads_.begin(), uploads_.end(), [&](const auto& e) {
      return e.first.starts_with(prefix);
    });
    if (it == uploads_.end() && in_progress >= kind.max_at_once) {
      return refused(std::to_string(in_progress) + " " + kind.what +
                     " uploads are in progress; try again in a minute");
    }
    // A part at offset 0 starts the upload over, dropping what an earlier try sent.
    it = uploads_.insert_or_assign(id, Upload{"", part.total_size, now}).first;
  } else if (it == uploads_.end() || it->second.bytes.size() != part.offset ||
             it->second.total != part.total_size) {
    // Parts are appended, so each must start where the last one ended.
    uploads_.erase(id);
    return refused(what + ": a part at byte " + std::to_string(part.offset) +
                   " came out of order or after its upload expired; send the file again");
  }
  it->second.bytes += part.bytes;
  it->second.last = now;
  if (it->second.bytes.size() < it->second.total) {
    return {std::nullopt,
            protocol::CommandReply{true, "received " + std::to_string(it->second.bytes.size()) +
                                             " of " + std::to_string(it->second.total) + " bytes"}};
  }
  std::string whole = std::move(it->second.bytes);
  uploads_.erase(it);
  return {std::move(whole), std::nullopt};
}

}  // namespace orch::coordinator
