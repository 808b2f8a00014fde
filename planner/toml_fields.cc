#include "planner/toml_fields.h"

namespace orch::planner {

SourcePos PosOf(const toml::node& node) {
  const toml::source_region& source = node.source();
  return {static_cast<int>(source.begin.line), static_cast<int>(source.begin.column)};
}

std::string JoinPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string Indexed(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::optional<AxisValue> ScalarOf(const toml::node& node) {
  if (const auto* s = node.as_string()) return AxisValue::String(s->get());
  if (const auto* i = node.as_integer()) return AxisValue::Int(i->get());
  if (const auto* f = node.as_floating_point()) return AxisValue::Float(f->get());
  if (const auto* b = node.as_boolean()) return AxisValue::Bool(b->get());
  return std::nullopt;
}

std::string DescribeNode(const toml::node& node) {
  if (std::optional<AxisValue> scalar = ScalarOf(node)) return Quote(*scalar);
  if (node.is_table()) return "a table";
  if (node.is_array()) return "an array";
  return "a date/time";
}

void TomlFields::CheckKeys(const toml::table& table, const std::string& path,
                           std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, node] : table) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key.str();
    if (known) continue;
    std::string expected;
    for (std::string_view a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
    diagnostics_.Error(
        PosOf(node), JoinPath(path, key.str()),
        "unknown field " + Quote(std::string(key.str())) + "; expected one of: " + expected);
  }
}

std::optional<std::string> TomlFields::String(const toml::table& table, const std::string& path,
                                              std::string_view key, bool required) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    if (required) {
      diagnostics_.Error(PosOf(table), JoinPath(path, key),
                         "missing required field " + Quote(std::string(key)));
    }
    return std::nullopt;
  }
  if (const auto* s = node->as_string()) return s->get();
  diagnostics_.Error(PosOf(*node), JoinPath(path, key),
                     "expected a string, got " + DescribeNode(*node));
  return std::nullopt;
}

std::optional<std::int64_t> TomlFields::Int(const toml::table& table, const std::string& path,
                                            std::string_view key, bool required, std::int64_t min,
                                            std::int64_t max) {
  const toml::node* node = table.get(key);
  std::string field = JoinPath(path, key);
  if (node == nullptr) {
    if (required) {
      diagnostics_.Error(PosOf(table), field, "missing required field " + Quote(std::string(key)));
    }
    return std::nullopt;
  }
  const auto* i = node->as_integer();
  if (i == nullptr) {
    diagnostics_.Error(PosOf(*node), field, "expected an integer, got " + DescribeNode(*node));
    return std::nullopt;
  }
  if (i->get() < min || i->get() > max) {
    std::string range = max == INT64_MAX
                            ? ">= " + std::to_string(min)
                            : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    diagnostics_.Error(
        PosOf(*node), field,
        std::string(key) + " must be " + range + ", got " + std::to_string(i->get()));
    return std::nullopt;
  }
  return i->get();
}

const toml::table* TomlFields::Table(const toml::table& table, const std::string& path,
                                     std::string_view key, bool required) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    if (required) {
      diagnostics_.Error(PosOf(table), JoinPath(path, key),
                         "missing required section [" + JoinPath(path, key) + "]");
    }
    return nullptr;
  }
  if (const auto* t = node->as_table()) return t;
  diagnostics_.Error(PosOf(*node), JoinPath(path, key),
                     "expected a table, got " + DescribeNode(*node));
  return nullptr;
}

const toml::array* TomlFields::Array(const toml::table& table, const std::string& path,
                                     std::string_view key) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return nullptr;
  if (const auto* a = node->as_array()) return a;
  diagnostics_.Error(PosOf(*node), JoinPath(path, key),
                     "expected an array, got " + DescribeNode(*node));
  return nullptr;
}

}  // namespace orch::planner
