#include "report/host_compare.h"

#include <set>

#include "report/fingerprint_pairs.h"
#include "report/job_runs.h"
#include "report/pair_compare.h"

namespace orch::report {
namespace {

bool IsGenerate(const PlanView& plan, const std::string& workload) {
  for (const PlannedWorkload& w : plan.workloads) {
    if (w.name == workload) return w.kind == WorkloadKind::kGenerate;
  }
  return false;
}

int DistinctHosts(const std::vector<const store::RunRecord*>& runs) {
  std::set<std::string> hosts;
  for (const store::RunRecord* run : runs) {
    if (!run->host_fingerprint_id.empty()) hosts.insert(run->host_fingerprint_id);
  }
  return static_cast<int>(hosts.size());
}

void Compare(RunSource& source, const store::RunRecord& reference, const store::RunRecord& other,
             bool generate, HostRun& row) {
  row.fingerprints = CompareFingerprints(source, reference, other);
  Result<PairResult> r = ComparePair(source, reference.id, other.id, PairOptions{generate});
  if (!r.ok()) {
    row.note = r.status().message();
    return;
  }
  row.same_stream = r->bit_identical();
  if (!row.same_stream) {
    row.first_difference = r->summary.first_divergence.value_or(r->summary.compared);
  }
  const bool exact = r->kld_exact.count > 0;
  const KldSummary& kld = exact ? r->kld_exact : r->kld_bound;
  if (kld.count > 0) {
    row.kld_mean = kld.mean;
    row.kld_method = exact ? "exact" : "bound";
  } else if (r->kld_returned_top_k.count > 0) {
    row.kld_mean = r->kld_returned_top_k.mean;
    row.kld_method = ReturnedTopKName(r->returned_top_k);
  }
  row.top1_agreement = r->summary.top1_agreement;
}

}  // namespace

Result<HostReport> BuildHostReport(const ExperimentInput& input, RunSource& source) {
  Result<PlanView> plan = ParsePlanView(input.plan.json);
  if (!plan.ok()) return plan.status().WithContext("experiment " + input.plan.id);
  HostReport out;
  out.experiment = plan->experiment;
  JobRuns index(input.jobs, input.runs);
  RunIdentities identities(source);
  for (const PlannedJob& job : plan->jobs) {
    ++out.jobs_total;
    const std::vector<const store::RunRecord*> usable = index.UsableRuns(job.id);
    const store::RunRecord* reference = index.Chosen(job.id);
    if (reference == nullptr || DistinctHosts(usable) < 2) continue;
    HostJob entry{job, DistinctHosts(usable), {}};
    entry.runs.push_back({.run = identities.Of(*reference), .reference = true});
    for (const store::RunRecord* run : usable) {
      // Runs on the reference's own host are repeats, or conflicts (the report lists them).
      if (run->host_fingerprint_id == reference->host_fingerprint_id) continue;
      HostRun row{.run = identities.Of(*run)};
      Compare(source, *reference, *run, IsGenerate(*plan, job.workload), row);
      entry.runs.push_back(std::move(row));
    }
    out.jobs.push_back(std::move(entry));
  }
  return out;
}

}  // namespace orch::report
