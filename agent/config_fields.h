// How agent/config.cc reads its TOML fields: typed accessors whose errors name
// FILE:LINE:COLUMN, the field and the value (Fields), every mistake collected and
// reported at once in file order (Mistakes), and relative paths resolved against the
// config's folder (Resolve). Used by config.cc only.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_mistakes.h"
#include "base/status.h"
#include "base/suggest.h"

namespace orch::agent::config_fields {

// Collects the first problem; every accessor returns nullopt after an error.
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  Status Error(const toml::source_region& where, const std::string& field,
               const std::string& what) const {
    return InvalidArgument(Where(where) + ": " + field + ": " + what);
  }
  // "FILE:LINE:COLUMN".
  std::string Where(const toml::source_region& where) const {
    return file_ + ":" + std::to_string(where.begin.line) + ":" +
           std::to_string(where.begin.column);
  }

  static std::string Describe(const toml::node& node) {
    if (node.is_string()) return "\"" + std::string(*node.value<std::string>()) + "\"";
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    std::ostringstream out;
    node.visit([&out](const auto& value) { out << value; });
    return out.str();
  }

  // Every unknown key of `table`, one line each.
  Status CheckKeys(const toml::table& table, const std::string& path,
                   std::initializer_list<std::string_view> allowed) const {
    std::string all;
    for (const auto& [key, node] : table) {
      bool known = false;
      for (std::string_view name : allowed) known = known || key.str() == name;
      if (!known) {
        std::vector<std::string> names(allowed.begin(), allowed.end());
        std::string guess = ClosestName(key.str(), names);
        Status error =
            Error(node.source(), path + "." + std::string(key.str()),
                  "unknown key" + (guess.empty() ? "" : "; did you mean \"" + guess + "\"?") +
                      " (allowed: " + Join(allowed) + ")");
        all += (all.empty() ? "" : "\n") + error.message();
      }
    }
    return all.empty() ? Status::Ok() : InvalidArgument(all);
  }

  Result<std::string> String(const toml::table& table, const std::string& path,
                             std::string_view key, std::optional<std::string> fallback) const {
    const toml::node* node = table.get(key);
    std::string field = path + "." + std::string(key);
    if (node == nullptr) {
      if (fallback) return *fallback;
      return Error(table.source(), field, "required");
    }
    if (!node->is_string()) {
      return Error(node->source(), field, "must be a string, got " + Describe(*node));
    }
    std::string value(*node->value<std::string>());
    if (value.empty()) return Error(node->source(), field, "must not be empty");
    return value;
  }

  // An array of non-empty strings.
  Result<std::vector<std::string>> Strings(const toml::node& node, const std::string& field) const {
    if (!node.is_array()) {
      return Error(node.source(), field, "must be an array of strings, got " + Describe(node));
    }
    std::vector<std::string> out;
    for (const toml::node& item : *node.as_array()) {
      std::string at = field + "[" + std::to_string(out.size()) + "]";
      if (!item.is_string())
        return Error(item.source(), at, "must be a string, got " + Describe(item));
      out.emplace_back(*item.value<std::string>());
      if (out.back().empty()) return Error(item.source(), at, "must not be empty");
    }
    return out;
  }

  Result<std::int64_t> Int(const toml::table& table, const std::string& path, std::string_view key,
                           std::int64_t fallback, std::int64_t min,
                           std::int64_t max = INT32_MAX) const {
    const toml::node* node = table.get(key);
    std::string field = path + "." + std::string(key);
    if (node == nullptr) return fallback;
    if (!node->is_integer()) {
      return Error(node->source(), field, "must be an integer, got " + Describe(*node));
    }
    std::int64_t value = *node->value<std::int64_t>();
    if (value < min || value > max) {
      return Error(node->source(), field,
                   "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                       std::to_string(value));
    }
    return value;
  }

 private:
  static std::string Join(std::initializer_list<std::string_view> names) {
    std::string out;
    for (std::string_view name : names) out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
  }

  std::string file_;
};

inline std::string Resolve(const std::string& base_dir, const std::string& path) {
  std::filesystem::path resolved(path);
  if (resolved.is_relative()) resolved = std::filesystem::path(base_dir) / resolved;
  return resolved.lexically_normal().string();
}

// Every mistake of the config, then one status naming them all in file order (each
// message starts with FILE:LINE:COLUMN), as the coordinator's config does.
class Mistakes {
 public:
  explicit Mistakes(std::string file) : file_(std::move(file)) {}
  void Note(const Status& status) {
    if (!status.ok()) all_.push_back(status.message());
  }
  // The value of `result`, or `fallback` after noting why there is none.
  template <typename T, typename U>
  T Take(Result<T> result, U fallback) {
    if (result.ok()) return std::move(*result);
    Note(result.status());
    return T(std::move(fallback));
  }
  bool empty() const { return all_.empty(); }
  std::size_t size() const { return all_.size(); }
  Status Combined() const { return MistakesInFileOrder(all_, file_); }

 private:
  std::string file_;
  std::vector<std::string> all_;
};

}  // namespace orch::agent::config_fields
