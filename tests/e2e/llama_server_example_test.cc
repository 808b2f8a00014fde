// examples/servers.toml end to end on real servers: `orch run` launches the llama-server
// scripts/setup built (no flag), reuses it across jobs with the same launch settings,
// and `orch report --json` compares it with the in-process driver of the same release.
// The checks are the figures measured on this model (docs/servers.md): the decode path
// of llama-server and the in-process prefill agree to the last bits (top-1 everywhere,
// returned top-k KLD ~1e-10, the same 32 greedy tokens), flash attention moves the
// returned values, four slots serving one request at a time change nothing, and no
// server outlives the run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "store/rocksdb_store.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kServerTeacherForced[] = "kjv-64";
constexpr char kServerGenerate[] = "greedy-32";

const json& CellOf(const json& report, const std::string& workload, const std::string& label) {
  for (const json& w : report["workloads"]) {
    if (w["name"] != workload) continue;
    for (const json& c : w["cells"]) {
      if (c["label"] == label) return c;
    }
  }
  ADD_FAILURE() << "no cell " << label << " in " << workload;
  static const json kNone = json::object();
  return kNone;
}

const json& BaselineOf(const json& report, const std::string& workload) {
  for (const json& w : report["workloads"]) {
    if (w["name"] == workload) return w["baseline"];
  }
  ADD_FAILURE() << "no workload " << workload;
  static const json kNone = json::object();
  return kNone;
}

// The command lines of the servers this run's agents launched: the first line of each
// server log under DATA/local/spool-*/servers/ ("# orch agent: launching ARGV").
std::vector<std::string> LaunchedCommands(const fs::path& data) {
  std::vector<std::string> commands;
  const std::string prefix = "# orch agent: launching ";
  for (const auto& entry : fs::recursive_directory_iterator(data / "local")) {
    if (entry.path().parent_path().filename() != "servers") continue;
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    if (first.rfind(prefix, 0) == 0) commands.push_back(first.substr(prefix.size()));
  }
  return commands;
}

// Running processes whose command line is one of `commands` (each launch has its own
// port, so another test's servers never match), by pid.
std::vector<int> ProcessesRunning(const std::vector<std::string>& commands) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (std::find(commands.begin(), commands.end(), cmdline) != commands.end()) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

TEST(LlamaServerExampleTest, LaunchesReusesAndComparesLlamaServerWithTheInProcessDriver) {
  fs::path dir = fs::temp_directory_path() / ("orch-servers-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string data = (dir / "data").string();
  fs::path server = fs::path(ORCH_BINARY_DIR) / "drivers/server/llama-server-b8390";
  ASSERT_TRUE(fs::exists(server)) << server << " is missing: run scripts/setup";
  ProcessResult run =
      RunProcess({OrchBinary(), "run", std::string(ORCH_SOURCE_DIR) + "/examples/servers.toml",
                  "--data-dir", data, "--timeout", "150"},
                 std::chrono::seconds(180), dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("llama-server@b8390 servers are launched from " +
                                 server.lexically_normal().string()));
  std::vector<std::string> launched = LaunchedCommands(data);
  EXPECT_GE(launched.size(), 4u);  // baseline, attention, kv and slots settings at least
  EXPECT_TRUE(ProcessesRunning(launched).empty()) << "a llama-server outlived orch run";

  ProcessResult report =
      RunProcess({OrchBinary(), "report", "servers", "--json", "--data-dir", data},
                 std::chrono::seconds(60), dir.string());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json r = json::parse(report.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(r.is_discarded()) << report.out;
  EXPECT_EQ(r["jobs"]["succeeded"], 12);

  // The server reruns bit for bit: the same returned ids and values, the same tokens.
  for (const char* workload : {kServerTeacherForced, kServerGenerate}) {
    const json& repeats = BaselineOf(r, workload)["repeats"];
    EXPECT_EQ(repeats["unique_streams"], 1) << workload;
    EXPECT_EQ(repeats["bit_identical"], true) << workload;
  }

  // In-process prefill against llama-server's decode path, same release: not comparable
  // bit for bit (full rows vs returned top 20), the same top token at every position,
  // returned top-k KLD 1.5e-10 measured, and the same 32 greedy tokens.
  const json& engine = CellOf(r, kServerTeacherForced, "engine=llama.cpp@b8390")["comparison"];
  EXPECT_THAT(engine["identity_basis"].get<std::string>(), HasSubstr("not comparable"));
  EXPECT_EQ(engine["top1_agreement"], 1.0);
  EXPECT_EQ(engine["kld_returned_top_k"]["positions"], 64);
  EXPECT_EQ(engine["kld_returned_top_k"]["k_min"], 20);
  EXPECT_LT(engine["kld_returned_top_k"]["mean"].get<double>(), 1e-8) << engine.dump();
  EXPECT_EQ(engine["kld"]["method"], "none");  // never mixed into the exact or bound KLD
  const json& generated =
      CellOf(r, kServerGenerate, "engine=llama.cpp@b8390")["comparison"]["generated"];
  EXPECT_EQ(generated["common_prefix"], 32) << generated.dump();

  // Flash attention on the server moves the returned values (2.3e-8 measured), not the
  // top token; four slots serving one request at a time give the same bits.
  const json& attention = CellOf(r, kServerTeacherForced, "attention=on")["comparison"];
  EXPECT_GT(attention["kld_returned_top_k"]["mean"].get<double>(), 0.0);
  EXPECT_EQ(attention["top1_agreement"], 1.0);
  EXPECT_EQ(CellOf(r, kServerTeacherForced, "slots=4")["comparison"]["bit_identical"], true);

  // Servers were reused: some server job ran on a server that had run jobs before.
  Result<std::unique_ptr<store::Store>> db =
      store::OpenRocksDbStore(store::RocksDbPathInDataDir(data), store::RocksDbOptions{});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  int reused = 0;
  int server_runs = 0;
  for (const json& w : r["workloads"]) {
    std::vector<std::string> runs;
    for (const json& id : w["baseline"]["repeats"]["runs"]) runs.push_back(id);
    for (const json& c : w["cells"]) runs.push_back(c["run"]);
    for (const std::string& id : runs) {
      Result<store::RunRecord> record = (*db)->GetRun(id);
      ASSERT_TRUE(record.ok()) << id;
      json hello = json::parse(record->summary, nullptr, false).value("hello", json::object());
      if (hello.value("engine", "") != "llama-server") continue;
      ++server_runs;
      EXPECT_EQ(hello["server"]["mode"], "launched");
      if (hello["server"]["jobs_before"].get<int>() > 0) ++reused;
    }
  }
  EXPECT_EQ(server_runs, 10);
  EXPECT_GE(reused, 1);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
