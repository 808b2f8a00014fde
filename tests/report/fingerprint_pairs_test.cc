#include "report/fingerprint_pairs.h"

#include <gtest/gtest.h>

namespace orch::report {
namespace {

// Knows no fingerprint: the engine entry then comes from the drivers' hellos.
class NoFingerprints final : public RunSource {
 public:
  Status ScanRecords(std::string_view, std::uint64_t, const RecordVisitor&) override {
    return Status::Ok();
  }
  Result<std::string> GetFingerprint(std::string_view id) override {
    return NotFound("no fingerprint " + std::string(id));
  }
};

store::RunRecord RunWithHello(const std::string& hello) {
  store::RunRecord run;
  run.summary = R"({"driver": "d", "hello": )" + hello + R"(, "done": {"positions": 4}})";
  return run;
}

TEST(FingerprintPairsTest, EngineEntryComparesTheDriversHellosWhenNoEngineIdIsStored) {
  NoFingerprints source;
  store::RunRecord a = RunWithHello(
      R"({"engine": "llama.cpp", "version": "v0.4.0", "commit": "80fb", "kernel_path": "cpu: x64",
          "build": {"backend_file": "/e/v0.4.0/libggml-cpu-x64.so", "compiler": "12.2.0"}})");
  store::RunRecord b = RunWithHello(
      R"({"engine": "llama.cpp", "version": "b8390", "commit": "b10e", "kernel_path": "cpu: x64",
          "build": {"backend_file": "/e/b8390/libggml-cpu-x64.so", "compiler": "12.2.0"}})");
  std::vector<FingerprintComparison> pairs = CompareFingerprints(source, a, b);
  ASSERT_EQ(pairs.size(), 2u);
  const FingerprintComparison& engine = pairs[1];
  EXPECT_EQ(engine.kind, "engine");
  EXPECT_FALSE(engine.same);
  EXPECT_EQ(engine.note, "");
  std::vector<std::string> fields;
  for (const auto& d : engine.differences) fields.push_back(d.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"hello.build.backend_file", "hello.commit",
                                              "hello.version"}));
  EXPECT_EQ(engine.differences[2].a, "\"v0.4.0\"");
  EXPECT_EQ(engine.differences[2].b, "\"b8390\"");
  EXPECT_EQ(engine.differences[2].group, fingerprint::DiffGroup::kEngine);
}

TEST(FingerprintPairsTest, EqualHellosAreTheSameEngine) {
  NoFingerprints source;
  store::RunRecord a = RunWithHello(R"({"engine": "llama.cpp", "version": "v0.4.0"})");
  std::vector<FingerprintComparison> pairs = CompareFingerprints(source, a, a);
  EXPECT_TRUE(pairs[1].same);
  EXPECT_TRUE(pairs[1].differences.empty());
}

// A warm engine's hello says so, and how many jobs it ran before: the same engine.
TEST(FingerprintPairsTest, TheHellosSessionIsNotPartOfTheEngine) {
  NoFingerprints source;
  store::RunRecord cold = RunWithHello(
      R"({"engine": "llama.cpp", "version": "b8390", "session": {"warm": false, "jobs_before": 0}})");
  store::RunRecord warm = RunWithHello(
      R"({"engine": "llama.cpp", "version": "b8390", "session": {"warm": true, "jobs_before": 2}})");
  std::vector<FingerprintComparison> pairs = CompareFingerprints(source, cold, warm);
  EXPECT_TRUE(pairs[1].same);
  EXPECT_TRUE(pairs[1].differences.empty());
}

TEST(FingerprintPairsTest, RunsWithoutHelloOrSummaryAreNotRecorded) {
  NoFingerprints source;
  store::RunRecord a, b;
  b.summary = "not json";
  std::vector<FingerprintComparison> pairs = CompareFingerprints(source, a, b);
  EXPECT_EQ(pairs[1].note, "not recorded for either run");
  EXPECT_FALSE(pairs[1].same);
}

TEST(FingerprintPairsTest, AHelloOnOneSideOnlyShowsItsFieldsAsAbsentOnTheOther) {
  NoFingerprints source;
  store::RunRecord a = RunWithHello(R"({"version": "v0.4.0"})");
  store::RunRecord b;
  std::vector<FingerprintComparison> pairs = CompareFingerprints(source, a, b);
  ASSERT_EQ(pairs[1].differences.size(), 1u);
  EXPECT_EQ(pairs[1].differences[0].field, "hello.version");
  EXPECT_EQ(pairs[1].differences[0].b, std::nullopt);
}

}  // namespace
}  // namespace orch::report
