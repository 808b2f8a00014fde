#include "planner/spec_parser.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "base/sha256.h"
#include "planner/plan.h"
#include "planner/spec_sections.h"
#include "model/synth_model.h"
#include "model/synth_recipe.h"

namespace orch::planner {

bool IsName(const std::string& text) {
  if (text.empty() || text.size() > 128 || text.find_first_not_of('.') == std::string::npos) {
    return false;
  }
  for (unsigned char c : text) {
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

namespace {

std::string LowerHex(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

void ParseExperiment(const toml::table& root, TomlFields& f, Spec& spec) {
  const toml::table* t = f.Table(root, "", "experiment", true);
  if (t == nullptr) return;
  f.CheckKeys(*t, "experiment", {"name", "description"});
  if (std::optional<std::string> name = f.String(*t, "experiment", "name", true)) {
    if (IsName(*name)) {
      spec.name = *name;
    } else {
      f.diagnostics().Error(
          PosOf(*t->get("name")), "experiment.name",
          "invalid name " + Quote(*name) + "; expected 1-128 letters, digits, '-', '_' or '.'");
    }
  }
  spec.description = f.String(*t, "experiment", "description", false).value_or("");
}

std::optional<std::string> Sha256Field(const toml::table& t, const std::string& path,
                                       TomlFields& f) {
  std::optional<std::string> sha = f.String(t, path, "sha256", true);
  if (!sha) return std::nullopt;
  if (!IsSha256Hex(*sha)) {
    f.diagnostics().Error(PosOf(*t.get("sha256")), JoinPath(path, "sha256"),
                          "malformed SHA-256 " + Quote(*sha) +
                              "; expected 64 hex digits (orch model hash FILE prints it)");
    return std::nullopt;
  }
  return LowerHex(*sha);
}

void ParseVariants(const toml::table& model, TomlFields& f, Model& out) {
  const toml::table* variants = f.Table(model, "model", "variants", false);
  if (variants == nullptr) return;
  for (const auto& [key, node] : *variants) {
    std::string path = "model.variants." + std::string(key.str());
    const toml::table* v = node.as_table();
    if (v == nullptr) {
      f.diagnostics().Error(PosOf(node), path,
                            "expected a table with file and sha256, got " + DescribeNode(node));
      continue;
    }
    f.CheckKeys(*v, path, {"file", "sha256"});
    std::optional<std::string> file = f.String(*v, path, "file", true);
    std::optional<std::string> sha = Sha256Field(*v, path, f);
    if (file && sha) out.variants[LowerHex(std::string(key.str()))] = {*file, *sha, PosOf(node)};
  }
}

// A recipe whose GGUF is over the cap (model.synth_max_bytes, default the agents'
// default) would be refused by every agent, or fill its disk: an error here.
void CheckSynthSize(const toml::table& t, const orch::model::SynthRecipe& recipe, TomlFields& f) {
  std::uint64_t cap =
      static_cast<std::uint64_t>(f.Int(t, "model", "synth_max_bytes", false, 1, INT64_MAX)
                                     .value_or(orch::model::kDefaultSynthMaxBytes));
  Status size = orch::model::CheckSynthModelSize(
      recipe, cap, "model.synth_max_bytes, and agent.synth_max_bytes on the agents");
  if (!size.ok()) f.diagnostics().Error(PosOf(*t.get("synth")), "model.synth", size.message());
}

void ParseModel(const toml::table& root, TomlFields& f, Spec& spec) {
  const toml::table* t = f.Table(root, "", "model", true);
  if (t == nullptr) return;
  Model& model = spec.model;
  model.pos = PosOf(*t);
  f.CheckKeys(*t, "model", {"name", "file", "sha256", "synth", "synth_max_bytes", "variants"});
  std::optional<std::string> file = f.String(*t, "model", "file", false);
  std::optional<std::string> synth = f.String(*t, "model", "synth", false);
  if (file.has_value() == synth.has_value()) {
    f.diagnostics().Error(model.pos, "model",
                          file ? "give either file (with sha256) or synth, not both"
                               : "missing model source: give file = \"PATH\" with sha256, or "
                                 "synth = \"llama:vocab=...\"");
  } else if (file) {
    model.file = *file;
    model.sha256 = Sha256Field(*t, "model", f).value_or("");
  } else if (Result<orch::model::SynthRecipe> recipe = orch::model::ParseSynthRecipe(*synth);
             recipe.ok()) {
    model.synth = orch::model::CanonicalRecipe(*recipe);
    CheckSynthSize(*t, *recipe, f);
  } else {
    f.diagnostics().Error(PosOf(*t->get("synth")), "model.synth",
                          recipe.status().message() + " in " + Quote(*synth));
  }
  if (synth && t->get("sha256") != nullptr) {
    f.diagnostics().Error(PosOf(*t->get("sha256")), "model.sha256",
                          "a synth model is identified by its recipe; remove sha256");
  }
  ParseVariants(*t, f, model);
  model.name = f.String(*t, "model", "name", false).value_or(file ? *file : "synth");
}

// A bisection's cells are compared on every workload, so an axis that acts only on
// generate workloads cannot differ while a teacher-forced workload is in the spec.
void CheckBisectWorkloads(const Spec& spec, TomlFields& f) {
  if (!spec.bisect) return;
  auto forced = std::find_if(spec.workloads.begin(), spec.workloads.end(), [](const Workload& w) {
    return w.kind == WorkloadKind::kTeacherForced;
  });
  if (forced == spec.workloads.end()) return;
  for (int index : spec.bisect->axes) {
    const Axis& axis = spec.axes[index];
    if (AxisApplies(axis.name, WorkloadKind::kTeacherForced)) continue;
    f.diagnostics().Error(axis.alternative_pos.front(), "bisect.to." + axis.name,
                          axis.name + " acts only on generate workloads, and workload " +
                              Quote(forced->name) +
                              " is teacher-forced: bisect generate workloads apart");
  }
}

void ParseRepeats(const toml::table& root, TomlFields& f, Spec& spec) {
  const toml::table* t = f.Table(root, "", "repeats", false);
  if (t == nullptr) return;
  f.CheckKeys(*t, "repeats", {"baseline", "cells"});
  spec.baseline_repeats =
      static_cast<int>(f.Int(*t, "repeats", "baseline", false, 1, 1000).value_or(2));
  spec.cell_repeats = static_cast<int>(f.Int(*t, "repeats", "cells", false, 1, 1000).value_or(1));
}

}  // namespace

ParsedSpec ParseSpec(std::string_view toml_text, const std::string& file, SourceReader& reader) {
  ParsedSpec out;
  toml::table root;
  try {
    root = toml::parse(toml_text, file);
  } catch (const toml::parse_error& e) {
    SourcePos pos{static_cast<int>(e.source().begin.line),
                  static_cast<int>(e.source().begin.column)};
    out.diagnostics.Error(pos, "", "TOML syntax error: " + std::string(e.description()));
    return out;
  }
  TomlFields fields(out.diagnostics);
  fields.CheckKeys(
      root, "",
      {"experiment", "model", "workloads", "baseline", "alternatives", "bisect", "repeats"});
  Spec spec;
  spec.file = file;
  ParseExperiment(root, fields, spec);
  ParseModel(root, fields, spec);
  spec.workloads = ParseWorkloads(root, reader, fields, spec.tasks);
  spec.axes = ParseAxes(root, fields, spec.bisect);
  CheckBisectWorkloads(spec, fields);
  ParseRepeats(root, fields, spec);
  out.spec = std::move(spec);
  return out;
}

}  // namespace orch::planner
