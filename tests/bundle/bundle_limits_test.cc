// Bundles as hostile input (bundle/bundle_file.h): nothing a bundle declares is acted on
// before its signer is trusted, what it may inflate to is capped, and every name in it
// is a name, not a path. The memory checks run the import in a child process and
// compare its peak resident size before and after, so that inflating a declared size
// (the defect this guards against) shows as hundreds of MiB.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>

#include "bundle/bundle_file.h"
#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "store/memory_store.h"

namespace orch::bundle {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1'800'000'000'000;
constexpr uint64_t kMiB = 1 << 20;
// Zeros compress about 30,000:1: a bundle of this much is a few KiB.
constexpr uint64_t kBombBytes = 256 * kMiB;

protocol::SecretIdentity Key(const std::string& name, const std::string& role) {
  return std::move(protocol::GenerateIdentity(name, role)).value();
}

// A result bundle signed by `signer` whose blobs are `count` runs of zeros of `each`
// bytes.
std::string Bomb(const protocol::SecretIdentity& signer, int count, uint64_t each) {
  BundleContent content{std::string(kResultKind), R"({"experiment":"exp"})", {}};
  for (int i = 0; i < count; ++i) {
    content.blobs.push_back({"runs/" + std::to_string(i) + "/digests", std::string(each, '\0')});
  }
  return std::move(WriteBundle(content, signer)).value();
}

uint64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// Runs `import` in a child process; the child's answer (its status message) and how
// much its peak resident size grew while it ran.
struct ChildOutcome {
  std::string message;
  uint64_t growth = 0;
};
ChildOutcome InChild(const std::function<Status()>& import) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    uint64_t before = PeakResidentBytes();
    Status status = import();
    uint64_t growth = PeakResidentBytes() - before;
    std::string report = std::to_string(growth) + "\n" + status.message();
    ssize_t ignored = write(out[1], report.data(), report.size());
    (void)ignored;
    _exit(0);
  }
  close(out[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) report.append(buffer, n);
  close(out[0]);
  int wait_status = 0;
  waitpid(pid, &wait_status, 0);
  EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) << "the child died";
  ChildOutcome outcome;
  size_t newline = report.find('\n');
  if (newline == std::string::npos) return outcome;
  outcome.growth = std::stoull(report.substr(0, newline));
  outcome.message = report.substr(newline + 1);
  return outcome;
}

class BundleLimitsTest : public ::testing::Test {
 protected:
  ImportContext Context() {
    ImportContext context;
    context.trusted = {carol_.identity};
    context.trust_hint = "cp {name}.key keys/allowed/";
    context.coordinator_key = lab_.identity.sign_public;
    context.now_ms = kNow;
    return context;
  }

