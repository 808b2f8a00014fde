#include "agent/model_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/sha256.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/memory_hash_cache.h"
#include "model/synth_model.h"
#include "model/synth_recipe.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr std::string_view kRecipe = "synth:llama:vocab=300,embd=32,layers=1,ff=32";

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::uint64_t Inode(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? info.st_ino : 0;
}

class ModelResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("orch-model-resolver-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "models-a");
    fs::create_directories(root_ / "models-b");
    options_ = {{(root_ / "models-a").string(), (root_ / "models-b").string()},
                (root_ / "cache").string()};
  }
  void TearDown() override { fs::remove_all(root_); }

  ModelResolver Resolver() { return ModelResolver(options_, hashes_, log_); }

  std::string Write(const std::string& relative, const std::string& content) {
    fs::path path = root_ / relative;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  std::string ExpectedSynthPath() const {
    model::SynthRecipe recipe = model::ParseSynthRecipe(kRecipe).value();
    return (fs::path(options_.cache_dir) / model::SynthModelFileName(recipe)).string();
  }

  fs::path root_;
  ModelResolverOptions options_;
  fingerprint::MemoryHashCache hashes_;
  std::ostringstream log_text_;
  spdlog::logger log_{"test", std::make_shared<spdlog::sinks::ostream_sink_st>(log_text_)};
};

TEST_F(ModelResolverTest, GeneratesASynthModelIntoTheCacheWithASidecar) {
  ModelResolver resolver = Resolver();
  Result<ResolvedModel> model = resolver.Resolve(std::string(kRecipe));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->path, ExpectedSynthPath());
  std::string bytes = Slurp(model->path);
  EXPECT_EQ(model->sha256, Sha256Hex(bytes));
  EXPECT_EQ(Slurp(model->path + ".sha256"),
            model->sha256 + "  " + fs::path(model->path).filename().string() + "\n");
  EXPECT_THAT(log_text_.str(), HasSubstr("generated " + model->path));
  EXPECT_EQ(resolver.cache_dir(), options_.cache_dir);
}

TEST_F(ModelResolverTest, ReusesAVerifiedCachedFile) {
  ModelResolver resolver = Resolver();
  ResolvedModel first = resolver.Resolve(std::string(kRecipe)).value();
  std::uint64_t inode = Inode(first.path);
  log_text_.str("");
  ResolvedModel second = resolver.Resolve(std::string(kRecipe)).value();
  EXPECT_EQ(second.path, first.path);
  EXPECT_EQ(second.sha256, first.sha256);
  EXPECT_EQ(Inode(second.path), inode);  // not rewritten
  EXPECT_EQ(log_text_.str(), "");
}

TEST_F(ModelResolverTest, RegeneratesACorruptedCachedFile) {
  ModelResolver resolver = Resolver();
  ResolvedModel first = resolver.Resolve(std::string(kRecipe)).value();
  std::string good = Slurp(first.path);
  {
    std::fstream file(first.path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(good.size() - 7));
    file.put(static_cast<char>(good[good.size() - 7] ^ 0x01));
  }
  ResolvedModel second = resolver.Resolve(std::string(kRecipe)).value();
  EXPECT_EQ(second.sha256, first.sha256);
  EXPECT_EQ(Slurp(second.path), good);
  EXPECT_THAT(log_text_.str(), HasSubstr("does not match its recorded SHA-256"));
}

TEST_F(ModelResolverTest, RegeneratesACachedFileWithoutSidecar) {
  ModelResolver resolver = Resolver();
  ResolvedModel first = resolver.Resolve(std::string(kRecipe)).value();
  fs::remove(first.path + ".sha256");
  std::uint64_t inode = Inode(first.path);
  ResolvedModel second = resolver.Resolve(std::string(kRecipe)).value();
  EXPECT_EQ(second.sha256, first.sha256);
  EXPECT_NE(Inode(second.path), inode);
  EXPECT_TRUE(fs::exists(first.path + ".sha256"));
  EXPECT_THAT(log_text_.str(), HasSubstr("has no readable .sha256 sidecar"));
}

