// spec_fuzzer: one input is the text of an experiment spec (docs/spec.md). The
// planner parses, validates and expands it with an in-memory SourceReader that
// holds one text file; any result is fine except a crash. A spec that plans
// must give orch.plan/1 JSON that the coordinator accepts
// (coordinator/plan_catalog.h), naming the same jobs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "coordinator/plan_catalog.h"
#include "fuzz/fuzz_check.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"
#include "tests/support/map_source_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  orch::testing::MapSourceReader reader(orch::planner::SourceScope::kSpecDirOnly);
  // Long enough for the seeds' 256 positions (the planner refuses a text shorter
  // than its positions could be with any tokenizer).
  std::string fox;
  while (fox.size() < 300) fox += "The quick brown fox jumps over the lazy dog. ";
  reader.Add("texts/fox.txt", fox);
  orch::planner::PlanOutcome outcome = orch::planner::PlanSpec(text, "spec.toml", reader);
  if (!outcome.plan.has_value()) return 0;
  std::string json = orch::planner::PlanToJson(*outcome.plan);
  orch::Result<orch::coordinator::ParsedPlan> parsed = orch::coordinator::ParsePlanJson(json);
  if (!parsed.ok()) std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
  FUZZ_EXPECT(parsed.ok());
  FUZZ_EXPECT(parsed->jobs.size() == outcome.plan->jobs.size());
  return 0;
}
