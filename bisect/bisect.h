// Bisection between two coordinates that disagree (docs/bisect.md): which differing axis,
// or smallest set of them, accounts for the divergence between `from` and `to`.
//
// Pure: sets of axes in, sets of axes and verdicts out. A cell of a bisection is `from`
// with a set of the differing axes switched to `to`'s values; the planner turns sets into
// cells (planner/plan.h), the report measures every cell against both ends
// (report/bisect_report.h), and `orch bisect` asks Attribute for the next round's cells
// until it has a verdict.
//
// A set S explains the divergence when it is sufficient (from + S matches to) and
// necessary (to - S matches from), each within the threshold: the larger of the
// tolerance's share of KLD(to, from) and the repeat noise. The search measures first
// every axis alone from `from`, every axis left out of `to` and the walk from `from` to
// `to`; then sets of 2, 3, ... axes among the axes that moved a distribution somewhere.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace orch::bisect {

// At most this many differing axes (the sets of a bisection are the subsets of them).
inline constexpr int kMaxAxes = 12;

// Bit i set: the i-th differing axis takes `to`'s value; clear: `from`'s.
using AxisSet = std::uint32_t;

// Every one of `axes` differing axes switched: the set of `to` itself.
AxisSet Everything(int axes);
int SetSize(AxisSet set);
bool HasAxis(AxisSet set, int axis);

// How a set reads: "from", "to", "from + kv", "from + kv + attention", "to - kv" (the
// form with fewer names; from's at a tie).
std::string SetLabel(const std::vector<std::string>& axes, AxisSet set);

// The first round, in this order without repeating a set: from, to, every axis alone from
// `from`, every axis left out of `to`, the walk's prefixes (from + axis 0 + axis 1, ...).
std::vector<AxisSet> FirstRound(int axes);

// The walk from `from` to `to` one axis at a time in axis order: from, from + axis 0,
// from + axis 0 + axis 1, ..., to.
std::vector<AxisSet> Walk(int axes);

// How far one cell is from one end, over the workloads both ran.
struct Distance {
  double kld = 0.0;                         // mean KLD per compared position (nats)
  std::uint64_t positions = 0;              // positions with a KLD
  std::uint64_t exact_positions = 0;        // of which from two full rows (else a top-k bound)
  std::uint64_t flips = 0;                  // compared positions whose top-1 differs
  bool identical = false;                   // bit-identical streams on every workload
  std::optional<std::uint64_t> first_flip;  // the earliest flip over the workloads
  int changed_outcomes = -1;  // task cases whose pass/fail differs; -1: no task workload
};

struct CellMeasure {
  std::optional<Distance> from;  // against `from`
  std::optional<Distance> to;    // against `to`
  // The largest KLD between this cell's own repeats; absent with fewer than two.
  std::optional<double> noise;
};

using Measures = std::map<AxisSet, CellMeasure>;

struct Options {
  double tolerance = 0.05;  // the share of KLD(to, from) a set may leave unexplained
  int max_cells = 64;       // cells one round may add
};

enum class VerdictKind {
  kUnmeasured,  // from or to (or the distance between them) is not measured yet
  kAgree,       // from and to agree within their repeat noise: nothing to explain
  kExplained,   // `explaining` is sufficient and necessary within the threshold
  kSearching,   // `next` or `repeat` name what to measure next
  kExhausted,   // every candidate set was measured and none explains
};
const char* VerdictKindName(VerdictKind kind);

// One differing axis: what it does alone and what its absence does to `to`.
struct AxisEffect {
  std::string axis;
  std::optional<double> alone;    // KLD(from + axis, from)
  std::optional<double> removed;  // KLD(to - axis, to)
  bool moves_alone = false;       // alone above the threshold
  bool moves_in_to = false;       // removed above the threshold
};

struct WalkStep {
  AxisSet set = 0;
  std::optional<double> from_kld;  // KLD(step, from)
  std::optional<double> to_kld;    // KLD(step, to)
};

// An axis whose effect depends on others, said in words ("attention moves the
// distribution only together with other axes of to: alone 0, left out of to 0.41").
struct Interaction {
  AxisSet axes = 0;
  std::string text;
};

struct Verdict {
  VerdictKind kind = VerdictKind::kUnmeasured;
  double total = 0.0;                         // KLD(to, from)
  double noise = 0.0;                         // the largest repeat noise of from and to
  bool noise_known = false;                   // both ends ran at least two repeats
  double threshold = 0.0;                     // max(tolerance x total, noise)
  AxisSet explaining = 0;                     // kExplained: the smallest explaining set found
  std::optional<double> sufficient_residual;  // KLD(from + explaining, to)
  std::optional<double> necessary_residual;   // KLD(to - explaining, from)
  std::vector<AxisEffect> axes;               // in axis order
  std::vector<WalkStep> walk;
  std::vector<Interaction> interactions;
  std::vector<AxisSet> next;    // kSearching: cells to add, in order
  std::vector<AxisSet> repeat;  // kSearching: cells to run a second repeat of
};

// The verdict on what is measured so far. `axes` names the differing axes (at most
// kMaxAxes).
Verdict Attribute(const std::vector<std::string>& axes, const Measures& measures,
                  const Options& options);

}  // namespace orch::bisect