  Status Import(const std::string& file, const ImportContext& context) {
    return ImportResultBundle(*store_, file, "bomb.orchb", context).status();
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  protocol::SecretIdentity lab_ = Key("lab", "coordinator");
  protocol::SecretIdentity carol_ = Key("carol", "contributor");
};

TEST_F(BundleLimitsTest, AnUnknownSignersBombIsRefusedWithoutInflatingAnything) {
  protocol::SecretIdentity mallory = Key("mallory", "contributor");
  std::string file = Bomb(mallory, 1, kBombBytes);
  ASSERT_LT(file.size(), 64 * 1024u);
  ChildOutcome outcome = InChild([&] { return Import(file, Context()); });
  EXPECT_THAT(outcome.message, HasSubstr("bundle signed by an unknown key: 'mallory'"));
  EXPECT_LT(outcome.growth, 32 * kMiB) << "the bomb was inflated before its signer was checked";
}

TEST_F(BundleLimitsTest, ATrustedBundleAboveTheLimitIsRefusedBeforeAnyBlobIsInflated) {
  std::string file = Bomb(carol_, 1, kBombBytes);
  ImportContext context = Context();
  context.max_bundle_bytes = 64 * kMiB;
  ChildOutcome outcome = InChild([&] { return Import(file, context); });
  EXPECT_THAT(outcome.message,
              HasSubstr("its 1 blobs inflate to 268435456 bytes in all, above the limit of "
                        "67108864 bytes (max_bundle_bytes); nothing was inflated"));
  EXPECT_LT(outcome.growth, 32 * kMiB);
}

TEST_F(BundleLimitsTest, TheLimitCountsEveryBlobTogether) {
  // Each blob alone is under the limit; the three are not.
  std::string file = Bomb(carol_, 3, 8 * kMiB);
  ImportContext context = Context();
  context.max_bundle_bytes = 20 * kMiB;
  Result<ImportResult> imported = ImportResultBundle(*store_, file, "bomb.orchb", context);
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(imported.status().message(), HasSubstr("its 3 blobs inflate to 25165824 bytes"));
}

TEST_F(BundleLimitsTest, TheSameLimitHoldsWhenTheBundleIsOnlyRead) {
  std::string file = Bomb(carol_, 1, 32 * kMiB);
  ReadOptions read;
  read.max_bundle_bytes = 16 * kMiB;
  Result<OpenedBundle> opened = ReadBundle(file, "bomb.orchb", read);
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(opened.status().message(), HasSubstr("above the limit of 16777216 bytes"));
  read.max_bundle_bytes = 32 * kMiB;
  opened = ReadBundle(file, "bomb.orchb", read);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(opened->blobs.at(0).data, std::string(32 * kMiB, '\0'));
}

// The manifest is parsed for its signer alone before the signature is checked: a
// stranger's 8 MiB list (about 75 MiB as parsed JSON) is skipped, not kept.
TEST_F(BundleLimitsTest, AnUnknownSignersManifestIsNotHeldInMemory) {
  protocol::SecretIdentity mallory = Key("mallory", "contributor");
  std::string list = R"({"experiment":"exp","x":[0)";
  for (int i = 0; i < (4 << 20); ++i) list += ",0";
  BundleContent content{std::string(kResultKind), list + "]}", {}};
  std::string file = std::move(WriteBundle(content, mallory)).value();
  list.clear();
  list.shrink_to_fit();
  ChildOutcome outcome = InChild([&] { return Import(file, Context()); });
  EXPECT_THAT(outcome.message, HasSubstr("bundle signed by an unknown key: 'mallory'"));
  EXPECT_LT(outcome.growth, 32 * kMiB) << "the manifest was parsed whole before its signer";
}

TEST_F(BundleLimitsTest, TheTrustVerdictComesBeforeTheManifestIsActedOn) {
  // A bundle whose manifest is not even a valid bundle manifest (no blobs list): an
  // untrusted signer hears only that it is not trusted.
  BundleContent content{std::string(kResultKind), "{}", {}};
  std::string file = std::move(WriteBundle(content, carol_)).value();
  ReadOptions read;
  int asked = 0;
  read.trust = [&](const protocol::PublicIdentity& signer) {
    ++asked;
    EXPECT_EQ(signer.name, "carol");
    return Status(StatusCode::kFailedPrecondition, "not this one");
  };
  Result<OpenedBundle> opened = ReadBundle(file, "x.orchb", read);
  EXPECT_EQ(asked, 1);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message(), "not this one");
}

TEST_F(BundleLimitsTest, AManifestNestedTooDeeplyIsRefusedBeforeItIsParsed) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  BundleContent content{std::string(kResultKind), R"({"x":)" + deep + "}", {}};
  std::string file = std::move(WriteBundle(content, carol_)).value();
  Result<OpenedBundle> opened = ReadBundle(file, "deep.orchb");
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(opened.status().message(),
              HasSubstr("deep.orchb: the manifest nests deeper than 32 levels"));
}

