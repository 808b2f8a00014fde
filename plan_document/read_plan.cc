// ReadPlanJson: a SAX pass that cuts the text into small trees (one per top-level member,
// one per job) and turns each into typed fields at once.
#include <map>
#include <nlohmann/json.hpp>

#include "plan_document/job_fields.h"
#include "plan_document/plan_json.h"

namespace orch::plan_document {
namespace {

using nlohmann::json;

// "plan.FIELD: RULE"; a FIELD given as a prefix ("jobs[3].") names the object itself.
Status Field(std::string field, const std::string& rule) {
  if (!field.empty() && field.back() == '.') field.pop_back();
  return InvalidArgument((field.empty() ? "plan" : "plan." + field) + ": " + rule);
}

// Typed getters of optional members: absent or null leaves `out` as it is.
Status Text(const json& object, const char* key, const std::string& at, std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return Field(at + key, "must be a string, got " + it->dump());
  out = it->get<std::string>();
  return Status::Ok();
}

Status RequiredText(const json& object, const char* key, const std::string& at, std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get<std::string>().empty()) {
    return Field(at + key,
                 "required string, not empty" + (it == object.end() ? "" : ", got " + it->dump()));
  }
  out = it->get<std::string>();
  return Status::Ok();
}

template <typename Int>
Status Integer(const json& object, const char* key, const std::string& at, std::int64_t low,
               std::int64_t high, Int& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status::Ok();
  // A positive integer above INT64_MAX is held unsigned; read as int64 it would
  // wrap to a negative number and could pass the range check.
  bool fits = it->is_number_integer() &&
              !(it->is_number_unsigned() && it->get<std::uint64_t>() > INT64_MAX) &&
              it->get<std::int64_t>() >= low && it->get<std::int64_t>() <= high;
  // No range of the caller's own (the optional overload below): its message says
  // only that an integer was wanted.
  if (!fits && low == INT64_MIN && high == INT64_MAX) {
    return Field(at + key, "required integer, got " + it->dump());
  }
  if (!fits) {
    return Field(at + key, "must be an integer in [" + std::to_string(low) + ", " +
                               std::to_string(high) + "], got " + it->dump());
  }
  out = static_cast<Int>(it->get<std::int64_t>());
  return Status::Ok();
}

// Any integer the type holds; a value out of its range is "required integer" too.
template <typename Int>
Status Integer(const json& object, const char* key, const std::string& at,
               std::optional<Int>& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status::Ok();
  std::int64_t value = 0;
  ORCH_RETURN_IF_ERROR(Integer(object, key, at, INT64_MIN, INT64_MAX, value));
  if (value < std::numeric_limits<Int>::min() || value > std::numeric_limits<Int>::max()) {
    return Field(at + key, "required integer, got " + it->dump() + " (out of range)");
  }
  out = static_cast<Int>(value);
  return Status::Ok();
}

Result<Scalar> ReadScalar(const json& value, const std::string& at) {
  if (value.is_string()) return Scalar(value.get<std::string>());
  if (value.is_boolean()) return Scalar(value.get<bool>());
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX) {
      return Field(at, "integer out of range");
    }
    return Scalar(value.get<std::int64_t>());
  }
  if (value.is_number_float()) return Scalar(value.get<double>());
  return Field(at, "must be a string, number or boolean, got " + value.dump());
}

Result<Coordinate> ReadCoordinate(const json& value, const std::string& at) {
  if (!value.is_object()) return Field(at, "must be an object, got " + value.dump());
  Coordinate coordinate;
  // Exact capacity: a plan of a cell per job keeps one coordinate per job, and growth by
  // doubling would leave most of them with room for twice their axes.
  coordinate.reserve(value.size());
  for (const auto& [axis, v] : value.items()) {
    ORCH_ASSIGN_OR_RETURN(Scalar scalar, ReadScalar(v, at + "." + axis));
    coordinate.emplace_back(axis, std::move(scalar));
  }
  return coordinate;  // sorted: nlohmann::json objects keep their keys sorted
}

Status Object(const json& value, const std::string& at) {
  if (value.is_object()) return Status::Ok();
  return Field(at, "must be an object");
}

