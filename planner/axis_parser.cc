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

std::vector<Axis> ParseBaseline(const toml::table& root, TomlFields& f) {
  std::vector<Axis> axes;
  const toml::table* t = f.Table(root, "", "baseline", true);
  if (t == nullptr) return axes;
  for (const Leaf& leaf : FlattenInOrder(*t)) {
    const AxisDef* def = KnownAxis(leaf, "baseline", f);
    if (def == nullptr) continue;
    std::optional<AxisValue> value =
        AxisValueOf(*def, *leaf.node, JoinPath("baseline", leaf.name), f);
    if (value) axes.push_back({leaf.name, *value, PosOf(*leaf.node), {}, {}});
  }
  for (std::string_view standard : StandardAxes()) {
    bool present =
        std::any_of(axes.begin(), axes.end(), [&](const Axis& a) { return a.name == standard; });
    bool written = t->get(standard) != nullptr;  // present but invalid: already reported
    if (!present && !written) {
      f.diagnostics().Error(PosOf(*t), "baseline." + std::string(standard),
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

}  // namespace

std::vector<Axis> ParseAxes(const toml::table& root, TomlFields& f) {
  std::vector<Axis> axes = ParseBaseline(root, f);
  ParseAlternatives(root, axes, f);
  return axes;
}

}  // namespace orch::planner