TEST_F(ModelResolverTest, InvalidRecipeIsAnErrorNamingTheRequirement) {
  Result<ResolvedModel> model = Resolver().Resolve("synth:llama:layers=0");
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("model synth:llama:layers=0: synth key layers"));
  EXPECT_FALSE(fs::exists(options_.cache_dir));
}

TEST_F(ModelResolverTest, UnwritableCacheIsAnIoErrorNamingTheRequirement) {
  Write("cache", "a file where the cache folder should be");
  Result<ResolvedModel> model = Resolver().Resolve(std::string(kRecipe));
  EXPECT_EQ(model.status().code(), StatusCode::kIoError);
  EXPECT_THAT(model.status().message(),
              HasSubstr("model " + std::string(kRecipe) + ": model cache " + options_.cache_dir));
}

// Every file under `dir` (none when it does not exist).
std::vector<std::string> FilesIn(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : fs::recursive_directory_iterator(dir, error)) {
    files.push_back(entry.path().string());
  }
  return files;
}

TEST_F(ModelResolverTest, ARecipeOverTheCapIsRefusedBeforeAnythingIsWritten) {
  options_.synth_max_bytes = 100'000;
  std::uint64_t bytes = model::SynthModelBytes(model::ParseSynthRecipe(kRecipe).value());
  ASSERT_GT(bytes, options_.synth_max_bytes);
  Result<ResolvedModel> model = Resolver().Resolve(std::string(kRecipe));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(
      model.status().message(),
      AllOf(HasSubstr("model " + std::string(kRecipe) + ": synth recipe llama:vocab=300"),
            HasSubstr(std::to_string(bytes) + " bytes"), HasSubstr("over the cap of 100000 bytes"),
            HasSubstr("raise agent.synth_max_bytes")));
  EXPECT_FALSE(fs::exists(options_.cache_dir));

  options_.synth_max_bytes = bytes;  // a cap raised to the file's size lets it through
  EXPECT_TRUE(Resolver().Resolve(std::string(kRecipe)).ok());
}

TEST_F(ModelResolverTest, ASynthModelThatDoesNotFitInTheFreeSpaceIsNotWritten) {
  std::vector<std::string> asked;
  options_.free_space = [&asked](const std::string& dir) -> Result<std::uint64_t> {
    asked.push_back(dir);
    return 1u << 20;
  };
  Result<ResolvedModel> model = Resolver().Resolve(std::string(kRecipe));
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kIoError);
  std::uint64_t bytes = model::SynthModelBytes(model::ParseSynthRecipe(kRecipe).value());
  EXPECT_THAT(model.status().message(),
              AllOf(HasSubstr("not enough free space in " + options_.cache_dir + " to write " +
                              fs::path(ExpectedSynthPath()).filename().string()),
                    HasSubstr("needs " + std::to_string(bytes + model::FreeSpaceMargin(bytes))),
                    HasSubstr("1048576 bytes (0.0 GiB) are free")));
  EXPECT_EQ(asked, std::vector<std::string>{options_.cache_dir});
  EXPECT_THAT(FilesIn(options_.cache_dir), ::testing::IsEmpty());
}

