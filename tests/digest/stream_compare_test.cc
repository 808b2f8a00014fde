#include "digest/stream_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

constexpr std::size_t kVocab = 512;

// A teacher-forced run: one row per position; target of position i is token i.
struct Run {
  std::vector<std::vector<float>> rows;
  std::vector<RowDigest> digests;
  std::vector<FullRow> full_rows;

  void Add(std::vector<float> row) {
    RowDigest d;
    const auto target = static_cast<std::int32_t>(rows.size() % kVocab);
    EXPECT_TRUE(ComputeRowDigest(row, {kDefaultTopK, target}, &d).ok());
    digests.push_back(std::move(d));
    rows.push_back(std::move(row));
  }
  void KeepFullRow(std::uint64_t position) { full_rows.push_back({position, rows[position]}); }
  DigestStream Stream() const { return {digests, full_rows}; }
};

// `n` positions; `edit` may change the other side's row at each position.
template <typename Edit>
std::pair<Run, Run> Runs(std::size_t n, Edit edit) {
  testing::RowGenerator gen(77);
  Run p, q;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<float> row = gen.Row(kVocab, 2.0, 4.0);
    p.Add(row);
    edit(i, row);
    q.Add(std::move(row));
  }
  return {std::move(p), std::move(q)};
}

StreamComparison Compare(const Run& p, const Run& q) {
  Result<StreamComparison> c = CompareStreams(p.Stream(), q.Stream());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *std::move(c) : StreamComparison{};
}

// Swaps the top two logits: a top-1 flip.
void Flip(std::vector<float>& row) {
  auto first = std::max_element(row.begin(), row.end());
  const float top = *first;
  *first = -1e9f;
  auto second = std::max_element(row.begin(), row.end());
  *first = *second;
  *second = top;
}

TEST(CompareStreamsTest, IdenticalRunsNeverDiverge) {
  auto [p, q] = Runs(20, [](std::size_t, std::vector<float>&) {});
  const StreamSummary s = Compare(p, q).summary;
  EXPECT_FALSE(s.first_divergence.has_value());
  EXPECT_EQ(s.common_prefix, 20u);
  EXPECT_EQ(s.identical_rows, 20u);
  EXPECT_EQ(s.top1_agreement, 1.0);
  EXPECT_EQ(s.kld.max, 0.0);
  EXPECT_EQ(s.rms_delta_p, 0.0);
  EXPECT_EQ(s.ppl_ratio, 1.0);
  EXPECT_EQ(s.ppl_reference, s.ppl_other);
}

// A run recorded with digest v1 against a rerun with v2 on the same rows:
// nothing differs but the versions, and the summary says so.
TEST(CompareStreamsTest, RunsThatDifferOnlyInDigestVersionNeverDiverge) {
  auto [p, q] = Runs(20, [](std::size_t, std::vector<float>&) {});
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const auto target = static_cast<std::int32_t>(i % kVocab);
    ASSERT_TRUE(
        ComputeRowDigest(p.rows[i], {kDefaultTopK, target, DigestVersion::kV1}, &p.digests[i])
            .ok());
  }
  ASSERT_EQ(q.digests[0].version, DigestVersion::kV2);
  const StreamSummary s = Compare(p, q).summary;
  EXPECT_FALSE(s.first_divergence.has_value());
  EXPECT_EQ(s.identical_rows, 20u);
  EXPECT_EQ(s.kld.max, 0.0);
  EXPECT_EQ(s.mean_delta_p, 0.0);
  EXPECT_EQ(s.rms_delta_p, 0.0);
  EXPECT_EQ(s.ppl_ratio, 1.0);
  EXPECT_EQ(s.ppl_reference, s.ppl_other);
}

TEST(CompareStreamsTest, FindsTheFirstDivergenceAndCountsTopOneFlips) {
  auto [p, q] = Runs(10, [](std::size_t i, std::vector<float>& row) {
    if (i == 6) row[3] += 1e-3f;  // bits differ, top-1 kept
    if (i == 7 || i == 9) Flip(row);
  });
  const StreamComparison c = Compare(p, q);
  EXPECT_EQ(c.summary.first_divergence, 6u);
  EXPECT_EQ(c.summary.common_prefix, 6u);
  EXPECT_EQ(c.summary.identical_rows, 7u);
  EXPECT_EQ(c.summary.top1_agreement, 0.8);
  EXPECT_EQ(c.summary.same_top_p, 0.8);
  EXPECT_FALSE(c.positions[7].same_top1);
  EXPECT_GT(c.summary.kld.max, 0.0);
  EXPECT_EQ(c.summary.kld.count, 10u);
}

