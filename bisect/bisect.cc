#include "bisect/bisect.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "base/check.h"

namespace orch::bisect {
namespace {

std::string Figure(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string Figure(const std::optional<double>& value) {
  return value ? Figure(*value) : "not measured";
}

const CellMeasure* Find(const Measures& measures, AxisSet set) {
  auto it = measures.find(set);
  return it == measures.end() ? nullptr : &it->second;
}

std::optional<double> FromKld(const Measures& measures, AxisSet set) {
  if (set == 0) return 0.0;
  const CellMeasure* m = Find(measures, set);
  return m != nullptr && m->from ? std::optional(m->from->kld) : std::nullopt;
}

std::optional<double> ToKld(const Measures& measures, AxisSet set, AxisSet all) {
  if (set == all) return 0.0;
  const CellMeasure* m = Find(measures, set);
  return m != nullptr && m->to ? std::optional(m->to->kld) : std::nullopt;
}

// The threshold a comparison with `set`'s cell is held to: its own noise counts too.
double ThresholdFor(const Measures& measures, AxisSet set, double threshold) {
  const CellMeasure* m = Find(measures, set);
  return m != nullptr && m->noise ? std::max(threshold, *m->noise) : threshold;
}

// Every subset of `pool` with `size` members, in increasing order of their bits.
std::vector<AxisSet> Subsets(AxisSet pool, int size) {
  std::vector<AxisSet> out;
  for (AxisSet s = pool;; s = (s - 1) & pool) {
    if (SetSize(s) == size) out.push_back(s);
    if (s == 0) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct SetTest {
  bool measured = false;  // both comparisons exist
  bool explains = false;
  double residual = 0.0;  // the larger of the two
  std::vector<AxisSet> missing;
};

SetTest Test(const Measures& measures, AxisSet set, AxisSet all, double threshold) {
  SetTest t;
  AxisSet rest = all & ~set;
  std::optional<double> sufficient = ToKld(measures, set, all);
  std::optional<double> necessary = FromKld(measures, rest);
  if (!sufficient) t.missing.push_back(set);
  if (!necessary) t.missing.push_back(rest);
  if (!t.missing.empty()) return t;
  t.measured = true;
  t.residual = std::max(*sufficient, *necessary);
  t.explains = *sufficient <= ThresholdFor(measures, set, threshold) &&
               *necessary <= ThresholdFor(measures, rest, threshold);
  return t;
}

// "kv", "kv and attention", "quant, kv and attention".
std::string Names(const std::vector<std::string>& axes, AxisSet set) {
  std::vector<std::string> names;
  for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
    if (HasAxis(set, i)) names.push_back(axes[i]);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

void Describe(const std::vector<std::string>& axes, const Measures& measures, Verdict& v) {
  AxisSet all = Everything(static_cast<int>(axes.size()));
  for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
    AxisEffect e;
    e.axis = axes[i];
    AxisSet one = AxisSet{1} << i;
    e.alone = FromKld(measures, one);
    e.removed = ToKld(measures, all & ~one, all);
    e.moves_alone = e.alone && *e.alone > ThresholdFor(measures, one, v.threshold);
    e.moves_in_to = e.removed && *e.removed > ThresholdFor(measures, all & ~one, v.threshold);
    v.axes.push_back(e);
  }
  for (AxisSet step : Walk(static_cast<int>(axes.size()))) {
    v.walk.push_back({step, FromKld(measures, step), ToKld(measures, step, all)});
  }
}

void NameInteractions(const std::vector<std::string>& axes, const Measures& measures, Verdict& v) {
  if (axes.size() < 2) return;
  for (int i = 0; i < static_cast<int>(v.axes.size()); ++i) {
    const AxisEffect& e = v.axes[i];
    if (!e.alone || !e.removed) continue;
    std::string figures = ": alone " + Figure(*e.alone) + ", left out of to " + Figure(*e.removed);
    if (!e.moves_alone && e.moves_in_to) {
      v.interactions.push_back(
          {AxisSet{1} << i,
           e.axis + " moves the distribution only together with other axes of to" + figures});
    } else if (e.moves_alone && !e.moves_in_to) {
      v.interactions.push_back(
          {AxisSet{1} << i,
           e.axis + " moves from but not to: another axis of to hides its effect" + figures});
    }
  }
  if (v.kind == VerdictKind::kExplained && SetSize(v.explaining) >= 2) {
    std::string alone;
    for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
      if (!HasAxis(v.explaining, i)) continue;
      alone += (alone.empty() ? "" : ", ") + axes[i] + " " + Figure(v.axes[i].alone);
    }
    v.interactions.push_back({v.explaining, Names(axes, v.explaining) + " act together: alone " +
                                                alone + "; together " +
                                                Figure(FromKld(measures, v.explaining))});
  }
}

}  // namespace

AxisSet Everything(int axes) {
  ORCH_CHECK(axes >= 0 && axes <= kMaxAxes);
  return axes == 0 ? 0 : (AxisSet{1} << axes) - 1;
}

int SetSize(AxisSet set) { return std::popcount(set); }

bool HasAxis(AxisSet set, int axis) { return ((set >> axis) & 1) != 0; }

std::string SetLabel(const std::vector<std::string>& axes, AxisSet set) {
  AxisSet all = Everything(static_cast<int>(axes.size()));
  if (set == 0) return "from";
  if (set == all) return "to";
  bool from_side = SetSize(set) <= SetSize(all & ~set);
  std::string out = from_side ? "from" : "to";
  AxisSet named = from_side ? set : all & ~set;
  for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
    if (HasAxis(named, i)) out += (from_side ? " + " : " - ") + axes[i];
  }
  return out;
}

std::vector<AxisSet> Walk(int axes) {
  std::vector<AxisSet> out;
  for (int k = 0; k <= axes; ++k) out.push_back(Everything(k));
  return out;
}

std::vector<AxisSet> FirstRound(int axes) {
  AxisSet all = Everything(axes);
  std::vector<AxisSet> out = {0, all};
  auto add = [&](AxisSet s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (int i = 0; i < axes; ++i) add(AxisSet{1} << i);
  for (int i = 0; i < axes; ++i) add(all & ~(AxisSet{1} << i));
  for (AxisSet step : Walk(axes)) add(step);
  return out;
}

const char* VerdictKindName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kUnmeasured:
      return "unmeasured";
    case VerdictKind::kAgree:
      return "agree";
    case VerdictKind::kExplained:
      return "explained";
    case VerdictKind::kSearching:
      return "searching";
    case VerdictKind::kExhausted:
      return "exhausted";
  }
  return "?";
}

namespace {

// The axes that moved a distribution somewhere; all of them when none did alone (their
// effect then needs several together).
AxisSet Candidates(const Verdict& v, int n) {
  AxisSet candidates = 0;
  for (int i = 0; i < n; ++i) {
    if (v.axes[i].moves_alone || v.axes[i].moves_in_to) candidates |= AxisSet{1} << i;
  }
  return candidates == 0 ? Everything(n) : candidates;
}

// The sets of one size tested: the one that explains with the least residual, if any,
// and the cells still to measure to decide the others (first seen first).
struct SizeTested {
  std::optional<SetTest> best;
  AxisSet best_set = 0;
  std::vector<AxisSet> missing;
};

SizeTested TestSets(const Measures& measures, const std::vector<AxisSet>& sets, AxisSet all,
                    double threshold) {
  SizeTested tested;
  for (AxisSet set : sets) {
    SetTest t = Test(measures, set, all, threshold);
    for (AxisSet m : t.missing) {
      if (std::find(tested.missing.begin(), tested.missing.end(), m) == tested.missing.end()) {
        tested.missing.push_back(m);
      }
    }
    if (t.explains && (!tested.best || t.residual < tested.best->residual)) {
      tested.best = t;
      tested.best_set = set;
    }
  }
  return tested;
}

// `v.explaining` explains the divergence: its residuals; still searching while the
// deciding cells' own noise is unknown and the ends do not rerun bit for bit.
void Explained(const Measures& measures, AxisSet all, Verdict& v) {
  v.kind = VerdictKind::kExplained;
  v.sufficient_residual = ToKld(measures, v.explaining, all);
  v.necessary_residual = FromKld(measures, all & ~v.explaining);
  if (v.noise <= 0.0) return;
  for (AxisSet cell : {v.explaining, all & ~v.explaining}) {
    const CellMeasure* m = Find(measures, cell);
    if (cell != 0 && cell != all && m != nullptr && !m->noise) v.repeat.push_back(cell);
  }
  if (!v.repeat.empty()) v.kind = VerdictKind::kSearching;
}

}  // namespace

Verdict Attribute(const std::vector<std::string>& axes, const Measures& measures,
                  const Options& options) {
  const int n = static_cast<int>(axes.size());
  ORCH_CHECK(n <= kMaxAxes);
  const AxisSet all = Everything(n);
  Verdict v;
  const CellMeasure* from = Find(measures, 0);
  const CellMeasure* to = Find(measures, all);
  if (n == 0 || to == nullptr || !to->from) {
    Describe(axes, measures, v);
    return v;
  }
  v.total = to->from->kld;
  v.noise_known = from != nullptr && from->noise && to->noise;
  v.noise =
      std::max(from != nullptr && from->noise ? *from->noise : 0.0, to->noise ? *to->noise : 0.0);
  v.threshold = std::max(options.tolerance * v.total, v.noise);
  Describe(axes, measures, v);
  if (to->from->identical || v.total <= v.noise) {
    v.kind = VerdictKind::kAgree;
    return v;
  }
  const AxisSet candidates = Candidates(v, n);
  v.kind = VerdictKind::kExhausted;
  for (int size = 1; size <= n; ++size) {
    std::vector<AxisSet> sets = Subsets(size == 1 ? all : candidates, size);
    if (sets.empty()) break;
    SizeTested tested = TestSets(measures, sets, all, v.threshold);
    if (tested.best) {
      v.explaining = tested.best_set;
      Explained(measures, all, v);
      break;
    }
    if (!tested.missing.empty()) {
      v.kind = VerdictKind::kSearching;
      if (static_cast<int>(tested.missing.size()) > options.max_cells) {
        tested.missing.resize(options.max_cells);
      }
      v.next = std::move(tested.missing);
      break;
    }
  }
  NameInteractions(axes, measures, v);
  return v;
}

}  // namespace orch::bisect
