#include "coordinator/failure_kind.h"

#include <array>
#include <nlohmann/json.hpp>

#include "protocol/messages.h"

namespace orch::coordinator {

namespace {

// summary.error.code, or "" when there is none.
std::string ErrorCode(std::string_view summary) {
  nlohmann::json doc = nlohmann::json::parse(summary, nullptr, false);
  if (!doc.is_object()) return "";
  auto error = doc.find("error");
  if (error == doc.end() || !error->is_object()) return "";
  auto code = error->find("code");
  if (code == error->end() || !code->is_string()) return "";
  return code->get<std::string>();
}

template <std::size_t N>
bool OneOf(const std::string& code, const std::array<std::string_view, N>& known) {
  for (std::string_view k : known) {
    if (code == k) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> DeterministicErrorCode(std::string_view summary) {
  static constexpr std::array<std::string_view, 4> kDeterministic = {
      "invalid_job", "invalid_combination", "model_missing", "sha256_mismatch"};
  std::string code = ErrorCode(summary);
  if (OneOf(code, kDeterministic)) return code;
  return std::nullopt;
}

bool TransientRefusal(std::string_view summary) {
  static constexpr std::array<std::string_view, 2> kTransient = {protocol::kRefusedBusy,
                                                                 protocol::kRefusedDraining};
  return OneOf(ErrorCode(summary), kTransient);
}

}  // namespace orch::coordinator