TEST(CompareStreamsTest, ComparesTheCommonLengthOfRunsOfDifferentLength) {
  auto [p, q] = Runs(8, [](std::size_t, std::vector<float>&) {});
  q.digests.resize(5);
  const StreamSummary s = Compare(p, q).summary;
  EXPECT_EQ(s.reference_length, 8u);
  EXPECT_EQ(s.other_length, 5u);
  EXPECT_EQ(s.compared, 5u);
  EXPECT_FALSE(s.first_divergence.has_value());
}

TEST(CompareStreamsTest, UsesExactKldWhereBothSidesKeptTheFullRow) {
  auto [p, q] = Runs(6, [](std::size_t, std::vector<float>& row) { row[0] += 0.5f; });
  p.KeepFullRow(2);
  p.KeepFullRow(4);
  q.KeepFullRow(4);
  const StreamComparison c = Compare(p, q);
  EXPECT_EQ(c.summary.kld.exact_count, 1u);
  EXPECT_EQ(c.positions[4].kld_method, KldMethod::kExact);
  EXPECT_EQ(c.positions[2].kld_method, KldMethod::kTopK);
}

TEST(CompareStreamsTest, RejectsFullRowsOutOfOrder) {
  auto [p, q] = Runs(6, [](std::size_t, std::vector<float>&) {});
  p.KeepFullRow(4);
  p.KeepFullRow(2);
  EXPECT_EQ(CompareStreams(p.Stream(), q.Stream()).status().code(), StatusCode::kInvalidArgument);
}

TEST(CompareStreamsTest, NanRowsCountAgainstTopOneAgreementOnlyWhenArgmaxDiffers) {
  auto [p, q] = Runs(4, [](std::size_t i, std::vector<float>& row) {
    if (i == 1) row[0] = std::numeric_limits<float>::quiet_NaN();
  });
  const StreamSummary s = Compare(p, q).summary;
  EXPECT_EQ(s.scored, 3u);
  EXPECT_EQ(s.kld.count, 3u);
  EXPECT_EQ(s.target_count, 3u);
  EXPECT_EQ(s.first_divergence, 1u);
}

PositionComparison Scored(double kld, double delta_p, double nll_p, double nll_q) {
  PositionComparison c;
  c.scored = true;
  c.same_top1 = true;
  c.kld_method = KldMethod::kTopK;
  c.kld = kld;
  c.delta_p = delta_p;
  c.nll_reference = nll_p;
  c.nll_other = nll_q;
  return c;
}

TEST(SummarizeTest, KldStatisticsFollowLlamaPerplexity) {
  std::vector<PositionComparison> positions;
  for (int i = 0; i < 100; ++i) positions.push_back(Scored(i, 0, 1, 1));
  const KldStats kld = Summarize(positions, 100, 100).kld;
  EXPECT_EQ(kld.count, 100u);
  EXPECT_DOUBLE_EQ(kld.mean, 49.5);
  EXPECT_DOUBLE_EQ(kld.median, 49.5);  // mean of the middle pair
  EXPECT_DOUBLE_EQ(kld.p99, 98.01);    // rank 0.99 * 99
  EXPECT_EQ(kld.max, 99.0);
}

TEST(SummarizeTest, RmsDeltaPAndPerplexitiesFollowLlamaPerplexity) {
  const std::vector<PositionComparison> positions = {
      Scored(0, 0.1, 1.0, 2.0), Scored(0, -0.2, 2.0, 2.0), Scored(0, 0.2, 3.0, 3.5)};
  const StreamSummary s = Summarize(positions, 3, 3);
  EXPECT_EQ(s.target_count, 3u);
  EXPECT_DOUBLE_EQ(s.rms_delta_p, std::sqrt((0.01 + 0.04 + 0.04) / 3));
  EXPECT_DOUBLE_EQ(s.mean_delta_p, 0.1 / 3);
  EXPECT_DOUBLE_EQ(s.ppl_reference, std::exp(2.0));
  EXPECT_DOUBLE_EQ(s.ppl_other, std::exp(2.5));
  EXPECT_DOUBLE_EQ(s.ppl_ratio, std::exp(0.5));
}

TEST(SummarizeTest, SameTopPCountsOnlyScoredPositions) {
  std::vector<PositionComparison> positions(4, Scored(0, 0, 1, 1));
  positions[0].scored = false;  // a NaN row whose argmax still differs
  positions[0].kld_method = KldMethod::kNone;
  positions[0].same_top1 = false;
  positions[1].same_top1 = false;
  const StreamSummary s = Summarize(positions, 4, 4);
  EXPECT_EQ(s.top1_agreement, 0.5);
  EXPECT_DOUBLE_EQ(s.same_top_p, 2.0 / 3);
}

TEST(SummarizeTest, EmptyComparisonHasUndefinedFractions) {
  const StreamSummary s = Summarize({}, 0, 0);
  EXPECT_TRUE(std::isnan(s.top1_agreement));
  EXPECT_TRUE(std::isnan(s.kld.mean));
  EXPECT_EQ(s.common_prefix, 0u);
}

}  // namespace
}  // namespace orch::digest
