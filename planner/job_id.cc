#include "planner/job_id.h"

#include "base/sha256.h"
#include "planner/plan.h"

namespace orch::planner {
namespace {

void AppendKey(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}

std::string CanonicalCapture(const CapturePolicy& capture) {
  std::string out = "{";
  AppendKey(out, "full_every");
  out += std::to_string(capture.full_every) + ",";
  AppendKey(out, "full_windows");
  out += "[";
  for (std::size_t i = 0; i < capture.full_windows.size(); ++i) {
    if (i > 0) out += ",";
    out += "[" + std::to_string(capture.full_windows[i].first) + "," +
           std::to_string(capture.full_windows[i].second) + "]";
  }
  out += "],";
  AppendKey(out, "top_k");
  return out + std::to_string(capture.top_k) + "}";
}

void AppendTeacherForced(std::string& out, const Workload& w) {
  AppendKey(out, "positions");
  out += std::to_string(w.positions);
  if (!w.tokens.empty()) {
    out += ",";
    AppendKey(out, "tokens");
    out += "[";
    for (std::size_t i = 0; i < w.tokens.size(); ++i) {
      out += (i > 0 ? "," : "") + std::to_string(w.tokens[i]);
    }
    out += "]";
  } else {
    out += ",";
    AppendKey(out, "text");
    AppendJsonString(out, w.text);
  }
}

}  // namespace

std::string CanonicalWorkload(const Workload& w) {
  std::string out = "{";
  AppendKey(out, "capture");
  out += CanonicalCapture(w.capture) + ",";
  AppendKey(out, "kind");
  AppendJsonString(out, WorkloadKindName(w.kind));
  out += ",";
  if (w.kind == WorkloadKind::kGenerate) {
    AppendKey(out, "max_tokens");
    out += std::to_string(w.max_tokens) + ",";
  }
  AppendKey(out, "name");
  AppendJsonString(out, w.name);
  out += ",";
  if (w.kind == WorkloadKind::kGenerate) {
    AppendKey(out, "prompt");
    AppendJsonString(out, w.prompt);
  } else {
    AppendTeacherForced(out, w);
  }
  return out + "}";
}

std::string WorkloadDigest(const Workload& workload) {
  return Sha256Hex(CanonicalWorkload(workload));
}

std::string CanonicalAxes(const Coordinate& coordinate, WorkloadKind kind) {
  std::string out = "{";
  for (const auto& [axis, value] : coordinate) {  // std::map: sorted by axis name
    if (!AxisApplies(axis, kind)) continue;
    if (out.size() > 1) out += ",";
    AppendJsonString(out, axis);
    out += ":" + value.ToCanonicalJson();
  }
  return out + "}";
}

std::string CanonicalJob(const std::string& canonical_axes, const std::string& experiment,
                         const std::string& model, int repeat,
                         const std::string& workload_digest) {
  std::string out = "{";
  AppendKey(out, "axes");
  out += canonical_axes + ",";
  AppendKey(out, "experiment");
  AppendJsonString(out, experiment);
  out += ",";
  AppendKey(out, "model");
  AppendJsonString(out, model);
  out += ",";
  AppendKey(out, "repeat");
  out += std::to_string(repeat) + ",";
  AppendKey(out, "workload");
  AppendJsonString(out, workload_digest);
  return out + "}";
}

std::string JobIdOf(const std::string& canonical_job) {
  return Sha256Hex(canonical_job).substr(0, kJobIdHexDigits);
}

}  // namespace orch::planner
