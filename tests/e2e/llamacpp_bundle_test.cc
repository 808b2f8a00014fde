// A contributor's home rig end to end on the real llama.cpp engine (docs/bundles.md): the
// lab's authenticated coordinator exports a plan bundle, `orch run --bundle` runs it
// offline and signs the results, `orch import` stores them while the coordinator runs,
// the experiment completes without a lab agent, and the report names the contributor.
// Then an offline import killed with SIGKILL at several moments leaves either the whole
// bundle or nothing of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/child_process.h"
#include "protocol/identity_key.h"
#include "store/rocksdb_store.h"
#include "tests/e2e/local_cluster.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr char kSpec[] = R"([experiment]
name = "e2e-bundle"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=5"

[[workloads]]
name = "w"
kind = "teacher_forced"
text = "In the beginning God created the heaven and the earth."
positions = 24

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1

[alternatives]
threads = [2]

[repeats]
baseline = 2
cells = 1
)";

class BundleRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto [name, role] :
         {std::pair{"coordinator", "coordinator"}, std::pair{"alice", "submitter"},
          std::pair{"bob", "submitter"}, std::pair{"carol", "contributor"}}) {
      ProcessResult made =
          RunProcess({OrchBinary(), "keygen", name, "--role", role, "--dir", keys().string()});
      ASSERT_EQ(made.exit_code, 0) << made.err;
    }
    fs::create_directories(keys() / "allowed");
    fs::copy_file(keys() / "alice.key", keys() / "allowed" / "alice.key");
    fs::copy_file(keys() / "bob.key", keys() / "allowed" / "bob.key");
    cluster_.StartCoordinator("tcp://127.0.0.1:*",
                              "key = \"keys/coordinator.key_secret\"\n"
                              "allowed_keys = \"keys/allowed\"\n");
    std::ofstream(cluster_.dir() / "spec.toml") << kSpec;
  }

  fs::path keys() const { return cluster_.dir() / "keys"; }

  ProcessResult AsAlice(std::vector<std::string> args) { return As("alice", args); }
  ProcessResult As(const std::string& user, std::vector<std::string> args) {
    args.insert(args.end(),
                {"--key", (keys() / (user + ".key_secret")).string(), "--coordinator-key",
                 (keys() / "coordinator.key").string(), "--timeout", "20"});
    return cluster_.Client(args);
  }

  // A rig: `orch run --bundle` with carol's key, in its own folder `rig`.
  ProcessResult RunRig(std::vector<std::string> extra = {}, const std::string& rig = "rig") {
    std::vector<std::string> args{OrchBinary(),
                                  "run",
                                  "--bundle",
                                  (cluster_.dir() / "plan.orchb").string(),
                                  "--key",
                                  (keys() / "carol.key_secret").string(),
                                  "--coordinator-key",
                                  (keys() / "coordinator.key").string(),
                                  "--data-dir",
                                  (cluster_.dir() / rig).string(),
                                  "--results",
                                  (cluster_.dir() / "results.orchb").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args, 240s);
  }

  LocalCluster cluster_{"bundle"};
};

