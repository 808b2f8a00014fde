#include "bisect/bisect.h"

#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::bisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kFour = {"engine", "quant", "kv", "attention"};
constexpr AxisSet kEngine = 1, kQuant = 2, kKv = 4, kAttention = 8;

// A fake engine: each cell's output is one number, a function of which axes it switched;
// the distance between two cells is the squared difference (zero only for equal outputs).
using Output = std::function<double(AxisSet)>;

Distance Between(const Output& output, AxisSet a, AxisSet b) {
  double d = output(a) - output(b);
  return {d * d, 100, 100, d == 0 ? 0u : 7u, d == 0, std::nullopt, -1};
}

void Measure(const Output& output, int axes, AxisSet set, Measures& measures,
             std::optional<double> noise = std::nullopt) {
  CellMeasure& m = measures[set];
  m.from = Between(output, set, 0);
  m.to = Between(output, set, Everything(axes));
  if (noise) m.noise = noise;
}

struct Search {
  Verdict verdict;
  int rounds = 0;
  int cells = 0;
};

// What `orch bisect` does: the first round, then what each verdict asks for, until done.
Search Bisect(const Output& output, const std::vector<std::string>& axes, double end_noise = 0,
              const Options& options = {}) {
  Measures measures;
  int n = static_cast<int>(axes.size());
  std::optional<double> noise = end_noise > 0 ? std::optional(end_noise) : std::nullopt;
  for (AxisSet set : FirstRound(n)) {
    Measure(output, n, set, measures, set == 0 || set == Everything(n) ? noise : std::nullopt);
  }
  Search search{Attribute(axes, measures, options), 1, static_cast<int>(measures.size())};
  while (search.verdict.kind == VerdictKind::kSearching && search.rounds < 10) {
    for (AxisSet set : search.verdict.next) Measure(output, n, set, measures);
    for (AxisSet set : search.verdict.repeat) measures[set].noise = end_noise;
    search.verdict = Attribute(axes, measures, options);
    search.rounds++;
    search.cells = static_cast<int>(measures.size());
  }
  return search;
}

TEST(BisectTest, SetsReadAsTheSideWithFewerNames) {
  EXPECT_EQ(SetLabel(kFour, 0), "from");
  EXPECT_EQ(SetLabel(kFour, 15), "to");
  EXPECT_EQ(SetLabel(kFour, kKv), "from + kv");
  EXPECT_EQ(SetLabel(kFour, kKv | kAttention), "from + kv + attention");
  EXPECT_EQ(SetLabel(kFour, 15 & ~kQuant), "to - quant");
  EXPECT_EQ(SetLabel(kFour, kEngine | kQuant | kKv), "to - attention");
}

TEST(BisectTest, FirstRoundIsEndsSinglesLeaveOneOutAndTheWalk) {
  // from, to, 4 alone, 4 left out, and the one walk step not yet among them (+e+q).
  EXPECT_THAT(FirstRound(4), ElementsAre(0, 15, 1, 2, 4, 8, 14, 13, 11, 7, 3));
  EXPECT_THAT(Walk(3), ElementsAre(0, 1, 3, 7));
  EXPECT_THAT(FirstRound(1), ElementsAre(0, 1));
}

TEST(BisectTest, OneAxisThatMovesTheDistributionIsFoundInTheFirstRound) {
  Search s = Bisect([](AxisSet set) { return set & kKv ? 0.7 : 0.0; }, kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kExplained);
  EXPECT_EQ(s.verdict.explaining, kKv);
  EXPECT_EQ(s.rounds, 1);
  EXPECT_DOUBLE_EQ(s.verdict.total, 0.49);
  EXPECT_DOUBLE_EQ(*s.verdict.sufficient_residual, 0.0);
  EXPECT_DOUBLE_EQ(*s.verdict.necessary_residual, 0.0);
  EXPECT_TRUE(s.verdict.axes[2].moves_alone);
  EXPECT_TRUE(s.verdict.axes[2].moves_in_to);
  EXPECT_FALSE(s.verdict.axes[0].moves_alone);
  EXPECT_TRUE(s.verdict.interactions.empty());
  // The walk shows where the jump is: at + kv (the third step).
  ASSERT_EQ(s.verdict.walk.size(), 5u);
  EXPECT_DOUBLE_EQ(*s.verdict.walk[2].from_kld, 0.0);
  EXPECT_DOUBLE_EQ(*s.verdict.walk[3].from_kld, 0.49);
}

TEST(BisectTest, APairThatActsOnlyTogetherTakesASecondRoundAndIsNamed) {
  // A quantized V cache that matters only with flash attention on.
  Search s =
      Bisect([](AxisSet set) { return (set & kKv) && (set & kAttention) ? 0.6 : 0.0; }, kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kExplained);
  EXPECT_EQ(s.verdict.explaining, kKv | kAttention);
  EXPECT_EQ(s.rounds, 2);
  // Round 2 measured only the pair (its complement, from + engine + quant, is a step of
  // the walk already measured), not every subset.
  EXPECT_EQ(s.cells, 11 + 1);
  EXPECT_FALSE(s.verdict.axes[2].moves_alone);
  EXPECT_TRUE(s.verdict.axes[2].moves_in_to);
  std::string all;
  for (const Interaction& i : s.verdict.interactions) all += i.text + "\n";
  EXPECT_THAT(all, HasSubstr("kv moves the distribution only together with other axes of to"));
  EXPECT_THAT(all, HasSubstr("attention moves the distribution only together"));
  EXPECT_THAT(all,
              HasSubstr("kv and attention act together: alone kv 0, attention 0; together 0.36"));
}

