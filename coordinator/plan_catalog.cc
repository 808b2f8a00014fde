#include "coordinator/plan_catalog.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"
#include "coordinator/matchmaker.h"
#include "planner/plan_ids.h"

namespace orch::coordinator {
namespace {

using nlohmann::json;

Status Field(const std::string& field, const std::string& rule) {
  return InvalidArgument("plan." + field + ": " + rule);
}

Result<std::string> Text(const json& object, const char* key,
                         const std::string& at) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() ||
      it->get<std::string>().empty()) {
    return Field(at + key, "required non-empty string");
  }
  return it->get<std::string>();
}

std::string ScalarText(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// An optional string field: "" when absent, an error when of another type.
Result<std::string> OptionalText(const json& object, const char* key,
                                 const std::string& at) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Field(at + key, "must be a string, got " + it->dump());
  return it->get<std::string>();
}

// An optional integer in [0, 4096] (GPUs per job): 0 when absent.
Result<std::int32_t> OptionalCount(const json& object, const char* key,
                                   const std::string& at) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return 0;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
      it->get<std::int64_t>() > 4096) {
    return Field(at + key, "must be an integer in [0, 4096], got " + it->dump());
  }
  return static_cast<std::int32_t>(it->get<std::int64_t>());
}

Result<protocol::Requirements> ReadRequirements(const json& job,
                                                const std::string& at) {
  auto it = job.find("requirements");
  if (it == job.end() || !it->is_object())
    return Field(at + "requirements", "required object");
  const json& r = *it;
  std::string where = at + "requirements.";
  protocol::Requirements needs;
  ORCH_ASSIGN_OR_RETURN(needs.engine, OptionalText(r, "engine", where));
  ORCH_ASSIGN_OR_RETURN(needs.hardware, OptionalText(r, "hardware", where));
  ORCH_ASSIGN_OR_RETURN(needs.gpus, OptionalCount(r, "gpus", where));
  ORCH_ASSIGN_OR_RETURN(needs.model, OptionalText(r, "model", where));
  return needs;
}

