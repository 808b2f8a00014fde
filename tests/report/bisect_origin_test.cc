// Where `orch bisect A B` starts (report/bisect_origin.h), on the contributed experiment's
// stored runs: two runs of one job on other hosts, compared and their hosts told apart;
// with the bisection's KLD(to, from), what the axes reproduce and the rest: host/hardware.
#include "report/bisect_origin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/render.h"
#include "report/tables.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class BisectOriginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildContributedExperiment(*store_);
    source_ = MakeStoreRunSource(*store_);
  }

  // B's run `b` against A's run `a`, both of the contributed quant=q8_0 job.
  BisectOrigin Origin(const std::string& a, const std::string& b, bool same_coordinate) {
    Result<store::RunRecord> ra = store_->GetRun(a);
    Result<store::RunRecord> rb = store_->GetRun(b);
    EXPECT_TRUE(ra.ok() && rb.ok());
    BisectOrigin origin;
    origin.a = {a, "contributed", ra->job_id, "quant=q8_0", "wiki", 0};
    origin.b = {b, "contributed", rb->job_id, "quant=q8_0", "wiki", 0};
    RunIdentities identities(*source_);
    origin.a.run = identities.Of(*ra);
    origin.b.run = identities.Of(*rb);
    origin.same_coordinate = same_coordinate;
    CompareOriginRuns(*source_, &*ra, &*rb, false, origin);
    return origin;
  }

  std::string Text(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& line : lines) out += line + "\n";
    return out;
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  std::unique_ptr<RunSource> source_;
};

// The lab's run on fp-a against bob's on fp-b (another CPU), differing from position 25.
TEST_F(BisectOriginTest, RunsOnTwoHostsAreComparedAndTheRestIsTheHosts) {
  BisectOrigin origin = Origin("run-q-lab", "run-q-bob", false);
  EXPECT_FALSE(origin.same_host());
  EXPECT_EQ(origin.compared.note, "");
  EXPECT_FALSE(origin.compared.same_stream);
  ASSERT_TRUE(origin.compared.first_difference.has_value());
  EXPECT_EQ(*origin.compared.first_difference, 25u);
  EXPECT_GT(origin.compared.kld_mean, 0.0);
  const double total = origin.compared.kld_mean / 4;
  std::string text = Text(BisectOriginLines(origin, total));
  EXPECT_THAT(text, HasSubstr("from (run-q-lab, A): run run-q-lab, experiment contributed, cell "
                              "quant=q8_0, workload wiki, repeat 0, on host fp-a\n"));
  EXPECT_THAT(text, HasSubstr("to (run-q-bob, B): run run-q-bob, experiment contributed, cell "
                              "quant=q8_0, workload wiki, repeat 0, on host fp-b, from bob\n"));
  EXPECT_THAT(text, HasSubstr("first difference at position 25"));
  EXPECT_THAT(text, HasSubstr("hosts: A ran on fp-a, B on fp-b; they differ in host: "));
  EXPECT_THAT(text, HasSubstr("the rest: host/hardware: on this machine the axes give KLD(to, "
                              "from) " +
                              FormatKld(total) + ", where A and B ran " +
                              FormatKld(origin.compared.kld_mean) + " (25.00% of it)"));

  // The same coordinate on two hosts: nothing an axis could explain.
  std::string same = Text(BisectOriginLines(Origin("run-q-lab", "run-q-bob", true), std::nullopt));
  EXPECT_THAT(same, HasSubstr("the rest: host/hardware: A and B ran the same coordinate, workload "
                              "and model, so no axis can explain their divergence"));
  nlohmann::json json =
      nlohmann::json::parse(RenderOriginJson(Origin("run-q-lab", "run-q-bob", true)));
  EXPECT_EQ(json["verdict"], "same_coordinate");
  EXPECT_EQ(json["origin"]["same_host"], false);
  EXPECT_EQ(json["origin"]["first_difference"], 25);
  EXPECT_EQ(json["origin"]["b"]["run"]["contributor"], "bob");
  EXPECT_TRUE(json["origin"]["reproduced_share"].is_null());
}

// A job without a finished run on one side: a note, not an error, and no rest to tell.
TEST_F(BisectOriginTest, AMissingRunIsSaidAndNothingIsCompared) {
  BisectOrigin origin;
  origin.a = {"job-x", "contributed", "job-x", "baseline", "wiki", 0};
  Result<store::RunRecord> b = store_->GetRun("run-q-lab");
  ASSERT_TRUE(b.ok());
  CompareOriginRuns(*source_, nullptr, &*b, false, origin);
  EXPECT_EQ(origin.compared.note, "A's job has no finished run in the store to compare");
  std::string text = Text(BisectOriginLines(origin, 0.5));
  EXPECT_THAT(text, HasSubstr("from (job-x, A): job job-x (no finished run)"));
  EXPECT_THAT(text, HasSubstr("A and B where they ran: not compared: A's job has no finished run"));
  EXPECT_THAT(text, Not(HasSubstr("the rest")));
}

}  // namespace
}  // namespace orch::report
