#include "agent/slurm_allocation.h"

#include <cstdlib>
#include <filesystem>

namespace orch::agent {
namespace {

constexpr const char* kVariables[] = {"SLURM_JOB_ID",         "SLURM_JOB_PARTITION",
                                      "SLURMD_NODENAME",      "SLURM_GPUS_ON_NODE",
                                      "CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"};

std::string Get(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

// The entries of a comma-separated device list ("0,1", "GPU-1f2e...,GPU-3a4b...").
int CountDevices(const std::string& list) {
  if (list.empty() || list == "NoDevFiles") return 0;
  int count = 1;
  for (char c : list) count += c == ',' ? 1 : 0;
  return count;
}

}  // namespace

Environment SlurmEnvironment() {
  Environment env;
  for (const char* name : kVariables) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  return env;
}

std::vector<protocol::KeyValue> ApplySlurmAllocation(const Environment& env, AgentConfig& config) {
  std::string job = Get(env, "SLURM_JOB_ID");
  if (job.empty()) return {};
  std::string devices = Get(env, "CUDA_VISIBLE_DEVICES");
  int gpus = CountDevices(devices);
  if (gpus == 0) {
    // Without device files in gres.conf Slurm sets no CUDA_VISIBLE_DEVICES; the count
    // of GPUs it allocated still holds.
    gpus = std::atoi(Get(env, "SLURM_GPUS_ON_NODE").c_str());
  }
  config.gpus = std::max(0, gpus);
  config.spool_dir = (std::filesystem::path(config.spool_dir) / config.id).string();
  std::vector<protocol::KeyValue> facts{{"slurm.job_id", job}};
  for (auto [fact, variable] : {std::pair{"slurm.partition", "SLURM_JOB_PARTITION"},
                                std::pair{"slurm.node", "SLURMD_NODENAME"}}) {
    if (std::string value = Get(env, variable); !value.empty()) facts.push_back({fact, value});
  }
  std::string gpu_list = devices.empty() ? Get(env, "SLURM_JOB_GPUS") : devices;
  if (!gpu_list.empty()) facts.push_back({"slurm.gpus", gpu_list});
  return facts;
}

}  // namespace orch::agent