Result<Requirements> ReadRequirements(const json& r, const std::string& at) {
  ORCH_RETURN_IF_ERROR(Object(r, at));
  Requirements needs;
  std::string where = at + ".";
  ORCH_RETURN_IF_ERROR(Text(r, "engine", where, needs.engine));
  ORCH_RETURN_IF_ERROR(Text(r, "hardware", where, needs.hardware));
  ORCH_RETURN_IF_ERROR(Integer(r, "gpus", where, 0, 4096, needs.gpus));
  ORCH_RETURN_IF_ERROR(Text(r, "model", where, needs.model));
  return needs;
}

Result<Model> ReadModel(const json& m) {
  ORCH_RETURN_IF_ERROR(Object(m, "model"));
  Model model;
  for (auto [key, field] : {std::pair{"name", &model.name},
                            {"synth", &model.synth},
                            {"file", &model.file},
                            {"sha256", &model.sha256}}) {
    ORCH_RETURN_IF_ERROR(Text(m, key, "model.", *field));
  }
  if (auto it = m.find("variants"); it != m.end() && !it->is_null()) {
    ORCH_RETURN_IF_ERROR(Object(*it, "model.variants"));
    for (const auto& [quant, v] : it->items()) {
      std::string at = "model.variants." + quant + ".";
      ORCH_RETURN_IF_ERROR(Object(v, at));
      ModelFile& file = model.variants[quant];
      ORCH_RETURN_IF_ERROR(Text(v, "file", at, file.file));
      ORCH_RETURN_IF_ERROR(Text(v, "sha256", at, file.sha256));
    }
  }
  model.json = m.dump();
  return model;
}

Result<Capture> ReadCapture(const json& c, const std::string& at) {
  ORCH_RETURN_IF_ERROR(Object(c, at));
  Capture capture;
  std::string where = at + ".";
  // Plans written before the rename carry top_logits as "top_k" (job_fields.h).
  const char* top_logits = c.contains("top_logits") ? "top_logits" : kFormerTopLogitsKey.data();
  ORCH_RETURN_IF_ERROR(Integer(c, top_logits, where, capture.top_logits));
  ORCH_RETURN_IF_ERROR(Integer(c, "full_every", where, capture.full_every));
  ORCH_RETURN_IF_ERROR(Integer(c, "full_row_budget_bytes", where, capture.full_row_budget_bytes));
  if (capture.full_row_budget_bytes && *capture.full_row_budget_bytes < 0) {
    return Field(where + "full_row_budget_bytes",
                 "must be a non-negative integer, got " + c.at("full_row_budget_bytes").dump());
  }
  auto windows = c.find("full_windows");
  if (windows == c.end() || windows->is_null()) return capture;
  if (!windows->is_array()) return Field(where + "full_windows", "must be an array");
  capture.full_windows.emplace();
  for (const json& w : *windows) {
    auto in_range = [](const json& v) {
      return v.is_number_integer() && v.get<std::int64_t>() >= INT32_MIN &&
             v.get<std::int64_t>() <= INT32_MAX &&
             !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT32_MAX);
    };
    if (!w.is_array() || w.size() != 2 || !in_range(w[0]) || !in_range(w[1])) {
      return Field(where + "full_windows", "each window must be [begin, end]");
    }
    capture.full_windows->emplace_back(w[0].get<std::int32_t>(), w[1].get<std::int32_t>());
  }
  return capture;
}

Result<std::vector<ChatMessage>> ReadMessages(const json& m, const std::string& at) {
  if (!m.is_array()) return Field(at, "must be an array of {\"role\", \"content\"}");
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const std::string item = at + "[" + std::to_string(i) + "].";
    if (!m[i].is_object()) return Field(at + "[" + std::to_string(i) + "]", "must be an object");
    ChatMessage message;
    ORCH_RETURN_IF_ERROR(RequiredText(m[i], "role", item, message.role));
    if (!m[i].contains("content") || !m[i]["content"].is_string())
      return Field(item + "content", "required string");
    message.content = m[i]["content"].get<std::string>();
    out.push_back(std::move(message));
  }
  return out;
}

// A per-case workload's task object; a malformed one is left out (the workload then
// reads, and is reported, as an ordinary one), never an error of the plan.
std::optional<TaskRef> ReadTaskRef(const json& t) {
  if (!t.is_object() || !t.contains("workload") || !t["workload"].is_string() ||
      !t.contains("case") || !t["case"].is_string()) {
    return std::nullopt;
  }
  TaskRef task{t["workload"].get<std::string>(), t["case"].get<std::string>(), std::nullopt};
  if (t.contains("choice") && t["choice"].is_number_integer() &&
      t["choice"].get<std::int64_t>() >= 0 && t["choice"].get<std::int64_t>() <= INT32_MAX) {
    task.choice = static_cast<std::int32_t>(t["choice"].get<std::int64_t>());
  }
  return task;
}

