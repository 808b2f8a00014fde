// A cluster whose agent runs the real llama.cpp drivers: a driver process killed
// mid-run (SIGKILL, as the kernel's OOM killer would) fails its run with the reason, the
// agent lives on, and the job is retried on the same agent until it succeeds. Every wait
// is bounded; the driver is found through /proc and killed by pid.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

// One generate job long enough to be caught mid-run (a few seconds on one thread of a
// slow CPU kernel variant): a 4-layer model of width 256 drawing 400 greedy tokens.
constexpr char kLongSpec[] = R"([experiment]
name = "e2e-driver-kill"

[model]
synth = "llama:vocab=1024,embd=256,layers=4,heads=4,kv_heads=2,ff=768,ctx=1024,seed=3"

[[workloads]]
name = "long"
kind = "generate"
prompt = "Once upon a time"
max_tokens = 400

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
cpu_backend = "x64"
sampler.seed = 1
sampler.temperature = 0.0

[repeats]
baseline = 1
cells = 1
)";

// Field `index` (1-based, as in proc(5)) of /proc/PID/stat, after the command name.
std::optional<long long> StatField(pid_t pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));  // from field 3, the state
  std::string field;
  for (int i = 3; fields >> field; ++i) {
    if (i == index) return std::stoll(field);
  }
  return std::nullopt;
}

// The child of `parent` running `executable`, if there is one now.
std::optional<pid_t> ChildRunning(pid_t parent, const std::string& executable) {
  std::error_code ec;
  const fs::path wanted = fs::weakly_canonical(executable, ec);
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (StatField(pid, 4) != parent) continue;  // field 4: the parent's pid
    if (fs::read_symlink(entry.path() / "exe", ec) == wanted) return pid;
  }
  return std::nullopt;
}

// CPU time the process has used, in clock ticks (user + system).
long long CpuTicks(pid_t pid) {
  return StatField(pid, 14).value_or(0) + StatField(pid, 15).value_or(0);
}

std::string RecentFailures(LocalCluster& cluster) {
  std::optional<nlohmann::json> status = cluster.Status();
  if (!status || !status->contains("recent_failures")) return "";
  std::string all;
  for (const nlohmann::json& f : (*status)["recent_failures"]) all += f.get<std::string>() + "\n";
  return all;
}

TEST(LlamaCppClusterTest, DriverKilledMidRunFailsTheRunWithTheReasonAndTheAgentLivesOn) {
  LocalCluster cluster("driver-kill");
  // A killed driver is reported by the agent at once, not found by a timer: timers long
  // enough that a starved machine (the sanitizer build beside other work) does not also
  // time the agent out and run the job a third time.
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator(
      "tcp://127.0.0.1:*", "",
      "heartbeat_interval_ms = 200\nagent_timeout_ms = 15000\nlease_ms = 30000\n"));
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a1", LlamaCppDrivers()));
  std::ofstream(cluster.dir() / "spec.toml") << kLongSpec;
  ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << cluster.Logs();

  // Mid-run: the driver is decoding (it has used a quarter second of CPU).
  const std::string driver = LlamaCppDriverBinary("v0.4.0");
  const pid_t agent = cluster.agent("a1").pid();
  std::optional<pid_t> victim;
  bool decoding = LocalCluster::WaitUntil(
      [&] {
        victim = ChildRunning(agent, driver);
        return victim && CpuTicks(*victim) >= sysconf(_SC_CLK_TCK) / 4;
      },
      60s);
  ASSERT_TRUE(decoding) << "no driver of agent " << agent << " got to decode\n" << cluster.Logs();
  ASSERT_EQ(::kill(*victim, SIGKILL), 0);

  // The run fails with the signal as its reason, and the job goes back to the same agent.
  std::string failures;
  bool reported = LocalCluster::WaitUntil(
      [&] { return (failures = RecentFailures(cluster)).find("signal 9") != std::string::npos; },
      30s);
  ASSERT_TRUE(reported) << failures << cluster.Logs();
  EXPECT_THAT(failures, HasSubstr("on a1: driver llamacpp-v0.4.0: killed by signal 9 (Killed)"));
  bool succeeded = LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> p = cluster.Progress("e2e-driver-kill");
        return p && p->value("succeeded", 0) == 1;
      },
      90s);
  ASSERT_TRUE(succeeded) << cluster.Status().value_or(nlohmann::json()).dump() << cluster.Logs();
  EXPECT_FALSE(cluster.agent("a1").WaitFor(0ms).has_value()) << "the agent exited";
  EXPECT_EQ(cluster.coordinator().Stop(10s), 0);

  // The store: two runs of the job on a1, the killed one failed with the reason.
  Result<std::unique_ptr<store::Store>> db = store::OpenRocksDbStore(
      store::RocksDbPathInDataDir(cluster.data_dir().string()), store::RocksDbOptions{});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Result<store::StoreState> state = (*db)->LoadState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_EQ(state->jobs[0].state, store::JobState::kSucceeded);
  EXPECT_EQ(state->jobs[0].attempts, 2);
  ASSERT_EQ(state->runs.size(), 2u);
  int failed = 0, complete = 0;
  for (const store::RunRecord& run : state->runs) {
    EXPECT_EQ(run.agent_id, "a1");
    if (run.state == store::RunState::kFailed) {
      ++failed;
      EXPECT_THAT(run.error, HasSubstr("killed by signal 9 (Killed)"));
    }
    if (run.state == store::RunState::kSucceeded && run.Complete()) ++complete;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(complete, 1);
}

}  // namespace
}  // namespace orch::testing
