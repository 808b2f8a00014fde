#include "report/generation.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "report/report.h"
#include "report/tables.h"

namespace orch::report {
namespace {

std::optional<bool> GenerationWithin(double margin, const GenerationNoiseBand& noise) {
  if (!noise.available || std::isnan(margin)) return std::nullopt;
  return margin <= noise.band;
}

// The summary's `done` object, or null.
nlohmann::json GenerationDone(const std::string& summary) {
  if (summary.empty()) return nullptr;
  nlohmann::json doc = nlohmann::json::parse(summary, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("done") || !doc["done"].is_object()) return nullptr;
  return doc["done"];
}

}  // namespace

std::string_view DivergenceKindName(DivergenceKind kind) {
  return kind == DivergenceKind::kArgmaxFlip ? "argmax flip" : "sampled draw";
}

GenerationDetail DescribeGeneration(const PairResult& r, const GenerationNoiseBand& noise) {
  GenerationDetail out;
  out.applies = true;
  out.common_prefix_tokens = r.generated_common_prefix;
  out.reference_tokens = r.reference_generated;
  out.other_tokens = r.other_generated;
  out.prefix_positions = r.summary.compared;
  out.noise = noise;
  if (const auto& d = r.first_token_difference) {
    GenerationDivergence g;
    g.index = d->index;
    g.position = d->position;
    g.kind = d->reference_argmax != d->other_argmax ? DivergenceKind::kArgmaxFlip
                                                    : DivergenceKind::kSampledDraw;
    g.reference_argmax = d->reference_argmax;
    g.other_argmax = d->other_argmax;
    g.reference_margin = d->reference_margin;
    g.other_margin = d->other_margin;
    g.reference_within_band = GenerationWithin(d->reference_margin, noise);
    g.other_within_band = GenerationWithin(d->other_margin, noise);
    out.divergence = g;
  }
  return out;
}

std::string CommonPrefixText(const GenerationDetail& d) {
  return "common prefix of " + std::to_string(d.common_prefix_tokens) + " of " +
         std::to_string(d.reference_tokens) + " tokens";
}

std::string DivergenceText(const GenerationDetail& d) {
  if (!d.divergence) return "none";
  const GenerationDivergence& g = *d.divergence;
  const std::string text = std::string(DivergenceKindName(g.kind)) + " at token " +
                           std::to_string(g.index + 1) + " (position " +
                           std::to_string(g.position) + "), top-1 ";
  if (g.kind == DivergenceKind::kSampledDraw) return text + std::to_string(g.reference_argmax);
  return text + std::to_string(g.reference_argmax) + " / " + std::to_string(g.other_argmax);
}

std::string NoiseBandText(const GenerationNoiseBand& noise) {
  if (!noise.available) return "none (the baseline has a single run)";
  return FormatNumber(noise.band, 4) + " (from the baseline's " + std::to_string(noise.repeats) +
         " repeats)";
}

std::string WithinBandText(const std::optional<bool>& within) {
  if (!within) return "-";
  return *within ? "yes" : "no";
}

std::string FirstLine(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

std::optional<std::string> ParseGeneratedText(const std::string& summary) {
  const nlohmann::json done = GenerationDone(summary);
  if (!done.is_object()) return std::nullopt;
  auto it = done.find("generated_text");
  if (it == done.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::vector<std::int32_t> ParseGeneratedIds(const std::string& summary) {
  std::vector<std::int32_t> ids;
  const nlohmann::json done = GenerationDone(summary);
  if (!done.is_object()) return ids;
  auto it = done.find("generated_ids");
  if (it == done.end() || !it->is_array()) return ids;
  for (const nlohmann::json& id : *it) {
    if (!id.is_number_integer()) return {};
    ids.push_back(id.get<std::int32_t>());
  }
  return ids;
}

std::optional<std::string> GeneratedTextOf(const std::string& summary,
                                           const TokenDecoder* decoder) {
  if (std::optional<std::string> text = ParseGeneratedText(summary)) return text;
  const std::vector<std::int32_t> ids = ParseGeneratedIds(summary);
  if (decoder == nullptr || ids.empty()) return std::nullopt;
  std::string text;
  for (std::int32_t id : ids) {
    text += decoder->Decode(id).value_or("<" + std::to_string(id) + ">");
  }
  return text;
}

}  // namespace orch::report
