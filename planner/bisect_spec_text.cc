#include "planner/bisect_spec_text.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <sstream>

#include "planner/axes.h"

namespace orch::planner {
namespace {

// A TOML basic string on one line: every control character escaped, the rest as is
// (UTF-8 passes through). Not canonical JSON's string (planner/canonical_json.h), which
// job ids rest on and which leaves DEL raw: TOML forbids a raw DEL.
std::string TomlString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04X", byte);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool BareKey(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// A dotted axis name ("sampler.seed", "knob.n-gpu") as a TOML dotted key.
std::string Key(const std::string& dotted) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', start);
    const std::string part = dotted.substr(start, dot == std::string::npos ? dot : dot - start);
    out += BareKey(part) ? part : TomlString(part);
    if (dot == std::string::npos) return out;
    out += '.';
    start = dot + 1;
  }
}

std::string Number(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string Value(const plan_document::Scalar& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return TomlString(*s);
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return Number(*d);
  return std::get<bool>(value) ? "true" : "false";
}

// Standard axes first, in documentation order, then the others by name.
plan_document::Coordinate InWalkOrder(plan_document::Coordinate coordinate) {
  const std::vector<std::string_view>& standard = StandardAxes();
  auto rank = [&](const std::string& axis) {
    auto it = std::find(standard.begin(), standard.end(), axis);
    return static_cast<std::size_t>(it - standard.begin());
  };
  std::stable_sort(coordinate.begin(), coordinate.end(), [&](const auto& a, const auto& b) {
    const std::size_t ra = rank(a.first), rb = rank(b.first);
    return ra != rb ? ra < rb : a.first < b.first;
  });
  return coordinate;
}

void WriteCoordinate(const std::string& table, const plan_document::Coordinate& coordinate,
                     std::ostringstream& out) {
  out << "\n[" << table << "]\n";
  for (const auto& [axis, value] : InWalkOrder(coordinate)) {
    out << Key(axis) << " = " << Value(value) << "\n";
  }
}

void WriteModel(const plan_document::Model& model, std::ostringstream& out) {
  out << "\n[model]\n";
  if (!model.name.empty()) out << "name = " << TomlString(model.name) << "\n";
  if (!model.synth.empty()) {
    out << "synth = " << TomlString(model.synth) << "\n";
  } else {
    out << "file = " << TomlString(model.file) << "\nsha256 = " << TomlString(model.sha256) << "\n";
  }
  for (const auto& [quant, variant] : model.variants) {
    out << "variants." << Key(quant) << " = { file = " << TomlString(variant.file)
        << ", sha256 = " << TomlString(variant.sha256) << " }\n";
  }
}

Status WriteWorkload(const plan_document::Workload& w, std::ostringstream& out) {
  const std::string who = "workload " + w.name;
  if (w.task || w.kind == "task" || w.context || w.messages) {
    return InvalidArgument(who +
                           " is a case of a task workload (docs/tasks.md), which a spec states "
                           "only through its case file: write a spec with [bisect] and the task "
                           "workload (docs/bisect.md)");
  }
  out << "\n[[workloads]]\nname = " << TomlString(w.name) << "\nkind = " << TomlString(w.kind)
      << "\n";
  if (w.kind == "teacher_forced") {
    if (w.tokens) {
      out << "tokens = [";
      for (std::size_t i = 0; i < w.tokens->size(); ++i) out << (i ? ", " : "") << (*w.tokens)[i];
      out << "]\n";
    } else if (w.text) {
      out << "text = " << TomlString(*w.text) << "\n";
    } else {
      return InvalidArgument(who + " has neither text nor tokens");
    }
    if (!w.positions) return InvalidArgument(who + " has no positions");
    out << "positions = " << *w.positions << "\n";
  } else if (w.kind == "generate") {
    if (!w.prompt || !w.max_tokens) return InvalidArgument(who + " has no prompt or max_tokens");
    out << "prompt = " << TomlString(*w.prompt) << "\nmax_tokens = " << *w.max_tokens << "\n";
  } else {
    return InvalidArgument(who + " has kind " + TomlString(w.kind) +
                           "; a bisection from the store takes teacher_forced and generate");
  }
  if (!w.capture) return Status::Ok();
  const plan_document::Capture& c = *w.capture;
  if (c.top_logits) out << "capture.top_logits = " << *c.top_logits << "\n";
  if (c.full_every) out << "capture.full_every = " << *c.full_every << "\n";
  if (c.full_windows) {
    out << "capture.full_windows = [";
    for (std::size_t i = 0; i < c.full_windows->size(); ++i) {
      const auto& [begin, end] = (*c.full_windows)[i];
      out << (i ? ", " : "") << "[" << begin << ", " << end << "]";
    }
    out << "]\n";
  }
  if (c.full_row_budget_bytes) {
    out << "capture.full_row_budget_bytes = " << *c.full_row_budget_bytes << "\n";
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> BisectSpecText(const BisectSpecSource& source) {
  std::ostringstream out;
  out << "# Written by orch bisect from the store (docs/bisect.md): `from` is what A ran, `to`\n"
         "# what B ran. Edit it and run it again with orch bisect FILE.\n";
  out << "\n[experiment]\nname = " << TomlString(source.name) << "\n";
  if (!source.description.empty())
    out << "description = " << TomlString(source.description) << "\n";
  WriteModel(source.model, out);
  ORCH_RETURN_IF_ERROR(WriteWorkload(source.workload, out));
  out << "\n[bisect]\ntolerance = " << Number(source.tolerance)
      << "\nmax_rounds = " << source.max_rounds << "\n";
  WriteCoordinate("bisect.from", source.from, out);
  WriteCoordinate("bisect.to", source.to, out);
  return out.str();
}

}  // namespace orch::planner
