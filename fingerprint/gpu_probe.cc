#include "fingerprint/gpu_probe.h"

#include "fingerprint/gpu_tool_parsers.h"
#include "fingerprint/system_file_parsers.h"

namespace orch::fingerprint {
namespace {

constexpr std::size_t kMaxToolMessage = 200;

// "exit 9: NVIDIA-SMI has failed because ..." from a failed tool run.
std::string FailureReason(const std::string& tool, const CommandOutput& output) {
  std::string message(
      TrimSpace(output.stderr_text.empty() ? output.stdout_text : output.stderr_text));
  if (message.size() > kMaxToolMessage) message.resize(kMaxToolMessage);
  return tool + " exited with " + std::to_string(output.exit_code) +
         (message.empty() ? "" : ": " + message);
}

// The output of a tool that ran and exited 0, or why it did not ("nvidia-smi: command not
// found on the search path", "nvidia-smi exited with 9: ...").
struct ToolRun {
  std::string failure;  // empty on success
  std::string stdout_text;
};

ToolRun RunTool(CommandRunner& runner, const std::vector<std::string>& argv) {
  ToolRun run;
  Result<CommandOutput> output = runner.Run(argv);
  if (!output.ok()) {
    run.failure = output.status().message();  // names the program already
  } else if (output->exit_code != 0) {
    run.failure = FailureReason(argv[0], *output);
  } else {
    run.stdout_text = std::move(output->stdout_text);
  }
  return run;
}

}  // namespace

GpuSection GpuProbe::Probe() {
  GpuSection section;
  ProbeNvidia(section);
  ProbeAmd(section);
  return section;
}

void GpuProbe::ProbeNvidia(GpuSection& section) {
  Result<std::string> module = root_.ReadFile("/proc/driver/nvidia/version");
  if (module.ok()) module = ParseNvidiaKernelModule(*module);
  section.nvidia_kernel_module = module.ok()
                                     ? Probed<std::string>::Known(*module)
                                     : Probed<std::string>::Unknown(module.status().message());

  ToolRun query = RunTool(
      runner_, {"nvidia-smi", "--query-gpu=" + NvidiaSmiQueryFields(), "--format=csv,noheader"});
  if (!query.failure.empty()) {
    section.cuda_version = Probed<std::string>::Unknown(query.failure);
    return;
  }
  Result<std::vector<GpuFacts>> gpus = ParseNvidiaSmiCsv(query.stdout_text);
  if (!gpus.ok()) {
    section.cuda_version =
        Probed<std::string>::Unknown(gpus.status().WithContext("nvidia-smi output").message());
    return;
  }
  section.devices = std::move(*gpus);
  ToolRun banner = RunTool(runner_, {"nvidia-smi", "-q", "-d", "COMPUTE"});
  Result<std::string> cuda = banner.failure.empty() ? ParseNvidiaCudaVersion(banner.stdout_text)
                                                    : Result<std::string>(Internal(banner.failure));
  section.cuda_version = cuda.ok() ? Probed<std::string>::Known(*cuda)
                                   : Probed<std::string>::Unknown(cuda.status().message());
}

void GpuProbe::ProbeAmd(GpuSection& section) {
  ToolRun run =
      RunTool(runner_, {"rocm-smi", "--showproductname", "--showdriverversion", "--showuniqueid",
                        "--showvbios", "--showbus", "--showmeminfo", "vram", "--json"});
  if (!run.failure.empty()) {
    section.rocm_driver_version = Probed<std::string>::Unknown(run.failure);
    return;
  }
  std::string driver;
  Result<std::vector<GpuFacts>> gpus = ParseRocmSmiJson(run.stdout_text, &driver);
  if (!gpus.ok()) {
    section.rocm_driver_version =
        Probed<std::string>::Unknown(gpus.status().WithContext("rocm-smi output").message());
    return;
  }
  section.rocm_driver_version =
      driver.empty() ? Probed<std::string>::Unknown("rocm-smi reports no driver version")
                     : Probed<std::string>::Known(driver);
  for (GpuFacts& gpu : *gpus) section.devices.push_back(std::move(gpu));
}

}  // namespace orch::fingerprint
