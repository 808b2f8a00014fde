// Chaos with the real binaries: `orch coordinator`, `orch agent` and the test driver on
// this host, hit by faults at random moments of a seeded schedule (docs/chaos.md):
// kill -9 and SIGSTOP of the coordinator, agents and drivers, a network partition (an
// agent in its own network namespace behind a veth pair that goes down and up) and a full
// disk under the coordinator's data dir (a tmpfs filled with ballast, then freed). After
// each round every job must have succeeded exactly once with every position, nothing
// `orch status` counted as succeeded lost, nothing duplicated: checked from the store.
//
// ORCH_CHAOS_SEED=N repeats a schedule (every failure names its seed); ORCH_CHAOS_LONG=1
// runs the long form (more rounds, more faults per round). Every wait is bounded; every
// process, mount, namespace and veth pair made here is removed by its owner's destructor.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "tests/chaos/chaos_cluster.h"
#include "tests/chaos/chaos_run.h"
#include "tests/chaos/chaos_schedule.h"
#include "tests/chaos/netns_link.h"
#include "tests/chaos/tmpfs_mount.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

constexpr int kPositions = 300;  // two chunks per run (256 records each at most)
constexpr int kDelayMs = 1;      // per record: a run takes about 0.4 s
constexpr auto kFinish = 90s;    // after the last fault, for every job to succeed

// The schedule of one test: its seed printed first and named by every failure.
class ChaosTest : public ::testing::Test {
 protected:
  ChaosTest() : form_(ChaosFormFromEnvironment()), schedule_(ChaosSchedule::SeedFromEnvironment()) {
    std::cout << "[chaos] " << schedule_.Repeat() << (form_.long_form ? " (long form)" : "")
              << std::endl;
    RecordProperty("seed", std::to_string(schedule_.seed()));
  }
  std::string Name(int round) const {
    return std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())
               .substr(0, 24) +
           "-" + std::to_string(round);
  }
  ExpectedExperiment Experiment(int round, int jobs) const {
    return {"chaos-" + std::to_string(round), jobs, kPositions};
  }

  ChaosForm form_;
  ChaosSchedule schedule_;
};

// Starts the coordinator and agents a1..aN on the host.
void StartCluster(ChaosCluster& cluster, int agents) {
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator());
  for (int i = 1; i <= agents; ++i) {
    ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a" + std::to_string(i)));
  }
}

// Kills the coordinator with SIGKILL at random moments and restarts it after a random
// downtime; every other fault stays down longer than agent_timeout, the rest shorter.
void KillAndRestartTheCoordinator(ChaosSchedule& schedule, const ChaosForm& form,
                                  const std::string& name, ExpectedExperiment experiment,
                                  int agents) {
  ChaosCluster cluster(name, ChaosClusterOptions{});
  ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, agents));
  ChaosRun run(cluster, schedule, experiment, kDelayMs);
  ASSERT_NO_FATAL_FAILURE(run.Submit());
  const milliseconds timeout = cluster.options().agent_timeout;
  const int first_longer = schedule.Coin() ? 0 : 1;  // which faults outlast agent_timeout
  for (int fault = 0; fault < form.faults; ++fault) {
    if (!run.WaitForAMomentMidRun("", 800)) break;
    bool longer = fault % 2 == first_longer;
    milliseconds down = longer ? schedule.Between(timeout + 200ms, timeout * 5 / 2)
                               : schedule.Between(0ms, timeout - 200ms);
    run.Fault("kill -9 coordinator, down " + std::to_string(down.count()) + " ms");
    ASSERT_NO_FATAL_FAILURE(cluster.KillCoordinator());
    ChaosRun::Pause(down);
    ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator());
  }
  EXPECT_TRUE(run.WaitForAllSucceeded(kFinish))
      << schedule.Repeat() << ": " << run.last_status().value_or(nlohmann::json()).dump()
      << cluster.Logs();
  run.StopAndCheck();
}