TEST(BlobNameTest, NamesArePartsOfLettersDigitsAndPunctuationNeverPaths) {
  for (const char* good : {"plan.json", "plan-bundle", "runs/0/digests", "fingerprints/fp-x",
                           "a:b@c_d", "..x", "x.."}) {
    EXPECT_TRUE(ValidBlobName(good)) << good;
  }
  for (const char* bad : {"", "../x", "../../x", "/abs", "a//b", "a/", "runs/./x", "runs/../x", ".",
                          "..", "a b", "a\\b", "a\nb"}) {
    EXPECT_FALSE(ValidBlobName(bad)) << bad;
  }
  EXPECT_FALSE(ValidBlobName(std::string(256, 'a')));
  EXPECT_TRUE(ValidBlobName(std::string(255, 'a')));
}

TEST_F(BundleLimitsTest, AWriterRefusesABlobNameThatIsAPath) {
  BundleContent content{std::string(kResultKind), "{}", {{"../../x", "data"}}};
  Result<std::string> file = WriteBundle(content, carol_);
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("'../../x' is not a valid blob name"));
}

// A result bundle of job j1 whose manifest names `run` and `agent`, with a plan bundle of
// the lab's.
std::string ResultNaming(const protocol::SecretIdentity& lab,
                         const protocol::SecretIdentity& signer, store::Store& store,
                         const std::string& run, const std::string& agent) {
  store::JobRecord job;
  job.id = "j1";
  job.experiment = "exp";
  EXPECT_TRUE(store
                  .PutPlan({"exp", R"({"schema":"orch.plan/1","experiment":{"name":"exp"},)"
                                   R"("workloads":[{"name":"w","kind":"teacher_forced"}],)"
                                   R"("cells":[{"label":"baseline"}],)"
                                   R"("jobs":[{"id":"j1","cell":"baseline","workload":"w"}]})"},
                           {job})
                  .ok());
  std::string plan_file =
      std::move(ExportPlanBundle(store, {"exp", {}, kNow, 86'400'000}, lab)).value();
  PlanBundle plan = std::move(ReadPlanBundle(plan_file, "plan.orchb")).value();
  std::string fields = R"({"experiment":"exp","nonce":")" + plan.nonce +
                       R"(","sequence":1,"runs":[{"run":")" + run + R"(","job":"j1","agent":")" +
                       agent +
                       R"(","state":"succeeded","host_fingerprint":"","fingerprint":"",)"
                       R"("summary":"runs/0/summary","digests":"runs/0/digests"}]})";
  std::string digests("\0\0\0\0\0\0\0\0\0\0\0\1x", 13);
  BundleContent content{
      std::string(kResultKind),
      fields,
      {{"plan-bundle", plan_file}, {"runs/0/summary", "{}"}, {"runs/0/digests", digests}}};
  return std::move(WriteBundle(content, signer)).value();
}

TEST_F(BundleLimitsTest, RunIdsAndAgentIdsThatAreNotNamesAreRefused) {
  std::string good = ResultNaming(lab_, carol_, *store_, "r-1", "local-1");
  ASSERT_TRUE(ImportResultBundle(*store_, good, "good.orchb", Context()).ok());
  for (auto [run, agent, field] :
       {std::tuple{"../../x", "local-1", ".run '../../x'"},
        std::tuple{"r 2", "local-1", ".run 'r 2'"},
        std::tuple{"r-3", "../agent", ".agent '../agent'"}, std::tuple{"r-4", "", ".agent ''"}}) {
    std::unique_ptr<store::Store> store = store::MakeMemoryStore();
    std::string file = ResultNaming(lab_, carol_, *store, run, agent);
    Result<ImportResult> imported = ImportResultBundle(*store, file, "bad.orchb", Context());
    ASSERT_FALSE(imported.ok()) << run << " " << agent;
    EXPECT_THAT(imported.status().message(), HasSubstr("manifest.runs[0]" + std::string(field)));
    EXPECT_TRUE(std::move(store->LoadState()).value().runs.empty());
  }
}

}  // namespace
}  // namespace orch::bundle
