// The exposition writer against golden text in the Prometheus 0.0.4 text format.
#include "telemetry/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace orch::telemetry {
namespace {

TEST(ExpositionTest, WritesCountersGaugesAndHistogramsAsGoldenText) {
  ExpositionWriter w;
  w.Family("orch_jobs", MetricType::kGauge, "Jobs by experiment and state.");
  w.Sample("orch_jobs", {{"experiment", "e1"}, {"state", "succeeded"}}, 3);
  w.Sample("orch_jobs", {{"experiment", "e1"}, {"state", "pending"}}, 0);
  w.Single("orch_assignments_total", MetricType::kCounter, "Runs assigned.", 12);
  Histogram h({0.1, 1, 2.5});
  h.Observe(0.05);
  h.Observe(0.1);  // an upper bound is inclusive
  h.Observe(2);
  h.Observe(7);
  w.Family("orch_message_seconds", MetricType::kHistogram, "Handling time.");
  w.HistogramSamples("orch_message_seconds", {{"daemon", "coordinator"}}, h);
  EXPECT_EQ(w.Take(),
            "# HELP orch_jobs Jobs by experiment and state.\n"
            "# TYPE orch_jobs gauge\n"
            "orch_jobs{experiment=\"e1\",state=\"succeeded\"} 3\n"
            "orch_jobs{experiment=\"e1\",state=\"pending\"} 0\n"
            "# HELP orch_assignments_total Runs assigned.\n"
            "# TYPE orch_assignments_total counter\n"
            "orch_assignments_total 12\n"
            "# HELP orch_message_seconds Handling time.\n"
            "# TYPE orch_message_seconds histogram\n"
            "orch_message_seconds_bucket{daemon=\"coordinator\",le=\"0.1\"} 2\n"
            "orch_message_seconds_bucket{daemon=\"coordinator\",le=\"1\"} 2\n"
            "orch_message_seconds_bucket{daemon=\"coordinator\",le=\"2.5\"} 3\n"
            "orch_message_seconds_bucket{daemon=\"coordinator\",le=\"+Inf\"} 4\n"
            "orch_message_seconds_sum{daemon=\"coordinator\"} 9.15\n"
            "orch_message_seconds_count{daemon=\"coordinator\"} 4\n");
  EXPECT_EQ(w.Take(), "");  // taken
}

TEST(ExpositionTest, EscapesHelpAndLabelValues) {
  ExpositionWriter w;
  w.Family("orch_x", MetricType::kGauge, "a \\ b\nc \"d\"");
  w.Sample("orch_x", {{"reason", "bad \"quote\" \\ and\nnewline"}}, 1.5);
  EXPECT_EQ(w.Take(),
            "# HELP orch_x a \\\\ b\\nc \"d\"\n"
            "# TYPE orch_x gauge\n"
            "orch_x{reason=\"bad \\\"quote\\\" \\\\ and\\nnewline\"} 1.5\n");
}

TEST(ExpositionTest, FormatsSpecialValues) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(1e20), "1e+20");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(ExpositionDeathTest, RefusesNamesOutsideTheGrammar) {
  ExpositionWriter w;
  EXPECT_DEATH(w.Family("orch-jobs", MetricType::kGauge, "x"), "");
  EXPECT_DEATH(w.Sample("orch_jobs", {{"bad:label", "v"}}, 1), "");
}

}  // namespace
}  // namespace orch::telemetry
