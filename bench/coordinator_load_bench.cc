// The coordinator under load over real sockets (docs/benchmarks.md, "Dispatch over
// sockets"): a real `orch coordinator` on 127.0.0.1, simulated agents in a few
// orch-sim-agents processes (one ZeroMQ DEALER per agent, real Hello and heartbeats,
// no-op runs), many jobs. Reports end-to-end assignments/s, Hello->Welcome and
// RunFinished->Ack latencies, the coordinator's CPU time and RSS, and the same
// simulators against a null coordinator (the same ZeroMQ transport answering Hello,
// handing out Assigns and acknowledging, with no core and no store) measured in the same
// run, as the baseline of the ratio. Not a pass/fail test; tests/e2e/load_test.cc is
// the short form with counts.
//
//   build/bench/coordinator_load_bench
//   ORCH_LOAD_AGENTS=1000 ORCH_LOAD_PROCESSES=4 ORCH_LOAD_JOBS=100000
//   ORCH_LOAD_EXPERIMENTS=10 ORCH_LOAD_HEARTBEAT_MS=1000 (the defaults)
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/child_process.h"
#include "protocol/codec.h"
#include "protocol/zmq_transport.h"
#include "tests/e2e/local_cluster.h"
#include "tests/support/simulated_agents.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int Env(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// /proc/PID/status field in kB ("VmRSS", "VmHWM"); -1 when unreadable.
long StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

// User + system CPU seconds of a process so far.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // fields 3..13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct Simulators {
  std::vector<cli::ChildProcess> processes;
  std::vector<std::filesystem::path> outputs;

  void Start(const std::filesystem::path& dir, const std::string& endpoint, int processes_n,
             int agents, const std::string& tag) {
    for (int p = 0; p < processes_n; ++p) {
      int first = p * agents / processes_n;
      int count = (p + 1) * agents / processes_n - first;
      outputs.push_back(dir / (tag + "-sim-" + std::to_string(p) + ".json"));
      Result<cli::ChildProcess> child =
          cli::ChildProcess::Start({SimAgentsBinary(), endpoint, std::to_string(first),
                                    std::to_string(count), outputs.back().string()},
                                   (dir / (tag + "-sim-" + std::to_string(p) + ".log")).string());
      ASSERT_TRUE(child.ok()) << child.status().ToString();
      processes.push_back(std::move(child).value());
    }
  }
  // Stops them and adds up what they saw.
  SimulatedAgentsStats Finish() {
    SimulatedAgentsStats total;
    for (std::size_t p = 0; p < processes.size(); ++p) {
      processes[p].Signal(SIGTERM);
      EXPECT_EQ(processes[p].WaitFor(20s), 0);
      Result<SimulatedAgentsStats> s = StatsFromJson(Slurp(outputs[p]));
      if (!s.ok()) {
        ADD_FAILURE() << s.status().ToString();
        continue;
      }
      Merge(total, *s);
    }
    return total;
  }
};

double PerSecond(const SimulatedAgentsStats& s) {
  double seconds = static_cast<double>(s.last_ack_ns - s.first_assign_ns) / 1e9;
  return seconds > 0 ? static_cast<double>(s.assigns) / seconds : 0;
}

// The baseline: the same transport with no core and no store. Welcomes every Hello,
// keeps each agent's one slot busy from a counter of `jobs` run ids, acknowledges every
// RunFinished at once.
void NullCoordinator(protocol::ZmqTransport& server, int jobs, int heartbeat_ms,
                     const std::atomic<bool>& stop, std::atomic<int>& acked) {
  int next = 0;
  auto assign = [&](const std::string& peer) {
    if (next >= jobs) return;
    protocol::Assign a;
    a.run_id = "run-" + std::to_string(next);
    a.job_id = "job-" + std::to_string(next++);
    a.workload = "w";
    a.requirements = {"test-engine@1", "cpu", 0, "synth:x"};
    a.lease = 30s;
    (void)server.Send(peer, protocol::Encode(a));
  };
  while (!stop.load()) {
    server.Wait(5ms);
    while (std::optional<protocol::TransportEvent> event = server.Receive()) {
      if (event->kind != protocol::TransportEvent::Kind::kFrame) continue;
      Result<protocol::Message> m = protocol::Decode(event->frame);
      if (!m.ok()) continue;
      if (std::holds_alternative<protocol::Hello>(*m)) {
        (void)server.Send(event->peer, protocol::Encode(protocol::Welcome{
                                           protocol::kProtocolVersion, "null",
                                           std::chrono::milliseconds(heartbeat_ms)}));
        assign(event->peer);
      } else if (auto* done = std::get_if<protocol::RunFinished>(&*m)) {
        (void)server.Send(event->peer,
                          protocol::Encode(protocol::Ack{done->run_id, protocol::kRunFinishedSeq}));
        acked.fetch_add(1);
        assign(event->peer);
      }
    }
  }
}

void Report(const char* what, SimulatedAgentsStats& s) {
  std::cout << "  " << what << ": " << s.assigns << " assignments, "
            << static_cast<long>(PerSecond(s)) << "/s; RunFinished->Ack p50 "
            << Quantile(s.ack_latency_ns, 0.5) / 1000 << " us, p99 "
            << Quantile(s.ack_latency_ns, 0.99) / 1000 << " us, max "
            << Quantile(s.ack_latency_ns, 1.0) / 1000 << " us; " << s.heartbeats << " heartbeats\n";
}