// One fault drawn from every kind the host can inject without namespaces or mounts.
void InjectAnyFault(ChaosCluster& cluster, ChaosRun& run, ChaosSchedule& schedule) {
  const milliseconds lease = cluster.options().lease;
  const std::string agent = "a" + std::to_string(schedule.Between(1, 3));
  const milliseconds down = schedule.Between(0ms, lease + 1000ms);
  const std::string how = " for " + std::to_string(down.count()) + " ms";
  std::vector<pid_t> drivers = cluster.DriverPids(agent);
  switch (schedule.Between(0, drivers.empty() ? 3 : 5)) {
    case 0:
      run.Fault("kill -9 coordinator, down" + how);
      ASSERT_NO_FATAL_FAILURE(cluster.KillCoordinator());
      ChaosRun::Pause(down);
      return cluster.StartCoordinator();
    case 1:
      run.Fault("SIGSTOP coordinator" + how);
      ::kill(cluster.coordinator().pid(), SIGSTOP);
      ChaosRun::Pause(down);
      ::kill(cluster.coordinator().pid(), SIGCONT);
      return;
    case 2:
      run.Fault("kill -9 " + agent + ", down" + how);
      ASSERT_NO_FATAL_FAILURE(cluster.KillAgent(agent));
      run.Watch(down);
      return cluster.StartAgent(agent);
    case 3:
      run.Fault("SIGSTOP " + agent + how);
      cluster.SignalAgent(agent, SIGSTOP);
      run.Watch(down);
      return cluster.SignalAgent(agent, SIGCONT);
    case 4:
      run.Fault("kill -9 a driver of " + agent);
      ::kill(drivers.front(), SIGKILL);
      return;
    default:
      run.Fault("SIGSTOP a driver of " + agent + how);
      ::kill(drivers.front(), SIGSTOP);
      run.Watch(down);
      ::kill(drivers.front(), SIGCONT);
      return;
  }
}

TEST_F(ChaosTest, KilledCoordinatorRestartedBeforeAndAfterTheAgentTimeoutLosesNothingWithOneAgent) {
  for (int round = 0; round < form_.rounds; ++round) {
    KillAndRestartTheCoordinator(schedule_, form_, Name(round), Experiment(round, 16), 1);
    if (HasFailure()) return;
  }
}

TEST_F(ChaosTest,
       KilledCoordinatorRestartedBeforeAndAfterTheAgentTimeoutLosesNothingWithThreeAgents) {
  for (int round = 0; round < form_.rounds; ++round) {
    KillAndRestartTheCoordinator(schedule_, form_, Name(round), Experiment(round, 24), 3);
    if (HasFailure()) return;
  }
}