TEST(BisectTest, ASmallAxisWithinTheToleranceIsLeftOut) {
  // quant moves the output by 1, threads-like noise by 0.1: 0.01 of 1.21 is under 5%.
  Search s = Bisect(
      [](AxisSet set) { return (set & kQuant ? 1.0 : 0.0) + (set & kEngine ? 0.1 : 0.0); }, kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kExplained);
  EXPECT_EQ(s.verdict.explaining, kQuant);
  EXPECT_NEAR(*s.verdict.sufficient_residual, 0.01, 1e-12);
  // A tighter tolerance needs both.
  Options strict;
  strict.tolerance = 0.001;
  Search both =
      Bisect([](AxisSet set) { return (set & kQuant ? 1.0 : 0.0) + (set & kEngine ? 0.1 : 0.0); },
             kFour, 0, strict);
  EXPECT_EQ(both.verdict.kind, VerdictKind::kExplained);
  EXPECT_EQ(both.verdict.explaining, kQuant | kEngine);
}

TEST(BisectTest, TwoIndependentAxesTogetherAreTheAnswer) {
  Search s = Bisect(
      [](AxisSet set) { return (set & kQuant ? 1.0 : 0.0) + (set & kKv ? 1.0 : 0.0); }, kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kExplained);
  EXPECT_EQ(s.verdict.explaining, kQuant | kKv);
}

TEST(BisectTest, EndsThatAgreeNeedNoSearch) {
  Search s = Bisect([](AxisSet) { return 0.0; }, kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kAgree);
  EXPECT_TRUE(s.verdict.next.empty());
  // Within the ends' own repeat noise is agreement too.
  Search noisy = Bisect([](AxisSet set) { return set & kKv ? 0.01 : 0.0; }, kFour, 0.001);
  EXPECT_EQ(noisy.verdict.kind, VerdictKind::kAgree);
}

TEST(BisectTest, NoisyEndsAskForTheDecidingCellsOwnRepeats) {
  Measures measures;
  Output output = [](AxisSet set) { return set & kKv ? 0.7 : 0.0; };
  for (AxisSet set : FirstRound(4)) {
    Measure(output, 4, set, measures, set == 0 || set == 15 ? std::optional(0.002) : std::nullopt);
  }
  Verdict v = Attribute(kFour, measures, {});
  EXPECT_EQ(v.kind, VerdictKind::kSearching);
  EXPECT_TRUE(v.next.empty());
  EXPECT_THAT(v.repeat, ElementsAre(kKv, 15 & ~kKv));
  EXPECT_TRUE(v.noise_known);
  EXPECT_DOUBLE_EQ(v.threshold, 0.49 * 0.05);
  measures[kKv].noise = 0.002;
  measures[15 & ~kKv].noise = 0.002;
  v = Attribute(kFour, measures, {});
  EXPECT_EQ(v.kind, VerdictKind::kExplained);
  EXPECT_EQ(v.explaining, kKv);
}

TEST(BisectTest, AnAxisThatAnotherHidesIsSaid) {
  // kv moves `from`, but with flash attention on (to) kv runs as f16 anyway.
  Search s = Bisect(
      [](AxisSet set) {
        double v = set & kQuant ? 1.0 : 0.0;
        if ((set & kKv) && !(set & kAttention)) v += 0.5;
        return v;
      },
      kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kExplained);
  EXPECT_EQ(s.verdict.explaining, kQuant);
  std::string all;
  for (const Interaction& i : s.verdict.interactions) all += i.text + "\n";
  EXPECT_THAT(all, HasSubstr("kv moves from but not to: another axis of to hides its effect"));
}

TEST(BisectTest, WithoutTheEndsMeasuredThereIsNoVerdict) {
  Measures measures;
  measures[kKv].from = Distance{0.5, 10, 10, 1, false, 3, -1};
  Verdict v = Attribute(kFour, measures, {});
  EXPECT_EQ(v.kind, VerdictKind::kUnmeasured);
  EXPECT_DOUBLE_EQ(*v.axes[2].alone, 0.5);
  EXPECT_FALSE(v.axes[2].removed.has_value());
}

TEST(BisectTest, ARoundAddsAtMostMaxCells) {
  // Every axis matters only when all eight are together: pairs of 8 candidates = 28 sets
  // and their complements.
  std::vector<std::string> eight = {"a", "b", "c", "d", "e", "f", "g", "h"};
  Measures measures;
  Output output = [](AxisSet set) { return set == 255 ? 1.0 : 0.0; };
  for (AxisSet set : FirstRound(8)) Measure(output, 8, set, measures);
  Options options;
  options.max_cells = 10;
  Verdict v = Attribute(eight, measures, options);
  EXPECT_EQ(v.kind, VerdictKind::kSearching);
  EXPECT_EQ(v.next.size(), 10u);
}

TEST(BisectTest, WhenNoCandidateSetExplainsTheSearchIsExhausted) {
  // kv moves both ends; engine and quant together move the distribution only without kv,
  // so neither moves from alone or to when left out: the search looks only among the
  // axes that moved (kv), and kv is sufficient but not necessary (to - kv is far from
  // from). What the search cannot see is said as exhausted, never as explained.
  Output output = [](AxisSet set) {
    return (set & kKv ? 1.0 : 0.0) +
           ((set & kEngine) && (set & kQuant) && !(set & kKv) ? 2.0 : 0.0);
  };
  Search s = Bisect(output, kFour);
  EXPECT_EQ(s.verdict.kind, VerdictKind::kExhausted);
  EXPECT_EQ(s.verdict.explaining, 0u);
  EXPECT_TRUE(s.verdict.next.empty());
  EXPECT_TRUE(s.verdict.axes[2].moves_alone);
  EXPECT_FALSE(s.verdict.axes[0].moves_in_to);
}

}  // namespace
}  // namespace orch::bisect
