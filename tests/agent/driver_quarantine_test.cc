// When a driver's runs count as start-up faults, and when they quarantine it.
#include "agent/driver_quarantine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::agent {
namespace {

using namespace std::chrono_literals;
using protocol::RunStatus;
using ::testing::HasSubstr;

RunEnding Fault(std::string error = "driver d: exit status 1") {
  return {RunStatus::kFailed, 0, "", 20ms, std::move(error)};
}

TEST(DriverQuarantineTest, AFastFailureWithoutRecordsIsAStartUpFault) {
  EXPECT_TRUE(IsStartupFault(Fault(), 5000ms));
  EXPECT_TRUE(IsStartupFault({RunStatus::kFailed, 0, "engine_error", 20ms, ""}, 5000ms))
      << "an engine error is the driver's, not the job's";
}

TEST(DriverQuarantineTest, JobErrorsRecordsSlownessAndOtherEndingsAreNotFaults) {
  for (const char* code :
       {"invalid_job", "invalid_combination", "model_missing", "sha256_mismatch"}) {
    EXPECT_FALSE(IsStartupFault({RunStatus::kFailed, 0, code, 20ms, ""}, 5000ms)) << code;
  }
  EXPECT_FALSE(IsStartupFault({RunStatus::kFailed, 1, "", 20ms, ""}, 5000ms));
  EXPECT_FALSE(IsStartupFault({RunStatus::kFailed, 0, "", 6000ms, ""}, 5000ms));
  EXPECT_FALSE(IsStartupFault({RunStatus::kTimedOut, 0, "", 20ms, ""}, 5000ms));
  EXPECT_FALSE(IsStartupFault({RunStatus::kSucceeded, 0, "", 20ms, ""}, 5000ms));
}

TEST(DriverQuarantineTest, QuarantinesOnTheThirdFaultInARowOnce) {
  DriverQuarantine quarantine({.faults_in_a_row = 3, .fast = 5000ms});
  EXPECT_FALSE(quarantine.Observe("d", Fault()));
  EXPECT_FALSE(quarantine.Observe("d", Fault()));
  EXPECT_FALSE(quarantine.quarantined("d"));
  EXPECT_TRUE(quarantine.Observe("d", Fault("driver d: killed by signal 11\n  log")));
  EXPECT_TRUE(quarantine.quarantined("d"));
  EXPECT_EQ(quarantine.reason("d"),
            "3 runs in a row failed within 5000 ms of launch without a record; "
            "the last: "
            "driver d: killed by signal 11");
  EXPECT_FALSE(quarantine.Observe("d", Fault())) << "reported once";
}

TEST(DriverQuarantineTest, AHealthyRunResetsTheCountAndACancelledOneDoesNot) {
  DriverQuarantine quarantine({.faults_in_a_row = 2, .fast = 5000ms});
  EXPECT_FALSE(quarantine.Observe("d", Fault()));
  EXPECT_FALSE(quarantine.Observe("d", {RunStatus::kSucceeded, 4, "", 20ms, ""}));
  EXPECT_FALSE(quarantine.Observe("d", Fault()));
  EXPECT_FALSE(quarantine.Observe("d", {RunStatus::kCancelled, 0, "", 20ms, ""}));
  EXPECT_TRUE(quarantine.Observe("d", Fault()));
}

TEST(DriverQuarantineTest, CountsEachDriverApart) {
  DriverQuarantine quarantine({.faults_in_a_row = 2, .fast = 5000ms});
  EXPECT_FALSE(quarantine.Observe("a", Fault()));
  EXPECT_FALSE(quarantine.Observe("b", Fault()));
  EXPECT_TRUE(quarantine.Observe("a", Fault()));
  EXPECT_FALSE(quarantine.quarantined("b"));
  EXPECT_THAT(quarantine.reason("b"), ::testing::IsEmpty());
  EXPECT_THAT(quarantine.reason("a"), HasSubstr("2 runs in a row"));
}

}  // namespace
}  // namespace orch::agent
