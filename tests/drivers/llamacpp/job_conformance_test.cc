// The llama.cpp driver's verdict on every job document of tests/data/job-conformance.json,
// the table the Python SDK's tests run too: both drivers read the job alike.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "drivers/llamacpp/job_settings.h"

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::json;

json ConformanceCases() {
  std::ifstream in(ORCH_SOURCE_DIR "/tests/data/job-conformance.json");
  return json::parse(in, nullptr, /*allow_exceptions=*/false)["cases"];
}

// The value a dotted path of the table's `expect` names, as the settings hold it.
std::int64_t ConformanceValue(const JobSettings& settings, const std::string& path) {
  if (path == "capture.top_logits") return settings.capture.top_logits;
  if (path == "capture.full_every") return settings.capture.full_every;
  if (path == "capture.full_row_budget_bytes") return settings.capture.full_row_budget_bytes;
  if (path == "resources.threads") return settings.threads;
  ADD_FAILURE() << "the table expects " << path << ", which this test does not read";
  return -1;
}

TEST(JobConformanceTest, EveryDocumentGetsTheTablesVerdict) {
  json cases = ConformanceCases();
  ASSERT_TRUE(cases.is_array() && !cases.empty());
  for (const json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Result<JobSettings> settings = ParseJob(c["document"].dump());
    std::string verdict = settings.ok() ? "ok" : std::string(ErrorCodeFor(settings.status()));
    EXPECT_EQ(verdict, c["verdict"]) << settings.status().ToString();
    if (!settings.ok()) {
      EXPECT_NE(settings.status().message().find(c.value("message", "")), std::string::npos)
          << settings.status().message();
      continue;
    }
    const json expect = c.value("expect", json::object());
    for (const auto& [path, value] : expect.items()) {
      EXPECT_EQ(ConformanceValue(*settings, path), value.get<std::int64_t>()) << path;
    }
  }
}

}  // namespace
}  // namespace orch::drivers::llamacpp