Result<Workload> ReadWorkload(const json& w, const std::string& at) {
  if (!w.is_object()) return Field(at, "must be an object");
  Workload workload;
  ORCH_RETURN_IF_ERROR(RequiredText(w, "name", at, workload.name));
  ORCH_RETURN_IF_ERROR(Text(w, "kind", at, workload.kind));
  ORCH_RETURN_IF_ERROR(Text(w, "digest", at, workload.digest));
  ORCH_RETURN_IF_ERROR(Text(w, "text_file", at, workload.text_file));
  ORCH_RETURN_IF_ERROR(Text(w, "cases_file", at, workload.cases_file));
  for (auto [key, field] : {std::pair{"text", &workload.text},
                            {"prompt", &workload.prompt},
                            {"context", &workload.context},
                            {"continuation", &workload.continuation},
                            {"cases", &workload.cases}}) {
    std::string value;
    ORCH_RETURN_IF_ERROR(Text(w, key, at, value));
    // Optional: an empty text is a value, told apart from an absent one.
    if (w.contains(key) && !w[key].is_null()) *field = std::move(value);
  }
  ORCH_RETURN_IF_ERROR(Integer(w, "positions", at, workload.positions));
  ORCH_RETURN_IF_ERROR(Integer(w, "max_tokens", at, workload.max_tokens));
  if (auto it = w.find("tokens"); it != w.end() && !it->is_null()) {
    bool integers = it->is_array();
    std::vector<std::int64_t> tokens;
    for (std::size_t i = 0; integers && i < it->size(); ++i) {
      const json& t = (*it)[i];
      integers =
          t.is_number_integer() && !(t.is_number_unsigned() && t.get<std::uint64_t>() > INT64_MAX);
      if (integers) tokens.push_back(t.get<std::int64_t>());
    }
    if (!integers) return Field(at + "tokens", "must be an array of integers");
    workload.tokens = std::move(tokens);
  }
  if (auto it = w.find("capture"); it != w.end() && !it->is_null()) {
    ORCH_ASSIGN_OR_RETURN(workload.capture, ReadCapture(*it, at + "capture"));
  }
  if (auto it = w.find("messages"); it != w.end() && !it->is_null()) {
    ORCH_ASSIGN_OR_RETURN(workload.messages, ReadMessages(*it, at + "messages"));
  }
  if (auto it = w.find("task"); it != w.end()) workload.task = ReadTaskRef(*it);
  workload.json = w.dump();
  return workload;
}

// The state of one read: the document so far and what cannot be checked until the end.
class Reader {
 public:
  Status Member(const std::string& key, const json& value);
  Status Job(const json& value);
  Status Cell(const json& value);
  void JobsArray() { jobs_ = true; }
  Result<Document> Finish();

 private:
  Status Experiment(const json& value);
  Status Axes(const json& value);
  Status Workloads(const json& value);
  Status Counts(const json& value, const char* at,
                std::initializer_list<std::pair<const char*, std::int64_t*>> fields);
  Status Warnings(const json& value);
  Status BisectMember(const json& value);

  Document document_;
  Interner interner_{document_};
  bool schema_ = false, experiment_ = false, workloads_ = false, jobs_ = false;
  // Jobs name their workload; the workloads may come later in the text (sorted keys put
  // "jobs" first), so names are resolved at the end.
  std::vector<std::string> job_workloads_;
  std::map<std::string, std::uint32_t> workload_names_;
};

Status Reader::Member(const std::string& key, const json& value) {
  if (key == "schema") {
    if (value != kPlanSchema) return Field("schema", "expected \"orch.plan/1\"");
    schema_ = true;
  } else if (key == "spec" && !value.is_null()) {
    if (!value.is_string()) return Field("spec", "must be a string, got " + value.dump());
    document_.spec = value.get<std::string>();
  } else if (key == "experiment") {
    return Experiment(value);
  } else if (key == "model" && !value.is_null()) {
    ORCH_ASSIGN_OR_RETURN(document_.model, ReadModel(value));
  } else if (key == "baseline" && !value.is_null()) {
    ORCH_ASSIGN_OR_RETURN(document_.baseline, ReadCoordinate(value, "baseline"));
  } else if (key == "axes") {
    return Axes(value);
  } else if (key == "workloads") {
    return Workloads(value);
  } else if (key == "repeats") {
    return Counts(value, "repeats.",
                  {{"baseline", &document_.baseline_repeats}, {"cells", &document_.cell_repeats}});
  } else if (key == "summary") {
    return Counts(value, "summary.", {{"axes_varied", &document_.axes_varied}});
  } else if (key == "cells") {
    // An array of cells arrives cell by cell (Cell); anything else lands here.
    return Field("cells", "required array");
  } else if (key == "jobs") {
    // An array of jobs arrives job by job (Job); anything else lands here.
    return Field("jobs", "required array");
  } else if (key == "warnings") {
    return Warnings(value);
  } else if (key == "bisect" && !value.is_null()) {
    return BisectMember(value);
  }
  return Status::Ok();
}