// Experiment and workload names: 1-128 letters, digits, '-', '_' or '.', not
// only dots (the planner's rule, docs/spec.md).
bool IsName(const std::string& text) {
  if (text.empty() || text.size() > 128 || text.find_first_not_of('.') == std::string::npos) {
    return false;
  }
  for (unsigned char c : text) {
    if (std::isalnum(c) == 0 && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

Status CheckName(const std::string& name, const std::string& field) {
  if (IsName(name)) return Status::Ok();
  return Field(field, "invalid name " + json(name).dump() +
                          "; expected 1-128 letters, digits, '-', '_' or '.'");
}

// Job ids are 32 lowercase hex digits (planner/job_id.h).
Status CheckJobId(const std::string& id, const std::string& field) {
  bool hex = id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (hex) return Status::Ok();
  return Field(field, "must be 32 lowercase hex digits (a job id), got " + json(id).dump());
}

std::uint64_t MostPositions(const json& workload) {
  for (const char* key : {"positions", "max_tokens"}) {
    auto it = workload.find(key);
    if (it != workload.end() && it->is_number_unsigned()) return it->get<std::uint64_t>();
  }
  return 0;
}

// Adds the plan's workloads; returns name -> index.
Result<std::map<std::string, std::uint32_t>> ReadWorkloads(const json& doc,
                                                           ParsedPlan& plan) {
  auto it = doc.find("workloads");
  if (it == doc.end() || !it->is_array())
    return Field("workloads", "required array");
  std::map<std::string, std::uint32_t> index;
  if (it->size() > kMaxPlanWorkloads) {
    return Field("workloads", "more than " + std::to_string(kMaxPlanWorkloads) + " workloads");
  }
  for (const json& w : *it) {
    if (!w.is_object()) return Field("workloads[]", "must be an object");
    ORCH_ASSIGN_OR_RETURN(std::string name, Text(w, "name", "workloads[]."));
    ORCH_RETURN_IF_ERROR(CheckName(name, "workloads[].name"));
    if (index.contains(name)) return Field("workloads[].name", "duplicate workload " + name);
    index[name] = static_cast<std::uint32_t>(plan.workload_names.size());
    plan.workload_names.push_back(name);
    plan.workload_json.push_back(w.dump());
    plan.workload_positions.push_back(MostPositions(w));
  }
  return index;
}

Status ReadJobs(const json& doc,
                const std::map<std::string, std::uint32_t>& workloads,
                ParsedPlan& plan) {
  auto it = doc.find("jobs");
  if (it == doc.end() || !it->is_array())
    return Field("jobs", "required array");
  if (it->empty()) return Field("jobs", "a plan needs at least one job");
  if (it->size() > kMaxPlanJobs) {
    return Field("jobs", std::to_string(it->size()) + " jobs, more than " +
                             std::to_string(kMaxPlanJobs));
  }
  std::map<std::string, std::uint32_t> interned;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& j = (*it)[i];
    std::string at = "jobs[" + std::to_string(i) + "].";
    if (!j.is_object()) return Field(at, "must be an object");
    ORCH_ASSIGN_OR_RETURN(std::string id, Text(j, "id", at));
    ORCH_RETURN_IF_ERROR(CheckJobId(id, at + "id"));
    if (!ids.insert(id).second) return Field(at + "id", "duplicate job id " + id);
    ORCH_ASSIGN_OR_RETURN(std::string workload, Text(j, "workload", at));
    auto w = workloads.find(workload);
    if (w == workloads.end())
      return Field(at + "workload", "unknown workload " + workload);
    ORCH_ASSIGN_OR_RETURN(protocol::Requirements needs,
                          ReadRequirements(j, at));
    auto [slot, added] = interned.try_emplace(
        RequirementKey(needs),
        static_cast<std::uint32_t>(plan.requirements.size()));
    if (added) plan.requirements.push_back(needs);
    ORCH_ASSIGN_OR_RETURN(std::string cell, OptionalText(j, "cell", at));
    auto r = j.find("repeat");
    bool bad_repeat = r != j.end() && !r->is_null() &&
                      (!r->is_number_unsigned() || r->get<std::uint64_t>() > 1'000'000);
    if (bad_repeat) return Field(at + "repeat", "must be an integer in [0, 1000000], got " + r->dump());
    std::uint32_t repeat = r != j.end() && r->is_number_unsigned() ? r->get<std::uint32_t>() : 0;
    plan.jobs.push_back({std::move(id), std::move(cell), repeat, w->second,
                         slot->second, j.dump()});
  }
  return Status::Ok();
}

// Finds experiment.name in a stream of SAX events and stops there.
class NameFinder final : public json::json_sax_t {
 public:
  std::string name;

  bool key(string_t& k) override {
    in_experiment_key_ = depth_ == 1 && k == "experiment";
    name_key_ = depth_ == 2 && in_experiment_ && k == "name";
    return true;
  }
  bool start_object(std::size_t) override { return Enter(); }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_object() override { return Leave(); }
  bool end_array() override { return Leave(); }
  bool string(string_t& value) override {
    if (!name_key_) return Value();
    name = value;
    return false;  // found: stop
  }
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool parse_error(std::size_t, const std::string&, const json::exception&) override {
    return false;
  }

 private:
  bool Enter() {
    if (depth_ == 1) in_experiment_ = in_experiment_key_;
    in_experiment_key_ = name_key_ = false;
    ++depth_;
    return true;
  }
  bool Leave() {
    if (--depth_ == 1) in_experiment_ = false;
    return true;
  }
  bool Value() {
    in_experiment_key_ = name_key_ = false;
    return true;
  }
  int depth_ = 0;
  bool in_experiment_key_ = false;  // the last key was the top level's "experiment"
  bool in_experiment_ = false;      // inside that object
  bool name_key_ = false;           // the last key was its "name"
};

}  // namespace

std::string ExperimentNameOf(std::string_view text) {
  NameFinder finder;
  (void)json::sax_parse(text.begin(), text.end(), &finder, json::input_format_t::json, false);
  return finder.name;
}

Result<ParsedPlan> ParsePlanJson(std::string_view text, PlanSource source) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return InvalidArgument("plan: not a JSON object");
  if (!doc.contains("schema") || doc["schema"] != "orch.plan/1") {
    return Field("schema", "expected \"orch.plan/1\"");
  }
  ParsedPlan plan;
  auto experiment = doc.find("experiment");
  if (experiment == doc.end() || !experiment->is_object()) {
    return Field("experiment", "required object");
  }
  ORCH_ASSIGN_OR_RETURN(plan.experiment,
                        Text(*experiment, "name", "experiment."));
  ORCH_RETURN_IF_ERROR(CheckName(plan.experiment, "experiment.name"));
  plan.json_sha256 = Sha256Hex(text);
  plan.model_json = doc.contains("model") ? doc["model"].dump() : "{}";
  plan.baseline_json = doc.contains("baseline") ? doc["baseline"].dump() : "null";
  ORCH_ASSIGN_OR_RETURN(auto workloads, ReadWorkloads(doc, plan));
  ORCH_RETURN_IF_ERROR(ReadJobs(doc, workloads, plan));
  // Last, so that a plan with a field of the wrong type hears about that field.
  if (source == PlanSource::kPeer) ORCH_RETURN_IF_ERROR(planner::CheckPlanJobIds(doc));
  return plan;
}

