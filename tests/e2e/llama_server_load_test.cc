// examples/server-load.toml end to end on a real llama-server with four slots: eight
// greedy repeats alone on the server and eight with three background generations in
// flight (load.concurrency = 4). The checks are what this CPU server measured
// (docs/servers.md): alone, every repeat returns the same ids and values; under load,
// the repeats' returned log-probabilities differ (the rows are computed in batches whose
// size changes with the load) while the 32 greedy tokens stay the same; and each loaded
// run records the background requests that ran beside it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "store/rocksdb_store.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json& Workload(const json& report) {
  for (const json& w : report["workloads"]) {
    if (w["name"] == "greedy-32") return w;
  }
  ADD_FAILURE() << "no workload greedy-32";
  static const json kNone = json::object();
  return kNone;
}

const json& LoadCell(const json& workload) {
  for (const json& c : workload["cells"]) {
    if (c["label"] == "load.concurrency=4") return c;
  }
  ADD_FAILURE() << "no cell load.concurrency=4";
  static const json kNone = json::object();
  return kNone;
}

TEST(LlamaServerLoadTest, RepeatsUnderLoadDifferInValuesNotInTokens) {
  fs::path dir = fs::temp_directory_path() / ("orch-server-load-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string data = (dir / "data").string();
  fs::path server = fs::path(ORCH_BINARY_DIR) / "drivers/server/llama-server-b8390";
  ASSERT_TRUE(fs::exists(server)) << server << " is missing: run scripts/setup";
  ProcessResult run =
      RunProcess({OrchBinary(), "run", std::string(ORCH_SOURCE_DIR) + "/examples/server-load.toml",
                  "--data-dir", data, "--timeout", "150"},
                 std::chrono::seconds(180), dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  ProcessResult report =
      RunProcess({OrchBinary(), "report", "server-load", "--json", "--data-dir", data},
                 std::chrono::seconds(60), dir.string());
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json r = json::parse(report.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(r.is_discarded()) << report.out;
  EXPECT_EQ(r["jobs"]["succeeded"], 16);
  const json& w = Workload(r);

  // Alone on the server: 8 repeats, one stream, the same 32 tokens.
  const json& alone = w["baseline"]["repeats"];
  EXPECT_EQ(alone["available"], 8);
  EXPECT_EQ(alone["unique_streams"], 1) << alone.dump();
  EXPECT_EQ(alone["generated_common_prefix"], 32);

  // Three requests beside it: the returned values differ between repeats (8 / 8 streams
  // measured, from position 2), the greedy tokens do not.
  const json& loaded = LoadCell(w)["repeats"];
  EXPECT_EQ(loaded["available"], 8);
  EXPECT_GT(loaded["unique_streams"].get<int>(), 1) << loaded.dump();
  EXPECT_FALSE(loaded["first_difference"].is_null()) << loaded.dump();
  EXPECT_EQ(loaded["generated_common_prefix"], 32) << loaded.dump();

  // Every loaded run recorded its background: three streams, a seeded mix, requests done.
  Result<std::unique_ptr<store::Store>> db =
      store::OpenRocksDbStore(store::RocksDbPathInDataDir(data), store::RocksDbOptions{});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::set<std::uint64_t> seeds;
  for (const json& id : loaded["runs"]) {
    Result<store::RunRecord> record = (*db)->GetRun(id.get<std::string>());
    ASSERT_TRUE(record.ok()) << id;
    json summary = json::parse(record->summary, nullptr, false);
    const json& load = summary["hello"]["load"];
    EXPECT_EQ(load["concurrency"], 4) << summary.dump();
    EXPECT_EQ(load["prompts"].size(), 8u);
    seeds.insert(load["seed"].get<std::uint64_t>());
    const json& done = summary["done"]["load"];
    EXPECT_GE(done["completed"].get<int>(), 3) << summary.dump();
    EXPECT_EQ(done["failed"], 0);
  }
  EXPECT_EQ(seeds.size(), 8u);  // each repeat is a job of its own: its own mix
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
