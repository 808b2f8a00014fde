// Server failures end to end on the real llama-server (the one scripts/setup builds),
// through a real coordinator and agent whose [[servers]] entry launches it:
// - a server killed (SIGKILL) while the driver is mid-way through a teacher-forced job
//   fails the run with engine_error naming the server's URL; the agent lives on, and the
//   retried job succeeds on a server the agent launches again;
// - a server that never becomes healthy (a model that is not a GGUF file: it exits; a
//   --port other than the one the agent checks: it never answers there): the agent
//   refuses the run with engine_error naming the server's log and what happened, the job
//   is left unrunnable with that reason, and no server is left running.
// Every process is found through /proc and signalled by pid; every wait is bounded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int kPositions = 240;  // kjv-tiny's context is 256 tokens
constexpr char kModelSha256[] = "2edb568f0c7576b5b0b77ab7223bf1eb53c47639d55fd53ab4ddbc35b48a7710";

fs::path ServerBinary() {
  return fs::path(ORCH_SOURCE_DIR) / "third_party/engines/llama.cpp-b8390/server/llama-server";
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The llama-servers running now whose command line names a path under `dir` (the
// test's own: its model folder), by pid.
std::vector<pid_t> ServersUnder(const fs::path& dir) {
  std::vector<pid_t> pids;
  std::error_code ec;
  const fs::path binary = fs::canonical(ServerBinary(), ec);
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_ec;
    if (fs::read_symlink(entry.path() / "exe", link_ec) != binary || link_ec) continue;
    if (ReadFile(entry.path() / "cmdline").find(dir.string()) == std::string::npos) continue;
    pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// The value after `flag` in the process's command line ("" if none).
std::string ArgumentOf(pid_t pid, const std::string& flag) {
  std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  for (std::size_t at = 0; at < cmdline.size();) {
    std::size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) end = cmdline.size();
    args.push_back(cmdline.substr(at, end - at));
    at = end + 1;
  }
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "";
}

// /completion requests llama-server has answered, from its log.
int CompletionsIn(const fs::path& log) {
  const std::string text = ReadFile(log);
  const std::string line = "done request: POST /completion";
  int count = 0;
  for (std::size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) {
    ++count;
  }
  return count;
}

// The spec names the model and the text beside it in the cluster's folder.
std::string Spec(const std::string& name, int positions) {
  return R"([experiment]
name = ")" +
         name + R"("

[model]
name = "kjv-tiny"
file = "models/kjv-tiny-f32.gguf"
sha256 = ")" +
         kModelSha256 + R"("

[[workloads]]
name = "kjv"
kind = "teacher_forced"
text_file = "kjv-heldout.txt"
positions = )" +
         std::to_string(positions) + R"(
capture = { top_logits = 20 }

[baseline]
engine = "llama-server@b8390"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
slots = 1
sampler.temperature = 0.0

[repeats]
baseline = 1
cells = 1
)";
}

// A [[servers]] entry for llama-server@b8390 launching `launch` (TOML array items).
std::string ServerEntry(const std::string& launch, int start_timeout_ms) {
  return "\n[[servers]]\nengine = \"llama-server@b8390\"\npreset = \"llama-server\"\n"
         "launch = [" +
         launch + "]\nstart_timeout_ms = " + std::to_string(start_timeout_ms) +
         "\nstop_timeout_ms = 5000\n";
}

std::string Quoted(const std::string& text) { return json(text).dump(); }

std::unique_ptr<store::Store> OpenStore(LocalCluster& cluster) {
  Result<std::unique_ptr<store::Store>> db = store::OpenRocksDbStore(
      store::RocksDbPathInDataDir(cluster.data_dir().string()), store::RocksDbOptions{});
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(db).value() : nullptr;
}

class LlamaServerFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(ServerBinary()))
        << ServerBinary() << " is not built: run scripts/setup (scripts/setup-engines)";
  }

  // A coordinator and agent a1 with orch-driver-llama-server, the example model in its
  // model folder and `servers` after its drivers; submits Spec(name, positions).
  void Start(LocalCluster& cluster, const std::string& name, const std::string& servers,
             int positions) {
    fs::create_directories(cluster.dir() / "models");
    model_ = cluster.dir() / "models" / "kjv-tiny-f32.gguf";
    fs::copy_file(fs::path(ORCH_SOURCE_DIR) / "examples/models/kjv-tiny-f32.gguf", model_);
    fs::copy_file(fs::path(ORCH_SOURCE_DIR) / "examples/texts/kjv-heldout.txt",
                  cluster.dir() / "kjv-heldout.txt");
    ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
    LocalCluster::Driver driver{
        "llama-server", "llama-server@b8390",
        (fs::path(ORCH_SOURCE_DIR) / "drivers/server/orch-driver-llama-server").string()};
    ASSERT_NO_FATAL_FAILURE(
        cluster.StartAgent("a1", {driver}, "", {(cluster.dir() / "models").string()}, servers));
    std::ofstream(cluster.dir() / "spec.toml") << Spec(name, positions);
    ProcessResult submitted = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << cluster.Logs();
  }

  std::string Launch(const std::vector<std::string>& args) const {
    std::string out = Quoted(ServerBinary().string());
    for (const std::string& a : args) out += ", " + Quoted(a);
    return out;
  }

  fs::path model_;
};

