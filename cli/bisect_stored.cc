#include "cli/bisect_stored.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "cli/scratch_dir.h"
#include "cli/stored_status.h"
#include "plan_document/plan_json.h"
#include "report/job_runs.h"
#include "report/run_identity.h"
#include "report/run_source.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;

// The fewest characters of a job id that name it.
constexpr std::size_t kMinPrefix = 6;

struct Resolved {
  const store::JobRecord* job = nullptr;
  const store::RunRecord* run = nullptr;  // the run compared; null when none is usable
  plan_document::Document plan;
  std::size_t job_index = plan_document::kNone;  // the job in plan.jobs
  const plan_document::Job& planned() const { return plan.jobs[job_index]; }
};

// The record whose `key` member is `id`, in records sorted by it (as StoreState lists them).
template <typename Record>
const Record* FindById(const std::vector<Record>& records, const std::string& id,
                       std::string Record::*key = &Record::id) {
  auto it = std::lower_bound(
      records.begin(), records.end(), id,
      [key](const Record& r, const std::string& wanted) { return r.*key < wanted; });
  return it != records.end() && (*it).*key == id ? &*it : nullptr;
}

Result<const store::JobRecord*> FindJob(const store::StoreState& state, const std::string& side,
                                        const std::string& id, const std::string& dir) {
  if (const store::JobRecord* job = FindById(state.jobs, id)) return job;
  const std::string help =
      " (orch history --data-dir " + dir + " lists them: run ids under RUN, job ids under JOB)";
  if (id.size() < kMinPrefix) {
    return InvalidArgument(side + ": no run or job " + id + " in the store at " + dir +
                           "; a job id's start names it from " + std::to_string(kMinPrefix) +
                           " characters on" + help);
  }
  auto first = std::lower_bound(
      state.jobs.begin(), state.jobs.end(), id,
      [](const store::JobRecord& r, const std::string& key) { return r.id < key; });
  std::vector<std::string> matches;
  for (auto it = first; it != state.jobs.end() && it->id.compare(0, id.size(), id) == 0; ++it) {
    matches.push_back(it->id);
  }
  if (matches.size() == 1) return &*first;
  if (matches.empty()) {
    return InvalidArgument(side + ": no run or job " + id + " in the store at " + dir + help);
  }
  std::string listed;
  for (std::size_t i = 0; i < matches.size() && i < 4; ++i) {
    listed += (i ? ", " : "") + matches[i].substr(0, 16);
  }
  return InvalidArgument(side + ": " + id + " starts " + std::to_string(matches.size()) +
                         " job ids (" + listed + (matches.size() > 4 ? ", ..." : "") +
                         "); give more of it");
}

// JOB@HOST: the job's usable run on host HOST (its host fingerprint id, as `orch report
// --by-host` shows it), or of contributor or agent HOST; the first in run id order.
Result<const store::RunRecord*> RunOn(const report::JobRuns& runs, report::RunIdentities& ids,
                                      const std::string& side, const store::JobRecord& job,
                                      const std::string& host) {
  std::string seen;
  for (const store::RunRecord* run : runs.UsableRuns(job.id)) {
    const report::RunIdentity identity = ids.Of(*run);
    if (identity.host == host || identity.contributor == host || identity.agent_id == host) {
      return run;
    }
    seen += (seen.empty() ? "" : ", ") +
            (identity.host.empty() ? "an unrecorded host" : identity.host) + " (" +
            identity.contributor + ", agent " + identity.agent_id + ")";
  }
  return InvalidArgument(side + ": job " + job.id.substr(0, 12) + " has no finished run on " +
                         host + (seen.empty() ? "; it has none at all" : "; it ran on " + seen));
}

