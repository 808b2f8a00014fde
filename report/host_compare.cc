#include "report/host_compare.h"

#include <algorithm>

#include "report/fingerprint_pairs.h"
#include "report/job_runs.h"
#include "report/kld_figure.h"
#include "report/pair_compare.h"

namespace orch::report {
namespace {

bool IsGenerate(const PlanView& plan, const std::string& workload) {
  for (const PlannedWorkload& w : plan.workloads) {
    if (w.name == workload) return w.kind == WorkloadKind::kGenerate;
  }
  return false;
}

// What a run is grouped by: its fingerprint class, or its host when the class is unknown.
std::string Side(const RunIdentity& run) {
  return run.fingerprint_class.empty() ? "host " + run.host : "class " + run.fingerprint_class;
}

// Runs on the reference's own host and class are repeats, or conflicts (the report lists
// them); every other usable run is compared.
bool SameRig(const RunIdentity& a, const RunIdentity& b) {
  return a.host == b.host && a.fingerprint_class == b.fingerprint_class;
}

void AddDistinct(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

}  // namespace

void CompareRuns(RunSource& source, const store::RunRecord& reference,
                 const store::RunRecord& other, bool generate, HostRun& row) {
  Result<PairResult> r = ComparePair(source, reference.id, other.id, PairOptions{generate});
  if (!r.ok()) {
    row.note = r.status().message();
    return;
  }
  row.same_stream = r->bit_identical();
  if (!row.same_stream) {
    row.first_difference = r->summary.first_divergence.value_or(r->summary.compared);
  }
  const KldFigure figure = MostPositionsKld(*r);
  const KldSummary* kld = figure.kld;
  row.kld_method = figure.method;
  if (kld == nullptr && r->kld_returned_top_k.count > 0) {
    kld = &r->kld_returned_top_k;
    row.kld_method = ReturnedTopKName(r->returned_top_k);
  }
  if (kld != nullptr) {
    row.kld_mean = kld->mean;
    row.kld_n = kld->count;
    row.kld_ci95 = kld->ci95;
  }
  row.top1_agreement = r->summary.top1_agreement;
  row.top1_estimate = r->estimates.top1_agreement;
}

namespace {

class Builder {
 public:
  Builder(RunSource& source, HostReport& out) : source_(source), out_(out) {}

  // Files `row` under its pair of sides; the pair's hosts get their fingerprint
  // differences the first time they meet.
  void Add(const store::RunRecord& reference, const store::RunRecord& other, HostRun row) {
    HostPair& pair = PairOf(row.reference, row.run);
    AddDistinct(pair.reference_hosts, row.reference.host);
    AddDistinct(pair.other_hosts, row.run.host);
    const bool known =
        std::any_of(pair.differences.begin(), pair.differences.end(), [&](const HostDifference& d) {
          return d.reference_host == row.reference.host && d.other_host == row.run.host;
        });
    if (!known) {
      pair.differences.push_back(
          {row.reference.host, row.run.host, CompareFingerprints(source_, reference, other)});
    }
    pair.runs.push_back(std::move(row));
  }

 private:
  HostPair& PairOf(const RunIdentity& reference, const RunIdentity& other) {
    const std::string key = Side(reference) + "\n" + Side(other);
    auto it = std::find(keys_.begin(), keys_.end(), key);
    if (it != keys_.end()) return out_.pairs[static_cast<std::size_t>(it - keys_.begin())];
    keys_.push_back(key);
    HostPair pair;
    pair.reference_class = reference.fingerprint_class;
    pair.other_class = other.fingerprint_class;
    out_.pairs.push_back(std::move(pair));
    return out_.pairs.back();
  }

  RunSource& source_;
  HostReport& out_;
  std::vector<std::string> keys_;  // parallel to out_.pairs
};

}  // namespace

int HostPair::bit_identical() const {
  return static_cast<int>(std::count_if(
      runs.begin(), runs.end(), [](const HostRun& r) { return r.note.empty() && r.same_stream; }));
}

Result<HostReport> BuildHostReport(const ExperimentInput& input, RunSource& source) {
  Result<PlanView> plan = ParsePlanView(input.plan.json);
  if (!plan.ok()) return plan.status().WithContext("experiment " + input.plan.experiment);
  HostReport out;
  out.experiment = plan->experiment;
  JobRuns index(input.jobs, input.runs);
  RunIdentities identities(source);
  Builder builder(source, out);
  for (const PlannedJob& job : plan->jobs) {
    ++out.jobs_total;
    const store::RunRecord* reference = index.Chosen(job.id);
    if (reference == nullptr) continue;
    const RunIdentity reference_id = identities.Of(*reference);
    bool listed = false;
    for (const store::RunRecord* run : index.UsableRuns(job.id)) {
      HostRun row{.job = job, .reference = reference_id, .run = identities.Of(*run)};
      if (SameRig(row.reference, row.run)) continue;
      CompareRuns(source, *reference, *run, IsGenerate(*plan, job.workload), row);
      builder.Add(*reference, *run, std::move(row));
      listed = true;
    }
    out.jobs_listed += listed ? 1 : 0;
  }
  return out;
}

}  // namespace orch::report
