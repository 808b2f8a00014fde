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
// tables; a coordinate is kept as indexes into one shared list of axis names and values
// (CoordinateTable). A job costs about 150 bytes plus its id and cell label.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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

// The distinct values of type T, each kept once and named by its index (in order of first
// sight). Copies are deep.
template <typename T>
class Dictionary final {
 public:
  Dictionary() = default;
  Dictionary(const Dictionary& other) { *this = other; }
  Dictionary& operator=(const Dictionary& other) {
    if (this == &other) return *this;
    ids_ = other.ids_;
    by_id_.assign(ids_.size(), nullptr);
    for (const auto& [value, id] : ids_) by_id_[id] = &value;
    return *this;
  }
  Dictionary(Dictionary&&) noexcept = default;  // map nodes stay where they are
  Dictionary& operator=(Dictionary&&) noexcept = default;

  std::uint32_t Add(const T& value) {
    auto [it, added] = ids_.try_emplace(value, static_cast<std::uint32_t>(by_id_.size()));
    if (added) by_id_.push_back(&it->first);
    return it->second;
  }
  const T& operator[](std::uint32_t id) const { return *by_id_[id]; }
  std::size_t size() const { return by_id_.size(); }

 private:
  std::map<T, std::uint32_t> ids_;
  std::vector<const T*> by_id_;
};

// One (axis, value) of a stored coordinate: indexes into its table's dictionaries.
struct CoordinateEntry {
  std::uint32_t axis = 0;
  std::uint32_t value = 0;
  friend auto operator<=>(const CoordinateEntry&, const CoordinateEntry&) = default;
};

class CoordinateTable;

// One coordinate of a CoordinateTable, read in place: iterates as (axis, value) pairs of
// references, in the order the coordinate had (`for (const auto& [axis, value] : view)`).
// Valid while its table is alive and not changed.
class CoordinateView final {
 public:
  class Iterator final {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::pair<const std::string&, const Scalar&>;
    using reference = value_type;
    using pointer = void;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(const CoordinateTable* table, const CoordinateEntry* at) : table_(table), at_(at) {}
    value_type operator*() const;
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++at_;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.at_ == b.at_; }

   private:
    const CoordinateTable* table_ = nullptr;
    const CoordinateEntry* at_ = nullptr;
  };

  CoordinateView(const CoordinateTable* table, const CoordinateEntry* begin,
                 const CoordinateEntry* end)
      : table_(table), begin_(begin), end_(end) {}
  Iterator begin() const { return {table_, begin_}; }
  Iterator end() const { return {table_, end_}; }
  std::size_t size() const { return static_cast<std::size_t>(end_ - begin_); }
  bool empty() const { return begin_ == end_; }
  // The value of `axis`, nullptr when the coordinate has none.
  const Scalar* Find(std::string_view axis) const;
  // A copy as a Coordinate value.
  Coordinate ToCoordinate() const;
  friend bool operator==(const CoordinateView& a, const CoordinateView& b);
  friend bool operator==(const CoordinateView& a, const Coordinate& b);

 private:
  const CoordinateTable* table_;
  const CoordinateEntry* begin_;
  const CoordinateEntry* end_;
};

// The coordinates of a document, as values against one shared list of axis names: each
// distinct axis name and each distinct value is kept once, and a coordinate is a run of
// (axis, value) index pairs, 8 bytes an axis (a plan of a cell per job has as many
// coordinates as jobs). Appending does not look for an equal coordinate; Interner does.
class CoordinateTable final {
 public:
  std::size_t size() const { return starts_.size() - 1; }
  bool empty() const { return size() == 0; }
  CoordinateView operator[](std::size_t index) const {
    return {this, entries_.data() + starts_[index], entries_.data() + starts_[index + 1]};
  }
  // Appends `coordinate`; returns its index.
  std::uint32_t push_back(const Coordinate& coordinate) { return Append(Encode(coordinate)); }
  // Gives back the room that growth left unused (once a document is read).
  void shrink_to_fit();
  const std::string& AxisName(std::uint32_t axis) const { return axes_[axis]; }
  const Scalar& Value(std::uint32_t value) const { return values_[value]; }
  // How many distinct axis names and values the coordinates hold between them.
  std::size_t axis_count() const { return axes_.size(); }
  std::size_t value_count() const { return values_.size(); }

 private:
  friend class Interner;
  // The entries of `coordinate`, adding its axis names and values to the dictionaries.
  std::vector<CoordinateEntry> Encode(const Coordinate& coordinate);
  std::uint32_t Append(const std::vector<CoordinateEntry>& entries);
  std::pair<const CoordinateEntry*, const CoordinateEntry*> Entries(std::uint32_t index) const {
    return {entries_.data() + starts_[index], entries_.data() + starts_[index + 1]};
  }

