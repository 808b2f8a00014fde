// Requested against effective settings (docs/report.md, "Effective settings"): what a
// run's driver says the engine actually ran (its done frame's, else its hello's
// `effective` object, kept in the run summary), set against the coordinate the plan
// requested. A requested value that asks the engine to choose ("auto", "best", threads
// 0) is resolved, not changed. Two cells whose effective settings are equal on every axis
// either run reports, including the axis the cell changes, ran the same configuration:
// the changed axis cannot be what moved their streams. Pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orch::report {

struct EffectiveSettings {
  std::map<std::string, std::string> axes;  // axis -> value, in the coordinate's vocabulary
  std::map<std::string, std::string> why;   // axis -> the driver's reason, when it gave one
  bool known() const { return !axes.empty(); }
};

struct EffectiveDifference {
  std::string axis;
  std::string requested;
  std::string effective;
  std::string why;  // may be empty
};

using Coordinate = std::vector<std::pair<std::string, std::string>>;

// The `effective` object of a run summary ({"hello": ..., "done": ...}); empty (not
// known) when the driver reported none or the summary does not parse.
EffectiveSettings ParseEffective(const std::string& summary);

// The baseline coordinate with `axis` set to `value` (the baseline itself for an empty
// axis).
Coordinate CellCoordinate(const Coordinate& baseline, const std::string& axis,
                          const std::string& value);

// The axes of `coordinate` whose effective value differs from the requested one, in the
// coordinate's order. Values compare as the driver vocabulary does: "on" = "true",
// "off" = "false", "T/T" = "T".
std::vector<EffectiveDifference> EffectiveDifferences(const Coordinate& coordinate,
                                                      const EffectiveSettings& effective);

// Whether the cell (which changes `axis`) ran the same effective configuration as the
// baseline: both known, `axis` among the cell's effective axes, and equal on every axis.
bool SameEffective(const EffectiveSettings& baseline, const EffectiveSettings& cell,
                   const std::string& axis);

// "kv f32 ran as f16 under flash attention": the differences on `axis` of the cell and,
// prefixed "baseline's", of the baseline; "" when neither differs there.
std::string RanAsText(const std::string& axis, const std::vector<EffectiveDifference>& baseline,
                      const std::vector<EffectiveDifference>& cell);

}  // namespace orch::report
