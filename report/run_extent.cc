#include "report/run_extent.h"

#include <nlohmann/json.hpp>

namespace orch::report {

GenerationStop ParseGenerationStop(const std::string& summary) {
  GenerationStop out;
  if (summary.empty()) return out;
  const nlohmann::json doc = nlohmann::json::parse(summary, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("done") || !doc["done"].is_object()) return out;
  const nlohmann::json& done = doc["done"];
  if (auto it = done.find("stop"); it != done.end() && it->is_string()) {
    out.reason = it->get<std::string>();
  }
  if (auto it = done.find("generated_tokens"); it != done.end() && it->is_number_unsigned()) {
    out.generated = it->get<std::uint64_t>();
  } else if (auto ids = done.find("generated_ids"); ids != done.end() && ids->is_array()) {
    out.generated = ids->size();
  }
  return out;
}

Result<RunExtent> MeasureRun(RunSource& source, const std::string& run_id,
                             const std::string& summary) {
  RunExtent extent;
  extent.stop = ParseGenerationStop(summary);
  ORCH_RETURN_IF_ERROR(source.ScanRecords(run_id, 0, [&extent](const digest::PositionRecord& r) {
    ++extent.positions;
    if (r.output_token >= 0) ++extent.generated;
    return true;
  }));
  return extent;
}

}  // namespace orch::report
