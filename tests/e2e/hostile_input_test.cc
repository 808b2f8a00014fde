// The hostile-input regression set (docs/chaos.md): inputs a stranger or a mistake can
// send a real coordinator or agent, each of which once exhausted memory, was refused
// with the wrong cause, or acted on another process's state. Real processes, real
// sockets on 127.0.0.1, real files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bundle/bundle_file.h"
#include "bundle/result_bundle.h"
#include "cli/child_process.h"
#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The peak resident size of process `pid` (VmHWM), bytes; 0 when unreadable.
uint64_t PeakResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

class HostileInputTest : public ::testing::Test {
 protected:
  LocalCluster cluster_{"hostile"};
};

// Regression: a 66 KB bundle signed by a self-made key made the coordinator allocate
// 2 GB (and a 198 KB one killed it): blobs were inflated to their declared sizes before
// the signer was checked. The bundle here declares 512 MiB of zeros in 16 KiB.
TEST_F(HostileInputTest, AZipBombFromAnUnknownKeyIsRefusedAndInflatesNothing) {
  cluster_.Keygen("coordinator", "coordinator", false);
  cluster_.Keygen("alice", "submitter", true);
  cluster_.Keygen("mallory", "contributor", false);  // made by a stranger, never admitted
  ASSERT_NO_FATAL_FAILURE(cluster_.StartCoordinator("tcp://127.0.0.1:*",
                                                    "key = \"keys/coordinator.key_secret\"\n"
                                                    "allowed_keys = \"keys/allowed\"\n"));
  fs::path bomb = cluster_.dir() / "bomb.orchb";
  {
    Result<protocol::SecretIdentity> mallory =
        protocol::ReadSecretKeyFile((cluster_.dir() / "keys" / "mallory.key_secret").string());
    ASSERT_TRUE(mallory.ok()) << mallory.status().message();
    bundle::BundleContent content{std::string(bundle::kResultKind),
                                  R"({"experiment":"x"})",
                                  {{"runs/0/digests", std::string(512u << 20, '\0')}}};
    Result<std::string> file = bundle::WriteBundle(content, *mallory);
    ASSERT_TRUE(file.ok()) << file.status().message();
    ASSERT_LT(file->size(), 64u << 10);
    std::ofstream(bomb, std::ios::binary) << *file;
  }
  pid_t coordinator = cluster_.coordinator().pid();
  // Its peak after start-up and a request (a sanitizer build starts higher).
  ASSERT_THAT(cluster_.As("alice", {"experiments"}).out, HasSubstr("(no experiments submitted)"));
  uint64_t before = PeakResidentBytes(coordinator);
  ProcessResult imported = cluster_.As("alice", {"import", bomb.string()});
  EXPECT_EQ(imported.exit_code, 1) << imported.out << imported.err;
  EXPECT_THAT(imported.err, HasSubstr("bundle signed by an unknown key: 'mallory'"));
  EXPECT_TRUE(cluster_.coordinator().running()) << cluster_.Logs();
  EXPECT_LT(PeakResidentBytes(coordinator) - before, uint64_t{128} << 20)
      << "the coordinator inflated the bomb";
  // It still answers.
  EXPECT_THAT(cluster_.As("alice", {"experiments"}).out, HasSubstr("(no experiments submitted)"));
}

// Regression: a valid plan above the 16 MiB frame limit (orch plan accepts it) could not
// be submitted, and the client said "no answer ... answers only --key" while the
// coordinator logged nothing. Here 100 workloads of 170 KB of text each: a plan of about
// 19 MB with 300 jobs (so that a sanitizer build stores them in seconds).
TEST_F(HostileInputTest, APlanLargerThanAFrameIsSubmittedInParts) {
  ASSERT_NO_FATAL_FAILURE(cluster_.StartCoordinator("tcp://127.0.0.1:*"));
  std::ostringstream spec;
  spec << "[experiment]\nname = \"big\"\n\n"
       << "[model]\nsynth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128\"\n\n";
  for (int w = 0; w < 100; ++w) {
    spec << "[[workloads]]\nname = \"w" << w << "\"\nkind = \"teacher_forced\"\ntext = \"";
    for (int i = 0; i < 12'000; ++i) spec << "hello world " << w << " ";
    spec << "\"\npositions = 4\n\n";
  }
  spec << "[baseline]\nengine = \"test-engine@1\"\nquant = \"f32\"\nkv = \"f16\"\n"
       << "attention = \"off\"\ntp = 1\nhardware = \"cpu\"\n\n"
       << "[alternatives]\nkv = [\"q8_0\"]\n\n[repeats]\nbaseline = 2\ncells = 1\n";
  fs::path file = cluster_.dir() / "big.toml";
  std::ofstream(file) << spec.str();
  ProcessResult plan =
      RunProcess({OrchBinary(), "plan", file.string(), "--json"}, std::chrono::seconds(120));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  ASSERT_GT(plan.out.size(), std::size_t{16} << 20) << "the plan must not fit in one frame";
  ProcessResult submitted =
      cluster_.Client({"submit", file.string(), "--timeout", "120"}, std::chrono::seconds(150));
  EXPECT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << cluster_.Logs();
  EXPECT_THAT(submitted.out, HasSubstr("experiment big: 300 jobs, submitted"));
  EXPECT_THAT(submitted.err, HasSubstr("300 jobs can run on no connected agent"));
  std::optional<nlohmann::json> progress = cluster_.Progress("big");
  ASSERT_TRUE(progress.has_value()) << cluster_.Logs();
  EXPECT_EQ(progress->value("total", 0), 300);
}

}  // namespace
}  // namespace orch::testing
