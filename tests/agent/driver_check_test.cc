// The check a configured driver passes before the agent advertises its engine.
#include "agent/driver_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fingerprint/posix_command_runner.h"
#include "fingerprint/scripted_command_runner.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string CheckTestDriver() {
  return std::string(ORCH_BINARY_DIR) + "/tests/support/orch-test-driver";
}

class DriverCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-driver-check-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An executable file (never run: the scripted runner answers for it).
  std::string Executable(const std::string& name, mode_t mode = 0755) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), mode);
    return path;
  }

  // A driver at `path` whose `version` prints `stdout_text` and exits `code`.
  DriverConfig Scripted(const std::string& path, const std::string& stdout_text, int code = 0,
                        const std::string& engine = "llama.cpp@b8390") {
    runner_.Script({path, "version"}, fingerprint::CommandOutput{code, stdout_text, ""});
    return {"llamacpp", path, engine};
  }

  fs::path dir_;
  fingerprint::ScriptedCommandRunner runner_;
};

constexpr char kLlamaHello[] = R"({"engine": "llama.cpp", "version": "b8390"})";

TEST_F(DriverCheckTest, PassesADriverWhoseVersionNamesTheConfiguredEngine) {
  DriverConfig driver = Scripted(Executable("driver"), kLlamaHello);
  EXPECT_TRUE(CheckDriver(driver, runner_).ok());
  EXPECT_EQ(runner_.calls().size(), 1u);
}

TEST_F(DriverCheckTest, RejectsAMissingExecutableNamingDriverPathAndRemedy) {
  DriverConfig driver{"llamacpp", (dir_ / "no-such-driver").string(), "llama.cpp@b8390"};
  Status status = CheckDriver(driver, runner_);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("driver \"llamacpp\""), HasSubstr(driver.executable),
                    HasSubstr("does not exist"), HasSubstr("executable in the agent config")));
  EXPECT_TRUE(runner_.calls().empty());
}

TEST_F(DriverCheckTest, RejectsADirectory) {
  DriverConfig driver{"llamacpp", dir_.string(), "llama.cpp@b8390"};
  EXPECT_THAT(CheckDriver(driver, runner_).message(), HasSubstr("is a directory"));
}

TEST_F(DriverCheckTest, RejectsAFileThatIsNotExecutable) {
  DriverConfig driver = Scripted(Executable("driver", 0644), kLlamaHello);
  EXPECT_THAT(CheckDriver(driver, runner_).message(),
              AllOf(HasSubstr("not executable"), HasSubstr("0644"), HasSubstr("chmod +x")));
}

TEST_F(DriverCheckTest, RejectsADriverWhoseVersionFails) {
  std::string path = Executable("driver");
  runner_.Script({path, "version"},
                 fingerprint::CommandOutput{127, "", "libllama.so: cannot open shared object\n"});
  Status status = CheckDriver({"llamacpp", path, "llama.cpp@b8390"}, runner_);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("exited with status 127"), HasSubstr("libllama.so")));
}

TEST_F(DriverCheckTest, RejectsADriverThatDoesNotAnswerInTime) {
  std::string path = Executable("driver");
  runner_.Script({path, "version"}, Status(StatusCode::kUnavailable, "killed after 10000 ms"));
  EXPECT_THAT(CheckDriver({"llamacpp", path, "llama.cpp@b8390"}, runner_).message(),
              HasSubstr("did not answer \"version\" in time"));
}

TEST_F(DriverCheckTest, RejectsOutputThatIsNotAHelloObject) {
  DriverConfig driver = Scripted(Executable("driver"), "usage: tool [options]\n");
  EXPECT_THAT(CheckDriver(driver, runner_).message(),
              AllOf(HasSubstr("printed no JSON object"), HasSubstr("usage: tool")));
}

TEST_F(DriverCheckTest, RejectsADriverOfAnotherEngine) {
  DriverConfig driver = Scripted(Executable("driver"), R"({"engine": "vllm", "version": "0.11"})");
  EXPECT_THAT(CheckDriver(driver, runner_).message(),
              AllOf(HasSubstr("reports engine vllm@0.11"),
                    HasSubstr("config says engine = \"llama.cpp@b8390\""),
                    HasSubstr("set engine = \"vllm@0.11\"")));
}

TEST_F(DriverCheckTest, RejectsADriverOfAnotherReleaseOfTheEngine) {
  DriverConfig driver =
      Scripted(Executable("driver"), R"({"engine": "llama.cpp", "version": "v0.4.0"})");
  EXPECT_THAT(CheckDriver(driver, runner_).message(), HasSubstr("reports engine llama.cpp@v0.4.0"));
}

TEST_F(DriverCheckTest, EngineNameIsComparedWithoutCaseAndAnUnversionedSideMatchesAnyRelease) {
  std::string path = Executable("driver");
  EXPECT_TRUE(CheckDriver(Scripted(path, kLlamaHello, 0, "LLaMA.cpp@b8390"), runner_).ok());
  EXPECT_TRUE(CheckDriver(Scripted(path, kLlamaHello, 0, "llama.cpp"), runner_).ok());
  EXPECT_TRUE(CheckDriver(Scripted(path, R"({"engine": "llama.cpp"})"), runner_).ok());
}