Status Reader::Experiment(const json& value) {
  if (!value.is_object()) return Field("experiment", "required object");
  ORCH_RETURN_IF_ERROR(RequiredText(value, "name", "experiment.", document_.experiment));
  ORCH_RETURN_IF_ERROR(Text(value, "description", "experiment.", document_.description));
  experiment_ = true;
  return Status::Ok();
}

Status Reader::Axes(const json& value) {
  if (!value.is_array()) return Field("axes", "must be an array");
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& a = value[i];
    std::string at = "axes[" + std::to_string(i) + "].";
    ORCH_RETURN_IF_ERROR(Object(a, at));
    Axis axis;
    ORCH_RETURN_IF_ERROR(RequiredText(a, "name", at, axis.name));
    ORCH_RETURN_IF_ERROR(Text(a, "applies_to", at, axis.applies_to));
    if (a.contains("baseline")) {
      ORCH_ASSIGN_OR_RETURN(axis.baseline, ReadScalar(a["baseline"], at + "baseline"));
    }
    if (auto it = a.find("alternatives"); it != a.end()) {
      if (!it->is_array()) return Field(at + "alternatives", "must be an array");
      for (const json& v : *it) {
        ORCH_ASSIGN_OR_RETURN(Scalar s, ReadScalar(v, at + "alternatives[]"));
        axis.alternatives.push_back(std::move(s));
      }
    }
    document_.axes.push_back(std::move(axis));
  }
  return Status::Ok();
}

Status Reader::Workloads(const json& value) {
  if (!value.is_array()) return Field("workloads", "required array");
  if (value.size() > kMaxWorkloads) {
    return Field("workloads", "more than " + std::to_string(kMaxWorkloads) + " workloads");
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string at = "workloads[" + std::to_string(i) + "].";
    ORCH_ASSIGN_OR_RETURN(Workload w, ReadWorkload(value[i], at));
    // The first of two equal names wins the lookup; the coordinator refuses such plans.
    workload_names_.try_emplace(w.name, static_cast<std::uint32_t>(i));
    document_.workloads.push_back(std::move(w));
  }
  workloads_ = true;
  return Status::Ok();
}

Status Reader::Cell(const json& c) {
  if (document_.cells.size() >= kMaxJobs) {
    return Field("cells", "more than " + std::to_string(kMaxJobs) + " cells");
  }
  std::string at = "cells[" + std::to_string(document_.cells.size()) + "].";
  ORCH_RETURN_IF_ERROR(Object(c, at));
  plan_document::Cell cell;
  ORCH_RETURN_IF_ERROR(RequiredText(c, "label", at, cell.label));
  ORCH_RETURN_IF_ERROR(Text(c, "axis", at, cell.axis));
  if (auto v = c.find("value"); v != c.end() && !v->is_null()) {
    ORCH_ASSIGN_OR_RETURN(cell.value, ReadScalar(*v, at + "value"));
  }
  if (auto changes = c.find("changes"); changes != c.end() && !changes->is_null()) {
    ORCH_ASSIGN_OR_RETURN(cell.changes, ReadCoordinate(*changes, at + "changes"));
  }
  ORCH_RETURN_IF_ERROR(Integer(c, "round", at, 0, INT64_MAX, cell.round));
  ORCH_RETURN_IF_ERROR(Integer(c, "jobs", at, 0, INT64_MAX, cell.jobs));
  if (auto r = c.find("requirements"); r != c.end() && !r->is_null()) {
    ORCH_ASSIGN_OR_RETURN(Requirements needs, ReadRequirements(*r, at + "requirements"));
    cell.requirements = interner_.Add(needs);
  }
  document_.cells.push_back(std::move(cell));
  return Status::Ok();
}