// A tmpfs of `size` mounted on `dir` for the test's scope (root only; the test is
// skipped elsewhere), unmounted by the destructor.
class TmpfsMount final {
 public:
  TmpfsMount(const fs::path& dir, const std::string& size) : dir_(dir) {
    fs::create_directories(dir);
    if (::geteuid() != 0) {
      why_not_ = "needs root to mount a tmpfs";
    } else if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      why_not_ = std::string("mount tmpfs: ") + std::strerror(errno);
    }
  }
  ~TmpfsMount() {
    if (why_not_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  const std::string& why_not() const { return why_not_; }

 private:
  fs::path dir_;
  std::string why_not_;
};

// The real statvfs on real small file systems: a cache on an 8 MiB tmpfs cannot take
// the file and its margin, one on 96 MiB can.
TEST_F(ModelResolverTest, TheRealFreeSpaceOfASmallFileSystemDecides) {
  TmpfsMount small(root_ / "small", "8m");
  if (!small.why_not().empty()) GTEST_SKIP() << small.why_not();
  TmpfsMount roomy(root_ / "roomy", "96m");
  if (!roomy.why_not().empty()) GTEST_SKIP() << roomy.why_not();
  options_.cache_dir = (root_ / "small").string();
  Result<ResolvedModel> refused = Resolver().Resolve(std::string(kRecipe));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("not enough free space in " + options_.cache_dir));
  EXPECT_THAT(FilesIn(options_.cache_dir), ::testing::IsEmpty());

  options_.cache_dir = (root_ / "roomy").string();
  Result<ResolvedModel> written = Resolver().Resolve(std::string(kRecipe));
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->sha256, Sha256Hex(Slurp(written->path)));
}

TEST_F(ModelResolverTest, FindsAFileByItsSha256) {
  Write("models-a/one.gguf", "one");
  std::string two = Write("models-b/two.gguf", "two");
  std::string hex = Sha256Hex("two");
  ResolvedModel model = Resolver().Resolve("sha256:" + hex).value();
  EXPECT_EQ(model.path, two);
  EXPECT_EQ(model.sha256, hex);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(Resolver().Resolve("sha256:" + upper)->path, two);
}

TEST_F(ModelResolverTest, Sha256LookupGoesThroughTheHashCache) {
  std::string one = Write("models-a/one.gguf", "one");
  ModelResolver resolver = Resolver();
  ASSERT_EQ(resolver.Resolve("sha256:" + Sha256Hex("one"))->path, one);
  EXPECT_EQ(hashes_.size(), 1u);  // remembered by identity
  // A cache entry is trusted for an unchanged file: the file is not read again.
  fingerprint::FileIdentity identity = fingerprint::CurrentIdentity(one).value();
  ASSERT_TRUE(hashes_.Put(identity, std::string(64, 'a')).ok());
  EXPECT_EQ(resolver.Resolve("sha256:" + std::string(64, 'a'))->path, one);
}

TEST_F(ModelResolverTest, FindsGeneratedModelsInTheCacheBySha256) {
  ModelResolver resolver = Resolver();
  ResolvedModel generated = resolver.Resolve(std::string(kRecipe)).value();
  ResolvedModel found = resolver.Resolve("sha256:" + generated.sha256).value();
  EXPECT_EQ(found.path, generated.path);
}

// Flips one byte in the middle of `path` and sets its mtime back: same size,
// same mtime, same inode, other contents.
void CorruptInPlaceKeepingSizeAndMtime(const std::string& path) {
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    auto middle = static_cast<std::streamoff>(before.st_size / 2);
    file.seekg(middle);
    char byte = 0;
    file.get(byte);
    file.seekp(middle);
    file.put(static_cast<char>(byte ^ 0x5a));
  }
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  // ctime has the file system's clock granularity (a few ms): a write that fast
  // after the file was made keeps it. Wait (bounded) for a tick, as any later
  // writer would see, and set the mtime back again.
  for (int tries = 0; tries < 200 && after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
                      after.st_ctim.tv_nsec == before.st_ctim.tv_nsec;
       ++tries) {
    ::usleep(1000);
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    ASSERT_EQ(::stat(path.c_str(), &after), 0);
  }
  ASSERT_FALSE(after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
               after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ASSERT_EQ(after.st_ino, before.st_ino);
}

