#include "fingerprint/gpu_probe.h"

#include <gtest/gtest.h>

#include "fingerprint/gpu_tool_parsers.h"
#include "fingerprint/posix_command_runner.h"
#include "fingerprint/scripted_command_runner.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::CopyFixture;
using testing::ReadText;
using testing::TempDir;
using testing::TestData;

const std::vector<std::string> kQuery = {"nvidia-smi", "--query-gpu=" + NvidiaSmiQueryFields(),
                                         "--format=csv,noheader"};
const std::vector<std::string> kCompute = {"nvidia-smi", "-q", "-d", "COMPUTE"};

TEST(GpuProbeTest, NoGpuToolMeansNoGpusAndNoError) {
  RootFs root(TestData("sapphire_rapids"));
  ScriptedCommandRunner runner;
  GpuSection gpus = GpuProbe(root, runner).Probe();
  EXPECT_TRUE(gpus.devices.empty());
  EXPECT_FALSE(gpus.cuda_version.known());
  EXPECT_NE(gpus.cuda_version.reason().find("not found"), std::string::npos);
  EXPECT_FALSE(gpus.nvidia_kernel_module.known());
  EXPECT_FALSE(gpus.rocm_driver_version.known());
}

// The real runner finds the fixture's fake nvidia-smi first on the search path.
TEST(GpuProbeTest, TwoH100BoxThroughAFakeNvidiaSmiOnThePath) {
  TempDir dir;
  CopyFixture("h100_box", dir.path());
  std::string path = dir / "usr/bin";
  auto runner = MakePosixCommandRunner(
      {.search_path = path + ":/usr/bin:/bin", .environment = {"PATH=" + path + ":/usr/bin:/bin"}});
  RootFs root(dir.path());
  GpuSection gpus = GpuProbe(root, *runner).Probe();
  ASSERT_EQ(gpus.devices.size(), 2u);
  EXPECT_EQ(gpus.devices[0].name.value(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus.devices[0].pci_bus_id.value(), "00000000:18:00.0");
  EXPECT_EQ(gpus.cuda_version.value(), "12.4");
  EXPECT_EQ(gpus.nvidia_kernel_module.value(),
            "NVIDIA UNIX x86_64 Kernel Module 550.54.15 Tue Mar 5 22:23:56 UTC 2024");
}

TEST(GpuProbeTest, FailingNvidiaSmiLeavesCudaUnknownWithItsMessage) {
  RootFs root(TestData("h100_box"));
  ScriptedCommandRunner runner;
  CommandOutput failed;
  failed.exit_code = 9;
  failed.stdout_text =
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n";
  runner.Script(kQuery, failed);
  GpuSection gpus = GpuProbe(root, runner).Probe();
  EXPECT_TRUE(gpus.devices.empty());
  EXPECT_EQ(gpus.cuda_version.reason(),
            "nvidia-smi exited with 9: NVIDIA-SMI has failed because it couldn't "
            "communicate with the NVIDIA driver.");
}

TEST(GpuProbeTest, TimedOutToolIsAReasonNotACrash) {
  RootFs root(TestData("h100_box"));
  ScriptedCommandRunner runner;
  runner.Script(kQuery, Status(StatusCode::kUnavailable, "timed out after 10000 ms"));
  GpuSection gpus = GpuProbe(root, runner).Probe();
  EXPECT_TRUE(gpus.devices.empty());
  EXPECT_NE(gpus.cuda_version.reason().find("timed out"), std::string::npos);
}

TEST(GpuProbeTest, AmdGpusComeFromRocmSmi) {
  RootFs root(TestData("epyc"));
  ScriptedCommandRunner runner;
  runner.ScriptOutput({"rocm-smi", "--showproductname", "--showdriverversion", "--showuniqueid",
                       "--showvbios", "--showbus", "--showmeminfo", "vram", "--json"},
                      R"({"card0": {"Card Series": "AMD Instinct MI250X"},
                          "system": {"Driver version": "6.3.6"}})");
  GpuSection gpus = GpuProbe(root, runner).Probe();
  ASSERT_EQ(gpus.devices.size(), 1u);
  EXPECT_EQ(gpus.devices[0].vendor, "amd");
  EXPECT_EQ(gpus.rocm_driver_version.value(), "6.3.6");
}

}  // namespace
}  // namespace orch::fingerprint
