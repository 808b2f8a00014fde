#include <cmath>
#include <nlohmann/json.hpp>

#include "report/generation_render.h"
#include "report/render.h"

#include "report/bisect_origin.h"
#include "report/bisect_render.h"
#include "report/task_json.h"

namespace orch::report {
namespace {

using Json = nlohmann::ordered_json;

Json Num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json TokenJson(const std::optional<Token>& t) {
  if (!t) return nullptr;
  return Json{{"id", t->id}, {"text", t->text ? Json(*t->text) : Json(nullptr)}};
}

Json RepeatsJson(const Repeatability& r) {
  return Json{{"planned", r.planned},
              {"available", r.available},
              {"unique_streams", r.unique_streams},
              {"bit_identical", r.bit_identical()},
              {"first_difference", Opt(r.first_difference)},
              {"generated_common_prefix", Opt(r.generated_common_prefix)},
              {"generated_length", Opt(r.generated_length)},
              {"noise", Num(r.noise)},
              {"runs", r.run_ids}};
}

Json ContextJson(const FlipTokens& tokens) {
  Json out = Json::array();
  for (const Token& t : tokens.context) out.push_back(TokenJson(t));
  return out;
}

Json FlipsJson(const CellReport& c) {
  Json listed = Json::array();
  for (std::size_t i = 0; i < c.result.flips.size(); ++i) {
    const Flip& f = c.result.flips[i];
    listed.push_back({{"position", f.position},
                      {"reference_token", f.reference_token},
                      {"other_token", f.other_token},
                      {"margin", Num(f.margin)},
                      {"abs_top1_logit_delta", Num(f.abs_top1_logit_delta)},
                      {"near_tie", f.near_tie},
                      {"reference", TokenJson(c.flip_tokens[i].reference)},
                      {"other", TokenJson(c.flip_tokens[i].other)},
                      {"context", ContextJson(c.flip_tokens[i])}});
  }
  Json clusters = Json::array();
  for (const FlipCluster& k : c.result.clusters) {
    clusters.push_back({{"first", k.first}, {"last", k.last}, {"flips", k.flips}});
  }
  Json first = nullptr;
  if (c.first_flip_reference) {
    first = {{"position", c.result.flips[0].position},
             {"reference", TokenJson(c.first_flip_reference)},
             {"other", TokenJson(c.first_flip_other)}};
  }
  return Json{
      {"first_flip", first},
      {"flips",
       {{"count", c.result.flip_count}, {"near_tie_listed", c.near_tie_flips}, {"listed", listed}}},
      {"clusters", {{"count", c.result.cluster_count}, {"listed", clusters}}}};
}

Json GeneratedJson(const CellReport& c) {
  const PairResult& r = c.result;
  Json first = nullptr;
  if (r.first_token_difference) {
    first = {{"index", r.first_token_difference->index},
             {"reference", TokenJson(c.generated_reference)},
             {"other", TokenJson(c.generated_other)}};
  }
  return Json{{"reference_tokens", r.reference_generated},
              {"other_tokens", r.other_generated},
              {"common_prefix", r.generated_common_prefix},
              {"first_difference", first}};
}

// [lo, hi], or null when there is no interval (ci95_method then says why).
Json IntervalJson(const Interval& ci) {
  return ci.available() ? Json::array({ci.lo, ci.hi}) : Json(nullptr);
}

Json EstimateJson(const Estimate& e) {
  return Json{{"mean", Num(e.mean)},
              {"n", e.n},
              {"ci95", IntervalJson(e.ci95)},
              {"ci95_method", e.ci95.method}};
}

Json KldJson(const KldSummary& k) {
  return Json{{"count", k.count},
              {"mean", Num(k.mean)},
              {"median", Num(k.median)},
              {"p99", Num(k.p99)},
              {"max", Num(k.max)},
              {"approximate_quantiles", k.approximate_quantiles},
              {"n", k.count},
              {"ci95", IntervalJson(k.ci95)},
              {"ci95_method", k.ci95.method}};
}

// Positions with a top-k-only side: their KLD and what it rests on (K, processed).
Json ReturnedKldJson(const PairResult& r) {
  Json j = KldJson(r.kld_returned_top_k);
  const ReturnedTopK& t = r.returned_top_k;
  j["basis"] = t.any() ? Json(ReturnedTopKName(t)) : Json(nullptr);
  j["positions"] = t.positions;
  j["k_min"] = t.k_min;
  j["k_max"] = t.k_max;
  j["processed"] = t.processed;
  return j;
}

Json Series(const std::vector<double>& values) {
  Json out = Json::array();
  for (double v : values) out.push_back(Num(v));
  return out;
}

Json PlotJson(const PositionPlot& plot) {
  return Json{{"bin_width", plot.bin_width},
              {"max_kld", Series(plot.max_kld)},
              {"flips", plot.flips},
              {"max_exact_kld", Series(plot.max_exact_kld)},
              {"max_bound_kld", Series(plot.max_bound_kld)},
              {"max_returned_top_k_kld", Series(plot.max_returned_kld)},
              {"min_margin", Series(plot.min_margin)}};
}

Json ComparisonJson(const CellReport& c) {
  const digest::StreamSummary& s = c.result.summary;
  Json j{{"reference_length", s.reference_length},
         {"other_length", s.other_length},
         {"compared", s.compared},
         {"bit_identical", c.result.bit_identical()},
         {"identity_basis", IdentityBasis(c.result)},
         {"not_comparable_rows", s.not_comparable_rows},
         {"first_divergence", Opt(s.first_divergence)},
         {"common_prefix", s.common_prefix},
         {"identical_rows", s.identical_rows},
         {"scored", s.scored},
         {"top1_agreement", Num(s.top1_agreement)},
         {"same_top_p", Num(s.same_top_p)},
         {"kld",
          {{"count", s.kld.count},
           {"exact_count", s.kld.exact_count},
           {"mean", Num(s.kld.mean)},
           {"median", Num(s.kld.median)},
           {"p99", Num(s.kld.p99)},
           {"max", Num(s.kld.max)},
           {"approximate_quantiles", c.result.kld_quantiles_approximate},
           {"method", std::string(KldMethodName(s.kld))}}},
         {"kld_exact", KldJson(c.result.kld_exact)},
         {"kld_exact_coverage",
          {{"exact_positions", c.result.kld_exact.count},
           {"positions", s.compared},
           {"text", ExactCoverage(c.result)}}},
         {"kld_bound", KldJson(c.result.kld_bound)},
         {"kld_returned_top_k", ReturnedKldJson(c.result)},
         {"target_count", s.target_count},
         {"mean_delta_p", Num(s.mean_delta_p)},
         {"rms_delta_p", Num(s.rms_delta_p)},
         {"ppl_reference", Num(s.ppl_reference)},
         {"ppl_other", Num(s.ppl_other)},
         {"ppl_ratio", Num(s.ppl_ratio)},
         {"mean_abs_top1_logit_delta", Num(s.mean_abs_top1_logit_delta)},
         {"max_abs_top1_logit_delta", Num(s.max_abs_top1_logit_delta)},
         {"top1_agreement_estimate", EstimateJson(c.result.estimates.top1_agreement)},
         {"flip_rate", EstimateJson(c.result.estimates.flip_rate)},
         {"ppl_ratio_estimate", EstimateJson(c.result.estimates.ppl_ratio)},
         {"noise_band",
          {{"repeat_noise", Num(c.repeat_noise)},
           {"perturbation", Num(c.perturbation)},
           {"band", Num(c.noise_band)}}}};
  j.update(FlipsJson(c));
  j["generated"] = GeneratedJson(c);
  j["generation"] = GenerationJson(c);
  j["plot"] = PlotJson(c.result.plot);
  return j;
}

Json FingerprintsJson(const std::vector<FingerprintComparison>& fingerprints) {
  Json out = Json::array();
  for (const FingerprintComparison& f : fingerprints) {
    Json diffs = Json::array();
    for (const fingerprint::FieldDifference& d : f.differences) {
      diffs.push_back({{"group", fingerprint::DiffGroupName(d.group)},
                       {"field", d.field},
                       {"reference", Opt(d.a)},
                       {"other", Opt(d.b)}});
    }
    out.push_back({{"kind", f.kind},
                   {"reference", f.reference_id},
                   {"other", f.other_id},
                   {"same", f.same},
                   {"note", f.note.empty() ? Json(nullptr) : Json(f.note)},
                   {"differences", diffs}});
  }
  return out;
}

// How far this cell's run got; null when it has no compared run.
Json ExtentJson(const CellReport& c) {
  if (c.status != CellStatus::kCompared) return nullptr;
  return Json{{"positions", c.extent.positions},
              {"generated", c.extent.generated},
              {"generated_tokens", c.extent.generated_tokens()},
              {"stop", Opt(c.extent.stop.reason)}};
}

Json WarningsJson(const std::vector<Warning>& warnings) {
  Json out = Json::array();
  for (const Warning& w : warnings) out.push_back({{"kind", w.kind}, {"message", w.message}});
  return out;
}

Json IdentityJson(const RunIdentity& run) {
  auto or_null = [](const std::string& v) { return v.empty() ? Json(nullptr) : Json(v); };
  return Json{{"run", run.run_id},
              {"contributor", run.contributor},
              {"agent", run.agent_id},
              {"host", or_null(run.host)},
              {"class", or_null(run.fingerprint_class)}};
}

Json GroupsJson(const Quorum& q) {
  Json out = Json::array();
  for (const StreamGroup& g : q.groups) {
    out.push_back({{"size", g.runs.size()},
                   {"runs", g.runs},
                   {"hosts", g.hosts},
                   {"classes", g.classes},
                   {"contributors", g.contributors}});
  }
  return out;
}

Json QuorumJson(const Quorum& q) {
  return Json{{"runs", q.runs},
              {"streams", q.streams},
              {"agreeing_runs", q.agreeing_runs},
              {"hosts", q.hosts},
              {"classes", q.classes},
              {"contributors", q.contributors},
              {"all_contributors", q.all_contributors},
              {"rests_on_one_contributor", q.rests_on_one_contributor()},
              {"unreadable", q.unreadable},
              {"majority", q.majority()},
              {"groups", GroupsJson(q)}};
}

Json ConflictsJson(const CellReport& c) {
  Json out = Json::array();
  for (const Conflict& k : c.conflicts) {
    out.push_back({{"job", k.a.job_id},
                   {"repeat", k.repeat},
                   {"first_difference", Opt(k.first_difference)},
                   {"a", IdentityJson(k.a)},
                   {"b", IdentityJson(k.b)}});
  }
  return out;
}

// What the engine ran against the coordinate (report/effective.h); null when the run's
// driver reported no effective settings.
Json EffectiveJson(const CellReport& c) {
  if (!c.effective.known()) return nullptr;
  Json axes = Json::object();
  for (const auto& [axis, value] : c.effective.axes) axes[axis] = value;
  Json differences = Json::array();
  for (const EffectiveDifference& d : c.effective_differences) {
    differences.push_back({{"axis", d.axis},
                           {"requested", d.requested},
                           {"effective", d.effective},
                           {"why", d.why.empty() ? Json(nullptr) : Json(d.why)}});
  }
  return Json{{"axes", axes},
              {"differences", differences},
              {"same_as_baseline", c.same_effective_as_baseline},
              {"note", c.effective_note.empty() ? Json(nullptr) : Json(c.effective_note)}};
}

Json CellJson(const CellReport& c) {
  Json j{{"label", c.cell.label},
         {"axis", c.cell.axis.empty() ? Json(nullptr) : Json(c.cell.axis)},
         {"value", c.cell.axis.empty() ? Json(nullptr) : Json(c.cell.value)},
         {"status", std::string(CellStatusName(c.status))},
         {"reason", c.reason.empty() ? Json(nullptr) : Json(c.reason)},
         {"repeats", RepeatsJson(c.repeats)},
         {"requested", Opt(c.requested)},
         {"extent", ExtentJson(c)},
         {"warnings", WarningsJson(c.warnings)},
         {"quorum", QuorumJson(c.quorum)},
         {"conflicts", ConflictsJson(c)},
         {"effective", EffectiveJson(c)}};
  if (c.cell.axis.empty()) {
    if (c.generation.reference_text) j["generated_text"] = *c.generation.reference_text;
    return j;
  }
  j["reference_run"] = c.reference_run.empty() ? Json(nullptr) : Json(c.reference_run);
  j["reference_repeat"] = c.reference_repeat;
  j["run"] = c.other_run.empty() ? Json(nullptr) : Json(c.other_run);
  j["comparison"] = c.status == CellStatus::kCompared ? ComparisonJson(c) : Json(nullptr);
  j["fingerprints"] = FingerprintsJson(c.fingerprints);
  return j;
}

Json RanksJson(const std::vector<AxisRank>& ranks) {
  Json out = Json::array();
  for (const AxisRank& r : ranks) {
    out.push_back({{"axis", r.axis},
                   {"cell", r.cell},
                   {"workload", r.workload},
                   {"kld_mean", Num(r.kld_mean)},
                   {"kld_method", r.kld_method},
                   {"exact_positions", r.exact_positions},
                   {"compared_positions", r.compared_positions},
                   {"top1_disagreement", Num(r.top1_disagreement)},
                   {"kld_n", r.kld_n},
                   {"kld_ci95", IntervalJson(r.kld_ci95)},
                   {"kld_ci95_method", r.kld_ci95.method},
                   {"kld_separability",
                    r.kld_separability.empty() ? Json(nullptr) : Json(r.kld_separability)},
                   {"top1_n", r.top1_n},
                   {"top1_ci95", IntervalJson(r.top1_ci95)},
                   {"top1_ci95_method", r.top1_ci95.method},
                   {"top1_separability",
                    r.top1_separability.empty() ? Json(nullptr) : Json(r.top1_separability)}});
  }
  return out;
}

Json SeenJson(const std::vector<SeenValue>& values) {
  Json out = Json::array();
  for (const SeenValue& v : values) out.push_back({{"value", v.value}, {"cells", v.cells}});
  return out;
}

Json ProvenanceJson(const Provenance& p) {
  Json baseline = Json::object();
  for (const auto& [axis, value] : p.baseline) baseline[axis] = value;
  return Json{{"model", {{"name", p.model_name}, {"id", p.model_id}}},
              {"model_files", SeenJson(p.model_files)},
              {"baseline", baseline},
              {"hosts", SeenJson(p.hosts)},
              {"engines", SeenJson(p.engines)}};
}

Json HostRunJson(const HostRun& r) {
  const bool compared = r.note.empty();
  return Json{{"job", r.job.id},
              {"cell", r.job.cell},
              {"workload", r.job.workload},
              {"repeat", r.job.repeat},
              {"reference", IdentityJson(r.reference)},
              {"run", IdentityJson(r.run)},
              {"same_stream", compared ? Json(r.same_stream) : Json(nullptr)},
              {"first_difference", Opt(r.first_difference)},
              {"kld_mean", Num(r.kld_mean)},
              {"kld_method", r.kld_method},
              {"kld_n", r.kld_n},
              {"kld_ci95", IntervalJson(r.kld_ci95)},
              {"kld_ci95_method", r.kld_ci95.method},
              {"top1_agreement", Num(r.top1_agreement)},
              {"top1_agreement_estimate", EstimateJson(r.top1_estimate)},
              {"note", compared ? Json(nullptr) : Json(r.note)}};
}

Json HostPairJson(const HostPair& pair) {
  auto or_null = [](const std::string& v) { return v.empty() ? Json(nullptr) : Json(v); };
  Json differences = Json::array();
  for (const HostDifference& d : pair.differences) {
    differences.push_back({{"reference_host", or_null(d.reference_host)},
                           {"other_host", or_null(d.other_host)},
                           {"fingerprints", FingerprintsJson(d.fingerprints)}});
  }
  Json runs = Json::array();
  for (const HostRun& r : pair.runs) runs.push_back(HostRunJson(r));
  return Json{
      {"reference", {{"class", or_null(pair.reference_class)}, {"hosts", pair.reference_hosts}}},
      {"other", {{"class", or_null(pair.other_class)}, {"hosts", pair.other_hosts}}},
      {"bit_identical", pair.bit_identical()},
      {"differences", differences},
      {"runs", runs}};
}

}  // namespace

std::string RenderHostJson(const HostReport& report) {
  Json pairs = Json::array();
  for (const HostPair& pair : report.pairs) pairs.push_back(HostPairJson(pair));
  Json doc{{"schema", "orch.report-hosts/2"},
           {"experiment", report.experiment},
           {"jobs_total", report.jobs_total},
           {"jobs_listed", report.jobs_listed},
           {"pairs", pairs}};
  return doc.dump(2) + "\n";
}

std::string RenderJson(const Report& report) {
  Json workloads = Json::array();
  for (const WorkloadReport& w : report.workloads) {
    Json cells = Json::array();
    for (const CellReport& c : w.cells) cells.push_back(CellJson(c));
    workloads.push_back(
        {{"name", w.workload.name},
         {"kind", w.workload.kind == WorkloadKind::kGenerate ? "generate" : "teacher_forced"},
         {"reference", w.baseline.status == CellStatus::kCompared
                           ? Json{{"cell", w.baseline.cell.label},
                                  {"repeat", 0},
                                  {"run", w.baseline.reference_run}}
                           : Json(nullptr)},
         {"baseline", CellJson(w.baseline)},
         {"cells", cells}});
  }
  Json doc{
      {"schema", "orch.report/1"},
      {"experiment", report.experiment},
      {"partial", report.partial},
      {"jobs",
       {{"total", report.jobs_total},
        {"succeeded", report.jobs_succeeded},
        {"failed", report.jobs_failed},
        {"in_progress", report.jobs_in_progress}}},
      {"rules",
       {{"cluster_gap", kClusterGap}, {"near_tie", "margin <= max(repeat_noise, perturbation)"}}},
      {"workloads", workloads},
      {"provenance", ProvenanceJson(report.provenance)},
      {"attribution",
       {{"by_kld", RanksJson(report.by_kld)},
        {"by_kld_returned_top_k", RanksJson(report.by_kld_returned_top_k)},
        {"by_top1", RanksJson(report.by_top1)}}}};
  // Only experiments with task workloads have these (docs/report.md, "Task outcomes").
  if (!report.tasks.empty()) {
    doc["tasks"] = TasksJson(report.tasks);
    doc["attribution"]["by_outcome_changes"] = OutcomeRanksJson(report.by_outcome_changes);
  }
  if (report.bisect) doc["bisect"] = BisectJson(*report.bisect);
  return doc.dump(2) + "\n";
}

namespace {

Json EndJson(const BisectEnd& e) {
  return Json{{"given", e.given},
              {"experiment", e.experiment},
              {"job", e.job_id},
              {"cell", e.cell},
              {"workload", e.workload},
              {"repeat", e.repeat},
              {"run", e.run.run_id.empty() ? Json(nullptr) : IdentityJson(e.run)}};
}

Json OriginJson(const BisectOrigin& o, std::optional<double> total_kld) {
  const HostRun& c = o.compared;
  const bool compared = c.note.empty();
  Json share = nullptr;
  if (total_kld && compared && !c.same_stream && c.kld_n > 0 && c.kld_mean > 0) {
    share = *total_kld / c.kld_mean;
  }
  return Json{{"a", EndJson(o.a)},
              {"b", EndJson(o.b)},
              {"same_coordinate", o.same_coordinate},
              {"same_host", o.same_host()},
              {"same_stream", compared ? Json(c.same_stream) : Json(nullptr)},
              {"first_difference", Opt(c.first_difference)},
              {"kld_mean", Num(c.kld_mean)},
              {"kld_method", c.kld_method},
              {"kld_n", c.kld_n},
              {"kld_ci95", IntervalJson(c.kld_ci95)},
              {"kld_ci95_method", c.kld_ci95.method},
              {"top1_agreement", Num(c.top1_agreement)},
              {"top1_agreement_estimate", EstimateJson(c.top1_estimate)},
              {"note", compared ? Json(nullptr) : Json(c.note)},
              {"fingerprints", FingerprintsJson(o.fingerprints)},
              {"reproduced_share", share}};
}

}  // namespace

std::string RenderBisectJson(const std::string& experiment, const BisectReport& report,
                             const BisectOrigin* origin) {
  Json body = BisectJson(report);
  Json doc{{"schema", "orch.bisect/1"}, {"experiment", experiment}};
  doc.update(body);
  if (origin != nullptr) doc["origin"] = OriginJson(*origin, MeasuredTotal(report));
  return doc.dump(2) + "\n";
}

std::string RenderOriginJson(const BisectOrigin& origin) {
  Json doc{{"schema", "orch.bisect/1"},
           {"experiment", nullptr},
           {"verdict", "same_coordinate"},
           {"origin", OriginJson(origin, std::nullopt)}};
  return doc.dump(2) + "\n";
}

}  // namespace orch::report
