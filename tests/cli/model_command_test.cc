// End-to-end tests of `orch model`: the real binary as a child process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/sha256.h"
#include "cli/model_command.h"
#include "tests/support/subprocess.h"

namespace orch {
namespace {

using ::testing::HasSubstr;
using testing::OrchBinary;
using testing::ProcessResult;
using testing::RunProcess;

namespace fs = std::filesystem;

// The recipe of examples/seed-replication.toml and its pinned file (tests/model).
constexpr std::string_view kExampleRecipe =
    "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1";
constexpr std::string_view kExampleSha256 =
    "ec7159730f60f3164b0714a69d0796e47b75b0a7fcb3984daad29530f785fd90";

// A stand-in for the llama.cpp driver's `quantize` mode: records its arguments, prints
// noise on stdout, and fails on the types "bad" (exit 2) and "boom" (exit 3).
constexpr std::string_view kFakeDriver = R"(#!/bin/sh
printf '%s\n' "$@" > "$(dirname "$0")/args.txt"
case "$4" in
  bad) echo "fake driver: unknown type bad" >&2; exit 2 ;;
  boom) echo "fake driver: engine exploded" >&2; exit 3 ;;
esac
echo "progress noise on stdout"
printf 'quantized:%s' "$4" > "$3"
)";

std::string SlurpModelFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t Lines(const fs::path& path) {
  std::string text = SlurpModelFile(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

class ModelCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-model-command-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::string Write(const std::string& name, std::string_view content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return Path(name);
  }

  std::string FakeDriver() {
    std::string path = Write("fake-driver", kFakeDriver);
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  ProcessResult Orch(std::vector<std::string> args) {
    args.insert(args.begin(), OrchBinary());
    return RunProcess(args, std::chrono::seconds(60));
  }

  fs::path dir_;
};

TEST_F(ModelCommandTest, SynthWritesTheExampleModelWithThePinnedHash) {
  ProcessResult r =
      Orch({"model", "synth", std::string(kExampleRecipe), "-o", Path("tiny.gguf"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["path"], Path("tiny.gguf"));
  EXPECT_EQ(out["sha256"], kExampleSha256);
  EXPECT_EQ(out["bytes"], 4229664);
  EXPECT_EQ(out["recipe"], std::string(kExampleRecipe) + ",type=f32");
  EXPECT_EQ(Sha256Hex(SlurpModelFile(Path("tiny.gguf"))), kExampleSha256);
}

TEST_F(ModelCommandTest, TwoProcessesWriteByteIdenticalFiles) {
  std::string recipe = "synth:llama:vocab=2048,embd=256,heads=4,type=bf16,seed=77";
  ASSERT_EQ(Orch({"model", "synth", recipe, "-o", Path("a.gguf")}).exit_code, 0);
  ASSERT_EQ(Orch({"model", "synth", recipe, "-o", Path("b.gguf")}).exit_code, 0);
  std::string a = SlurpModelFile(Path("a.gguf"));
  EXPECT_GT(a.size(), 1000000u);
  EXPECT_TRUE(a == SlurpModelFile(Path("b.gguf")));
}

TEST_F(ModelCommandTest, SynthPrintsPathSizeAndHash) {
  ProcessResult r =
      Orch({"model", "synth", "llama:vocab=300,embd=32,layers=1", "-o", Path("small.gguf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string sha = Sha256Hex(SlurpModelFile(Path("small.gguf")));
  EXPECT_EQ(r.out, "path    " + Path("small.gguf") + "\nbytes   " +
                       std::to_string(fs::file_size(Path("small.gguf"))) + "\nsha256  " + sha +
                       "\nrecipe  llama:vocab=300,embd=32,layers=1,heads=4,kv_heads=2,"
                       "ff=384,ctx=512,seed=1,type=f32\n");
}

TEST_F(ModelCommandTest, BadRecipeExitsTwoNamingKeyAndValue) {
  ProcessResult r = Orch({"model", "synth", "llama:vocab=100", "-o", Path("x.gguf")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("orch model synth: recipe \"llama:vocab=100\": synth key "
                               "vocab: expected an integer in [260, 1048576], got \"100\""));
  EXPECT_FALSE(fs::exists(Path("x.gguf")));
  r = Orch({"model", "synth", "llama:width=3", "-o", Path("x.gguf")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown synth key \"width\""));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(ModelCommandTest, SynthOverTheSizeCapExitsTwoAndWritesNothing) {
  std::string huge = "llama:vocab=1024,embd=65536,layers=256,heads=64,kv_heads=64,ff=262144";
  ProcessResult r = Orch({"model", "synth", huge, "-o", Path("huge.gguf")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("orch model synth: synth recipe " + huge));
  EXPECT_THAT(r.err, HasSubstr("over the cap of 4294967296 bytes (4.0 GiB) (--max-bytes)"));
  EXPECT_TRUE(fs::is_empty(dir_));
  std::string small = "llama:vocab=300,embd=32,layers=1";
  r = Orch({"model", "synth", small, "-o", Path("small.gguf"), "--max-bytes", "1000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("over the cap of 1000 bytes"));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(ModelCommandTest, SynthIntoAMissingFolderExitsTwo) {
  ProcessResult r = Orch({"model", "synth", "llama", "-o", Path("no/x.gguf")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("folder " + Path("no") + " does not exist"));
}

TEST_F(ModelCommandTest, HashPrintsTheSha256sumLine) {
  std::string file = Write("m.bin", "abc");
  ProcessResult r = Orch({"model", "hash", file, "--cache", Path("cache.tsv")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Sha256Hex("abc") + "  " + file + "\n");
  r = Orch({"model", "hash", file, "--cache", Path("cache.tsv"), "--json"});
  EXPECT_EQ(nlohmann::json::parse(r.out),
            (nlohmann::json{{"path", file}, {"bytes", 3}, {"sha256", Sha256Hex("abc")}}));
}

TEST_F(ModelCommandTest, HashIsServedFromTheCacheWhileTheFileIsUnchanged) {
  std::string file = Write("m.bin", "abc");
  std::string cache = Path("cache.tsv");
  ASSERT_EQ(Orch({"model", "hash", file, "--cache", cache}).exit_code, 0);
  ASSERT_EQ(Lines(cache), 1u);
  ASSERT_EQ(Orch({"model", "hash", file, "--cache", cache}).exit_code, 0);
  EXPECT_EQ(Lines(cache), 1u);  // nothing new to remember
  // Replace the remembered hash: an unchanged file is answered from the cache, unread.
  std::string line = SlurpModelFile(cache);
  std::ofstream(cache) << std::string(64, 'f') << line.substr(64);
  ProcessResult r = Orch({"model", "hash", file, "--cache", cache});
  EXPECT_EQ(r.out, std::string(64, 'f') + "  " + file + "\n");
  // A changed file has a new identity and is hashed again.
  Write("m.bin", "abcd");
  r = Orch({"model", "hash", file, "--cache", cache});
  EXPECT_EQ(r.out, Sha256Hex("abcd") + "  " + file + "\n");
}

TEST_F(ModelCommandTest, HashUsesTheSharedCacheUnderXdgCacheHome) {
  std::string file = Write("m.bin", "abc");
  ProcessResult r = RunProcess(
      {"/usr/bin/env", "XDG_CACHE_HOME=" + Path("xdg"), OrchBinary(), "model", "hash", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(SlurpModelFile(Path("xdg/orch/file-sha256.tsv")), HasSubstr(Sha256Hex("abc")));
}

TEST_F(ModelCommandTest, HashOfAMissingFileExitsTwo) {
  ProcessResult r = Orch({"model", "hash", Path("missing.gguf"), "--cache", Path("c.tsv")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(Path("missing.gguf")));
}

TEST_F(ModelCommandTest, QuantizeRunsTheDriverAndHashesItsOutput) {
  std::string driver = FakeDriver();
  std::string in = Write("in.gguf", "weights");
  ProcessResult r =
      Orch({"model", "quantize", in, Path("out.gguf"), "q4_0", "--driver", driver, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SlurpModelFile(Path("args.txt")),
            "quantize\n" + in + "\n" + Path("out.gguf") + "\nq4_0\n");
  nlohmann::json out = nlohmann::json::parse(r.out);  // the driver's stdout is not in it
  EXPECT_EQ(out["path"], Path("out.gguf"));
  EXPECT_EQ(out["sha256"], Sha256Hex("quantized:q4_0"));
  EXPECT_EQ(out["type"], "q4_0");
  EXPECT_EQ(out["driver"], driver);
  EXPECT_THAT(r.err, HasSubstr("progress noise on stdout"));
}

TEST_F(ModelCommandTest, QuantizeRejectedByTheDriverExitsTwoWithItsMessage) {
  std::string in = Write("in.gguf", "weights");
  ProcessResult r =
      Orch({"model", "quantize", in, Path("out.gguf"), "bad", "--driver", FakeDriver()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("fake driver: unknown type bad"));
  EXPECT_THAT(r.err, HasSubstr("rejected the input (exit 2"));
  EXPECT_EQ(r.out, "");
}

TEST_F(ModelCommandTest, QuantizeEngineFailureExitsOne) {
  std::string in = Write("in.gguf", "weights");
  ProcessResult r =
      Orch({"model", "quantize", in, Path("out.gguf"), "boom", "--driver", FakeDriver()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("fake driver: engine exploded"));
  EXPECT_THAT(r.err, HasSubstr("the engine failed (exit 3"));
}

TEST_F(ModelCommandTest, QuantizeChecksItsArgumentsBeforeRunningAnything) {
  std::string driver = FakeDriver();
  std::string in = Write("in.gguf", "weights");
  ProcessResult r = Orch(
      {"model", "quantize", Path("missing.gguf"), Path("out.gguf"), "q4_0", "--driver", driver});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("input " + Path("missing.gguf") + ": no such file"));
  r = Orch({"model", "quantize", in, Path("out.gguf"), "../q4_0", "--driver", driver});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("TYPE \"../q4_0\": expected a llama.cpp type name"));
  r = Orch({"model", "quantize", in, Path("no/out.gguf"), "q4_0", "--driver", driver});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("folder " + Path("no") + " does not exist"));
  r = Orch({"model", "quantize", in, in, "q4_0", "--driver", driver});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is the input file"));
  r = Orch({"model", "quantize", in, Path("out.gguf"), "q4_0", "--driver", Path("nodriver")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--driver " + Path("nodriver") + ": no such file"));
  EXPECT_FALSE(fs::exists(Path("args.txt")));  // the driver never ran
}

TEST_F(ModelCommandTest, QuantizeWithoutADriverSaysWhereItLooked) {
  std::string in = Write("in.gguf", "weights");
  ProcessResult r = Orch(
      {"model", "quantize", in, Path("out.gguf"), "q4_0", "--engine", "llama.cpp@no-such-release"});
  EXPECT_EQ(r.exit_code, 2);
  std::string exe_dir = fs::path(OrchBinary()).parent_path().string();
  EXPECT_THAT(r.err, HasSubstr("no driver for llama.cpp no-such-release: looked for " + exe_dir +
                               "/orch-driver-llamacpp-no-such-release, "));
  EXPECT_THAT(r.err, HasSubstr("/lib/orch/drivers/orch-driver-llamacpp-no-such-release and "));
  EXPECT_THAT(r.err, HasSubstr("/drivers/llamacpp/orch-driver-llamacpp-no-such-release;"));
  EXPECT_THAT(r.err, HasSubstr("pass --driver EXE"));
  r = Orch({"model", "quantize", in, Path("out.gguf"), "q4_0", "--engine", "../x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--engine \"../x\": expected a llama.cpp release"));
  r = Orch({"model", "quantize", in, Path("out.gguf"), "q4_0", "--engine", "b8390", "--driver",
            FakeDriver()});
  EXPECT_EQ(r.exit_code, 2);  // one or the other
}

TEST_F(ModelCommandTest, EverySubcommandHasHelp) {
  for (const char* sub : {"synth", "hash", "quantize"}) {
    ProcessResult r = Orch({"model", sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_THAT(r.out, HasSubstr("Usage: orch model " + std::string(sub))) << sub;
  }
  ProcessResult r = Orch({"model", "--help"});
  EXPECT_THAT(r.out, HasSubstr("synth"));
  EXPECT_EQ(Orch({"model"}).exit_code, 2);
}

}  // namespace
}  // namespace orch