TEST_F(ModelResolverTest, ACacheFileModifiedInPlaceWithSizeAndMtimeKeptIsNotHandedOver) {
  ModelResolver resolver = Resolver();
  ResolvedModel generated = resolver.Resolve(std::string(kRecipe)).value();
  std::string requirement = "sha256:" + generated.sha256;
  ASSERT_EQ(resolver.Resolve(requirement)->path, generated.path);  // hash cache filled
  ASSERT_NO_FATAL_FAILURE(CorruptInPlaceKeepingSizeAndMtime(generated.path));

  Result<ResolvedModel> model = resolver.Resolve(requirement);
  EXPECT_EQ(model.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(model.status().message(),
              AllOf(HasSubstr("model " + requirement), HasSubstr(generated.path),
                    HasSubstr("no longer has SHA-256"), HasSubstr("the run is refused")));
  EXPECT_FALSE(fs::exists(generated.path)) << "a corrupted cache file is removed";
  EXPECT_FALSE(fs::exists(generated.path + ".sha256"));
  ResolvedModel again = resolver.Resolve(std::string(kRecipe)).value();
  EXPECT_EQ(again.sha256, generated.sha256) << "the recipe regenerates it";
  EXPECT_EQ(resolver.Resolve(requirement)->path, generated.path);
}

TEST_F(ModelResolverTest, ASynthModelIsHashedAsItIsMadeAndNeverReadAgainWhileUnchanged) {
  ModelResolver resolver = Resolver();
  ResolvedModel made = resolver.Resolve(std::string(kRecipe)).value();
  for (int job = 0; job < 5; ++job) {
    EXPECT_EQ(resolver.Resolve(std::string(kRecipe))->sha256, made.sha256);
    EXPECT_EQ(resolver.Resolve("sha256:" + made.sha256)->path, made.path);
  }
  EXPECT_EQ(resolver.files_hashed(), 0u) << "the hash written with it is trusted";
  ModelResolver restarted = Resolver();  // an agent restarted on the same hash cache
  EXPECT_EQ(restarted.Resolve(std::string(kRecipe))->sha256, made.sha256);
  EXPECT_EQ(restarted.files_hashed(), 0u);
}

TEST_F(ModelResolverTest, AModelFileIsHashedOnFirstSightAndAgainOnlyWhenItChanged) {
  std::string one = Write("models-a/one.gguf", "weights of one");
  ModelResolver resolver = Resolver();
  for (int job = 0; job < 5; ++job) {
    EXPECT_EQ(resolver.Resolve("one.gguf")->sha256, Sha256Hex("weights of one"));
  }
  EXPECT_EQ(resolver.files_hashed(), 1u);
  // Other bytes, size and mtime set back: only ctime tells.
  ASSERT_NO_FATAL_FAILURE(CorruptInPlaceKeepingSizeAndMtime(one));
  std::string now = Slurp(one);
  EXPECT_EQ(resolver.Resolve("one.gguf")->sha256, Sha256Hex(now));
  EXPECT_EQ(resolver.files_hashed(), 2u);
}

TEST_F(ModelResolverTest, UnknownSha256ResolvesToNoFile) {
  Write("models-a/one.gguf", "one");
  Result<ResolvedModel> model = Resolver().Resolve("sha256:" + Sha256Hex("other"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->path, "");
  EXPECT_EQ(model->sha256, "");
}

TEST_F(ModelResolverTest, MalformedSha256IsAnError) {
  Result<ResolvedModel> model = Resolver().Resolve("sha256:abc");
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "model sha256:abc: expected 64 hex digits after sha256:, got \"abc\"");
}

TEST_F(ModelResolverTest, OtherRequirementsAreFileNamesInModelDirs) {
  Write("models-a/m.gguf", "first");
  Write("models-b/m.gguf", "second");
  std::string only_b = Write("models-b/n.gguf", "n");
  ModelResolver resolver = Resolver();
  ResolvedModel first = resolver.Resolve("m.gguf").value();
  EXPECT_EQ(first.path, (root_ / "models-a/m.gguf").string());
  EXPECT_EQ(first.sha256, Sha256Hex("first"));
  EXPECT_EQ(resolver.Resolve("n.gguf")->path, only_b);
  EXPECT_EQ(resolver.Resolve(only_b)->path, only_b);  // an absolute path
  EXPECT_EQ(resolver.Resolve("missing.gguf")->path, "");
  EXPECT_EQ(resolver.Resolve("")->path, "");
}

}  // namespace
}  // namespace orch::agent
