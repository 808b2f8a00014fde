#include "cli/slurm_pilots.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::cli {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

protocol::JobStatus Job(const std::string& state, bool runnable, const std::string& hardware,
                        int gpus) {
  protocol::JobStatus job;
  job.job_id = "j";
  job.state = state;
  job.runnable = runnable;
  job.hardware = hardware;
  job.gpus = gpus;
  return job;
}

PilotOptions Options() {
  PilotOptions options;
  options.orch = "/usr/bin/orch";
  options.agent_config = "/etc/orch/pilot.toml";
  options.agent_hardware = "gpu:h100";
  options.id_prefix = "pilots";
  options.partition = "gpu";
  options.account = "lab";
  options.walltime = "02:00:00";
  options.max_pilots = 3;
  options.log_dir = "/shared/orch-pilots";
  return options;
}

TEST(SlurmPilotsTest, PendingJobsNobodyCanRunGetPilotsOfTheirShape) {
  protocol::StatusReply status;
  status.jobs = {Job("pending", false, "gpu:h100", 2), Job("pending", false, "gpu:h100", 2),
                 Job("pending", true, "gpu:h100", 2),  // an agent can take it: no pilot
                 Job("running", true, "gpu:h100", 2)};
  PilotPlan plan = PlanPilots(status, {}, Options());
  ASSERT_EQ(plan.submissions.size(), 1u);
  const PilotPlan::Submission& pilots = plan.submissions[0];
  EXPECT_EQ(pilots.count, 2) << "no more pilots than jobs waiting for one";
  EXPECT_THAT(pilots.sbatch_args, Contains("--gres=gpu:2"));
  EXPECT_THAT(pilots.sbatch_args, Contains("--job-name=orch-pilot-gpu_h100-g2"));
  EXPECT_THAT(pilots.sbatch_args, Contains("--time=02:00:00"));
  EXPECT_THAT(pilots.sbatch_args, Contains("--signal=B:TERM@120"));
  EXPECT_THAT(pilots.sbatch_args, Contains("--partition=gpu"));
  EXPECT_THAT(pilots.sbatch_args, Contains("--account=lab"));
  EXPECT_THAT(pilots.sbatch_args, Contains("--output=/shared/orch-pilots/%j.log"));
}

TEST(SlurmPilotsTest, QueuedAndRunningPilotsCountAgainstTheLimit) {
  protocol::StatusReply status;
  for (int i = 0; i < 10; ++i) status.jobs.push_back(Job("pending", false, "gpu:h100", 1));
  std::vector<PilotJob> pilots = ParseSqueue(
      "41|orch-pilot-gpu_h100-g1|RUNNING|node-3\n"
      "42|orch-pilot-gpu_h100-g1|PENDING|\n"
      "43|orch-pilot-gpu_h100-g1|COMPLETED|node-4\n"  // gone: does not count
      "44|someone-elses-job|RUNNING|node-5\n");
  ASSERT_EQ(pilots.size(), 3u);
  EXPECT_EQ(pilots[0].node, "node-3");
  PilotPlan plan = PlanPilots(status, pilots, Options());
  ASSERT_EQ(plan.submissions.size(), 1u);
  EXPECT_EQ(plan.submissions[0].count, 1);  // 3 - 2 active
  pilots.push_back({"45", "orch-pilot-gpu_h100-g1", "PENDING", ""});
  plan = PlanPilots(status, pilots, Options());
  EXPECT_TRUE(plan.submissions.empty());
  EXPECT_THAT(plan.notes.at(0), HasSubstr("3 pilots are queued or running (--max-pilots 3)"));
}

TEST(SlurmPilotsTest, CpuJobsAskForCpusAndOtherHardwareIsNotServed) {
  protocol::StatusReply status;
  status.jobs = {Job("pending", false, "cpu", 0), Job("pending", false, "gpu:a100", 1)};
  PilotOptions options = Options();
  options.agent_hardware = "cpu";
  options.cpus_per_task = 8;
  PilotPlan plan = PlanPilots(status, {}, options);
  ASSERT_EQ(plan.submissions.size(), 1u);
  EXPECT_THAT(plan.submissions[0].sbatch_args, Contains("--cpus-per-task=8"));
  EXPECT_THAT(plan.notes, Contains(HasSubstr("1 jobs need gpu:a100 with 1 GPUs: the pilots' "
                                             "agent config offers hardware cpu")));
}

TEST(SlurmPilotsTest, NothingPendingSubmitsNothing) {
  protocol::StatusReply status;
  status.jobs = {Job("running", true, "gpu:h100", 2)};
  EXPECT_TRUE(PlanPilots(status, {}, Options()).submissions.empty());
}

TEST(SlurmPilotsTest, ThePilotScriptExecsTheAgentUnderItsJobsId) {
  PilotOptions options = Options();
  options.agent_config = "/etc/orch/it's.toml";
  std::string script = PilotScript(options);
  EXPECT_THAT(script, HasSubstr("exec '/usr/bin/orch' agent --config '/etc/orch/it'\\''s.toml' "
                                "--id 'pilots'.slurm-\"$SLURM_JOB_ID\"\n"));
}

}  // namespace
}  // namespace orch::cli