TEST_F(DriverCheckTest, AServerDriverThatPrintsNoVersionPasses) {
  // A server family's driver has no version of its own: the server's is checked per job.
  std::string path = Executable("orch-driver-llama-server");
  DriverConfig driver =
      Scripted(path, R"({"engine": "llama-server", "driver": "orch-driver-llama-server"})", 0,
               "llama-server@b8390");
  EXPECT_TRUE(CheckDriver(driver, runner_).ok());
}

TEST_F(DriverCheckTest, ALaunchProgramMustBeAnExecutableFile) {
  ServerConfig server;
  server.engine = "llama-server@b8390";
  server.where = "agent.toml:12";
  server.launch = {(dir_ / "no-such-server").string(), "--port", "{port}"};
  EXPECT_THAT(
      CheckServerLaunch(server, "").message(),
      AllOf(HasSubstr("server entry for llama-server@b8390 (agent.toml:12)"),
            HasSubstr(server.launch[0]), HasSubstr("No such file"), HasSubstr("set launch[0]")));
  server.launch[0] = Executable("plain-file", 0644);
  EXPECT_THAT(CheckServerLaunch(server, "").message(), HasSubstr("Permission denied"));
  server.launch[0] = Executable("llama-server");
  EXPECT_TRUE(CheckServerLaunch(server, "").ok());
  server.launch[0] = "llama-server";  // a bare name is looked up on the search path
  EXPECT_TRUE(CheckServerLaunch(server, dir_.string()).ok());
  EXPECT_FALSE(CheckServerLaunch(server, "/nonexistent").ok());
  ServerConfig attached;
  attached.engine = "vllm@0.11.0";
  attached.url = "http://127.0.0.1:1";
  EXPECT_TRUE(CheckServerLaunch(attached, "").ok());
}

TEST_F(DriverCheckTest, ChecksEveryDriverInOrder) {
  DriverConfig good = Scripted(Executable("good"), kLlamaHello);
  DriverConfig bad{"bad", dir_.string(), "llama.cpp@b8390"};
  std::vector<DriverVerdict> verdicts = CheckDrivers({bad, good}, runner_);
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0].driver.name, "bad");
  EXPECT_FALSE(verdicts[0].status.ok());
  EXPECT_EQ(verdicts[1].driver.name, "llamacpp");
  EXPECT_TRUE(verdicts[1].status.ok());
}

TEST_F(DriverCheckTest, AHelloWithSessionLoadAxesMakesASessionDriver) {
  DriverConfig plain = Scripted(Executable("plain"), kLlamaHello);
  DriverConfig warm = Scripted(
      Executable("warm"),
      R"({"engine": "llama.cpp", "version": "b8390", "session": {"load_axes": ["quant", "kv"]}})");
  std::vector<DriverVerdict> verdicts = CheckDrivers({plain, warm}, runner_);
  ASSERT_EQ(verdicts.size(), 2u);
  ASSERT_TRUE(verdicts[1].status.ok()) << verdicts[1].status.ToString();
  EXPECT_FALSE(verdicts[0].driver.session_load_axes.has_value());
  ASSERT_TRUE(verdicts[1].driver.session_load_axes.has_value());
  EXPECT_EQ(*verdicts[1].driver.session_load_axes, (std::vector<std::string>{"quant", "kv"}));
}

TEST_F(DriverCheckTest, AMalformedSessionObjectFailsTheCheckNamingIt) {
  DriverConfig driver = Scripted(Executable("driver"),
                                 R"({"engine": "llama.cpp", "session": {"load_axes": "quant"}})");
  Status status = CheckDriver(driver, runner_);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("llamacpp"), HasSubstr("session.load_axes"), HasSubstr("\"quant\"")));
}

TEST_F(DriverCheckTest, TheTestDriverPassesThroughTheRealRunner) {
  auto runner = fingerprint::MakePosixCommandRunner({.search_path = "", .environment = {}});
  Status status = CheckDriver({"test", CheckTestDriver(), "test-engine@1"}, *runner);
  EXPECT_TRUE(status.ok()) << status.ToString();
  std::vector<DriverVerdict> verdicts =
      CheckDrivers({{"test", CheckTestDriver(), "test-engine@1"}}, *runner);
  ASSERT_TRUE(verdicts[0].driver.session_load_axes.has_value());
  EXPECT_EQ(*verdicts[0].driver.session_load_axes, (std::vector<std::string>{"knob.load"}));
  EXPECT_THAT(CheckDriver({"test", CheckTestDriver(), "test-engine@2"}, *runner).message(),
              HasSubstr("reports engine test-engine@1"));
}

}  // namespace
}  // namespace orch::agent
