#include "tests/fingerprint/fixture_fingerprints.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "fingerprint/gpu_probe.h"
#include "fingerprint/gpu_tool_parsers.h"
#include "fingerprint/host_probe.h"
#include "fingerprint/scripted_command_runner.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint::testing {
namespace {

void ScriptNvidiaSmi(const std::string& fixture, ScriptedCommandRunner& runner) {
  std::string recorded = TestData(fixture + "/usr/share/nvidia-smi-fixture");
  if (!std::filesystem::exists(recorded)) return;
  runner.ScriptOutput(
      {"nvidia-smi", "--query-gpu=" + NvidiaSmiQueryFields(), "--format=csv,noheader"},
      ReadText(recorded + "/query-gpu.csv"));
  runner.ScriptOutput({"nvidia-smi", "-q", "-d", "COMPUTE"}, ReadText(recorded + "/q-compute.txt"));
}

EngineFacts LlamaCppEngine(const std::string& commit) {
  EngineFacts engine;
  engine.name = "llamacpp";
  engine.executable = "/opt/orch/bin/orch-driver-llamacpp";
  engine.executable_sha256 = Probed<std::string>::Known(std::string(64, '1'));
  engine.metadata = {{"build", "b4500"}, {"ggml_backend", "CPU"}};
  engine.backend_dir = "/opt/llama.cpp/build/bin";
  engine.backend_libraries = Probed<LibraryHashes>::Known(
      {{"libggml-cpu-sapphirerapids.so", Probed<std::string>::Known(std::string(64, '2'))}});
  engine.checkouts.push_back(
      {"/src/llama.cpp", Probed<CheckoutState>::Known(
                             {commit, "master", false, "b4500-0-g" + commit.substr(0, 7), false})});
  return engine;
}

}  // namespace

Fingerprint FixtureFingerprint(const std::string& fixture, const std::string& engine_commit) {
  RootFs root(TestData(fixture));
  ScriptedCommandRunner runner;
  ScriptNvidiaSmi(fixture, runner);
  Fingerprint fingerprint;
  fingerprint.host = HostProbe(root).Probe();
  fingerprint.gpu = GpuProbe(root, runner).Probe();
  fingerprint.engines.push_back(LlamaCppEngine(engine_commit));
  ModelFacts model;
  model.path = "/models/qwen3-4b-q4_k_m.gguf";
  model.sha256 = Probed<std::string>::Known(std::string(64, '3'));
  model.size_bytes = Probed<std::int64_t>::Known(2497280256);
  fingerprint.models.push_back(model);
  return fingerprint;
}

Fingerprint SapphireRapidsFingerprint() {
  return FixtureFingerprint("sapphire_rapids", "0123456789abcdef0123456789abcdef01234567");
}

Fingerprint H100BoxFingerprint() {
  return FixtureFingerprint("h100_box", "89abcdef0123456789abcdef0123456789abcdef");
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  std::string path = TestData("golden/" + name);
  const char* update = std::getenv("ORCH_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    WriteText(path, actual);
    return;
  }
  EXPECT_EQ(actual, ReadText(path))
      << "golden " << path << " differs; rerun with ORCH_UPDATE_GOLDEN=1 to update";
}

}  // namespace orch::fingerprint::testing
