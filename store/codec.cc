#include "store/codec.h"

#include <utility>

namespace orch::store {
namespace {

// Version 2 added RunRecord::summary, version 3 PlanRecord::owner, version 4 the
// RunRecord provenance of imported runs (contributor, bundle_sha256, imported_at_ms),
// version 5 the RunRecord times (assigned_at_ms, ended_at_ms), version 6
// JobRecord::submitted_at_ms; every other record is laid out as in version 1.
constexpr uint8_t kVersion = 6;
constexpr uint8_t kOldestVersion = 1;

class Writer {
 public:
  Writer() { out_.push_back(static_cast<char>(kVersion)); }
  Writer& U64(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  Writer& I64(int64_t v) {
    return U64((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  Writer& Byte(uint8_t v) {
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  Writer& Str(std::string_view s) {
    U64(s.size());
    out_.append(s);
    return *this;
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads fields in order; the first failure sticks and later reads return zero values.
class Reader {
 public:
  // `any_version`: read the fields every version starts with, whatever the version.
  explicit Reader(std::string_view in, bool any_version = false) : in_(in) {
    version_ = Byte();
    if (any_version) return;
    if (version_ > kVersion && error_.empty()) {
      newer_ = true;
      Fail("written by a newer orch");
    } else if (version_ < kOldestVersion) {
      Fail("unknown format version");
    }
  }
  uint8_t version() const { return version_; }
  bool ok() const { return error_.empty(); }
  uint64_t U64() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return Fail("truncated varint");
      uint8_t b = static_cast<uint8_t>(in_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail("varint too long");
  }
  int64_t I64() {
    uint64_t u = U64();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  int32_t I32() {
    int64_t v = I64();
    if (v < INT32_MIN || v > INT32_MAX) return static_cast<int32_t>(Fail("int32 out of range"));
    return static_cast<int32_t>(v);
  }
  uint8_t Byte() {
    if (pos_ >= in_.size()) return static_cast<uint8_t>(Fail("truncated"));
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint8_t Enum(uint8_t max) {
    uint8_t v = Byte();
    if (v > max) Fail("enum value out of range");
    return v;
  }
  bool Flag() { return Enum(1) == 1; }
  std::string Str() {
    uint64_t n = U64();
    if (n > in_.size() - pos_) {
      Fail("string longer than the value");
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // OK when every field decoded and no bytes are left over.
  Status Finish(std::string_view key) {
    if (newer_) {
      return Status(StatusCode::kFailedPrecondition,
                    "decode " + std::string(key) + ": written by a newer orch (format version " +
                        std::to_string(version_) + ", this orch reads up to " +
                        std::to_string(kVersion) + ")");
    }
    if (error_.empty() && pos_ != in_.size()) error_ = "trailing bytes";
    if (error_.empty()) return Status::Ok();
    return Status(StatusCode::kDataLoss,
                  "decode " + std::string(key) + ": corrupt value (" + error_ + ")");
  }

 private:
  uint64_t Fail(const char* why) {
    if (error_.empty()) error_ = why;
    pos_ = in_.size();
    return 0;
  }

  std::string_view in_;
  uint8_t version_ = 0;
  bool newer_ = false;  // version_ > kVersion
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::string EncodePlan(const PlanRecord& plan) {
  // The experiment is written twice: older records held a second name
  // there (always the experiment), and every version keeps one layout.
  return Writer().Str(plan.experiment).Str(plan.experiment).Str(plan.json).Str(plan.owner).Take();
}

std::string EncodeJob(const JobRecord& job) {
  return Writer()
      .Str(job.id)
      .Str(job.experiment)
      .Byte(static_cast<uint8_t>(job.state))
      .I64(job.attempts)
      .Str(job.last_error)
      .Str(job.current_run_id)
      .I64(job.submitted_at_ms)
      .Take();
}

std::string EncodeRun(const RunRecord& run) {
  return Writer()
      .Str(run.id)
      .Str(run.job_id)
      .Str(run.agent_id)
      .I64(run.lease_expiry_ms)
      .Byte(static_cast<uint8_t>(run.state))
      .I64(run.exit_status)
      .Str(run.error)
      .Str(run.host_fingerprint_id)
      .Str(run.engine_fingerprint_id)
      .I64(run.chunks_expected)
      .I64(run.chunks_received)
      .Byte(run.finished ? 1 : 0)
      .Str(run.summary)
      .Str(run.contributor)
      .Str(run.bundle_sha256)
      .I64(run.imported_at_ms)
      .I64(run.assigned_at_ms)
      .I64(run.ended_at_ms)
      .Take();
}

std::string EncodeEvent(const EventRecord& event) {
  return Writer()
      .U64(event.seq)
      .I64(event.time_ms)
      .Str(event.kind)
      .Str(event.subject)
      .Str(event.detail)
      .Take();
}

// Bundle and signer records came with version 4.
std::string EncodeBundle(const BundleRecord& bundle) {
  Writer w;
  w.Str(bundle.sha256)
      .Str(bundle.contributor)
      .Str(bundle.signer)
      .U64(bundle.sequence)
      .Str(bundle.experiment)
      .Str(bundle.nonce)
      .I64(bundle.imported_at_ms)
      .U64(bundle.run_ids.size());
  for (const std::string& id : bundle.run_ids) w.Str(id);
  return w.Take();
}

std::string EncodeSigner(const SignerRecord& signer) {
  return Writer().Str(signer.signer).U64(signer.sequence).Str(signer.bundle_sha256).Take();
}

std::string EncodeChunkCount(uint32_t records) { return Writer().U64(records).Take(); }

Result<PlanRecord> DecodePlan(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  PlanRecord plan;
  plan.experiment = r.Str();
  r.Str();  // the experiment again (EncodePlan)
  plan.json = r.Str();
  if (r.version() >= 3) plan.owner = r.Str();
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  return plan;
}

Result<JobRecord> DecodeJob(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  JobRecord job;
  job.id = r.Str();
  job.experiment = r.Str();
  job.state = static_cast<JobState>(r.Enum(kMaxJobState));
  job.attempts = r.I32();
  job.last_error = r.Str();
  job.current_run_id = r.Str();
  if (r.version() >= 6) job.submitted_at_ms = r.I64();
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  return job;
}

Result<RunRecord> DecodeRun(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  RunRecord run;
  run.id = r.Str();
  run.job_id = r.Str();
  run.agent_id = r.Str();
  run.lease_expiry_ms = r.I64();
  run.state = static_cast<RunState>(r.Enum(kMaxRunState));
  run.exit_status = r.I32();
  run.error = r.Str();
  run.host_fingerprint_id = r.Str();
  run.engine_fingerprint_id = r.Str();
  run.chunks_expected = r.I64();
  run.chunks_received = r.I64();
  run.finished = r.Flag();
  if (r.version() >= 2) run.summary = r.Str();
  if (r.version() >= 4) {
    run.contributor = r.Str();
    run.bundle_sha256 = r.Str();
    run.imported_at_ms = r.I64();
  }
  if (r.version() >= 5) {
    run.assigned_at_ms = r.I64();
    run.ended_at_ms = r.I64();
  }
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  return run;
}

Result<BundleRecord> DecodeBundle(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  BundleRecord bundle;
  bundle.sha256 = r.Str();
  bundle.contributor = r.Str();
  bundle.signer = r.Str();
  bundle.sequence = r.U64();
  bundle.experiment = r.Str();
  bundle.nonce = r.Str();
  bundle.imported_at_ms = r.I64();
  uint64_t runs = r.U64();
  // Each run id takes at least two bytes, so a count above the bytes left is damage.
  if (runs > bytes.size())
    return Status(StatusCode::kDataLoss, "decode " + std::string(key) + ": implausible run count");
  for (uint64_t i = 0; i < runs && r.ok(); ++i) bundle.run_ids.push_back(r.Str());
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  return bundle;
}

Result<SignerRecord> DecodeSigner(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  SignerRecord signer;
  signer.signer = r.Str();
  signer.sequence = r.U64();
  signer.bundle_sha256 = r.Str();
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  return signer;
}

std::optional<std::string> PeekRunJobId(std::string_view bytes) {
  Reader r(bytes, /*any_version=*/true);
  r.Str();  // the run id
  std::string job_id = r.Str();
  if (!r.ok() || job_id.empty()) return std::nullopt;
  return job_id;
}

Result<uint32_t> DecodeChunkCount(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  uint64_t count = r.U64();
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  if (count > UINT32_MAX) {
    return Status(StatusCode::kDataLoss, "decode " + std::string(key) + ": count out of range");
  }
  return static_cast<uint32_t>(count);
}

Result<EventRecord> DecodeEvent(std::string_view key, std::string_view bytes) {
  Reader r(bytes);
  EventRecord event;
  event.seq = r.U64();
  event.time_ms = r.I64();
  event.kind = r.Str();
  event.subject = r.Str();
  event.detail = r.Str();
  ORCH_RETURN_IF_ERROR(r.Finish(key));
  return event;
}

}  // namespace orch::store
