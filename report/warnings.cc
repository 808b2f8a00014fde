#include "report/warnings.h"

namespace orch::report {
namespace {

std::string Of(std::uint64_t n, std::uint64_t of) {
  return std::to_string(n) + " of " + std::to_string(of);
}

Warning GenerationWarning(std::string_view who, const RunExtent& run, std::uint64_t max) {
  const std::string count = Of(run.generated_tokens(), max) + " requested tokens";
  if (run.stop.reason) {
    return {"generation_short",
            std::string(who) + " stopped (" + *run.stop.reason + ") after " + count};
  }
  return {"generation_short",
          std::string(who) + " generated " + count + " (its driver gave no stop reason)"};
}

}  // namespace

bool GenerationShort(const RunExtent& run, std::uint64_t max_tokens) {
  if (run.generated_tokens() >= max_tokens) return false;
  return !run.stop.reason || *run.stop.reason != "max_tokens";
}

std::vector<Warning> RunWarnings(const PlannedWorkload& workload, std::string_view who,
                                 const RunExtent& run) {
  std::vector<Warning> out;
  if (workload.kind == WorkloadKind::kGenerate) {
    if (workload.max_tokens && GenerationShort(run, *workload.max_tokens)) {
      out.push_back(GenerationWarning(who, run, *workload.max_tokens));
    }
  } else if (workload.positions && run.positions < *workload.positions) {
    out.push_back({"positions_short", std::string(who) + " holds " +
                                          Of(run.positions, *workload.positions) +
                                          " requested positions"});
  }
  return out;
}

std::optional<Warning> ComparedWarning(const PlannedWorkload& workload,
                                       const digest::StreamSummary& summary) {
  if (workload.kind != WorkloadKind::kTeacherForced || !workload.positions) return std::nullopt;
  if (summary.compared >= *workload.positions) return std::nullopt;
  return Warning{
      "positions_short",
      "compared " + Of(summary.compared, *workload.positions) +
          " requested positions (baseline run: " + std::to_string(summary.reference_length) +
          ", cell run: " + std::to_string(summary.other_length) + ")"};
}

}  // namespace orch::report