Result<Resolved> Resolve(const store::StoreState& state, const report::JobRuns& runs,
                         report::RunIdentities& ids, const std::string& side,
                         const std::string& given, const std::string& dir) {
  Resolved r;
  const std::size_t at = given.find('@');
  const std::string id = given.substr(0, at);
  if (at != std::string::npos) {
    ORCH_ASSIGN_OR_RETURN(r.job, FindJob(state, side, id, dir));
    ORCH_ASSIGN_OR_RETURN(r.run, RunOn(runs, ids, side, *r.job, given.substr(at + 1)));
  } else if ((r.run = FindById(state.runs, id)) != nullptr) {
    r.job = runs.Job(r.run->job_id);
    if (r.job == nullptr) {
      return Internal(side + ": run " + id + " belongs to job " + r.run->job_id +
                      ", which the store does not hold");
    }
    if (!report::Usable(*r.run)) {
      return InvalidArgument(side + ": run " + id + " did not finish whole (" +
                             std::string(store::RunStateName(r.run->state)) +
                             "); give a run that succeeded, or its job id");
    }
  } else {
    ORCH_ASSIGN_OR_RETURN(r.job, FindJob(state, side, id, dir));
    r.run = runs.Chosen(r.job->id);
  }
  const store::PlanRecord* plan =
      FindById(state.plans, r.job->experiment, &store::PlanRecord::experiment);
  if (plan == nullptr) {
    return Internal(side + ": the store has no plan of experiment " + r.job->experiment);
  }
  Result<plan_document::Document> document = plan_document::ReadPlanJson(plan->json);
  if (!document.ok()) {
    return document.status().WithContext(side + ": the plan of experiment " + plan->experiment);
  }
  r.plan = std::move(*document);
  for (std::size_t i = 0; i < r.plan.jobs.size(); ++i) {
    if (r.plan.jobs[i].id == r.job->id) r.job_index = i;
  }
  if (r.job_index == plan_document::kNone || r.planned().workload == plan_document::kNone ||
      r.planned().coordinate == plan_document::kNone || !r.plan.model) {
    return InvalidArgument(side + ": the plan of experiment " + plan->experiment +
                           " does not give job " + r.job->id +
                           " a workload, a coordinate and a model");
  }
  return r;
}

const plan_document::Workload& WorkloadOf(const Resolved& r) {
  return r.plan.workloads[r.planned().workload];
}

plan_document::Coordinate CoordinateOf(const Resolved& r) {
  return r.plan.coordinates[r.planned().coordinate].ToCoordinate();
}

std::string ModelName(const plan_document::Model& m) {
  return m.synth.empty() ? "sha256:" + m.sha256 : "synth:" + m.synth;
}

Status CheckComparable(const Resolved& a, const Resolved& b) {
  const plan_document::Model& ma = *a.plan.model;
  const plan_document::Model& mb = *b.plan.model;
  if (ModelName(ma) != ModelName(mb)) {
    return InvalidArgument("A and B ran two models (A " + ModelName(ma) + ", B " + ModelName(mb) +
                           "): a bisection switches the axes of one model (docs/bisect.md)");
  }
  const plan_document::Workload& wa = WorkloadOf(a);
  const plan_document::Workload& wb = WorkloadOf(b);
  if (wa.digest != wb.digest) {
    return InvalidArgument("A and B ran two workloads (A " + wa.name + ", digest " +
                           wa.digest.substr(0, 12) + "; B " + wb.name + ", digest " +
                           wb.digest.substr(0, 12) +
                           "): a bisection compares two setups on one workload");
  }
  const plan_document::Coordinate from = CoordinateOf(a);
  for (const auto& entry : CoordinateOf(b)) {
    const std::string& axis = entry.first;
    const plan_document::Scalar& value = entry.second;
    bool known = std::any_of(from.begin(), from.end(),
                             [&](const auto& other) { return other.first == axis; });
    if (!known) {
      return InvalidArgument("B's coordinate gives axis " + axis + " = " +
                             plan_document::ScalarText(value) +
                             ", which A's does not name: the walk from A to B needs A's value "
                             "(write the two coordinates as a spec with [bisect], "
                             "docs/bisect.md)");
    }
  }
  return Status::Ok();
}

