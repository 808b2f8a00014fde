// The job document's field table (plan_document/job_fields.h) and its copy in the Python
// SDK (drivers/python/orch_driver/job_fields.py), which this test keeps equal.
#include "plan_document/job_fields.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace orch::plan_document {
namespace {

// The SDK's table as JobIntegerFields() says it must read.
std::string PythonTable() {
  std::string out = "INTEGER_FIELDS = {\n";
  for (const IntegerField& field : JobIntegerFields()) {
    out += "    \"" + std::string(field.path) + "\": (" + std::to_string(field.min) + ", " +
           std::to_string(field.max) + ", " + std::to_string(field.fallback) + "),\n";
  }
  return out + "}\n";
}

std::string SdkTable() {
  std::ifstream in(ORCH_SOURCE_DIR "/drivers/python/orch_driver/job_fields.py");
  std::stringstream text;
  text << in.rdbuf();
  std::string file = text.str();
  const std::string begin = "# BEGIN job_fields\n";
  std::size_t from = file.find(begin);
  std::size_t to = file.find("# END job_fields");
  if (from == std::string::npos || to == std::string::npos) return "(no table in " + file + ")";
  return file.substr(from + begin.size(), to - from - begin.size());
}

TEST(JobFieldsTest, ThePythonSdkCarriesTheSameTable) {
  EXPECT_EQ(SdkTable(), PythonTable())
      << "paste the expected text between the markers of orch_driver/job_fields.py";
}

TEST(JobFieldsTest, DefaultsLieWithinTheirLimits) {
  for (const IntegerField& field : JobIntegerFields()) {
    EXPECT_TRUE(CheckRange(field, field.fallback).ok()) << field.path;
  }
}

TEST(JobFieldsTest, AnOutOfRangeValueNamesTheFieldTheLimitsAndTheValue) {
  EXPECT_TRUE(CheckRange(kTopLogits, kTopLogits.max).ok());
  Status status = CheckRange(kTopLogits, 2000);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), std::string(kTopLogits.path) + ": expected 1 to 1024, got 2000");
  EXPECT_EQ(CheckRange(kFullEvery, -1, "workloads[0].capture.full_every").message(),
            "workloads[0].capture.full_every: expected 0 to 16777216, got -1");
}

}  // namespace
}  // namespace orch::plan_document
