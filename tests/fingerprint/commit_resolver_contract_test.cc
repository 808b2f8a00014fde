// One contract for every CommitResolver: libgit2 on repositories made with the git CLI in
// a temporary directory, and the map-backed twin told the same facts.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "base/sha256.h"
#include "fingerprint/libgit2_commit_resolver.h"
#include "fingerprint/map_commit_resolver.h"
#include "fingerprint/posix_command_runner.h"
#include "tests/fingerprint/test_files.h"

namespace orch::fingerprint {
namespace {

using testing::TempDir;
using testing::WriteText;

// Each method returns a directory in the named state. Repositories have a commit tagged
// v1.0 and one more commit on branch "main".
class ResolverHarness {
 public:
  virtual ~ResolverHarness() = default;
  virtual CommitResolver& resolver() = 0;
  virtual std::string CleanRepo() = 0;
  virtual std::string DirtyRepo() = 0;
  virtual std::string UntrackedFileRepo() = 0;
  virtual std::string DetachedRepo() = 0;
  virtual std::string NotARepo() = 0;
  virtual std::string HeadCommit(const std::string& dir) = 0;
};

class Libgit2Harness final : public ResolverHarness {
 public:
  Libgit2Harness()
      : git_(MakePosixCommandRunner(
            {.search_path = "/usr/bin:/bin:/usr/local/bin",
             .environment = {"PATH=/usr/bin:/bin:/usr/local/bin", "HOME=" + home_.path(),
                             "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Test",
                             "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test",
                             "GIT_COMMITTER_EMAIL=test@example.com"}})),
        resolver_(MakeLibgit2CommitResolver()) {}

  CommitResolver& resolver() override { return *resolver_; }
  std::string CleanRepo() override { return MakeRepo("clean"); }
  std::string DirtyRepo() override {
    std::string dir = MakeRepo("dirty");
    WriteText(dir + "/README", "edited\n");
    return dir;
  }
  std::string UntrackedFileRepo() override {
    std::string dir = MakeRepo("untracked");
    WriteText(dir + "/build.log", "not tracked\n");
    return dir;
  }
  std::string DetachedRepo() override {
    std::string dir = MakeRepo("detached");
    Git(dir, {"checkout", "--quiet", "--detach", "HEAD"});
    return dir;
  }
  std::string NotARepo() override { return plain_.path(); }
  std::string HeadCommit(const std::string& dir) override {
    std::string out = Git(dir, {"rev-parse", "HEAD"});
    return out.substr(0, out.find('\n'));
  }

 private:
  std::string Git(const std::string& dir, std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", dir, "-c", "init.defaultBranch=main"});
    Result<CommandOutput> out = git_->Run(args);
    EXPECT_TRUE(out.ok() && out->exit_code == 0)
        << out.status().ToString() << (out.ok() ? out->stderr_text : "");
    return out.ok() ? out->stdout_text : "";
  }
  std::string MakeRepo(const std::string& name) {
    std::string dir = repos_ / name;
    WriteText(dir + "/README", "one\n");
    Git(dir, {"init", "--quiet"});
    Git(dir, {"add", "README"});
    Git(dir, {"commit", "--quiet", "-m", "first"});
    Git(dir, {"tag", "v1.0"});
    WriteText(dir + "/README", "two\n");
    Git(dir, {"commit", "--quiet", "-am", "second"});
    return dir;
  }

  TempDir home_, repos_, plain_;
  std::unique_ptr<CommandRunner> git_;
  std::unique_ptr<CommitResolver> resolver_;
};

class MapHarness final : public ResolverHarness {
 public:
  CommitResolver& resolver() override { return resolver_; }
  std::string CleanRepo() override { return Add("/src/clean", "main", false); }
  std::string DirtyRepo() override { return Add("/src/dirty", "main", true); }
  std::string UntrackedFileRepo() override { return Add("/src/untracked", "main", false); }
  std::string DetachedRepo() override { return Add("/src/detached", "", false); }
  std::string NotARepo() override { return "/src/plain"; }
  std::string HeadCommit(const std::string& dir) override { return Sha256Hex(dir).substr(0, 40); }

