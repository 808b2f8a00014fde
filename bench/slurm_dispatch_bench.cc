// orch's dispatch against Slurm's own, on one machine in one run (docs/slurm.md): the
// same number of no-op tasks through a coordinator and two orch agents (the test driver,
// one position, no delay) and through a one-node Slurm (two CPUs) as a job array of
// `true`. Reports tasks per second of each and their ratio; not a pass/fail test.
//
//   build/bench/slurm_dispatch_bench [--gtest_filter=...]   ORCH_BENCH_TASKS=N (2000)
// Needs root and Debian's slurm-wlm and munge (scripts/setup --with-test-tools).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "tests/e2e/local_cluster.h"
#include "tests/e2e/slurm_cluster.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int Tasks() {
  const char* n = std::getenv("ORCH_BENCH_TASKS");
  return n != nullptr && std::atoi(n) >= 3 ? std::atoi(n) : 2000;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(SlurmDispatchBench, NoOpTasksThroughOrchAndThroughSlurm) {
  const int n = Tasks();
  LocalCluster cluster("dispatch-bench");

  // orch: submit, then wait until every job succeeded.
  cluster.StartCoordinator("tcp://127.0.0.1:*");
  cluster.StartAgent("a1");
  cluster.StartAgent("a2");
  std::ofstream(cluster.dir() / "spec.toml") << TestEngineSpec("bench", n, 1, 0);
  Clock::time_point start = Clock::now();
  ASSERT_EQ(cluster.Client({"submit", (cluster.dir() / "spec.toml").string()}).exit_code, 0);
  bool done = LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> p = cluster.Progress("bench");
        return p && (*p)["succeeded"] == n;
      },
      3600s);
  double orch_s = Seconds(Clock::now() - start);
  ASSERT_TRUE(done) << cluster.Logs();
  cluster.coordinator().Stop(10s);

  // Slurm: a job array of `true`, timed until the queue is empty.
  // Slurm's high-throughput settings (its HTC guide): start jobs as they come.
  const char* sched = std::getenv("ORCH_BENCH_SLURM_SCHED");
  SlurmCluster slurm(cluster.dir() / "slurm",
                     "MaxArraySize=" + std::to_string(n + 1) +
                         "\nMaxJobCount=" + std::to_string(n + 100) + "\nSchedulerParameters=" +
                         (sched != nullptr ? sched
                                           : "batch_sched_delay=0,sched_min_interval=0,"
                                             "sched_max_job_start=0,default_queue_depth=10000") +
                         "\n");
  slurm.Start();
  if (HasFatalFailure()) return;
  start = Clock::now();
  ProcessResult array = slurm.Run(
      {"sbatch", "--array=0-" + std::to_string(n - 1), "--output=/dev/null", "--wrap=true"});
  ASSERT_EQ(array.exit_code, 0) << array.err;
  bool drained = LocalCluster::WaitUntil(
      [&] {
        return slurm.Run({"squeue", "-h", "-r"}).out.empty();
      },
      3600s);
  double slurm_s = Seconds(Clock::now() - start);
  ASSERT_TRUE(drained) << slurm.Logs();
  slurm.Stop();

  std::cout << n << " no-op tasks on 2 workers: orch " << orch_s << " s (" << n / orch_s
            << " tasks/s), Slurm job array " << slurm_s << " s (" << n / slurm_s
            << " tasks/s); orch/Slurm throughput ratio " << slurm_s / orch_s << "\n";
  RecordProperty("orch_tasks_per_s", std::to_string(n / orch_s));
  RecordProperty("slurm_tasks_per_s", std::to_string(n / slurm_s));
}

}  // namespace
}  // namespace orch::testing
