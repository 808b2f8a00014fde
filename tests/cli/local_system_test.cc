// LocalSystem (what `orch run` starts): the real `orch coordinator` and `orch agent`
// binaries on 127.0.0.1. The agents start beside the coordinator, on a port chosen
// before it binds; a port taken in between is replaced by another.
#include "cli/local_system.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "base/unique_fd.h"
#include "tests/support/scratch_folder.h"
#include "tests/support/subprocess.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using orch::testing::ScratchFolder;
using orch::testing::Slurp;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// A socket listening on 127.0.0.1, on a port the kernel chose: that port is taken.
struct ListeningSocket {
  ListeningSocket() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(fd.get(), 1), 0);
    socklen_t length = sizeof address;
    EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
    port = ntohs(address.sin_port);
  }
  UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int port = 0;
};

// One LocalSystem in a scratch folder, with its keys; its agents run the test driver.
class LocalSystemTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(system_.MakeKeys(1).ok()); }
  Result<std::string> Start() {
    LocalAgentSpec spec;
    spec.drivers = {{"test-engine@1", orch::testing::TestDriverBinary()}};
    return system_.Start(orch::testing::OrchBinary(), 1, spec);
  }
  // A file of the run folder (a log, a config).
  std::string RunFile(const std::string& name) { return Slurp(scratch_.path / "local" / name); }

  ScratchFolder scratch_{"orch-local-system"};
  LocalSystem system_{scratch_.path.string(), (scratch_.path / "local").string()};
};

TEST_F(LocalSystemTest, TheCoordinatorListensOnThePortChosenBeforeItStarted) {
  Result<int> port = FreeLocalPort();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  system_.SetPortChooser([&](int) { return port; });
  Result<std::string> endpoint = Start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  EXPECT_EQ(*endpoint, "tcp://127.0.0.1:" + std::to_string(*port));
  // The agent was told that endpoint before the coordinator had bound it.
  EXPECT_THAT(RunFile("agent-local-1.toml"), HasSubstr(*endpoint));
}

TEST_F(LocalSystemTest, APortTakenBeforeTheCoordinatorBoundItIsReplacedByAnother) {
  ListeningSocket taken;
  int attempts = 0;
  system_.SetPortChooser([&](int attempt) -> Result<int> {
    attempts = attempt;
    return attempt == 1 ? taken.port : FreeLocalPort();
  });
  Result<std::string> endpoint = Start();
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  EXPECT_EQ(attempts, 2);
  EXPECT_THAT(*endpoint, Not(HasSubstr(":" + std::to_string(taken.port))));
  EXPECT_THAT(RunFile("coordinator.log"), HasSubstr("Address already in use"));
  EXPECT_THAT(RunFile("agent-local-1.toml"), HasSubstr(*endpoint));
}

TEST_F(LocalSystemTest, APortTakenThreeTimesIsAnErrorNamingTheLog) {
  ListeningSocket taken;
  int attempts = 0;
  system_.SetPortChooser([&](int attempt) -> Result<int> {
    attempts = attempt;
    return taken.port;
  });
  Result<std::string> endpoint = Start();
  ASSERT_FALSE(endpoint.ok());
  EXPECT_EQ(attempts, 3);
  EXPECT_THAT(endpoint.status().message(),
              AllOf(HasSubstr("the 3 ports of 127.0.0.1 chosen for it were taken"),
                    HasSubstr(":" + std::to_string(taken.port)), HasSubstr("coordinator.log")));
}

}  // namespace
}  // namespace orch::cli