store::PlanRecord ToPlanRecord(const ParsedPlan& plan, std::string_view json) {
  return {plan.experiment, plan.experiment, std::string(json)};
}

std::vector<store::JobRecord> ToJobRecords(const ParsedPlan& plan) {
  std::vector<store::JobRecord> jobs;
  jobs.reserve(plan.jobs.size());
  for (const PlannedJob& job : plan.jobs) {
    store::JobRecord record;
    record.id = job.id;
    record.plan_id = plan.experiment;
    jobs.push_back(std::move(record));
  }
  return jobs;
}

PlanCatalog::PlanCatalog(const PlanCatalog& other) { *this = other; }

PlanCatalog& PlanCatalog::operator=(const PlanCatalog& other) {
  if (this == &other) return *this;
  plans_.clear();
  plans_.reserve(other.plans_.size());
  for (const auto& plan : other.plans_) plans_.push_back(std::make_unique<ParsedPlan>(*plan));
  return *this;
}

std::uint32_t PlanCatalog::Add(ParsedPlan plan) {
  for (std::uint32_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i]->experiment == plan.experiment) {
      *plans_[i] = std::move(plan);
      return i;
    }
  }
  plans_.push_back(std::make_unique<ParsedPlan>(std::move(plan)));
  return static_cast<std::uint32_t>(plans_.size() - 1);
}

const ParsedPlan* PlanCatalog::Find(std::string_view experiment) const {
  for (const auto& plan : plans_) {
    if (plan->experiment == experiment) return plan.get();
  }
  return nullptr;
}

protocol::Assign PlanCatalog::MakeAssign(std::uint32_t plan_index,
                                         const PlannedJob& job) const {
  const ParsedPlan& plan = *plans_[plan_index];
  protocol::Assign assign;
  assign.job_id = job.id;
  assign.workload = plan.workload_names[job.workload];
  assign.requirements = plan.requirements[job.requirement];
  json parsed = json::parse(job.job_json, nullptr, false);
  if (parsed.is_object() && parsed.contains("coordinate") &&
      parsed["coordinate"].is_object()) {
    for (const auto& [axis, value] : parsed["coordinate"].items()) {
      assign.coordinate.push_back({axis, ScalarText(value)});
    }
  }
  json experiment_name = plan.experiment;
  assign.workload_spec = "{\"experiment\":" + experiment_name.dump() +
                         ",\"job\":" + job.job_json +
                         ",\"workload\":" + plan.workload_json[job.workload] +
                         ",\"model\":" + plan.model_json + "}";
  return assign;
}

}  // namespace orch::coordinator