TEST_F(BundleRoundTripTest, ARigsSignedResultsCompleteTheLabsExperimentAndTheReportNamesIt) {
  ASSERT_EQ(AsAlice({"submit", (cluster_.dir() / "spec.toml").string()}).exit_code, 0)
      << cluster_.Logs();
  ProcessResult exported =
      AsAlice({"export", "e2e-bundle", "-o", (cluster_.dir() / "plan.orchb").string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.err << cluster_.Logs();
  EXPECT_THAT(exported.out, HasSubstr("3 jobs of e2e-bundle (2 cells)"));

  ProcessResult rig = RunRig();
  ASSERT_EQ(rig.exit_code, 0) << rig.out << rig.err;
  EXPECT_THAT(rig.out, HasSubstr("3 of 3 jobs of e2e-bundle, signed by carol (sequence 1)"));

  // Carol's key is not trusted yet: refused with its id and what to do, nothing stored.
  ProcessResult unknown = AsAlice({"import", (cluster_.dir() / "results.orchb").string()});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("unknown key: 'carol'"));
  EXPECT_THAT(unknown.err, HasSubstr("cp carol.key " + (keys() / "allowed").string() + "/"));
  // Trusting it needs no restart: the coordinator reads its key folder at each import.
  fs::copy_file(keys() / "carol.key", keys() / "allowed" / "carol.key");
  // Another submitter may not add runs to alice's experiment.
  ProcessResult bob = As("bob", {"import", (cluster_.dir() / "results.orchb").string()});
  EXPECT_EQ(bob.exit_code, 1);
  EXPECT_THAT(bob.err, HasSubstr("only an admin or the key that submitted e2e-bundle"));
  ProcessResult imported = AsAlice({"import", (cluster_.dir() / "results.orchb").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err << cluster_.Logs();
  EXPECT_THAT(imported.out, HasSubstr("imported 3 runs of e2e-bundle from bundle 1 of carol"));
  EXPECT_THAT(imported.out, HasSubstr("3 jobs completed"));
  // No lab agent ever connected: the contributor's runs alone completed it.
  EXPECT_THAT(AsAlice({"status"}).out, HasSubstr("3/3 succeeded"));

  ProcessResult again = AsAlice({"import", (cluster_.dir() / "results.orchb").string()});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_THAT(again.out, HasSubstr("nothing changed"));

  // A bundle with one byte changed is refused through the coordinator too.
  std::ifstream in(cluster_.dir() / "results.orchb", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes[bytes.size() - 10] = static_cast<char>(bytes[bytes.size() - 10] ^ 0x20);
  std::ofstream(cluster_.dir() / "damaged.orchb", std::ios::binary) << bytes;
  ProcessResult damaged = AsAlice({"import", (cluster_.dir() / "damaged.orchb").string()});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.err, HasSubstr("refused, nothing stored"));

  ASSERT_EQ(cluster_.coordinator().Stop(10s), 0) << cluster_.Logs();
  ProcessResult report = RunProcess(
      {OrchBinary(), "report", "e2e-bundle", "--data-dir", cluster_.data_dir().string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("bit-identical"));
  EXPECT_THAT(report.out, HasSubstr("rests on one contributor (carol)"));

  // Carol's second rig runs the bundle too (sequence 2: her key's next bundle); its
  // import, offline and killed at several moments, leaves all of it or none of it.
  ProcessResult second = RunRig({}, "rig-2");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("(sequence 2)"));
  protocol::PublicIdentity carol =
      std::move(protocol::ReadPublicKeyFile((keys() / "carol.key").string())).value();
  bool stored = false;
  for (int delay_ms : {0, 2, 5, 10, 20, 40, 80, 160, 320, 2000}) {
    Result<cli::ChildProcess> import = cli::ChildProcess::Start(
        {OrchBinary(), "import", (cluster_.dir() / "results.orchb").string(), "--data-dir",
         cluster_.data_dir().string(), "--own-key", (keys() / "coordinator.key_secret").string(),
         "--allowed-keys", (keys() / "allowed").string()},
        (cluster_.dir() / "import.log").string());
    ASSERT_TRUE(import.ok()) << import.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    import->Signal(SIGKILL);
    import->WaitFor(10s);
    // Opened as the coordinator and orch import open it: a kill inside the import's
    // write (it takes several system calls) leaves the WAL's last record cut off, which
    // this open drops, saying so.
    std::vector<std::string> dropped;
    Result<std::unique_ptr<store::Store>> db = store::OpenRocksDbStore(
        store::RocksDbPathInDataDir(cluster_.data_dir().string()), {.dropped = &dropped});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    for (const std::string& what : dropped) {
      EXPECT_THAT(what, HasSubstr("ends inside its last record")) << delay_ms;
      RecordProperty("cut_off_by_kill_at_ms", delay_ms);
    }
    Result<store::StoreState> state = (*db)->LoadState();
    ASSERT_TRUE(state.ok());
    int imported_runs = 0;
    for (const store::RunRecord& run : state->runs) {
      if (!run.contributor.empty()) {
        ++imported_runs;
        EXPECT_TRUE(run.Complete()) << run.id << " after a kill at " << delay_ms << " ms";
      }
    }
    // 3 runs of bundle 1, plus 3 of bundle 2 exactly when it was stored, together with
    // carol's new sequence number.
    EXPECT_TRUE(imported_runs == 3 || imported_runs == 6)
        << imported_runs << " imported runs after a kill at " << delay_ms << " ms";
    Result<store::SignerRecord> signer = (*db)->GetSigner(carol.sign_public);
    ASSERT_TRUE(signer.ok()) << signer.status().ToString();
    EXPECT_EQ(signer->sequence, imported_runs == 6 ? 2u : 1u) << delay_ms;
    if (imported_runs == 6) {
      stored = true;
      RecordProperty("stored_after_kill_at_ms", delay_ms);
      break;
    }
  }
  EXPECT_TRUE(stored) << "the import never finished, even given 2 s";
}

}  // namespace
}  // namespace orch::testing
