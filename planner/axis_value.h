// AxisValue: one typed value of a coordinate axis ("q4_0", 2, 0.6, true), and where in
// the spec it was written.
//
// Values are normalised by the axis registry (planner/axes.h) before they are stored, so
// two values are the same coordinate exactly when they compare equal here.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

namespace orch::planner {

// 1-based line and column in the spec file; 0 when the value did not come from a file.
struct SourcePos {
  int line = 0;
  int column = 0;
  friend bool operator==(const SourcePos&, const SourcePos&) = default;
};

class AxisValue {
 public:
  using Storage = std::variant<std::string, std::int64_t, double, bool>;

  AxisValue() = default;
  static AxisValue String(std::string v) { return AxisValue(Storage(std::move(v))); }
  static AxisValue Int(std::int64_t v) { return AxisValue(Storage(v)); }
  static AxisValue Float(double v) { return AxisValue(Storage(v)); }
  static AxisValue Bool(bool v) { return AxisValue(Storage(v)); }

  const Storage& storage() const { return storage_; }
  bool is_string() const { return std::holds_alternative<std::string>(storage_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(storage_); }
  bool is_float() const { return std::holds_alternative<double>(storage_); }
  bool is_bool() const { return std::holds_alternative<bool>(storage_); }
  const std::string& as_string() const { return std::get<std::string>(storage_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(storage_); }
  double as_float() const { return std::get<double>(storage_); }
  bool as_bool() const { return std::get<bool>(storage_); }

  // Human text: strings as written, integers in decimal, floats in the shortest form
  // that reads back to the same double, booleans as true/false.
  std::string ToText() const;
  // Canonical JSON (planner/canonical_json.h): a quoted, escaped string, or a bare
  // number/boolean; a float as ToText writes it.
  std::string ToCanonicalJson() const;

  friend bool operator==(const AxisValue&, const AxisValue&) = default;

 private:
  explicit AxisValue(Storage storage) : storage_(std::move(storage)) {}
  Storage storage_;
};

// Shortest round-trip decimal form of a double ("0.6", "1e-05", "2").
std::string FormatDouble(double value);

}  // namespace orch::planner