  Dictionary<std::string> axes_;
  Dictionary<Scalar> values_;
  std::vector<CoordinateEntry> entries_;
  std::vector<std::uint32_t> starts_{0};  // coordinate i is entries_[starts_[i], starts_[i+1])
};

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

// One chat message of a generate workload's `messages` (docs/driver-protocol.md).
struct ChatMessage {
  std::string role;  // system, user or assistant
  std::string content;
  friend bool operator==(const ChatMessage&, const ChatMessage&) = default;
};

// A per-case workload's `task` object: the task workload, the case, and for a
// multiple-choice case the choice its continuation is (docs/tasks.md). Drivers ignore it.
struct TaskRef {
  std::string workload;
  std::string case_id;                 // "case" in JSON
  std::optional<std::int32_t> choice;  // multiple choice only
  friend bool operator==(const TaskRef&, const TaskRef&) = default;
};

struct Workload {
  std::string name;
  std::string kind;    // "teacher_forced", "generate" or "task" from the planner; as written
  std::string digest;  // SHA-256 hex of its canonical form (as written; never trusted)
  // teacher_forced: positions and text or tokens (text_file when read from a file).
  std::optional<std::int64_t> positions;
  std::optional<std::string> text;
  std::optional<std::vector<std::int64_t>> tokens;
  std::string text_file;
  // teacher_forced, instead of text or tokens: a context and the continuation scored
  // after it (a multiple-choice case's choice).
  std::optional<std::string> context;
  std::optional<std::string> continuation;
  // generate: prompt (or chat messages) and max_tokens.
  std::optional<std::string> prompt;
  std::optional<std::vector<ChatMessage>> messages;
  std::optional<std::int64_t> max_tokens;
  std::optional<Capture> capture;
  std::optional<TaskRef> task;  // a task workload's per-case workload
  // task: the case file as the spec names it and its content; no job runs it, its
  // per-case workloads do (docs/tasks.md).
  std::string cases_file;
  std::optional<std::string> cases;
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
  std::string label;            // "baseline", "axis=value", or a bisection's set ("to - kv")
  std::string axis;             // "" for the baseline and for a combination
  std::optional<Scalar> value;  // absent for the baseline and for a combination
  // A combination (a bisection's cell that switches several axes): each switched axis
  // and its value, sorted by axis; empty for every other cell.
  Coordinate changes;
  std::int64_t round = 0;  // a bisection's cell: the round that added it (1-based); else 0
  std::int64_t jobs = 0;
  std::uint32_t requirements = kNone;  // index into Document::requirements
};

// A bisection (docs/bisect.md): the baseline is its `from`; `to` is the cell labelled
// "to"; every other cell switches some of `axes` to to's values.
struct Bisect {
  std::vector<std::string> axes;  // the axes from and to differ in, in walk order
  double tolerance = 0.0;         // the share of KLD(to, from) a set may leave unexplained
  std::int64_t max_rounds = 0;
  friend bool operator==(const Bisect&, const Bisect&) = default;
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
  std::optional<Bisect> bisect;  // a bisection's plan
  // Interned tables the cells and jobs point into.
  CoordinateTable coordinates;
  std::vector<Requirements> requirements;

  // Index of the workload named `name`, kNone when there is none.
  std::uint32_t FindWorkload(const std::string& name) const;
};

// Builds the interned tables of a Document: adds an entry unless an equal one is there
// and returns its index, in O(log n). The lookup sets hold indexes into the document's
// tables, not copies (a plan of a million distinct coordinates would hold them twice).
// Borrows the document for its own lifetime; the document's tables must only grow
// through it meanwhile.
// Keeps the jobs `keep` says yes to, in their order; the cells, the tables the jobs point
// into and everything else stay as they are (a plan bundle of some cells, the jobs of a
// bundle a rig has drivers for).
void KeepJobs(Document& document, const std::function<bool(const Job&)>& keep);

class Interner final {
 public:
  explicit Interner(Document& document);
  std::uint32_t Add(const Coordinate& coordinate);
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
  static bool Less(const Requirements& a, const Requirements& b);
  // Orders stored coordinates by their entries (equal entries: equal coordinates, since
  // the table keeps every axis name and value once); also compares entries with an index.
  struct ByEntries {
    using is_transparent = void;
    const CoordinateTable* table;
    bool operator()(std::uint32_t a, std::uint32_t b) const;
    bool operator()(const std::vector<CoordinateEntry>& a, std::uint32_t b) const;
    bool operator()(std::uint32_t a, const std::vector<CoordinateEntry>& b) const;
  };

  Document& document_;
  std::set<std::uint32_t, ByEntries> coordinates_;
  std::set<std::uint32_t, ByEntry<Requirements>> requirements_;
};

}  // namespace orch::plan_document