// SIGSTOP of the coordinator for longer than the lease and the agent timeout, then
// SIGCONT: it wakes to silent agents and expired leases while their heartbeats and
// results wait in its sockets.
TEST_F(ChaosTest, CoordinatorStoppedPastTheLeaseAndContinuedLosesAndDuplicatesNothing) {
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosCluster cluster(Name(round), ChaosClusterOptions{});
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    ChaosRun run(cluster, schedule_, Experiment(round, 20), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    const milliseconds lease = cluster.options().lease;
    for (int fault = 0; fault < form_.faults; ++fault) {
      if (!run.WaitForAMomentMidRun("", 800)) break;
      milliseconds stopped = schedule_.Between(lease / 2, lease + 2000ms);
      run.Fault("SIGSTOP coordinator for " + std::to_string(stopped.count()) + " ms");
      ::kill(cluster.coordinator().pid(), SIGSTOP);
      ChaosRun::Pause(stopped);
      ::kill(cluster.coordinator().pid(), SIGCONT);
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

// SIGSTOP of one agent of two for longer than its lease, then SIGCONT: its runs are
// given up and run again elsewhere; what it sends after waking is not counted twice.
TEST_F(ChaosTest, AgentStoppedPastItsLeaseAndContinuedLosesAndDuplicatesNothing) {
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosCluster cluster(Name(round), ChaosClusterOptions{});
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    ChaosRun run(cluster, schedule_, Experiment(round, 20), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    const milliseconds lease = cluster.options().lease;
    for (int fault = 0; fault < form_.faults; ++fault) {
      std::string agent = schedule_.Coin() ? "a1" : "a2";
      if (!run.WaitForAMomentMidRun(agent, 300)) break;
      milliseconds stopped = schedule_.Between(lease + 300ms, lease + 2000ms);
      run.Fault("SIGSTOP " + agent + " for " + std::to_string(stopped.count()) + " ms");
      cluster.SignalAgent(agent, SIGSTOP);
      run.Watch(stopped);
      cluster.SignalAgent(agent, SIGCONT);
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

// kill -9 of an agent at a random moment, restarted on its spool after a random downtime.
TEST_F(ChaosTest, KilledAgentRestartedOnItsSpoolLosesAndDuplicatesNothing) {
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosCluster cluster(Name(round), ChaosClusterOptions{});
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    ChaosRun run(cluster, schedule_, Experiment(round, 20), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    const milliseconds timeout = cluster.options().agent_timeout;
    for (int fault = 0; fault < form_.faults; ++fault) {
      std::string agent = schedule_.Coin() ? "a1" : "a2";
      if (!run.WaitForAMomentMidRun(agent, 400)) break;
      milliseconds down = schedule_.Between(0ms, timeout * 2);
      run.Fault("kill -9 " + agent + ", down " + std::to_string(down.count()) + " ms");
      ASSERT_NO_FATAL_FAILURE(cluster.KillAgent(agent));
      run.Watch(down);
      ASSERT_NO_FATAL_FAILURE(cluster.StartAgent(agent));
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

// kill -9 of a driver (a child process of an agent, found in /proc) mid-run: the run
// fails, the job runs again.
TEST_F(ChaosTest, KilledDriverMidRunIsRunAgainAndCountedOnce) {
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosCluster cluster(Name(round), ChaosClusterOptions{});
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    ChaosRun run(cluster, schedule_, Experiment(round, 16), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    int killed = 0;
    for (int fault = 0; fault < form_.faults + 1; ++fault) {
      std::string agent = schedule_.Coin() ? "a1" : "a2";
      if (!run.WaitForAMomentMidRun(agent, 700)) break;
      std::vector<pid_t> drivers = cluster.DriverPids(agent);
      if (drivers.empty()) continue;
      pid_t driver = drivers[schedule_.Between(0, static_cast<int>(drivers.size()) - 1)];
      run.Fault("kill -9 driver " + std::to_string(driver) + " of " + agent);
      if (::kill(driver, SIGKILL) == 0) ++killed;
    }
    EXPECT_GT(killed, 0) << schedule_.Repeat() << ": no driver was found running";
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

// Faults of every kind against three agents, one after another at random moments:
// kill -9 or SIGSTOP of the coordinator, of an agent or of a driver.
TEST_F(ChaosTest, MixedFaultsOnCoordinatorAgentsAndDriversLoseAndDuplicateNothing) {
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosCluster cluster(Name(round), ChaosClusterOptions{});
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 3));
    ChaosRun run(cluster, schedule_, Experiment(round, 30), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    for (int fault = 0; fault < form_.faults + 1; ++fault) {
      if (!run.WaitForAMomentMidRun("", 1000)) break;
      ASSERT_NO_FATAL_FAILURE(InjectAnyFault(cluster, run, schedule_));
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

bool HaveIp() { return std::system("ip -V > /dev/null 2>&1") == 0; }

// One agent inside its own network namespace, joined by a veth pair; the link goes down
// for longer than the lease and comes back. The other agent is on the host.
TEST_F(ChaosTest, AgentCutOffByANetworkPartitionPastItsLeaseLosesAndDuplicatesNothing) {
  if (::geteuid() != 0 || !HaveIp()) GTEST_SKIP() << "needs root and ip (iproute2)";
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    std::string why;
    std::unique_ptr<NetnsLink> link =
        NetnsLink::Create("p" + std::to_string(round), 40 + round, &why);
    ASSERT_NE(link, nullptr) << why;
    ChaosClusterOptions options;
    options.host = link->host_address();
    options.insecure = true;  // a private /30 without keys
    ChaosCluster cluster(Name(round), options);
    ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator());
    ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("netns", link->Exec()));
    ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("host"));
    ChaosRun run(cluster, schedule_, Experiment(round, 20), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    const milliseconds lease = cluster.options().lease;
    for (int fault = 0; fault < std::max(1, form_.faults / 2); ++fault) {
      if (!run.WaitForAMomentMidRun("netns", 300)) break;
      milliseconds cut = schedule_.Between(lease + 300ms, lease + 2500ms);
      run.Fault("link down for " + std::to_string(cut.count()) + " ms");
      ASSERT_TRUE(link->Down(&why)) << why;
      run.Watch(cut);
      ASSERT_TRUE(link->Up(&why)) << why;
      EXPECT_TRUE(run.WatchUntil(
          [](const nlohmann::json& status) { return AgentConnected(status, "netns"); }, 20s))
          << schedule_.Repeat() << ": the agent did not come back over the link\n"
          << cluster.Logs();
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

// The coordinator's data dir on a 24 MiB tmpfs, filled with ballast at a random moment
// and freed a random while later: the coordinator keeps running (same process) and the
// experiment finishes without a restart.
TEST_F(ChaosTest, FullDiskUnderTheCoordinatorRecoversWithoutARestartWhenSpaceReturns) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosClusterOptions options;
    options.data_dir_tmpfs_bytes = 24ull << 20;
    ChaosCluster cluster(Name(round), options);
    ASSERT_NE(cluster.data_dir_mount(), nullptr);
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    const pid_t coordinator = cluster.coordinator().pid();
    ChaosRun run(cluster, schedule_, Experiment(round, 20), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    TmpfsMount& disk = *cluster.data_dir_mount();
    for (int fault = 0; fault < std::max(1, form_.faults / 2); ++fault) {
      if (!run.WaitForAMomentMidRun("", 500)) break;
      milliseconds full = schedule_.Between(1500ms, 4000ms);
      run.Fault("disk full for " + std::to_string(full.count()) + " ms (ballast " +
                std::to_string(disk.Fill() >> 10) + " KiB)");
      for (auto until = std::chrono::steady_clock::now() + full;
           std::chrono::steady_clock::now() < until;) {
        run.Watch(200ms);
        disk.Fill();  // what the coordinator freed meanwhile
      }
      disk.Release();
      run.Note("ballast removed, " + std::to_string(disk.Free() >> 10) + " KiB free");
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    EXPECT_TRUE(cluster.coordinator().running()) << "the coordinator exited\n" << cluster.Logs();
    EXPECT_EQ(cluster.coordinator().pid(), coordinator);
    EXPECT_TRUE(run.faults() == 0 ||
                cluster.CoordinatorLog().find("No space left on device") != std::string::npos)
        << schedule_.Repeat() << ": no write failed, the disk was never full for it";
    run.StopAndCheck();
  }
}

// The coordinator killed (SIGKILL) while its disk is full, restarted once space returned:
// it opens its store (the failed writes left no torn record it refuses) and finishes.
TEST_F(ChaosTest, CoordinatorKilledWhileTheDiskIsFullRestartsOnceSpaceReturns) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosClusterOptions options;
    options.data_dir_tmpfs_bytes = 24ull << 20;
    ChaosCluster cluster(Name(round), options);
    ASSERT_NE(cluster.data_dir_mount(), nullptr);
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    ChaosRun run(cluster, schedule_, Experiment(round, 20), kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    TmpfsMount& disk = *cluster.data_dir_mount();
    if (run.WaitForAMomentMidRun("", 500)) {
      run.Fault("disk full (ballast " + std::to_string(disk.Fill() >> 10) + " KiB)");
      run.Watch(schedule_.Between(300ms, 2000ms));
      disk.Fill();
      run.Fault("kill -9 coordinator while the disk is full");
      ASSERT_NO_FATAL_FAILURE(cluster.KillCoordinator());
      disk.Release();
      ChaosRun::Pause(schedule_.Between(0ms, 2000ms));
      ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator());
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

// A full disk shorter than the lease: the results it refused wait in the agents' spools
// and are delivered once space returns, before their leases run out, so no job has to
// run twice. The disk stays full until a finished run was refused; both agents stay busy
// afterwards (acknowledgements keep coming for their other runs).
TEST_F(ChaosTest, FullDiskShorterThanTheLeaseRunsNoJobTwice) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  for (int round = 0; round < form_.rounds && !HasFailure(); ++round) {
    ChaosClusterOptions options;
    options.data_dir_tmpfs_bytes = 24ull << 20;
    options.lease = 7s;  // more than the agents' 5 s resend, less than the experiment
    options.agent_slots = 2;
    ChaosCluster cluster(Name(round), options);
    ASSERT_NE(cluster.data_dir_mount(), nullptr);
    ASSERT_NO_FATAL_FAILURE(StartCluster(cluster, 2));
    ExpectedExperiment experiment = Experiment(round, 90);
    experiment.max_attempts = 1;
    ChaosRun run(cluster, schedule_, experiment, kDelayMs);
    ASSERT_NO_FATAL_FAILURE(run.Submit());
    TmpfsMount& disk = *cluster.data_dir_mount();
    if (run.WaitForAMomentMidRun("", 1000)) {
      run.Fault("disk full until a finished run is refused (ballast " +
                std::to_string(disk.Fill() >> 10) + " KiB)");
      for (int i = 0; i < 25 && cluster.CoordinatorLog().find("end of run") == std::string::npos;
           ++i) {
        run.Watch(200ms);
        disk.Fill();
      }
      disk.Release();
      run.Note("ballast removed");
    }
    EXPECT_TRUE(run.WaitForAllSucceeded(kFinish)) << schedule_.Repeat() << cluster.Logs();
    run.StopAndCheck();
  }
}

}  // namespace
}  // namespace orch::testing
