#include "fingerprint/diff.h"

#include <gtest/gtest.h>

#include "fingerprint/fingerprint_json.h"
#include "fingerprint/fingerprint_text.h"
#include "tests/fingerprint/fixture_fingerprints.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::ExpectGolden;
using testing::ReadText;
using testing::TestData;

Fingerprint LoadGolden(const std::string& name) {
  Result<Fingerprint> parsed = ParseFingerprintJson(ReadText(TestData("golden/" + name)));
  EXPECT_TRUE(parsed.ok()) << name << ": " << parsed.status().ToString();
  return parsed.ok() ? *parsed : Fingerprint{};
}

TEST(DiffTest, SameFingerprintHasNoDifferences) {
  Fingerprint a = testing::SapphireRapidsFingerprint();
  FingerprintDiff diff = Diff(a, a);
  EXPECT_TRUE(diff.empty());
  EXPECT_EQ(RenderDiffText(diff), "fingerprints are identical: " + FingerprintId(a) + "\n");
}

TEST(DiffTest, CpuNodeVersusH100BoxMatchesGoldenText) {
  FingerprintDiff diff = Diff(LoadGolden("sapphire_rapids.json"), LoadGolden("h100_box.json"));
  ExpectGolden("sapphire_rapids_vs_h100_box.txt", RenderDiffText(diff));
}

TEST(DiffTest, CpuNodeVersusH100BoxMatchesGoldenJson) {
  FingerprintDiff diff = Diff(LoadGolden("sapphire_rapids.json"), LoadGolden("h100_box.json"));
  ExpectGolden("sapphire_rapids_vs_h100_box.json", RenderDiffJson(diff) + "\n");
}

TEST(DiffTest, ListsOnlyDifferingFieldsWithBothValuesGrouped) {
  Fingerprint a = testing::SapphireRapidsFingerprint();
  Fingerprint b = a;
  b.host.os.kernel_release = Probed<std::string>::Known("6.1.0-21-amd64");
  b.engines[0].checkouts[0].state = Probed<CheckoutState>::Unknown("not a git repository: x");
  b.models[0].sha256 = Probed<std::string>::Known(std::string(64, 'f'));
  FingerprintDiff diff = Diff(a, b);
  ASSERT_EQ(diff.differences.size(), 3u);
  EXPECT_EQ(diff.differences[0].group, DiffGroup::kHardware);
  EXPECT_EQ(diff.differences[0].field, "host.os.kernel_release");
  EXPECT_EQ(diff.differences[0].a, "\"6.1.0-18-amd64\"");
  EXPECT_EQ(diff.differences[0].b, "\"6.1.0-21-amd64\"");
  EXPECT_EQ(diff.differences[1].group, DiffGroup::kEngine);
  EXPECT_EQ(diff.differences[1].field, "engines.llamacpp.checkouts[\"/src/llama.cpp\"]");
  EXPECT_EQ(diff.differences[2].group, DiffGroup::kModel);
  EXPECT_EQ(diff.differences[2].field, "models[\"qwen3-4b-q4_k_m.gguf\"].sha256");
}

TEST(DiffTest, FieldsOnOneSideOnlyShowAsAbsent) {
  Fingerprint a = testing::SapphireRapidsFingerprint();
  Fingerprint b = a;
  b.models.clear();
  FingerprintDiff diff = Diff(a, b);
  ASSERT_EQ(diff.differences.size(), 1u);
  EXPECT_FALSE(diff.differences[0].b.has_value());
  EXPECT_NE(RenderDiffText(diff).find("B: (absent)"), std::string::npos);
}

TEST(DiffTest, FlagListsShowWhatEachSideHasAlone) {
  Fingerprint a = testing::SapphireRapidsFingerprint();
  Fingerprint b = testing::FixtureFingerprint("epyc", "0123456789abcdef0123456789abcdef01234567");
  std::string text = RenderDiffText(Diff(a, b));
  EXPECT_NE(text.find("only in A: amx_bf16 amx_int8 amx_tile"), std::string::npos) << text;
  EXPECT_NE(text.find("only in B: clzero"), std::string::npos) << text;
}

TEST(FingerprintTextTest, ShowsTheIdAndEveryGroup) {
  Fingerprint fingerprint = testing::SapphireRapidsFingerprint();
  std::string text = RenderFingerprintText(fingerprint);
  EXPECT_EQ(text.rfind("fingerprint " + FingerprintId(fingerprint) + "\n", 0), 0u);
  EXPECT_NE(text.find("  host.cpu.model_name: Intel(R) Xeon(R) Platinum 8480+\n"),
            std::string::npos);
  EXPECT_NE(text.find("\ngpu_driver\n"), std::string::npos);
  EXPECT_NE(text.find("  host.numa_nodes: 2\n"), std::string::npos);
}

}  // namespace
}  // namespace orch::fingerprint
