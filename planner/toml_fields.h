// Internal to planner/: typed, position-aware field access on toml++ tables. Every
// accessor reports a problem into the Diagnostics (field path, value, expectation) and
// returns nullopt instead of failing, so that parsing goes on and finds every problem.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "planner/axis_value.h"
#include "planner/diagnostics.h"

namespace orch::planner {

SourcePos PosOf(const toml::node& node);
std::string JoinPath(const std::string& path, std::string_view key);
std::string Indexed(const std::string& path, std::size_t index);
// A short rendering of a TOML value for messages: "\"text\"", 3, true, "a table".
std::string DescribeNode(const toml::node& node);
// A scalar TOML value as an AxisValue; nullopt for tables, arrays and dates.
std::optional<AxisValue> ScalarOf(const toml::node& node);

class TomlFields {
 public:
  explicit TomlFields(Diagnostics& diagnostics) : diagnostics_(diagnostics) {}

  // Reports every key of `table` not in `allowed`.
  void CheckKeys(const toml::table& table, const std::string& path,
                 std::initializer_list<std::string_view> allowed);

  std::optional<std::string> String(const toml::table& table, const std::string& path,
                                    std::string_view key, bool required);
  std::optional<std::int64_t> Int(const toml::table& table, const std::string& path,
                                  std::string_view key, bool required, std::int64_t min,
                                  std::int64_t max);
  const toml::table* Table(const toml::table& table, const std::string& path, std::string_view key,
                           bool required);
  const toml::array* Array(const toml::table& table, const std::string& path, std::string_view key);

  Diagnostics& diagnostics() { return diagnostics_; }

 private:
  Diagnostics& diagnostics_;
};

}  // namespace orch::planner