Status Reader::BisectMember(const json& value) {
  ORCH_RETURN_IF_ERROR(Object(value, "bisect."));
  Bisect bisect;
  auto axes = value.find("axes");
  if (axes == value.end() || !axes->is_array()) return Field("bisect.axes", "required array");
  for (const json& axis : *axes) {
    if (!axis.is_string()) return Field("bisect.axes[]", "must be a string, got " + axis.dump());
    bisect.axes.push_back(axis.get<std::string>());
  }
  auto tolerance = value.find("tolerance");
  if (tolerance == value.end() || !tolerance->is_number() || tolerance->get<double>() < 0 ||
      tolerance->get<double>() > 1) {
    return Field("bisect.tolerance", "required number in 0..1");
  }
  bisect.tolerance = tolerance->get<double>();
  ORCH_RETURN_IF_ERROR(Integer(value, "max_rounds", "bisect.", 1, 1000, bisect.max_rounds));
  document_.bisect = std::move(bisect);
  return Status::Ok();
}

Status Reader::Counts(const json& value, const char* at,
                      std::initializer_list<std::pair<const char*, std::int64_t*>> fields) {
  ORCH_RETURN_IF_ERROR(Object(value, at));
  for (auto [key, field] : fields) {
    ORCH_RETURN_IF_ERROR(Integer(value, key, at, 0, INT64_MAX, *field));
  }
  return Status::Ok();
}

Status Reader::Warnings(const json& value) {
  if (!value.is_array()) return Field("warnings", "must be an array");
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& w = value[i];
    std::string at = "warnings[" + std::to_string(i) + "].";
    ORCH_RETURN_IF_ERROR(Object(w, at));
    Diagnostic d;
    for (auto [key, field] : {std::pair{"file", &d.file},
                              {"field", &d.field},
                              {"message", &d.message},
                              {"text", &d.text}}) {
      ORCH_RETURN_IF_ERROR(Text(w, key, at, *field));
    }
    ORCH_RETURN_IF_ERROR(Integer(w, "line", at, 0, INT64_MAX, d.line));
    ORCH_RETURN_IF_ERROR(Integer(w, "column", at, 0, INT64_MAX, d.column));
    document_.warnings.push_back(std::move(d));
  }
  return Status::Ok();
}

Status Reader::Job(const json& j) {
  if (document_.jobs.size() >= kMaxJobs) {
    return Field("jobs", "more than " + std::to_string(kMaxJobs) + " jobs");
  }
  std::string at = "jobs[" + std::to_string(document_.jobs.size()) + "].";
  if (!j.is_object()) return Field(at, "must be an object");
  plan_document::Job job;
  ORCH_RETURN_IF_ERROR(RequiredText(j, "id", at, job.id));
  std::string workload;
  ORCH_RETURN_IF_ERROR(RequiredText(j, "workload", at, workload));
  if (auto r = j.find("requirements"); r != j.end() && !r->is_null()) {
    ORCH_ASSIGN_OR_RETURN(Requirements needs, ReadRequirements(*r, at + "requirements"));
    job.requirements = interner_.Add(needs);
  }
  ORCH_RETURN_IF_ERROR(Text(j, "cell", at, job.cell));
  ORCH_RETURN_IF_ERROR(Text(j, "kind", at, job.kind));
  // repeat is 0 when absent; has_repeat tells that from an explicit 0.
  job.has_repeat = j.contains("repeat") && !j["repeat"].is_null();
  ORCH_RETURN_IF_ERROR(Integer(j, "repeat", at, 0, 1'000'000, job.repeat));
  if (auto c = j.find("coordinate"); c != j.end() && !c->is_null()) {
    ORCH_ASSIGN_OR_RETURN(Coordinate coordinate, ReadCoordinate(*c, at + "coordinate"));
    job.coordinate = interner_.Add(coordinate);
  }
  job_workloads_.push_back(std::move(workload));
  document_.jobs.push_back(std::move(job));
  return Status::Ok();
}

Result<Document> Reader::Finish() {
  if (!schema_) return Field("schema", "expected \"orch.plan/1\"");
  if (!experiment_) return Field("experiment", "required object");
  if (!workloads_) return Field("workloads", "required array");
  if (!jobs_) return Field("jobs", "required array");
  for (std::size_t i = 0; i < document_.jobs.size(); ++i) {
    auto it = workload_names_.find(job_workloads_[i]);
    if (it == workload_names_.end()) {
      // Kept rather than refused: whether it is an error is the consumer's call
      // (plan_json.h).
      document_.jobs[i].unknown_workload = std::move(job_workloads_[i]);
    } else {
      document_.jobs[i].workload = it->second;
    }
  }
  document_.coordinates.shrink_to_fit();
  return std::move(document_);
}