 private:
  std::string Add(const std::string& dir, const std::string& branch, bool dirty) {
    std::string commit = HeadCommit(dir);
    resolver_.Set(dir, CheckoutState{commit, branch, branch.empty(),
                                     "v1.0-1-g" + commit.substr(0, 7), dirty});
    return dir;
  }
  MapCommitResolver resolver_;
};

// A resolver under test, by name: a bare factory prints as its bytes, and
// ctest's test names would differ in every build.
struct HarnessFactory {
  std::string name;
  std::function<std::unique_ptr<ResolverHarness>()> make;
  friend void PrintTo(const HarnessFactory& f, std::ostream* out) { *out << f.name; }
};

class CommitResolverContractTest : public ::testing::TestWithParam<HarnessFactory> {
 protected:
  std::unique_ptr<ResolverHarness> harness_ = GetParam().make();
};

TEST_P(CommitResolverContractTest, CleanCheckoutReportsCommitBranchAndDescribe) {
  std::string dir = harness_->CleanRepo();
  Result<CheckoutState> state = harness_->resolver().Resolve(dir);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->commit, harness_->HeadCommit(dir));
  EXPECT_TRUE(IsSha256Hex(state->commit + std::string(24, '0')));
  EXPECT_EQ(state->branch, "main");
  EXPECT_FALSE(state->detached);
  EXPECT_EQ(state->describe, "v1.0-1-g" + state->commit.substr(0, 7));
  EXPECT_FALSE(state->dirty);
}

TEST_P(CommitResolverContractTest, EditedTrackedFileMakesItDirty) {
  Result<CheckoutState> state = harness_->resolver().Resolve(harness_->DirtyRepo());
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(state->dirty);
}

TEST_P(CommitResolverContractTest, UntrackedFilesDoNotMakeItDirty) {
  Result<CheckoutState> state = harness_->resolver().Resolve(harness_->UntrackedFileRepo());
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_FALSE(state->dirty);
}

TEST_P(CommitResolverContractTest, DetachedHeadHasNoBranch) {
  std::string dir = harness_->DetachedRepo();
  Result<CheckoutState> state = harness_->resolver().Resolve(dir);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(state->detached);
  EXPECT_EQ(state->branch, "");
  EXPECT_EQ(state->commit, harness_->HeadCommit(dir));
}

TEST_P(CommitResolverContractTest, NotARepositoryIsAClearNotFound) {
  std::string dir = harness_->NotARepo();
  Result<CheckoutState> state = harness_->resolver().Resolve(dir);
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(state.status().message(), "not a git repository: " + dir);
}

INSTANTIATE_TEST_SUITE_P(Libgit2, CommitResolverContractTest,
                         ::testing::Values(HarnessFactory{
                             "Real", [] { return std::make_unique<Libgit2Harness>(); }}));
INSTANTIATE_TEST_SUITE_P(Map, CommitResolverContractTest,
                         ::testing::Values(HarnessFactory{
                             "Twin", [] { return std::make_unique<MapHarness>(); }}));

TEST(Libgit2CommitResolverTest, ResolvesFromASubdirectoryOfTheCheckout) {
  Libgit2Harness harness;
  std::string dir = harness.CleanRepo();
  WriteText(dir + "/src/main.cc", "int main() {}\n");
  Result<CheckoutState> state = harness.resolver().Resolve(dir + "/src");
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->commit, harness.HeadCommit(dir));
}

TEST(Libgit2CommitResolverTest, RepositoryWithoutCommitsIsAFailedPrecondition) {
  TempDir dir;
  auto git = MakePosixCommandRunner({.search_path = "/usr/bin:/bin", .environment = {}});
  ASSERT_EQ(git->Run({"git", "init", "--quiet", dir.path()})->exit_code, 0);
  auto resolver = MakeLibgit2CommitResolver();
  Result<CheckoutState> state = resolver->Resolve(dir.path());
  EXPECT_EQ(state.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace orch::fingerprint