TEST_F(LlamaServerFailureTest, AServerKilledMidJobFailsTheRunNamingItsUrlAndTheRetrySucceeds) {
  LocalCluster cluster("llama-server-kill");
  ASSERT_NO_FATAL_FAILURE(
      Start(cluster, "server-kill",
            ServerEntry(Launch({"-m", "{model}", "--host", "{host}", "--port", "{port}"}), 60000),
            kPositions));

  // The server the agent launched for the job, and its log (its stdout).
  std::vector<pid_t> servers;
  ASSERT_TRUE(LocalCluster::WaitUntil(
      [&] { return (servers = ServersUnder(cluster.dir())).size() == 1; }, 60s))
      << cluster.Logs();
  const pid_t victim = servers[0];
  const std::string url = "http://127.0.0.1:" + ArgumentOf(victim, "--port");
  std::error_code ec;
  const fs::path log = fs::read_symlink("/proc/" + std::to_string(victim) + "/fd/1", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(log.parent_path(), cluster.dir() / "spool-a1" / "servers");

  // Mid-way: the driver has had two positions answered. The server is stopped first so
  // that the job cannot finish between the check and the kill.
  for (int i = 0; i < 30000 && CompletionsIn(log) < 2; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);
  const int answered = CompletionsIn(log);
  ASSERT_GE(answered, 2) << ReadFile(log) << cluster.Logs();
  ASSERT_LT(answered, kPositions) << "the job ended before its server could be stopped";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  bool succeeded = LocalCluster::WaitUntil(
      [&] {
        std::optional<json> p = cluster.Progress("server-kill");
        return p && p->value("succeeded", 0) == 1;
      },
      120s);
  ASSERT_TRUE(succeeded) << cluster.Status().value_or(json()).dump() << cluster.Logs();
  EXPECT_FALSE(cluster.agent("a1").WaitFor(0ms).has_value()) << "the agent exited";
  servers = ServersUnder(cluster.dir());
  ASSERT_EQ(servers.size(), 1u) << "the agent keeps the relaunched server";
  EXPECT_NE(servers[0], victim);

  // The agent stops its server when it stops.
  EXPECT_EQ(cluster.agent("a1").Stop(30s), 0);
  EXPECT_TRUE(ServersUnder(cluster.dir()).empty()) << "a llama-server outlived the agent";
  EXPECT_EQ(cluster.coordinator().Stop(10s), 0);

  // The store: the killed run failed with engine_error naming the URL; the retry ran on
  // a server launched again (jobs_before 0, another log) and stored every position.
  std::unique_ptr<store::Store> db = OpenStore(cluster);
  ASSERT_NE(db, nullptr);
  Result<store::StoreState> state = db->LoadState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_EQ(state->jobs[0].state, store::JobState::kSucceeded);
  EXPECT_EQ(state->jobs[0].attempts, 2);
  ASSERT_EQ(state->runs.size(), 2u);
  int failed = 0;
  int complete = 0;
  for (const store::RunRecord& run : state->runs) {
    json summary = json::parse(run.summary, nullptr, /*allow_exceptions=*/false);
    if (run.state == store::RunState::kFailed) {
      ++failed;
      EXPECT_THAT(run.error, HasSubstr(url + "/completion")) << run.error;
      ASSERT_TRUE(summary.is_object()) << run.summary;
      EXPECT_EQ(summary["error"]["code"], "engine_error") << run.summary;
      EXPECT_EQ(summary["hello"]["server"]["log"], log.string());
    }
    if (run.state == store::RunState::kSucceeded && run.Complete()) {
      ++complete;
      ASSERT_TRUE(summary.is_object()) << run.summary;
      EXPECT_EQ(summary["hello"]["server"]["jobs_before"], 0);
      EXPECT_NE(summary["hello"]["server"]["log"], log.string());
      EXPECT_EQ(summary["done"]["positions"], kPositions);
    }
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(complete, 1);
}

// Runs a job on an entry whose server never becomes healthy: the agent refuses every
// run with engine_error naming the server's log and `reason`, so the job is left
// unrunnable with that reason, the agent lives on, and no server is left running.
void ExpectTheJobUnrunnableNamingTheLog(LocalCluster& cluster, const std::string& reason) {
  std::optional<json> status;
  bool refused = LocalCluster::WaitUntil(
      [&] {
        // Unrunnable for the server's failure (not while no agent has registered yet).
        status = cluster.Status();
        if (!status || !status->contains("jobs") || (*status)["jobs"].size() != 1) return false;
        const json& job = (*status)["jobs"][0];
        return !job.value("runnable", true) &&
               job.value("reason", "").find("server log ") != std::string::npos;
      },
      180s);
  ASSERT_TRUE(refused) << cluster.Status().value_or(json()).dump() << cluster.Logs();
  const std::string logs = (cluster.dir() / "spool-a1" / "servers").string();
  const std::string why = (*status)["jobs"][0].value("reason", "");
  EXPECT_THAT(why, AllOf(HasSubstr("server log " + logs), HasSubstr(reason))) << status->dump();
  bool reported = false;
  for (const json& failure : (*status)["recent_failures"]) {
    std::string text = failure.get<std::string>();
    reported |= text.find("server log " + logs) != std::string::npos &&
                text.find(reason) != std::string::npos;
  }
  EXPECT_TRUE(reported) << status->dump();
  EXPECT_FALSE(cluster.agent("a1").WaitFor(0ms).has_value()) << "the agent exited";
  EXPECT_TRUE(LocalCluster::WaitUntil([&] { return ServersUnder(cluster.dir()).empty(); }, 30s))
      << "a server that failed to start still runs";
  EXPECT_EQ(cluster.agent("a1").Stop(30s), 0);
  EXPECT_EQ(cluster.coordinator().Stop(10s), 0);

  // The store keeps each refused run with the driver-protocol code engine_error.
  std::unique_ptr<store::Store> db = OpenStore(cluster);
  ASSERT_NE(db, nullptr);
  Result<store::StoreState> state = db->LoadState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  int typed = 0;
  for (const store::RunRecord& run : state->runs) {
    json summary = json::parse(run.summary, nullptr, /*allow_exceptions=*/false);
    if (summary.is_object() && summary["error"]["code"] == "engine_error" &&
        run.error.find("server log " + logs) != std::string::npos) {
      ++typed;
    }
  }
  EXPECT_GE(typed, 1);
}

TEST_F(LlamaServerFailureTest, AModelThatIsNotGgufLeavesTheJobUnrunnableNamingTheServerLog) {
  LocalCluster cluster("llama-server-not-gguf");
  const fs::path not_gguf = cluster.dir() / "not-a-model.gguf";
  std::ofstream(not_gguf) << "these are not the weights of any model\n";
  ASSERT_NO_FATAL_FAILURE(Start(
      cluster, "server-not-gguf",
      ServerEntry(Launch({"-m", not_gguf.string(), "--host", "{host}", "--port", "{port}"}), 60000),
      16));
  ExpectTheJobUnrunnableNamingTheLog(
      cluster, "server exited (exit status 1) before it answered GET /health");
}

TEST_F(LlamaServerFailureTest,
       AServerListeningOnAnotherPortLeavesTheJobUnrunnableNamingTheServerLog) {
  LocalCluster cluster("llama-server-wrong-port");
  // The agent checks {port}; the later --port wins, so the server listens elsewhere.
  // start_timeout_ms is longer than the test coordinator's 3 s lease: heartbeats list a
  // run waiting for its server, so its lease lives until the refusal arrives (it did not,
  // and the job was offered again and again, before runs being prepared were listed).
  const std::string elsewhere = std::to_string(LocalCluster::FreePort());
  ASSERT_NO_FATAL_FAILURE(Start(cluster, "server-wrong-port",
                                ServerEntry(Launch({"-m", "{model}", "--host", "{host}", "--port",
                                                    "{port}", "--port", elsewhere}),
                                            5000),
                                16));
  ExpectTheJobUnrunnableNamingTheLog(
      cluster, "did not answer GET /health with 200 within start_timeout_ms = 5000");
}

}  // namespace
}  // namespace orch::testing