// Cuts a SAX stream into trees: one per top-level member, one per element of the
// top-level "jobs" and "cells" arrays, each handed to the Reader as soon as it is complete. Only one
// such tree is alive at a time.
class Splitter final : public json::json_sax_t {
 public:
  explicit Splitter(Reader& reader) : reader_(reader) {}
  Status status;  // the first error; Ok while the text is good

  bool null() override { return Value(nullptr); }
  bool boolean(bool v) override { return Value(v); }
  bool number_integer(number_integer_t v) override { return Value(v); }
  bool number_unsigned(number_unsigned_t v) override { return Value(v); }
  bool number_float(number_float_t v, const string_t&) override { return Value(v); }
  bool string(string_t& v) override { return Value(std::move(v)); }
  bool binary(binary_t&) override { return Fail(NotAnObject()); }
  bool start_object(std::size_t) override { return Open(json::object()); }
  bool start_array(std::size_t) override { return Open(json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& k) override {
    // At depth 1 a key names a top-level member (a new tree); deeper, the next value
    // inside the current tree.
    (depth_ == 1 ? member_ : key_) = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception&) override {
    return Fail(NotAnObject());
  }

 private:
  static Status NotAnObject() { return InvalidArgument("plan: not a JSON object"); }
  bool Fail(Status s) {
    if (status.ok()) status = std::move(s);
    return false;
  }
  // A tree is complete: a member's value, or one job.
  bool Deliver(const json& value) {
    Status s = streamed_ == Streamed::kJobs    ? reader_.Job(value)
               : streamed_ == Streamed::kCells ? reader_.Cell(value)
                                               : reader_.Member(member_, value);
    return s.ok() || Fail(std::move(s));
  }
  json* Insert(json value) {
    if (stack_.empty()) {
      tree_ = std::move(value);
      return &tree_;
    }
    // stack_ points at the open containers only. Only the innermost one gains
    // children, and none of its children is open then, so when its storage grows
    // it moves nothing stack_ points at.
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }
  bool Value(json value) {
    if (depth_ == 0) return Fail(NotAnObject());
    if (stack_.empty()) return Deliver(value);
    Insert(std::move(value));
    return true;
  }
  bool Open(json container) {
    ++depth_;
    if (depth_ == 1) return container.is_object() || Fail(NotAnObject());
    // The jobs and cells arrays themselves are not built (a plan of a cell per job has
    // as many cells as jobs): each element becomes its own tree, handed over as soon as
    // it closes.
    if (depth_ == 2 && member_ == "jobs" && container.is_array()) {
      streamed_ = Streamed::kJobs;
      reader_.JobsArray();
      return true;
    }
    if (depth_ == 2 && member_ == "cells" && container.is_array()) {
      streamed_ = Streamed::kCells;
      return true;
    }
    stack_.push_back(Insert(std::move(container)));
    return true;
  }
  bool Close() {
    --depth_;
    if (depth_ == 0) return true;
    if (depth_ == 1 && streamed_ != Streamed::kNone) {
      streamed_ = Streamed::kNone;
      return true;
    }
    stack_.pop_back();
    if (!stack_.empty()) return true;
    bool ok = Deliver(tree_);
    // Freed at once, so only one tree is alive at a time.
    tree_ = json();
    return ok;
  }

  Reader& reader_;
  int depth_ = 0;
  enum class Streamed { kNone, kJobs, kCells };
  Streamed streamed_ = Streamed::kNone;  // the array whose elements are trees of their own
  std::string member_;                   // the top-level key whose value is being read
  std::string key_;                      // the key of the next value inside a tree
  std::vector<json*> stack_;
  json tree_;
};

}  // namespace

Result<Document> ReadPlanJson(std::string_view text) {
  Reader reader;
  Splitter splitter(reader);
  bool ok = json::sax_parse(text.begin(), text.end(), &splitter, json::input_format_t::json,
                            // Strict: anything after the top-level object is an error.
                            /*strict=*/true);
  if (!splitter.status.ok()) return splitter.status;
  if (!ok) return InvalidArgument("plan: not a JSON object");
  return reader.Finish();
}

}  // namespace orch::plan_document
