// Helpers for planner tests: run the real parser and expander on spec text.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "planner/plan.h"
#include "tests/support/map_source_reader.h"
#include "tests/support/spec_text.h"

namespace orch::planner {

inline PlanOutcome PlanText(const std::string& text) {
  testing::MapSourceReader reader;
  return PlanSpec(text, "unit.toml", reader);
}

// Every diagnostic formatted as the CLI prints it.
inline std::vector<std::string> Messages(const PlanOutcome& outcome) {
  std::vector<std::string> out;
  for (const Diagnostic& d : outcome.diagnostics.all()) out.push_back(d.Format("unit.toml"));
  return out;
}

inline std::vector<std::string> ErrorsOf(const std::string& text) {
  PlanOutcome outcome = PlanText(text);
  std::vector<std::string> out;
  for (const Diagnostic& d : outcome.diagnostics.errors()) out.push_back(d.Format("unit.toml"));
  return out;
}

// The one plan of a valid spec; fails the test (and returns an empty plan) otherwise.
inline Plan MustPlan(const std::string& text) {
  PlanOutcome outcome = PlanText(text);
  for (const std::string& m : Messages(outcome)) ADD_FAILURE() << m;
  return outcome.plan ? *outcome.plan : Plan{};
}

}  // namespace orch::planner

namespace orch::planner {

// "unit.toml:LINE:COL" of the first occurrence of `needle` in `text` (1-based), for
// checking that a message points at the value that is wrong.
inline std::string At(const std::string& text, const std::string& needle) {
  std::size_t offset = text.find(needle);
  EXPECT_NE(offset, std::string::npos) << needle;
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "unit.toml:" + std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace orch::planner
