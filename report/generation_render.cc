#include "report/generation_render.h"

#include <cmath>

#include "base/strings.h"
#include "report/html_plot.h"

namespace orch::report {
namespace {

using GenJson = nlohmann::ordered_json;

GenJson GenNum(double v) { return std::isfinite(v) ? GenJson(v) : GenJson(nullptr); }

GenJson GenOptBool(const std::optional<bool>& v) { return v ? GenJson(*v) : GenJson(nullptr); }

GenJson GenOptText(const std::optional<std::string>& v) {
  return v ? GenJson(*v) : GenJson(nullptr);
}

std::string GenPrefix(const GenerationDetail& d) {
  return CommonPrefixText(d) + "; " + std::to_string(d.prefix_positions) + " positions";
}

std::string GenKld(const KldSummary& k) {
  return FormatEstimate(k.mean, k.count, k.ci95, FormatKld);
}

// "0.05000 / 0.05000, both within the band"; without a band, the margins only.
std::string GenMargins(const GenerationDetail& d) {
  if (!d.divergence) return "-";
  const GenerationDivergence& g = *d.divergence;
  std::string text = FormatNumber(g.reference_margin, 4) + " / " + FormatNumber(g.other_margin, 4);
  if (!g.reference_within_band || !g.other_within_band) return text;
  const bool a = *g.reference_within_band, b = *g.other_within_band;
  if (a && b) return text + ", both within the band";
  if (!a && !b) return text + ", neither within the band";
  return text + (a ? ", baseline's within the band" : ", cell's within the band");
}

// Drops column `index` when no row has a value there.
void GenDropEmpty(Table& t, std::size_t index) {
  for (const auto& row : t.rows) {
    if (row[index] != "-") return;
  }
  t.header.erase(t.header.begin() + static_cast<std::ptrdiff_t>(index));
  for (auto& row : t.rows) row.erase(row.begin() + static_cast<std::ptrdiff_t>(index));
}

std::string GenLine(const std::optional<std::string>& text) {
  if (!text) return "not recorded";
  return TokenText(Token{0, FirstLine(*text)});
}

GenJson GenSideJson(std::int32_t argmax, double margin, const std::optional<bool>& within) {
  return GenJson{
      {"argmax", argmax}, {"margin", GenNum(margin)}, {"within_noise_band", GenOptBool(within)}};
}

}  // namespace

Table GenerationTable(const WorkloadReport& w) {
  Table t{"",
          {"changed", "rests on", "KLD exact mean [95% CI] n", "KLD bound mean [95% CI] n",
           "top-1 agreement [95% CI] n", "first divergence", "margin baseline / cell"},
          {}};
  std::string band = "none";
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared || !c.generation.applies) continue;
    const GenerationDetail& d = c.generation;
    band = NoiseBandText(d.noise);
    const Estimate& top1 = c.result.estimates.top1_agreement;
    t.rows.push_back({c.cell.label, GenPrefix(d), GenKld(c.result.kld_exact),
                      GenKld(c.result.kld_bound),
                      FormatEstimate(top1.mean, top1.n, top1.ci95, FormatPercent),
                      DivergenceText(d), GenMargins(d)});
  }
  t.title =
      "Generation up to the first differing token (KLD and top-1 over the positions where both "
      "runs had fed the same tokens; margin: top-1 minus top-2 logit at the first divergence; "
      "noise band " +
      band + ")";
  GenDropEmpty(t, 3);
  GenDropEmpty(t, 2);
  return t;
}

Table GeneratedTextTable(const WorkloadReport& w) {
  Table t{"Generated text (first line)", {"cell", "run", "text"}, {}};
  if (w.baseline.status == CellStatus::kCompared) {
    t.rows.push_back({w.baseline.cell.label, w.baseline.reference_run,
                      GenLine(w.baseline.generation.reference_text)});
  }
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared || !c.generation.applies) continue;
    t.rows.push_back({c.cell.label, c.other_run, GenLine(c.generation.other_text)});
  }
  return t;
}

nlohmann::ordered_json GenerationJson(const CellReport& c) {
  const GenerationDetail& d = c.generation;
  if (!d.applies) return nullptr;
  GenJson divergence = nullptr;
  if (const auto& g = d.divergence) {
    divergence =
        GenJson{{"index", g->index},
                {"position", g->position},
                {"kind", std::string(DivergenceKindName(g->kind))},
                {"reference",
                 GenSideJson(g->reference_argmax, g->reference_margin, g->reference_within_band)},
                {"other", GenSideJson(g->other_argmax, g->other_margin, g->other_within_band)}};
  }
  return GenJson{{"basis", CommonPrefixText(d)},
                 {"common_prefix_tokens", d.common_prefix_tokens},
                 {"reference_tokens", d.reference_tokens},
                 {"other_tokens", d.other_tokens},
                 {"positions", d.prefix_positions},
                 {"noise_band",
                  {{"available", d.noise.available},
                   {"band", GenNum(d.noise.band)},
                   {"baseline_repeats", d.noise.repeats},
                   {"text", NoiseBandText(d.noise)}}},
                 {"first_divergence", divergence},
                 {"reference_text", GenOptText(d.reference_text)},
                 {"other_text", GenOptText(d.other_text)}};
}

void WriteGeneratedTexts(const WorkloadReport& w, std::ostringstream& out) {
  bool any = false;
  for (const CellReport& c : w.cells) {
    if (c.status != CellStatus::kCompared || !c.generation.applies) continue;
    if (!any) {
      out << "<h3>Generated text (baseline and cell side by side)</h3>\n"
          << "<table class=\"generated\">\n<tr><th>cell</th><th>baseline</th><th>cell</th></tr>\n";
      any = true;
    }
    auto text = [](const std::optional<std::string>& t) {
      return t ? EscapeHtml(*t) : std::string("<i>not recorded</i>");
    };
    out << "<tr data-cell=\"" << EscapeHtml(c.cell.label) << "\"><td>" << EscapeHtml(c.cell.label)
        << "<br>" << EscapeHtml(CommonPrefixText(c.generation))
        << "</td><td class=\"generated-text\">" << text(c.generation.reference_text)
        << "</td><td class=\"generated-text\">" << text(c.generation.other_text) << "</td></tr>\n";
  }
  if (any) out << "</table>\n";
}

}  // namespace orch::report
