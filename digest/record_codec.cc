#include "digest/record_codec.h"

#include "base/bytes.h"

namespace orch::digest {
namespace {

static_assert(kPositionRecordVersion == static_cast<std::uint8_t>(kCurrentDigestVersion),
              "a record's version is its digest's");

Status Corrupt(const std::string& what) {
  return Status(StatusCode::kDataLoss, "position record: " + what);
}

void EncodeDigest(std::string& out, const RowDigest& d) {
  AppendU32(out, d.vocab_size);
  AppendU32(out, d.flags);
  AppendI32(out, d.argmax);
  AppendF64(out, d.logsumexp);
  AppendF64(out, d.entropy);
  AppendU64(out, d.hash.low);
  AppendU64(out, d.hash.high);
  AppendI32(out, d.target_id);
  AppendF32(out, d.target_logit);
  AppendU32(out, static_cast<std::uint32_t>(d.top.size()));
  for (const TokenLogit& t : d.top) {
    AppendI32(out, t.id);
    AppendF32(out, t.logit);
  }
}

bool DecodeScalars(ByteReader& r, PositionRecord& p) {
  RowDigest& d = p.digest;
  return r.ReadU64(&p.position) && r.ReadI32(&p.input_token) && r.ReadI32(&p.output_token) &&
         r.ReadU32(&d.vocab_size) && r.ReadU32(&d.flags) && r.ReadI32(&d.argmax) &&
         r.ReadF64(&d.logsumexp) && r.ReadF64(&d.entropy) && r.ReadU64(&d.hash.low) &&
         r.ReadU64(&d.hash.high) && r.ReadI32(&d.target_id) && r.ReadF32(&d.target_logit);
}

Status DecodeTop(ByteReader& r, RowDigest& d) {
  std::uint32_t count = 0;
  if (!r.ReadU32(&count)) return Corrupt("truncated before the top-k count");
  if (count > kMaxTopK || count > r.remaining() / 8) {
    return Corrupt("top-k count " + std::to_string(count) + " is impossible here");
  }
  d.top.resize(count);
  for (TokenLogit& t : d.top) {
    if (!r.ReadI32(&t.id) || !r.ReadF32(&t.logit)) return Corrupt("truncated top-k");
  }
  return Status::Ok();
}

Status DecodeFullRow(ByteReader& r, PositionRecord& p) {
  std::uint32_t count = 0;
  if (!r.ReadU32(&count)) return Corrupt("truncated before the full-row count");
  if (count != 0 && count != p.digest.vocab_size) {
    return Corrupt("full row of " + std::to_string(count) + " values for a vocabulary of " +
                   std::to_string(p.digest.vocab_size));
  }
  if (count > r.remaining() / 4) return Corrupt("truncated full row");
  p.full_row.resize(count);
  for (float& v : p.full_row) r.ReadF32(&v);
  return Status::Ok();
}

}  // namespace

std::string EncodePositionRecord(const PositionRecord& record) {
  std::string out;
  out.reserve(80 + 8 * record.digest.top.size() + 4 * record.full_row.size());
  AppendU8(out, static_cast<std::uint8_t>(record.digest.version));
  AppendU64(out, record.position);
  AppendI32(out, record.input_token);
  AppendI32(out, record.output_token);
  EncodeDigest(out, record.digest);
  AppendU32(out, static_cast<std::uint32_t>(record.full_row.size()));
  for (float v : record.full_row) AppendF32(out, v);
  return out;
}

Result<PositionRecord> DecodePositionRecord(std::string_view bytes) {
  ByteReader r(bytes);
  std::uint8_t version = 0;
  if (!r.ReadU8(&version)) return Corrupt("empty");
  if (version < kOldestPositionRecordVersion || version > kPositionRecordVersion) {
    return Corrupt("unknown version " + std::to_string(version) + " (this build reads " +
                   std::to_string(kOldestPositionRecordVersion) + " to " +
                   std::to_string(kPositionRecordVersion) + ")");
  }
  PositionRecord p;
  p.digest.version = static_cast<DigestVersion>(version);
  if (!DecodeScalars(r, p)) return Corrupt("truncated header");
  ORCH_RETURN_IF_ERROR(DecodeTop(r, p.digest));
  ORCH_RETURN_IF_ERROR(DecodeFullRow(r, p));
  if (r.remaining() != 0) {
    return Corrupt(std::to_string(r.remaining()) + " trailing bytes");
  }
  return p;
}

}  // namespace orch::digest
