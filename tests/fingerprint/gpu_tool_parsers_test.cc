#include "fingerprint/gpu_tool_parsers.h"

#include <gtest/gtest.h>

#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::ReadText;
using testing::TestData;

TEST(GpuToolParsersTest, QueriesTheDocumentedNvidiaSmiFields) {
  EXPECT_EQ(NvidiaSmiQueryFields(),
            "name,uuid,driver_version,compute_cap,memory.total,vbios_version,pci.bus_id,"
            "clocks.max.sm,power.limit,ecc.mode.current,persistence_mode,mig.mode.current");
}

TEST(GpuToolParsersTest, ParsesOneGpuPerCsvLineKeepingUnits) {
  Result<std::vector<GpuFacts>> gpus =
      ParseNvidiaSmiCsv(ReadText(TestData("h100_box/usr/share/nvidia-smi-fixture/query-gpu.csv")));
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuFacts& gpu = (*gpus)[1];
  EXPECT_EQ(gpu.vendor, "nvidia");
  EXPECT_EQ(gpu.name.value(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.uuid.value(), "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  EXPECT_EQ(gpu.driver_version.value(), "550.54.15");
  EXPECT_EQ(gpu.compute_capability.value(), "9.0");
  EXPECT_EQ(gpu.memory_total.value(), "81559 MiB");
  EXPECT_EQ(gpu.pci_bus_id.value(), "00000000:2A:00.0");
  EXPECT_EQ(gpu.max_sm_clock.value(), "1980 MHz");
  EXPECT_EQ(gpu.power_limit.value(), "700.00 W");
  EXPECT_EQ(gpu.ecc_mode.value(), "Enabled");
  EXPECT_EQ(gpu.persistence_mode.value(), "Enabled");
  EXPECT_EQ(gpu.mig_mode.value(), "Disabled");
}

TEST(GpuToolParsersTest, NotApplicableValuesBecomeUnknown) {
  Result<std::vector<GpuFacts>> gpus = ParseNvidiaSmiCsv(
      "NVIDIA GeForce RTX 4090, GPU-1, 550.54.15, 8.9, 24564 MiB, 95.02.3C.40.E3, "
      "00000000:01:00.0, 3120 MHz, 450.00 W, [N/A], Disabled, [N/A]\n");
  ASSERT_TRUE(gpus.ok());
  EXPECT_FALSE((*gpus)[0].ecc_mode.known());
  EXPECT_EQ((*gpus)[0].ecc_mode.reason(), "nvidia-smi reports [N/A]");
  EXPECT_FALSE((*gpus)[0].mig_mode.known());
}

TEST(GpuToolParsersTest, WrongColumnCountIsAnErrorNamingTheLine) {
  Result<std::vector<GpuFacts>> gpus = ParseNvidiaSmiCsv("NVIDIA H100, GPU-1\n");
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("NVIDIA H100, GPU-1"), std::string::npos);
}

TEST(GpuToolParsersTest, CudaVersionIsReadFromOldAndNewSpellings) {
  EXPECT_EQ(*ParseNvidiaCudaVersion(
                ReadText(TestData("h100_box/usr/share/nvidia-smi-fixture/q-compute.txt"))),
            "12.4");
  EXPECT_EQ(*ParseNvidiaCudaVersion("| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  "
                                    "CUDA Version: 12.4     |"),
            "12.4");
  EXPECT_EQ(*ParseNvidiaCudaVersion("CUDA Driver Version : 13.0\n"), "13.0");
  EXPECT_FALSE(ParseNvidiaCudaVersion("Driver Version : 550.54.15\n").ok());
}

TEST(GpuToolParsersTest, RocmSmiJsonGivesOneGpuPerCardInCardOrder) {
  std::string driver;
  Result<std::vector<GpuFacts>> gpus = ParseRocmSmiJson(R"json({
    "card1": {"Card Series": "AMD Instinct MI300X", "Unique ID": "0x2", "GFX Version": "gfx942",
              "VBIOS version": "113-M3000100-102", "PCI Bus": "0000:1B:00.0",
              "VRAM Total Memory (B)": "206141652992"},
    "card0": {"Card series": "AMD Instinct MI300X", "Unique ID": "0x1",
              "PCI Bus": "0000:0C:00.0"},
    "system": {"Driver version": "6.7.0"}})json",
                                                        &driver);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_EQ(driver, "6.7.0");
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].uuid.value(), "0x1");
  EXPECT_EQ((*gpus)[1].vendor, "amd");
  EXPECT_EQ((*gpus)[1].name.value(), "AMD Instinct MI300X");
  EXPECT_EQ((*gpus)[1].compute_capability.value(), "gfx942");
  EXPECT_EQ((*gpus)[1].memory_total.value(), "206141652992 B");
  EXPECT_EQ((*gpus)[1].driver_version.value(), "6.7.0");
  EXPECT_FALSE((*gpus)[0].vbios_version.known());
  EXPECT_FALSE((*gpus)[0].mig_mode.known());
}

TEST(GpuToolParsersTest, RocmSmiGarbageIsAnError) {
  EXPECT_FALSE(ParseRocmSmiJson("WARNING: no AMD GPU", nullptr).ok());
}

}  // namespace
}  // namespace orch::fingerprint
