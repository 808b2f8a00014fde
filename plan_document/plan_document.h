// The plan document "orch.plan/1" (docs/plan-json.md) as one typed value.
//
// Every reader and writer of plan JSON goes through this type: the planner builds one
// from its expansion and writes it (`orch plan --json`, `orch submit`), the coordinator
// reads the submitted text once and keeps the typed value to hand out jobs, and reports
// read it to label cells. It sits below planner/, report/, coordinator/ and agent/, so
// none of them parses plan JSON of its own.
//
// Fields are only ever added within orch.plan/1, so the reader ignores fields it does not
// know, and most fields are optional here: each consumer says which it needs (the
// coordinator needs requirements, a report needs cells). The reader checks the type of
// every field it reads. Jobs are many (a million at most) and their coordinates and
// requirements repeat, so both are interned: a job holds indexes into the document's
// tables. A job costs about 150 bytes plus its id and cell label.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace orch::plan_document {

inline constexpr const char* kPlanSchema = "orch.plan/1";
// The most jobs and workloads one document may have; the reader refuses more. As many
// workloads as jobs: a plan the planner makes has a job for every workload (a spec of
// 60,000 workloads is a valid plan), and the document's size is bounded where it is
// read (a Submit's plan: coordinator::kMaxPlanBytes).
inline constexpr std::size_t kMaxJobs = 1'000'000;
inline constexpr std::size_t kMaxWorkloads = kMaxJobs;
// An index that points nowhere: the field was absent.
inline constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

// An axis value as plan JSON carries it: a string, an integer, a number or a boolean.
using Scalar = std::variant<std::string, std::int64_t, double, bool>;
// The value as text: strings bare, everything else as its JSON text ("8", "true", "0.5").
std::string ScalarText(const Scalar& value);

// Axis -> value, sorted by axis (JSON objects of plan documents have sorted keys).
using Coordinate = std::vector<std::pair<std::string, Scalar>>;

struct Requirements {
  std::string engine;     // "" when absent
  std::string hardware;   // "" when absent
  std::int32_t gpus = 0;  // in [0, 4096]; 0 when absent
  std::string model;      // "sha256:HEX" or "synth:RECIPE"; "" when absent
  friend bool operator==(const Requirements&, const Requirements&) = default;
};

struct ModelFile {
  std::string file;
  std::string sha256;
  friend bool operator==(const ModelFile&, const ModelFile&) = default;
};

struct Model {
  std::string name;
  std::string synth;                          // the recipe of a generated model, or ""
  std::string file;                           // a model file, or ""
  std::string sha256;                         // of that file, or ""
  std::map<std::string, ModelFile> variants;  // quant -> file
  // The object as read, compact with sorted keys, unknown fields included: what the
  // coordinator forwards to drivers. Empty for a document built in memory.
  std::string json;
  friend bool operator==(const Model&, const Model&) = default;
};

struct Capture {
  std::optional<std::int32_t> top_logits;  // read from "top_k" in plans written before
  std::optional<std::int32_t> full_every;
  std::optional<std::vector<std::pair<std::int32_t, std::int32_t>>> full_windows;  // [b, e)
  // Bytes of full rows a run may keep to make every position exact; absent in plans
  // written before the key existed (the planner then reads its default).
  std::optional<std::int64_t> full_row_budget_bytes;
  friend bool operator==(const Capture&, const Capture&) = default;
};

struct Workload {
  std::string name;
  std::string kind;    // "teacher_forced" or "generate" from the planner; as written
  std::string digest;  // SHA-256 hex of its canonical form (as written; never trusted)
  // teacher_forced: positions and text or tokens (text_file when read from a file).
  std::optional<std::int64_t> positions;
  std::optional<std::string> text;
  std::optional<std::vector<std::int64_t>> tokens;
  std::string text_file;
  // generate: prompt and max_tokens.
  std::optional<std::string> prompt;
  std::optional<std::int64_t> max_tokens;
  std::optional<Capture> capture;
  std::string json;  // as Model::json
  // Most positions a job of it can have (positions, or max_tokens); 0 when not said.
  std::uint64_t MostPositions() const;
  friend bool operator==(const Workload&, const Workload&) = default;
};

struct Axis {
  std::string name;
  Scalar baseline;
  std::vector<Scalar> alternatives;
  std::string applies_to;  // "all" or "generate"
};

struct Cell {
  std::string label;            // "baseline" or "axis=value"
  std::string axis;             // "" for the baseline
  std::optional<Scalar> value;  // absent for the baseline
  std::int64_t jobs = 0;
  std::uint32_t requirements = kNone;  // index into Document::requirements
};

struct Job {
  std::string id;
  std::string cell;                // a cell label; "" when absent
  std::string kind;                // "" when absent
  std::uint32_t workload = kNone;  // index into Document::workloads; kNone: unknown
  std::string unknown_workload;    // the name it gives when no workload has it
  std::uint32_t repeat = 0;        // 0-based; 0 when absent
  bool has_repeat = false;
  std::uint32_t coordinate = kNone;    // index into Document::coordinates
  std::uint32_t requirements = kNone;  // index into Document::requirements
};

struct Diagnostic {
  std::string file;
  std::int64_t line = 0;
  std::int64_t column = 0;
  std::string field;
  std::string message;
  std::string text;
};

struct Document {
  std::string spec;  // the spec path as given to `orch plan`
  std::string experiment;
  std::string description;
  std::optional<Model> model;
  std::optional<Coordinate> baseline;
  std::vector<Axis> axes;
  std::vector<Workload> workloads;
  std::int64_t baseline_repeats = 0;
  std::int64_t cell_repeats = 0;
  std::int64_t axes_varied = 0;
  std::vector<Cell> cells;
  std::vector<Job> jobs;
  std::vector<Diagnostic> warnings;
  // Interned tables the cells and jobs point into.
  std::vector<Coordinate> coordinates;
  std::vector<Requirements> requirements;

  // Index of the workload named `name`, kNone when there is none.
  std::uint32_t FindWorkload(const std::string& name) const;
};

// Builds the interned tables of a Document: adds an entry unless an equal one is there
// and returns its index, in O(log n). The lookup sets hold indexes into the document's
// tables, not copies (a plan of a million distinct coordinates would hold them twice).
// Borrows the document for its own lifetime; the document's tables must only grow
// through it meanwhile.
class Interner final {
 public:
  explicit Interner(Document& document);
  std::uint32_t Add(Coordinate coordinate);
  std::uint32_t Add(const Requirements& requirements);

 private:
  // Orders indexes by the table entries they point at; also compares an entry with an
  // index, so that a candidate is looked up before it is stored.
  template <typename T>
  struct ByEntry {
    using is_transparent = void;
    const std::vector<T>* table;
    bool operator()(std::uint32_t a, std::uint32_t b) const {
      return Less((*table)[a], (*table)[b]);
    }
    bool operator()(const T& a, std::uint32_t b) const { return Less(a, (*table)[b]); }
    bool operator()(std::uint32_t a, const T& b) const { return Less((*table)[a], b); }
  };
  static bool Less(const Coordinate& a, const Coordinate& b) { return a < b; }
  static bool Less(const Requirements& a, const Requirements& b);

  Document& document_;
  std::set<std::uint32_t, ByEntry<Coordinate>> coordinates_;
  std::set<std::uint32_t, ByEntry<Requirements>> requirements_;
};

}  // namespace orch::plan_document
