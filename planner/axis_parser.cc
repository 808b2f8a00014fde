// [baseline] and [alternatives]: the coordinate axes, normalised and checked.
#include <algorithm>
#include <cmath>

#include "planner/axes.h"
#include "planner/spec_sections.h"

namespace orch::planner {
namespace {

struct Leaf {
  std::string name;  // dotted: "sampler.seed"
  const toml::node* node;
};

// Leaves of `table` with nested tables flattened to dotted names, in file order.
void Flatten(const toml::table& table, const std::string& prefix, std::vector<Leaf>& out) {
  for (const auto& [key, node] : table) {
    std::string name = JoinPath(prefix, key.str());
    if (const toml::table* sub = node.as_table()) {
      Flatten(*sub, name, out);
    } else {
      out.push_back({name, &node});
    }
  }
}

std::vector<Leaf> FlattenInOrder(const toml::table& table) {
  std::vector<Leaf> leaves;
  Flatten(table, "", leaves);
  std::stable_sort(leaves.begin(), leaves.end(), [](const Leaf& a, const Leaf& b) {
    SourcePos pa = PosOf(*a.node), pb = PosOf(*b.node);
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return leaves;
}

const AxisDef* KnownAxis(const Leaf& leaf, const std::string& section, TomlFields& f) {
  const AxisDef* axis = FindAxis(leaf.name);
  if (axis != nullptr) return axis;
  std::string message = "unknown axis " + Quote(leaf.name);
  std::string suggestion = SuggestAxis(leaf.name);
  if (!suggestion.empty()) message += "; did you mean " + Quote(suggestion) + "?";
  message +=
      " Axes are engine, quant, kv, attention, tp, hardware, the extras in "
      "docs/spec.md, or knob.<name> for any other engine setting";
  f.diagnostics().Error(PosOf(*leaf.node), JoinPath(section, leaf.name), message);
  return nullptr;
}

std::optional<AxisValue> AxisValueOf(const AxisDef& axis, const toml::node& node,
                                     const std::string& field, TomlFields& f) {
  std::optional<AxisValue> raw = ScalarOf(node);
  if (!raw) {
    f.diagnostics().Error(
        PosOf(node), field,
        "expected a single value (string, number or boolean), got " + DescribeNode(node));
    return std::nullopt;
  }
  // TOML's nan and inf: no engine setting, and no job id or JSON plan, has
  // a use for them (JSON cannot even write them).
  if (raw->is_float() && !std::isfinite(raw->as_float())) {
    f.diagnostics().Error(PosOf(node), field, "expected a finite number, got " + raw->ToText());
    return std::nullopt;
  }
  Result<AxisValue> value = NormaliseAxisValue(axis, *raw);
  if (!value.ok()) {
    f.diagnostics().Error(PosOf(node), field, value.status().message());
    return std::nullopt;
  }
  return *value;
}

// [baseline], or [bisect] from (`section` names it in messages).
std::vector<Axis> ParseBaseline(const toml::table* t, const std::string& section, TomlFields& f) {
  std::vector<Axis> axes;
  if (t == nullptr) return axes;
  for (const Leaf& leaf : FlattenInOrder(*t)) {
    const AxisDef* def = KnownAxis(leaf, section, f);
    if (def == nullptr) continue;
    std::optional<AxisValue> value = AxisValueOf(*def, *leaf.node, JoinPath(section, leaf.name), f);
    if (value) axes.push_back({leaf.name, *value, PosOf(*leaf.node), {}, {}});
  }
  for (std::string_view standard : StandardAxes()) {
    bool present =
        std::any_of(axes.begin(), axes.end(), [&](const Axis& a) { return a.name == standard; });
    bool written = t->get(standard) != nullptr;  // present but invalid: already reported
    if (!present && !written) {
      f.diagnostics().Error(PosOf(*t), section + "." + std::string(standard),
                            "missing standard axis " + Quote(std::string(standard)) + " (" +
                                std::string(FindAxis(standard)->help) + ")");
    }
  }
  return axes;
}

void AddAlternative(Axis& axis, const AxisValue& value, SourcePos pos, const std::string& field,
                    TomlFields& f) {
  if (value == axis.baseline) {
    f.diagnostics().Error(pos, field,
                          "alternative " + Quote(value) + " equals the baseline value of " +
                              axis.name + "; an alternative must differ from the baseline");
    return;
  }
  for (std::size_t j = 0; j < axis.alternatives.size(); ++j) {
    if (axis.alternatives[j] != value) continue;
    SourcePos first = axis.alternative_pos[j];
    f.diagnostics().Error(pos, field,
                          "duplicate alternative " + Quote(value) + " (first at line " +
                              std::to_string(first.line) + ", column " +
                              std::to_string(first.column) + ")");
    return;
  }
  axis.alternatives.push_back(value);
  axis.alternative_pos.push_back(pos);
}

void ParseAlternativeList(const Leaf& leaf, const AxisDef& def, Axis& axis, TomlFields& f) {
  std::string field = JoinPath("alternatives", leaf.name);
  const toml::array* array = leaf.node->as_array();
  if (array == nullptr) {
    f.diagnostics().Error(PosOf(*leaf.node), field,
                          "expected an array of alternative values (e.g. " + leaf.name +
                              " = [...]), got " + DescribeNode(*leaf.node));
    return;
  }
  if (array->empty()) {
    f.diagnostics().Error(PosOf(*leaf.node), field,
                          "empty alternatives: list at least one value, or remove the axis");
    return;
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    std::string item = Indexed(field, i);
    std::optional<AxisValue> value = AxisValueOf(def, (*array)[i], item, f);
    if (value) AddAlternative(axis, *value, PosOf((*array)[i]), item, f);
  }
}

void ParseAlternatives(const toml::table& root, std::vector<Axis>& axes, TomlFields& f) {
  const toml::table* t = f.Table(root, "", "alternatives", false);
  if (t == nullptr) return;
  const toml::table* baseline = root.get_as<toml::table>("baseline");
  for (const Leaf& leaf : FlattenInOrder(*t)) {
    const AxisDef* def = KnownAxis(leaf, "alternatives", f);
    if (def == nullptr) continue;
    auto axis =
        std::find_if(axes.begin(), axes.end(), [&](const Axis& a) { return a.name == leaf.name; });
    if (axis == axes.end()) {
      bool written = baseline && baseline->at_path(leaf.name).node() != nullptr;
      if (!written) {  // present but invalid: already reported
        f.diagnostics().Error(PosOf(*leaf.node), JoinPath("alternatives", leaf.name),
                              "axis " + Quote(leaf.name) +
                                  " has alternatives but no baseline value; add " + leaf.name +
                                  " = ... to [baseline]");
      }
      continue;
    }
    ParseAlternativeList(leaf, *def, *axis, f);
  }
}

// bisect.to: each axis whose value differs from bisect.from's becomes that axis's one
// alternative; equal values are allowed (a whole coordinate may be pasted) and skipped.
std::vector<int> ParseBisectTo(const toml::table& t, std::vector<Axis>& axes, TomlFields& f) {
  std::vector<int> changed;
  for (const Leaf& leaf : FlattenInOrder(t)) {
    const AxisDef* def = KnownAxis(leaf, "bisect.to", f);
    if (def == nullptr) continue;
    std::string field = JoinPath("bisect.to", leaf.name);
    auto axis =
        std::find_if(axes.begin(), axes.end(), [&](const Axis& a) { return a.name == leaf.name; });
    if (axis == axes.end()) {
      f.diagnostics().Error(PosOf(*leaf.node), field,
                            "axis " + Quote(leaf.name) +
                                " has no value in bisect.from; give it there too, so that the "
                                "walk from one to the other has a start");
      continue;
    }
    std::optional<AxisValue> value = AxisValueOf(*def, *leaf.node, field, f);
    if (!value || *value == axis->baseline) continue;
    axis->alternatives.push_back(*value);
    axis->alternative_pos.push_back(PosOf(*leaf.node));
    changed.push_back(static_cast<int>(axis - axes.begin()));
  }
  return changed;
}

std::optional<double> Tolerance(const toml::table& t, TomlFields& f) {
  const toml::node* node = t.get("tolerance");
  if (node == nullptr) return std::nullopt;
  std::optional<double> value = node->value<double>();
  if (!value || !std::isfinite(*value) || *value < 0 || *value >= 1) {
    f.diagnostics().Error(
        PosOf(*node), "bisect.tolerance",
        "expected a share of KLD(to, from) in [0, 1), e.g. 0.05, got " + DescribeNode(*node));
    return std::nullopt;
  }
  return value;
}

void CheckBisectAxes(const toml::table& t, const BisectSpec& bisect, TomlFields& f) {
  if (bisect.axes.empty() && t.get_as<toml::table>("to") != nullptr) {
    f.diagnostics().Error(PosOf(*t.get("to")), "bisect.to",
                          "bisect.to gives every axis the value bisect.from gives it: there is no "
                          "difference to explain");
  }
  if (static_cast<int>(bisect.axes.size()) > bisect::kMaxAxes) {
    f.diagnostics().Error(PosOf(*t.get("to")), "bisect.to",
                          std::to_string(bisect.axes.size()) +
                              " axes differ; a bisection takes at most " +
                              std::to_string(bisect::kMaxAxes) + " (split the question)");
  }
}

std::optional<BisectSpec> ParseBisect(const toml::table& root, std::vector<Axis>& axes,
                                      TomlFields& f) {
  const toml::table* t = f.Table(root, "", "bisect", false);
  if (t == nullptr) return std::nullopt;
  for (const char* section : {"baseline", "alternatives"}) {
    if (const toml::node* other = root.get(section)) {
      f.diagnostics().Error(PosOf(*other), section,
                            std::string("a spec with [bisect] has no [") + section +
                                "]: bisect.from is the baseline and bisect.to the changes");
    }
  }
  f.CheckKeys(*t, "bisect", {"from", "to", "tolerance", "max_rounds"});
  BisectSpec bisect;
  bisect.pos = PosOf(*t);
  axes = ParseBaseline(f.Table(*t, "bisect", "from", true), "bisect.from", f);
  std::size_t errors = f.diagnostics().errors().size();
  if (const toml::table* to = f.Table(*t, "bisect", "to", true)) {
    bisect.axes = ParseBisectTo(*to, axes, f);
  }
  // "No difference" only when to's values were all read.
  if (f.diagnostics().errors().size() == errors) CheckBisectAxes(*t, bisect, f);
  bisect.tolerance = Tolerance(*t, f).value_or(bisect.tolerance);
  bisect.max_rounds =
      static_cast<int>(f.Int(*t, "bisect", "max_rounds", false, 1, 20).value_or(bisect.max_rounds));
  if (static_cast<int>(bisect.axes.size()) <= bisect::kMaxAxes) {
    for (bisect::AxisSet set : bisect::FirstRound(static_cast<int>(bisect.axes.size()))) {
      if (set != 0) bisect.cells.push_back({set, 1, false});
    }
  }
  return bisect;
}

}  // namespace

std::vector<Axis> ParseAxes(const toml::table& root, TomlFields& f,
                            std::optional<BisectSpec>& bisect) {
  std::vector<Axis> axes;
  bisect = ParseBisect(root, axes, f);
  if (bisect) return axes;
  axes = ParseBaseline(f.Table(root, "", "baseline", true), "baseline", f);
  ParseAlternatives(root, axes, f);
  return axes;
}

}  // namespace orch::planner
