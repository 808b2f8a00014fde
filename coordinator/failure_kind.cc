#include "coordinator/failure_kind.h"

#include <array>
#include <nlohmann/json.hpp>

namespace orch::coordinator {

std::optional<std::string> DeterministicErrorCode(std::string_view summary) {
  static constexpr std::array<std::string_view, 4> kDeterministic = {
      "invalid_job", "invalid_combination", "model_missing", "sha256_mismatch"};
  nlohmann::json doc = nlohmann::json::parse(summary, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  auto error = doc.find("error");
  if (error == doc.end() || !error->is_object()) return std::nullopt;
  auto code = error->find("code");
  if (code == error->end() || !code->is_string()) return std::nullopt;
  std::string text = code->get<std::string>();
  for (std::string_view known : kDeterministic) {
    if (text == known) return text;
  }
  return std::nullopt;
}

}  // namespace orch::coordinator
