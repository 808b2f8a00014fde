// What the llama.cpp driver says the engine actually ran (the done frame's `effective`
// object, drivers/llamacpp/effective_settings.h), on the real engines and a generated
// model: read from the engine, not echoed from the job.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/drivers/llamacpp/driver_harness.h"

namespace orch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class EffectiveSettingsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeDriverTestDir("orch-llamacpp-effective"));
  }
  static void TearDownTestSuite() {
    RemoveDriverTestDir(*dir_);
    delete dir_;
  }

  static DriverOutput RunOk(const json& overrides, const std::string& release) {
    json coordinate = overrides;
    coordinate["engine"] = "llama.cpp@" + release;
    json job = TeacherForcedJob(*dir_ + "/tiny.gguf", *dir_ + "/cache", coordinate, 64);
    DriverOutput output = RunLlamaDriver(release, job, *dir_);
    EXPECT_EQ(output.exit_code, 0) << output.log;
    EXPECT_TRUE(output.done.is_object()) << output.error.dump();
    return output;
  }

  static bool SameRecords(const DriverOutput& a, const DriverOutput& b) {
    if (a.records.size() != b.records.size()) return false;
    for (std::size_t i = 0; i < a.records.size(); ++i) {
      if (!(a.records[i].digest.hash == b.records[i].digest.hash)) return false;
    }
    return true;
  }

  static std::string* dir_;
};

std::string* EffectiveSettingsTest::dir_ = nullptr;

// b8390 (and v0.4.0) keep an f32 cache in f32 but cast K and V to f16 before flash
// attention: the coordinate says kv=f32, the engine ran f16.
TEST_F(EffectiveSettingsTest, AnF32CacheUnderFlashAttentionRunsAsF16) {
  for (const std::string release : {"b8390", "v0.4.0"}) {
    SCOPED_TRACE(release);
    DriverOutput f32 = RunOk({{"kv", "f32"}, {"attention", "on"}}, release);
    DriverOutput f16 = RunOk({{"kv", "f16"}, {"attention", "on"}}, release);
    const json& effective = f32.done["effective"];
    EXPECT_EQ(effective["axes"]["kv"], "f16") << effective.dump();
    EXPECT_EQ(effective["axes"]["attention"], "on");
    EXPECT_EQ(effective["why"]["kv"], "under flash attention");
    EXPECT_EQ(effective["raw"]["kv_cache"], (json{{"k", "f32"}, {"v", "f32"}}));
    EXPECT_EQ(effective["raw"]["attention_reads"], (json{{"k", "f16"}, {"v", "f16"}}));
    EXPECT_EQ(f16.done["effective"]["axes"]["kv"], "f16");
    EXPECT_FALSE(f16.done["effective"]["why"].contains("kv"));
    EXPECT_TRUE(SameRecords(f32, f16)) << "kv f32 and f16 under flash attention differ";
  }
}

TEST_F(EffectiveSettingsTest, AnF32CacheWithoutFlashAttentionRunsAsF32AndChangesTheBits) {
  DriverOutput f32 = RunOk({{"kv", "f32"}, {"attention", "off"}}, "b8390");
  DriverOutput f16 = RunOk({{"kv", "f16"}, {"attention", "off"}}, "b8390");
  EXPECT_EQ(f32.done["effective"]["axes"]["kv"], "f32") << f32.done["effective"].dump();
  EXPECT_EQ(f32.done["effective"]["axes"]["attention"], "off");
  EXPECT_EQ(f32.done["effective"]["raw"]["attention_reads"], (json{{"k", "f32"}, {"v", "f32"}}));
  EXPECT_FALSE(SameRecords(f32, f16));
}

TEST_F(EffectiveSettingsTest, AutoAttentionIsReportedAsWhatItResolvedTo) {
  DriverOutput output = RunOk({{"attention", "auto"}}, "b8390");
  const std::string attention = output.done["effective"]["axes"]["attention"];
  EXPECT_TRUE(attention == "on" || attention == "off") << attention;
  EXPECT_EQ(output.done["effective"]["raw"]["flash_attention"], attention == "on");
}

TEST_F(EffectiveSettingsTest, ThreadsCpuVariantAndRepackComeFromTheEngine) {
  DriverOutput output = RunOk({{"threads", "2"}, {"repack", "off"}}, "b8390");
  const json& effective = output.done["effective"];
  EXPECT_EQ(effective["axes"]["threads"], "2");
  EXPECT_EQ(effective["raw"]["threads_batch"], 2);
  EXPECT_EQ(effective["axes"]["repack"], "off") << effective["raw"].dump();
  EXPECT_FALSE(effective["raw"]["model_buffers"].empty());
  EXPECT_EQ("cpu: " + effective["axes"]["cpu_backend"].get<std::string>(),
            output.hello["kernel_path"]);
}

}  // namespace
}  // namespace orch::testing
