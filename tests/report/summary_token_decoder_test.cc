// Token text from the runs' summaries: the decoder alone, then `orch report`'s use of it
// (the standard experiment with summaries like the llama.cpp driver's on its runs).
#include "report/summary_token_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/render.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using ::testing::HasSubstr;

store::RunRecord RunWithSummary(const std::string& id, const std::string& summary) {
  store::RunRecord run;
  run.id = id;
  run.job_id = "job-" + id;
  run.summary = summary;
  return run;
}

// A summary as the agent forwards it: driver, hello, done (with token_text), exit.
std::string Summary(const std::string& token_text) {
  return R"({"driver":"llamacpp","hello":{"engine":"llama.cpp"},"done":{"positions":40,)"
         R"("token_text":)" +
         token_text + R"(},"records":40,"exit":"exit status 0"})";
}

TEST(SummaryTokenDecoderTest, DecodesEveryTokenNamedByTheRunsSummaries) {
  auto decoder = MakeSummaryTokenDecoder({RunWithSummary("a", Summary(R"({"2":" math"})")),
                                          RunWithSummary("b", Summary(R"({"3":" arithmetic",)"
                                                                      R"("10":"\n"})"))});
  EXPECT_EQ(decoder->Decode(2), " math");
  EXPECT_EQ(decoder->Decode(3), " arithmetic");
  EXPECT_EQ(decoder->Decode(10), "\n");
  EXPECT_EQ(decoder->Decode(4), std::nullopt);
  EXPECT_EQ(decoder->Decode(-1), std::nullopt);
}

TEST(SummaryTokenDecoderTest, ATokenTheRunsDecodeDifferentlyIsNotDecoded) {
  auto decoder = MakeSummaryTokenDecoder({RunWithSummary("a", Summary(R"({"2":"math","5":"x"})")),
                                          RunWithSummary("b", Summary(R"({"2":"Math","5":"x"})")),
                                          RunWithSummary("c", Summary(R"({"2":"math"})"))});
  EXPECT_EQ(decoder->Decode(2), std::nullopt);  // two vocabularies: no guess
  EXPECT_EQ(decoder->Decode(5), "x");           // agreeing runs decode
}

TEST(SummaryTokenDecoderTest, RunsWithoutATableOrWithAMalformedOneContributeNothing) {
  auto decoder = MakeSummaryTokenDecoder({
      RunWithSummary("empty", ""),
      RunWithSummary("not-json", "{\"done\":"),
      RunWithSummary("no-done", R"j({"hello":{},"exit":"killed by signal 9 (Killed)"})j"),
      RunWithSummary("done-null", R"({"done":null})"),
      RunWithSummary("table-array", Summary("[1, 2]")),
      RunWithSummary("bad-entries", Summary(R"({"x":"a","-1":"b","7":5,"8 ":"c","9":"ok"})")),
  });
  for (int id : {-1, 0, 1, 2, 7, 8}) EXPECT_EQ(decoder->Decode(id), std::nullopt) << id;
  EXPECT_EQ(decoder->Decode(9), "ok");
}

// The standard experiment (tests/report/report_fixture.h) with the summaries its runs
// would carry from a real driver, each naming some tokens of one vocabulary: at the first
// flip of attention=on the baseline's argmax is 2 and the cell's 3; where sampler.seed=43
// departs, the baseline generated 3 and the cell 7.
class SummaryTokenTextReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildStandardExperiment(*store_);
    Result<ExperimentInput> input = LoadExperiment(*store_, "standard");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    for (store::RunRecord& run : input->runs) {
      if (run.id == "run-b0") run.summary = Summary(R"({"0":"A","2":" math"})");
      if (run.id == "run-att") run.summary = Summary(R"({"0":"A","3":" arithmetic"})");
      if (run.id == "run-g0") run.summary = Summary(R"({"3":" arithmetic"})");
      if (run.id == "run-seed") run.summary = Summary(R"({"7":"\n"})");
    }
    std::unique_ptr<TokenDecoder> decoder = MakeSummaryTokenDecoder(input->runs);
    std::unique_ptr<RunSource> source = MakeStoreRunSource(*store_);
    Result<Report> report = BuildReport(*input, *source, ReportOptions{decoder.get()});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(report).value();
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  Report report_;
};

TEST_F(SummaryTokenTextReportTest, TheFirstFlipShowsBothTokensDecoded) {
  const CellReport& att = report_.workloads[0].cells[0];
  ASSERT_EQ(att.cell.label, "attention=on");
  ASSERT_TRUE(att.first_flip_reference && att.first_flip_other);
  EXPECT_EQ(att.first_flip_reference->id, 2);
  EXPECT_EQ(att.first_flip_reference->text, " math");
  EXPECT_EQ(att.first_flip_other->id, 3);
  EXPECT_EQ(att.first_flip_other->text, " arithmetic");
  EXPECT_THAT(RenderText(report_, testing::kUnwrapped),
              HasSubstr("position 10: 2 \" math\" / 3 \" arithmetic\""));
  EXPECT_THAT(RenderJson(report_), HasSubstr(R"("reference": {
                "id": 2,
                "text": " math"
              },
              "other": {
                "id": 3,
                "text": " arithmetic"
              })"));
  EXPECT_THAT(RenderCsv(report_), HasSubstr(", math, arithmetic,,,"));
  EXPECT_THAT(RenderHtml(report_), HasSubstr("2 &quot; math&quot; / 3 &quot; arithmetic&quot;"));
}

// The flip table shows each flip's tokens with their text, after the input tokens that led
// to it (positions 7..10 of the standard experiment: input ids 7 "\n", 0 "A", 1 (unknown),
// 2 " math").
TEST_F(SummaryTokenTextReportTest, TheFlipTableShowsTokenTextWithItsContext) {
  const std::string text = RenderText(report_, testing::kUnwrapped);
  EXPECT_THAT(text, HasSubstr("attention=on  10        \"\\nA<1> math\"  "));
  EXPECT_THAT(text, HasSubstr("  2 \" math\"        3 \" arithmetic\"  0.2000"));
  const std::string json = RenderJson(report_);
  EXPECT_THAT(json, HasSubstr(R"("context": [
                    {
                      "id": 7,
                      "text": "\n"
                    },
                    {
                      "id": 0,
                      "text": "A"
                    },)"));
}

TEST_F(SummaryTokenTextReportTest, TheFirstDifferingGeneratedTokenShowsBothTexts) {
  const CellReport& seed = report_.workloads[1].cells[0];
  ASSERT_EQ(seed.cell.label, "sampler.seed=43");
  ASSERT_TRUE(seed.generated_reference && seed.generated_other);
  EXPECT_EQ(seed.generated_reference->text, " arithmetic");
  EXPECT_EQ(seed.generated_other->text, "\n");
  // A newline token is escaped so that the table row stays one line.
  EXPECT_THAT(RenderText(report_, testing::kUnwrapped),
              HasSubstr("token 3: 3 \" arithmetic\" / 7 \"\\n\""));
  EXPECT_THAT(RenderCsv(report_), HasSubstr(", arithmetic,\"\n\","));
}

}  // namespace
}  // namespace orch::report
