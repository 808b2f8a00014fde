// [[workloads]]: teacher_forced, generate and task workloads with their capture policies.
#include <set>

#include "plan_document/job_fields.h"
#include "planner/spec_sections.h"
#include "task/case_file.h"

namespace orch::planner {
namespace {

constexpr std::int64_t kMaxPositions = 1 << 24;

void ParseTokens(const toml::array& array, const std::string& path, TomlFields& f, Workload& w) {
  for (std::size_t i = 0; i < array.size(); ++i) {
    const auto* id = array[i].as_integer();
    if (id == nullptr || id->get() < 0) {
      f.diagnostics().Error(PosOf(array[i]), Indexed(path, i),
                            "expected a token id (integer >= 0), got " + DescribeNode(array[i]));
      continue;
    }
    w.tokens.push_back(id->get());
  }
}

void ParseWindows(const toml::array& array, const std::string& path, int limit, TomlFields& f,
                  CapturePolicy& capture) {
  for (std::size_t i = 0; i < array.size(); ++i) {
    const auto* pair = array[i].as_array();
    const toml::value<std::int64_t>* begin =
        pair && pair->size() == 2 ? (*pair)[0].as_integer() : nullptr;
    const toml::value<std::int64_t>* end =
        pair && pair->size() == 2 ? (*pair)[1].as_integer() : nullptr;
    bool ok = begin && end && begin->get() >= 0 && begin->get() < end->get() &&
              (limit <= 0 || end->get() <= limit);
    if (!ok) {
      f.diagnostics().Error(
          PosOf(array[i]), Indexed(path, i),
          "expected [BEGIN, END] with 0 <= BEGIN < END <= " + std::to_string(limit) +
              " (positions), got " + DescribeNode(array[i]));
      continue;
    }
    capture.full_windows.emplace_back(static_cast<int>(begin->get()), static_cast<int>(end->get()));
  }
}

// A capture field within the limits drivers read it with (plan_document/job_fields.h).
std::int64_t CaptureInt(const toml::table& t, const std::string& path, std::string_view key,
                        const plan_document::IntegerField& field, TomlFields& f) {
  return f.Int(t, path, key, false, field.min, field.max).value_or(field.fallback);
}

void ParseCapture(const toml::table& w, const std::string& path, int limit, TomlFields& f,
                  CapturePolicy& capture) {
  const toml::table* t = f.Table(w, path, "capture", false);
  if (t == nullptr) return;
  std::string cpath = JoinPath(path, "capture");
  toml::table keys = *t;  // the former name gets its own error, naming the new one
  keys.erase(plan_document::kFormerTopLogitsKey);
  f.CheckKeys(keys, cpath, {"top_logits", "full_every", "full_windows", "full_row_budget_bytes"});
  if (const toml::node* former = t->get(plan_document::kFormerTopLogitsKey)) {
    f.diagnostics().Error(PosOf(*former), JoinPath(cpath, plan_document::kFormerTopLogitsKey),
                          "unknown field \"top_k\"; did you mean \"top_logits\"? (renamed: the "
                          "logits kept per position, not the sampler's top_k)");
  }
  capture.top_logits =
      static_cast<int>(CaptureInt(*t, cpath, "top_logits", plan_document::kTopLogits, f));
  capture.full_every =
      static_cast<int>(CaptureInt(*t, cpath, "full_every", plan_document::kFullEvery, f));
  capture.full_row_budget_bytes =
      CaptureInt(*t, cpath, "full_row_budget_bytes", plan_document::kFullRowBudgetBytes, f);
  if (const toml::array* windows = f.Array(*t, cpath, "full_windows")) {
    ParseWindows(*windows, JoinPath(cpath, "full_windows"), limit, f, capture);
  }
}

// The planner does not tokenize, but no tokenizer makes more tokens of a text than one
// per byte plus a BOS and a leading space. A text below that bound for `positions`
// cannot fill them: an error here, not a failed run on every agent.
void CheckTextCanFillPositions(const toml::table& t, const std::string& path,
                               const char* text_field, TomlFields& f, const Workload& w) {
  if (text_field == nullptr || w.text.empty() || w.positions <= 0) return;
  if (w.text.size() + 2 >= static_cast<std::size_t>(w.positions)) return;
  f.diagnostics().Error(PosOf(*t.get("positions")), JoinPath(path, "positions"),
                        "positions = " + std::to_string(w.positions) + " cannot be filled: " +
                            JoinPath(path, text_field) + " is " + std::to_string(w.text.size()) +
                            " bytes, at most " + std::to_string(w.text.size() + 2) +
                            " tokens for any tokenizer; give a longer text or fewer positions");
}

void ParseTeacherForced(const toml::table& t, const std::string& path, SourceReader& reader,
                        TomlFields& f, Workload& w) {
  f.CheckKeys(t, path, {"name", "kind", "text", "text_file", "tokens", "positions", "capture"});
  int sources = (t.get("text") ? 1 : 0) + (t.get("text_file") ? 1 : 0) + (t.get("tokens") ? 1 : 0);
  if (sources != 1) {
    f.diagnostics().Error(w.pos, path,
                          "a teacher_forced workload needs exactly one of text, text_file or "
                          "tokens, got " +
                              std::to_string(sources));
  }
  w.text = f.String(t, path, "text", false).value_or("");
  const char* text_field = t.get("text") != nullptr ? "text" : nullptr;
  if (std::optional<std::string> file = f.String(t, path, "text_file", false)) {
    w.text_file = *file;
    Result<std::string> content = reader.Read(*file);
    if (content.ok()) {
      w.text = *content;
      text_field = "text_file";
    } else {
      f.diagnostics().Error(PosOf(*t.get("text_file")), JoinPath(path, "text_file"),
                            "cannot read " + Quote(*file) + ": " + content.status().message());
    }
  }
  if (sources == 1 && text_field != nullptr && w.text.empty()) {
    f.diagnostics().Error(PosOf(*t.get(text_field)), JoinPath(path, text_field),
                          "the text is empty: there is nothing to teacher-force; give the "
                          "workload a text of at least `positions` tokens");
  }
  if (const toml::array* tokens = f.Array(t, path, "tokens")) {
    ParseTokens(*tokens, JoinPath(path, "tokens"), f, w);
  }
  w.positions = static_cast<int>(f.Int(t, path, "positions", true, 1, kMaxPositions).value_or(0));
  if (!w.tokens.empty() && w.positions > static_cast<int>(w.tokens.size())) {
    f.diagnostics().Error(PosOf(*t.get("positions")), JoinPath(path, "positions"),
                          "positions = " + std::to_string(w.positions) + " exceeds the " +
                              std::to_string(w.tokens.size()) + " tokens given");
  }
  CheckTextCanFillPositions(t, path, text_field, f, w);
  ParseCapture(t, path, w.positions, f, w.capture);
}

void ParseGenerate(const toml::table& t, const std::string& path, TomlFields& f, Workload& w) {
  f.CheckKeys(t, path, {"name", "kind", "prompt", "max_tokens", "capture"});
  w.prompt = f.String(t, path, "prompt", true).value_or("");
  w.max_tokens = static_cast<int>(f.Int(t, path, "max_tokens", true, 1, kMaxPositions).value_or(0));
  ParseCapture(t, path, w.max_tokens, f, w.capture);
}

// A per-case workload of task `task` (docs/tasks.md): the case's prompt or messages as a
// generate workload, or choice `choice` of a multiple-choice case as a teacher_forced one
// scoring the choice after the prompt.
Workload CaseWorkload(const TaskWorkload& task, const task::TaskCase& c, int choice,
                      const CapturePolicy& capture, int max_tokens) {
  Workload w;
  w.pos = task.pos;
  w.capture = capture;
  w.task = plan_document::TaskRef{task.name, c.id, std::nullopt};
  w.name = task.name + "." + c.id;
  if (choice >= 0) {
    w.name += "." + std::to_string(choice);
    w.task->choice = choice;
    w.kind = WorkloadKind::kTeacherForced;
    w.context = c.prompt.value_or("");
    w.continuation = c.choices[static_cast<std::size_t>(choice)];
    return w;
  }
  w.kind = WorkloadKind::kGenerate;
  w.prompt = c.prompt.value_or("");
  for (const task::ChatMessage& m : c.messages) w.messages.push_back({m.role, m.content});
  w.max_tokens = c.max_tokens.value_or(max_tokens);
  return w;
}

// kind = "task": reads and checks the case file, then one workload per case (per choice).
void ParseTask(const toml::table& t, const std::string& path, const std::string& name,
               SourceReader& reader, TomlFields& f, std::vector<TaskWorkload>& tasks,
               std::vector<Workload>& out) {
  f.CheckKeys(t, path, {"name", "kind", "cases_file", "max_tokens", "capture"});
  TaskWorkload task{name, f.String(t, path, "cases_file", true).value_or(""), "", PosOf(t)};
  const int max_tokens =
      static_cast<int>(f.Int(t, path, "max_tokens", false, 1, kMaxPositions).value_or(0));
  CapturePolicy capture;
  ParseCapture(t, path, 0, f, capture);
  if (task.cases_file.empty()) return;
  const SourcePos at = PosOf(*t.get("cases_file"));
  const std::string field = JoinPath(path, "cases_file");
  Result<std::string> content = reader.Read(task.cases_file);
  if (!content.ok()) {
    f.diagnostics().Error(
        at, field, "cannot read " + Quote(task.cases_file) + ": " + content.status().message());
    return;
  }
  Result<std::vector<task::TaskCase>> cases = task::ParseCaseFile(*content, task.cases_file);
  if (!cases.ok()) {
    f.diagnostics().Error(at, field, cases.status().message());
    return;
  }
  task.cases = std::move(*content);
  for (const task::TaskCase& c : *cases) {
    const std::string where = task.cases_file + ":" + std::to_string(c.line) + ": case " + c.id;
    if (c.multiple_choice() && !c.prompt) {
      f.diagnostics().Error(at, field,
                            where +
                                ": a multiple-choice case needs a prompt: its choices are "
                                "scored as continuations of that text, and chat messages "
                                "are rendered only for generation");
      continue;
    }
    if (!c.multiple_choice() && !c.max_tokens && max_tokens == 0) {
      f.diagnostics().Error(at, field,
                            where +
                                ": no max_tokens, and the workload gives none; give the "
                                "case or " +
                                JoinPath(path, "max_tokens") + " one");
      continue;
    }
    const int choices = c.multiple_choice() ? static_cast<int>(c.choices.size()) : 1;
    for (int k = 0; k < choices; ++k) {
      Workload w = CaseWorkload(task, c, c.multiple_choice() ? k : -1, capture, max_tokens);
      if (!IsName(w.name)) {
        f.diagnostics().Error(at, field,
                              where + ": the workload name " + Quote(w.name) +
                                  " it runs as is longer than 128 characters; shorten the "
                                  "workload name or the case id");
        break;
      }
      out.push_back(std::move(w));
    }
  }
  tasks.push_back(std::move(task));
}

std::optional<Workload> ParseWorkload(const toml::table& t, const std::string& path,
                                      SourceReader& reader, TomlFields& f) {
  Workload w;
  w.pos = PosOf(t);
  w.name = f.String(t, path, "name", true).value_or("");
  if (!w.name.empty() && !IsName(w.name)) {
    f.diagnostics().Error(
        PosOf(*t.get("name")), JoinPath(path, "name"),
        "invalid name " + Quote(w.name) + "; expected 1-128 letters, digits, '-', '_' or '.'");
  }
  std::optional<std::string> kind = f.String(t, path, "kind", true);
  if (!kind) return std::nullopt;
  if (*kind == "teacher_forced") {
    w.kind = WorkloadKind::kTeacherForced;
    ParseTeacherForced(t, path, reader, f, w);
  } else if (*kind == "generate") {
    w.kind = WorkloadKind::kGenerate;
    ParseGenerate(t, path, f, w);
  } else {
    f.diagnostics().Error(PosOf(*t.get("kind")), JoinPath(path, "kind"),
                          "unknown workload kind " + Quote(*kind) +
                              "; expected \"teacher_forced\", \"generate\" or \"task\"");
    return std::nullopt;
  }
  return w;
}

}  // namespace

std::vector<Workload> ParseWorkloads(const toml::table& root, SourceReader& reader, TomlFields& f,
                                     std::vector<TaskWorkload>& tasks) {
  std::vector<Workload> out;
  const toml::node* node = root.get("workloads");
  const toml::array* array = node ? node->as_array() : nullptr;
  if (array == nullptr || array->empty()) {
    f.diagnostics().Error(node ? PosOf(*node) : SourcePos{}, "workloads",
                          "expected at least one [[workloads]] table");
    return out;
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < array->size(); ++i) {
    std::string path = Indexed("workloads", i);
    const toml::table* t = (*array)[i].as_table();
    if (t == nullptr) {
      f.diagnostics().Error(PosOf((*array)[i]), path,
                            "expected a table, got " + DescribeNode((*array)[i]));
      continue;
    }
    const toml::node* kind = t->get("kind");
    if (kind != nullptr && kind->value<std::string>() == std::optional<std::string>("task")) {
      const std::string name = f.String(*t, path, "name", true).value_or("");
      if (!name.empty() && !IsName(name)) {
        f.diagnostics().Error(
            PosOf(*t->get("name")), JoinPath(path, "name"),
            "invalid name " + Quote(name) + "; expected 1-128 letters, digits, '-', '_' or '.'");
      }
      const std::size_t first = out.size();
      ParseTask(*t, path, name, reader, f, tasks, out);
      // The task's own name and those of its per-case workloads share one namespace
      // with every other workload: the report and the plan name them all.
      if (!name.empty() && !names.insert(name).second) {
        f.diagnostics().Error(PosOf(*t), JoinPath(path, "name"),
                              "duplicate workload name " + Quote(name));
      }
      for (std::size_t k = first; k < out.size(); ++k) {
        if (!names.insert(out[k].name).second) {
          f.diagnostics().Error(
              PosOf(*t), JoinPath(path, "cases_file"),
              "case workload " + Quote(out[k].name) + " has the name of another workload");
        }
      }
      continue;
    }
    std::optional<Workload> w = ParseWorkload(*t, path, reader, f);
    if (!w) continue;
    if (!w->name.empty() && !names.insert(w->name).second) {
      f.diagnostics().Error(w->pos, JoinPath(path, "name"),
                            "duplicate workload name " + Quote(w->name));
    }
    out.push_back(std::move(*w));
  }
  return out;
}

}  // namespace orch::planner
