#include "report/summary_token_decoder.h"

#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

namespace orch::report {
namespace {

using SummaryJson = nlohmann::json;

class SummaryTokenDecoder final : public TokenDecoder {
 public:
  // Adds the token_text table of one summary; anything malformed is skipped.
  void Add(const std::string& summary) {
    if (summary.empty()) return;
    SummaryJson doc = SummaryJson::parse(summary, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("done") || !doc["done"].is_object()) return;
    const SummaryJson& table = doc["done"].value("token_text", SummaryJson::object());
    if (!table.is_object()) return;
    for (const auto& [key, text] : table.items()) {
      std::int32_t id = -1;
      auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (error != std::errc() || end != key.data() + key.size() || id < 0 || !text.is_string()) {
        continue;
      }
      Learn(id, text.get<std::string>());
    }
  }

  std::optional<std::string> Decode(std::int32_t token) const override {
    auto it = texts_.find(token);
    if (it == texts_.end()) return std::nullopt;
    return it->second;
  }

 private:
  void Learn(std::int32_t id, std::string text) {
    auto [it, inserted] = texts_.emplace(id, text);
    if (!inserted && it->second && *it->second != text) it->second.reset();  // ambiguous
  }

  std::map<std::int32_t, std::optional<std::string>> texts_;  // nullopt: runs disagree
};

}  // namespace

std::unique_ptr<TokenDecoder> MakeSummaryTokenDecoder(const std::vector<store::RunRecord>& runs) {
  auto decoder = std::make_unique<SummaryTokenDecoder>();
  for (const store::RunRecord& run : runs) decoder->Add(run.summary);
  return decoder;
}

}  // namespace orch::report
