// The trained model (examples/models/kjv-tiny-*.gguf, docs/models.md "The trained
// model") on the real engine, both installed llama.cpp builds: teacher forcing of
// held-out King James text shows a language model (confident, peaked next-token
// distributions, computed from the driver's digests), and the top-k KLD bound's error
// on its rows (docs/metrics.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "digest/kl_divergence.h"
#include "tests/drivers/llamacpp/driver_harness.h"

namespace orch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kPositions = 256;

std::string Source(const std::string& path) { return std::string(ORCH_SOURCE_DIR) + "/" + path; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What the digests of one teacher-forced run say about the model.
struct LanguageModelFigures {
  int positions = 0;
  double perplexity = 0;
  double median_top1 = 0;   // probability of the most likely token
  double median_top20 = 0;  // mass of the 20 most likely tokens
  double top1_accuracy = 0;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

LanguageModelFigures Figures(const DriverOutput& output) {
  LanguageModelFigures f;
  std::vector<double> top1, top20;
  double nll = 0;
  int correct = 0;
  for (const auto& record : output.records) {
    const digest::RowDigest& d = record.digest;
    if (d.target_id < 0) continue;
    EXPECT_TRUE(d.is_distribution()) << record.position;
    nll += d.logsumexp - d.target_logit;
    correct += d.argmax == d.target_id;
    double mass = 0;
    for (const auto& t : d.top) mass += std::exp(t.logit - d.logsumexp);
    top1.push_back(std::exp(d.top[0].logit - d.logsumexp));
    top20.push_back(mass);
    ++f.positions;
  }
  if (f.positions == 0) return f;
  f.perplexity = std::exp(nll / f.positions);
  f.median_top1 = Median(top1);
  f.median_top20 = Median(top20);
  f.top1_accuracy = static_cast<double>(correct) / f.positions;
  return f;
}

class TrainedModelEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(fs::temp_directory_path() /
                           ("orch-trained-model-test-" + std::to_string(getpid())));
    fs::create_directories(*dir_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  // Held-out KJV text (scripts/eval-tiny-model --write-text) on `file`, every axis at
  // the example baseline except `overrides`.
  static DriverOutput Run(const std::string& release, const std::string& file,
                          const json& overrides, int positions = kPositions) {
    json job =
        TeacherForcedJob(Source("examples/models/" + file), *dir_ + "/cache", overrides, positions);
    job["workload"]["name"] = "kjv-heldout";
    job["workload"]["text"] = Slurp(Source("examples/texts/kjv-heldout.txt"));
    job["model"]["requirement"] = "file:" + file;
    DriverOutput output = RunLlamaDriver(release, job, *dir_);
    EXPECT_EQ(output.exit_code, 0) << output.log;
    EXPECT_EQ(output.stream_error, "");
    EXPECT_EQ(output.records.size(), static_cast<std::size_t>(positions)) << output.log;
    return output;
  }

  static std::string* dir_;
};

std::string* TrainedModelEngineTest::dir_ = nullptr;

TEST_F(TrainedModelEngineTest, HeldOutTextIsPredictedLikeALanguageModelByBothEngines) {
  for (const char* release : {"v0.4.0", "b8390"}) {
    for (const char* file : {"kjv-tiny-f32.gguf", "kjv-tiny-f16.gguf"}) {
      const char* quant = std::string(file).find("f16") != std::string::npos ? "f16" : "f32";
      LanguageModelFigures f = Figures(Run(release, file, {{"quant", quant}}));
      std::cout << release << " " << file << ": " << f.positions << " positions, PPL "
                << f.perplexity << ", median top-1 " << f.median_top1 << ", median top-20 mass "
                << f.median_top20 << ", top-1 accuracy " << f.top1_accuracy << "\n";
      ASSERT_EQ(f.positions, kPositions - 1);
      // Floors from the committed model's measurement, with margin: on this held-out
      // text both releases, f32 and f16, give PPL 34.2, median top-1 probability 0.192,
      // median top-20 mass 0.699, top-1 accuracy 0.310 (the goal of a median top-20
      // mass >= 0.9 is not reached by this 1.5M-parameter model). A random-weight model
      // of this vocabulary gives PPL ~2,000, top-1 ~0.002 and top-20 mass ~0.03.
      EXPECT_LT(f.perplexity, 50.0) << release << " " << file;
      EXPECT_GT(f.median_top1, 0.15) << release << " " << file;
      EXPECT_GT(f.median_top20, 0.6) << release << " " << file;
      EXPECT_GT(f.top1_accuracy, 0.2) << release << " " << file;
    }
  }
}

TEST_F(TrainedModelEngineTest, BothEnginesGiveTheSameTokensAndTheF32LogitsOfOneAnother) {
  DriverOutput a = Run("v0.4.0", "kjv-tiny-f32.gguf", {});
  DriverOutput b = Run("b8390", "kjv-tiny-f32.gguf", {});
  EXPECT_EQ(a.InputTokens(), b.InputTokens());
  ASSERT_FALSE(a.records.empty());
  EXPECT_EQ(a.records[0].input_token, 2044);  // BOS, then the text
  digest::StreamSummary summary = Compare(a, b);
  EXPECT_LT(summary.kld.max, 1e-6);
}

struct KldErrors {
  int rows = 0;
  double worst_relative_error = 0;
  double mean_relative_error = 0;
  double worst_excess = 0;  // max(approx - exact): rounding of the estimate
};

// Relative error of the top-k estimate against the exact KLD, for rows whose P tail
// (mass outside P's top-k) lies in [min_tail, max_tail).
KldErrors CompareKld(const DriverOutput& p, const DriverOutput& q, double min_tail,
                     double max_tail) {
  KldErrors errors;
  for (std::size_t i = 0; i < p.records.size() && i < q.records.size(); ++i) {
    const auto& a = p.records[i];
    const auto& b = q.records[i];
    Result<double> exact = digest::ExactKlDivergence(a.full_row, b.full_row);
    EXPECT_TRUE(exact.ok()) << "position " << i;
    if (!exact.ok() || *exact < 1e-9) continue;
    double tail = 1.0;
    for (const auto& t : a.digest.top) tail -= std::exp(t.logit - a.digest.logsumexp);
    if (tail < min_tail || tail >= max_tail) continue;
    double approx = digest::TopKKlDivergence(a.digest, b.digest);
    errors.worst_excess = std::max(errors.worst_excess, approx - *exact);
    double relative = std::abs(*exact - approx) / *exact;
    errors.worst_relative_error = std::max(errors.worst_relative_error, relative);
    errors.mean_relative_error += relative;
    ++errors.rows;
  }
  if (errors.rows > 0) errors.mean_relative_error /= errors.rows;
  return errors;
}

// docs/metrics.md, "The top-k KLD approximation": f32 against q8_0 weights, full rows
// at every position; the error of the k = 20 estimate by P's mass outside its top 20.
TEST_F(TrainedModelEngineTest, TopKKlDivergenceStaysWithinTheDocumentedBoundOnTrainedRows) {
  auto run = [](const std::string& quant) {
    json job = TeacherForcedJob(Source("examples/models/kjv-tiny-f32.gguf"), *dir_ + "/cache",
                                {{"quant", quant}}, kPositions);
    job["workload"]["text"] = Slurp(Source("examples/texts/kjv-heldout.txt"));
    job["model"]["requirement"] = "file:kjv-tiny-f32.gguf";
    job["capture"] = {{"top_logits", 20}, {"full_every", 1}, {"full_windows", json::array()}};
    DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
    EXPECT_EQ(output.records.size(), static_cast<std::size_t>(kPositions)) << output.log;
    return output;
  };
  DriverOutput p = run("f32");
  DriverOutput q = run("q8_0");
  struct Bucket {
    double min_tail, max_tail, enforced;
  };
  int rows = 0;
  // Limits from the committed model's measurement, with margin (worst relative error
  // per bucket: 0.26, 0.46, 0.66, 0.83 over 5, 12, 64, 175 rows). On these peaked rows the
  // k = 20 estimate misses more than on the random-weight rows docs/metrics.md measured;
  // what must always hold is that it never exceeds the exact KLD (worst_excess).
  for (const Bucket& b : {Bucket{0, 0.01, 0.35}, Bucket{0.01, 0.05, 0.55}, Bucket{0.05, 0.2, 0.75},
                          Bucket{0.2, 2, 0.90}}) {
    KldErrors e = CompareKld(p, q, b.min_tail, b.max_tail);
    std::cout << "P tail [" << b.min_tail << ", " << b.max_tail << "): " << e.rows
              << " rows, mean rel. error " << e.mean_relative_error << ", worst "
              << e.worst_relative_error << ", worst excess " << e.worst_excess << "\n";
    EXPECT_LT(e.worst_excess, 1e-6) << "tail from " << b.min_tail;
    EXPECT_LE(e.worst_relative_error, b.enforced) << "tail from " << b.min_tail;
    rows += e.rows;
  }
  EXPECT_GT(rows, kPositions / 2);
}

}  // namespace
}  // namespace orch::testing