TEST(CoordinatorLoadBench, SimulatedAgentsOverRealSockets) {
  const int agents = Env("ORCH_LOAD_AGENTS", 1000);
  const int processes = Env("ORCH_LOAD_PROCESSES", 4);
  const int jobs_total = Env("ORCH_LOAD_JOBS", 100000);
  const int experiments = Env("ORCH_LOAD_EXPERIMENTS", 10);
  const int heartbeat_ms = Env("ORCH_LOAD_HEARTBEAT_MS", 1000);
  const int per_experiment = jobs_total / experiments;
  LocalCluster cluster("load-bench");

  // Baseline: the null coordinator.
  SimulatedAgentsStats null_stats;
  {
    protocol::ZmqContext context;
    Result<std::unique_ptr<protocol::ZmqTransport>> server =
        protocol::BindZmqServer(context, "tcp://127.0.0.1:*");
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    std::atomic<bool> stop{false};
    std::atomic<int> acked{0};
    std::thread loop([&] { NullCoordinator(**server, jobs_total, heartbeat_ms, stop, acked); });
    Simulators sims;
    sims.Start(cluster.dir(), (*server)->endpoint(), processes, agents, "null");
    bool finished = LocalCluster::WaitUntil([&] { return acked.load() >= jobs_total; }, 600s);
    EXPECT_TRUE(finished) << acked.load() << " of " << jobs_total << " acknowledged";
    null_stats = sims.Finish();
    stop.store(true);
    loop.join();
  }

  // orch.
  cluster.StartCoordinator("tcp://127.0.0.1:*", "",
                           "heartbeat_interval_ms = " + std::to_string(heartbeat_ms) +
                               "\nagent_timeout_ms = " + std::to_string(heartbeat_ms * 10) +
                               "\nlease_ms = 60000\n");
  pid_t coordinator = cluster.coordinator().pid();
  long rss_start_kb = StatusKb(coordinator, "VmRSS");
  Simulators sims;
  Clock::time_point connect = Clock::now();
  sims.Start(cluster.dir(), cluster.endpoint(), processes, agents, "orch");
  bool registered = LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> status = cluster.Status();
        return status && (*status)["agents"].size() == static_cast<std::size_t>(agents);
      },
      300s);
  ASSERT_TRUE(registered) << cluster.Logs();
  double register_s = std::chrono::duration<double>(Clock::now() - connect).count();
  long rss_agents_kb = StatusKb(coordinator, "VmRSS");

  double cpu_before = CpuSeconds(coordinator);
  Clock::time_point submit_start = Clock::now();
  for (int e = 0; e < experiments; ++e) {
    std::string name = "load-" + std::to_string(e);
    std::filesystem::path spec = cluster.dir() / (name + ".toml");
    std::ofstream(spec) << TestEngineSpec(name, per_experiment, 1, 0);
    ProcessResult submit = cluster.Client({"submit", spec.string()});
    ASSERT_EQ(submit.exit_code, 0) << submit.err;
  }
  double submit_s = std::chrono::duration<double>(Clock::now() - submit_start).count();
  // Polled once a second, as `orch status --watch` would: a StatusReply counts every
  // job, so polling it faster would measure the polling.
  bool done = false;
  for (Clock::time_point deadline = Clock::now() + 1800s; !done && Clock::now() < deadline;) {
    std::this_thread::sleep_for(1s);
    std::optional<nlohmann::json> status = cluster.Status();
    if (!status) continue;
    int succeeded = 0;
    for (const nlohmann::json& e : (*status)["experiments"]) succeeded += e.value("succeeded", 0);
    done = succeeded == per_experiment * experiments;
  }
  ASSERT_TRUE(done) << cluster.Logs();
  double cpu_s = CpuSeconds(coordinator) - cpu_before;
  long rss_peak_kb = StatusKb(coordinator, "VmHWM");
  long rss_end_kb = StatusKb(coordinator, "VmRSS");
  SimulatedAgentsStats orch_stats = sims.Finish();

  EXPECT_EQ(orch_stats.assigns, static_cast<std::uint64_t>(per_experiment * experiments));
  EXPECT_EQ(orch_stats.duplicate_assigns, 0u);
  std::cout << "\ncoordinator load: " << agents << " agents in " << processes << " processes, "
            << per_experiment * experiments << " jobs in " << experiments
            << " experiments, heartbeat " << heartbeat_ms << " ms\n";
  Report("null coordinator (baseline)", null_stats);
  Report("orch coordinator", orch_stats);
  double ratio = PerSecond(null_stats) > 0 ? PerSecond(orch_stats) / PerSecond(null_stats) : 0;
  std::cout << "  orch / baseline assignments/s: " << ratio << "\n"
            << "  registration of " << agents << " agents: " << register_s
            << " s; submit: " << submit_s << " s\n"
            << "  coordinator CPU while submitting and dispatching: " << cpu_s << " s ("
            << cpu_s * 1e6 / static_cast<double>(std::max<std::uint64_t>(1, orch_stats.assigns))
            << " us per assignment)\n"
            << "  coordinator RSS: " << rss_start_kb / 1024 << " MiB at start, "
            << rss_agents_kb / 1024 << " MiB with the agents, peak " << rss_peak_kb / 1024
            << " MiB, " << rss_end_kb / 1024 << " MiB at the end\n";
}

}  // namespace
}  // namespace orch::testing
