// The experiment spec as parsed and validated: what to run (model, workloads), the
// baseline coordinate, the alternatives per axis, and how often to repeat.
// The TOML form is documented in docs/spec.md; planner/spec_parser.h builds this.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bisect/bisect.h"
#include "plan_document/job_fields.h"
#include "plan_document/plan_document.h"
#include "planner/axis_value.h"

namespace orch::planner {

// A pre-made model file for one value of the `quant` axis (e.g. an FP8 checkpoint).
struct ModelVariant {
  std::string file;
  std::string sha256;  // lowercase hex
  SourcePos pos;
};

struct Model {
  std::string name;    // label for tables; defaults to the file stem or "synth"
  std::string file;    // path as written (file models)
  std::string sha256;  // lowercase hex (file models)
  std::string synth;   // canonical recipe without the "synth:" prefix (generated models)
  std::map<std::string, ModelVariant> variants;  // quant value -> file
  SourcePos pos;

  bool is_synth() const { return !synth.empty(); }
  // What an agent must hold to run the model at `quant`: "sha256:<hex>" of the variant
  // for that quant if one is listed, else of the model file, or "synth:<recipe>".
  std::string RequirementFor(const std::string& quant) const;
};

enum class WorkloadKind { kTeacherForced, kGenerate };
const char* WorkloadKindName(WorkloadKind kind);

// Bytes of full logit rows a run may keep so that every position is exact (64 MiB): a
// 2,048-token vocabulary keeps every row of 8,192 positions, a 152k-token one of 110.
// Limits and defaults of the capture fields: plan_document/job_fields.h.
inline constexpr std::int64_t kDefaultFullRowBudgetBytes =
    plan_document::kFullRowBudgetBytes.fallback;

// Which logit rows a driver captures beyond the per-position digest. A driver keeps
// every full row when positions x vocabulary x 4 bytes <= full_row_budget_bytes (> 0),
// else the rows full_every and full_windows name (docs/spec.md, "Full rows").
struct CapturePolicy {
  int top_logits = static_cast<int>(plan_document::kTopLogits.fallback);  // kept per position
  int full_every = 0;                             // a full row every N positions; 0 = never
  std::vector<std::pair<int, int>> full_windows;  // [begin, end) positions kept whole
  std::int64_t full_row_budget_bytes = kDefaultFullRowBudgetBytes;  // 0 = never by budget
};

struct Workload {
  std::string name;
  WorkloadKind kind = WorkloadKind::kTeacherForced;
  // teacher_forced: exactly one of text (also filled from text_file) or tokens.
  std::string text;
  std::string text_file;  // as written; its content is in `text`
  std::vector<std::int64_t> tokens;
  int positions = 0;
  // teacher_forced, instead of text or tokens: a multiple-choice case's prompt and one
  // choice (docs/driver-protocol.md, "Context and continuation"); positions is then 0.
  std::optional<std::string> context;
  std::string continuation;
  // generate
  std::string prompt;
  std::vector<plan_document::ChatMessage> messages;  // a task case's, instead of prompt
  int max_tokens = 0;
  CapturePolicy capture;
  // Set on the per-case workloads a task workload expands into (docs/tasks.md).
  std::optional<plan_document::TaskRef> task;
  SourcePos pos;
};

// A [[workloads]] table of kind "task" (docs/tasks.md): the plan carries its case file
// whole, for reports to judge outputs with; its cases run as per-case workloads of
// Spec::workloads named NAME.CASE (NAME.CASE.K: choice K of a multiple-choice case).
struct TaskWorkload {
  std::string name;
  std::string cases_file;  // as written
  std::string cases;       // the file's content
  SourcePos pos;
};

// One axis of the experiment: its baseline value and the alternatives to try, in the
// order written. Values are normalised (planner/axes.h).
struct Axis {
  std::string name;
  AxisValue baseline;
  SourcePos baseline_pos;
  std::vector<AxisValue> alternatives;
  std::vector<SourcePos> alternative_pos;  // parallel to `alternatives`
};

// A cell of a bisection: `from` with `set` of the bisection's axes switched to `to`'s
// values (bisect/bisect.h).
struct BisectCell {
  bisect::AxisSet set = 0;
  int round = 1;          // the round that added it (1-based)
  bool repeated = false;  // runs [repeats] baseline times (its own noise is wanted)
};

// [bisect] (docs/bisect.md), which takes the place of [baseline] and [alternatives]: the
// baseline is `from`, and each axis `to` changes has `to`'s value as its one alternative.
struct BisectSpec {
  std::vector<int> axes;  // indices into Spec::axes of the axes to changes, in its file order
  double tolerance = 0.05;
  int max_rounds = 4;
  // The cells after `from`, in plan order: bisect::FirstRound, then each later round's.
  std::vector<BisectCell> cells;
  SourcePos pos;  // the [bisect] table
};

struct Spec {
  std::string file;  // as given to the parser; used in messages
  std::string name;
  std::string description;
  Model model;
  std::vector<Workload> workloads;
  std::vector<TaskWorkload> tasks;
  std::vector<Axis> axes;  // baseline order of appearance
  int baseline_repeats = 2;
  int cell_repeats = 1;
  std::optional<BisectSpec> bisect;

  const Axis* FindAxis(const std::string& name) const;
  // A bisection's axes by name, in walk order (empty without [bisect]).
  std::vector<std::string> BisectAxisNames() const;
};

}  // namespace orch::planner
