#include "store/keys.h"

namespace orch::store {

std::string_view TableName(Table table) {
  switch (table) {
    case Table::kPlans:
      return "plans";
    case Table::kPlanJobs:
      return "plan_jobs";
    case Table::kJobs:
      return "jobs";
    case Table::kRuns:
      return "runs";
    case Table::kChunks:
      return "chunks";
    case Table::kDigests:
      return "digests";
    case Table::kHosts:
      return "hosts";
    case Table::kEvents:
      return "events";
    case Table::kBundles:
      return "bundles";
    case Table::kSigners:
      return "signers";
  }
  return "unknown";
}

Status ValidateId(std::string_view what, std::string_view id) {
  if (id.empty() || id.size() > kMaxIdBytes) {
    return InvalidArgument(std::string(what) + " id must be 1.." + std::to_string(kMaxIdBytes) +
                           " bytes, got " + std::to_string(id.size()));
  }
  return Status::Ok();
}

void AppendBigEndian64(std::string& out, uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

uint64_t ReadBigEndian64(std::string_view eight_bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) {
    value = (value << 8) | static_cast<uint8_t>(eight_bytes[i]);
  }
  return value;
}

std::string IdPrefix(std::string_view id) {
  std::string key;
  key.reserve(1 + id.size() + 8);
  key.push_back(static_cast<char>(id.size()));
  key.append(id);
  return key;
}

std::string PlanJobKey(std::string_view experiment, std::string_view job_id) {
  std::string key = IdPrefix(experiment);
  key.append(job_id);
  return key;
}

std::string ChunkKey(std::string_view run_id, uint64_t seq) {
  std::string key = IdPrefix(run_id);
  AppendBigEndian64(key, seq);
  return key;
}

std::string DigestKey(std::string_view run_id, uint64_t position) {
  std::string key = IdPrefix(run_id);
  AppendBigEndian64(key, position);
  return key;
}

std::string EventKey(uint64_t seq) {
  std::string key;
  AppendBigEndian64(key, seq);
  return key;
}

uint64_t TrailingNumber(std::string_view key) {
  ORCH_CHECK(key.size() >= 8) << "key too short for a trailing number";
  return ReadBigEndian64(key.substr(key.size() - 8));
}

std::string_view JobIdOfPlanJobKey(std::string_view key, std::string_view experiment) {
  return key.substr(1 + experiment.size());
}

std::string DescribeKey(Table table, std::string_view key) {
  std::string out(TableName(table));
  out += '/';
  bool printable = true;
  for (char c : key) printable = printable && c >= 0x20 && c < 0x7f;
  if (printable) return out + std::string(key);
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : key) {
    out.push_back(kHex[(static_cast<uint8_t>(c) >> 4) & 0xf]);
    out.push_back(kHex[static_cast<uint8_t>(c) & 0xf]);
  }
  return out;
}

}  // namespace orch::store