// The stored model file `file` as the spec that planned it named it: resolved against that
// spec's folder (as given to orch plan, from the current directory); `file` itself when it
// is not there.
std::string Located(const plan_document::Document& plan, const std::string& file) {
  if (file.empty()) return file;
  fs::path path = fs::path(plan.spec).parent_path() / file;
  std::error_code ec;
  if (fs::path(file).is_absolute()) path = file;
  if (!fs::is_regular_file(path, ec)) return file;
  return fs::absolute(path, ec).lexically_normal().string();
}

report::BisectEnd EndOf(const Resolved& r, const std::string& given,
                        report::RunIdentities& identities) {
  report::BisectEnd end{given};
  end.experiment = r.plan.experiment;
  end.job_id = r.job->id;
  end.cell = r.planned().cell;
  end.workload = WorkloadOf(r).name;
  end.repeat = static_cast<int>(r.planned().repeat);
  if (r.run != nullptr) end.run = identities.Of(*r.run);
  return end;
}

}  // namespace

Result<StoredBisect> PrepareStoredBisect(const std::string& a, const std::string& b,
                                         const StoredBisectOptions& options) {
  ScratchDir scratch("orch-bisect");
  Result<std::unique_ptr<store::Store>> store = OpenStoreToRead(options.store_dir, scratch);
  if (!store.ok()) return store.status().WithContext("the store at " + options.store_dir);
  ORCH_ASSIGN_OR_RETURN(store::StoreState state, (*store)->LoadState());
  report::JobRuns runs(state.jobs, state.runs);
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(**store);
  report::RunIdentities identities(*source);
  ORCH_ASSIGN_OR_RETURN(Resolved ra, Resolve(state, runs, identities, "A", a, options.store_dir));
  ORCH_ASSIGN_OR_RETURN(Resolved rb, Resolve(state, runs, identities, "B", b, options.store_dir));
  if (ra.run != nullptr && rb.run != nullptr && ra.run->id == rb.run->id) {
    return InvalidArgument("A and B are the same run, " + ra.run->id + ": nothing to compare");
  }
  ORCH_RETURN_IF_ERROR(CheckComparable(ra, rb));

  StoredBisect out;
  out.origin.a = EndOf(ra, a, identities);
  out.origin.b = EndOf(rb, b, identities);
  out.origin.same_coordinate = CoordinateOf(ra) == CoordinateOf(rb);
  report::CompareOriginRuns(*source, ra.run, rb.run, WorkloadOf(ra).kind == "generate", out.origin);

  planner::BisectSpecSource& spec = out.source;
  spec.name = !options.name.empty()
                  ? options.name
                  : "bisect-" + ra.job->id.substr(0, 12) + "-" + rb.job->id.substr(0, 12);
  spec.description = "bisected from the store: from = job " + ra.job->id.substr(0, 12) + " of " +
                     ra.plan.experiment + " (" + ra.planned().cell + "), to = job " +
                     rb.job->id.substr(0, 12) + " of " + rb.plan.experiment + " (" +
                     rb.planned().cell + ")";
  spec.model = *ra.plan.model;
  spec.model.file = Located(ra.plan, spec.model.file);
  for (auto& [quant, variant] : spec.model.variants) variant.file = Located(ra.plan, variant.file);
  for (const auto& [quant, variant] : rb.plan.model->variants) {
    auto [it, added] = spec.model.variants.try_emplace(
        quant, plan_document::ModelFile{Located(rb.plan, variant.file), variant.sha256});
    if (!added && it->second.sha256 != variant.sha256) {
      return InvalidArgument("A and B ran two files for quant " + quant +
                             " (A sha256:" + it->second.sha256 + ", B sha256:" + variant.sha256 +
                             "): a bisection switches the axes of one model");
    }
  }
  spec.workload = WorkloadOf(ra);
  spec.from = CoordinateOf(ra);
  spec.to = CoordinateOf(rb);
  spec.tolerance = options.tolerance;
  spec.max_rounds = options.max_rounds;
  return out;
}

}  // namespace orch::cli
