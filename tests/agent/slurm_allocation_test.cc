#include "agent/slurm_allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::agent {
namespace {

AgentConfig Config() {
  AgentConfig config;
  config.id = "pilots.slurm-812";
  config.gpus = 8;  // what the config says the machine has
  config.spool_dir = "/var/spool/orch";
  return config;
}

TEST(SlurmAllocationTest, OutsideSlurmNothingChanges) {
  AgentConfig config = Config();
  EXPECT_TRUE(ApplySlurmAllocation({{"CUDA_VISIBLE_DEVICES", "0,1"}}, config).empty());
  EXPECT_EQ(config.gpus, 8);
  EXPECT_EQ(config.spool_dir, "/var/spool/orch");
}

TEST(SlurmAllocationTest, APilotTakesTheAllocatedGpusItsOwnSpoolAndNamesItsJob) {
  AgentConfig config = Config();
  std::vector<protocol::KeyValue> facts =
      ApplySlurmAllocation({{"SLURM_JOB_ID", "812"},
                            {"SLURM_JOB_PARTITION", "gpu"},
                            {"SLURMD_NODENAME", "node-3"},
                            {"CUDA_VISIBLE_DEVICES", "GPU-1f2e,GPU-3a4b"},
                            {"SLURM_GPUS_ON_NODE", "2"}},
                           config);
  EXPECT_EQ(config.gpus, 2);
  EXPECT_EQ(config.spool_dir, "/var/spool/orch/pilots.slurm-812");
  EXPECT_EQ(facts, (std::vector<protocol::KeyValue>{{"slurm.job_id", "812"},
                                                    {"slurm.partition", "gpu"},
                                                    {"slurm.node", "node-3"},
                                                    {"slurm.gpus", "GPU-1f2e,GPU-3a4b"}}));
}

TEST(SlurmAllocationTest, WithoutDeviceFilesTheAllocatedCountHolds) {
  AgentConfig config = Config();
  ApplySlurmAllocation({{"SLURM_JOB_ID", "9"}, {"SLURM_GPUS_ON_NODE", "1"}}, config);
  EXPECT_EQ(config.gpus, 1);
  AgentConfig cpu = Config();
  ApplySlurmAllocation({{"SLURM_JOB_ID", "10"}}, cpu);
  EXPECT_EQ(cpu.gpus, 0) << "a job without GPUs has none, whatever the config says";
}

}  // namespace
}  // namespace orch::agent
