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
#include <fstream>
#include <sstream>

#include "base/unique_fd.h"
#include "tests/support/subprocess.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const fs::path& path) {
  std::ostringstream out;
  out << std::ifstream(path).rdbuf();
  return out.str();
}

// A fresh folder for the test, removed when it ends (also after a failed assertion).
struct ScratchFolder {
  ScratchFolder() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchFolder() { fs::remove_all(path); }
  fs::path path = fs::temp_directory_path() / ("orch-local-system-" + std::to_string(::getpid()));
};

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

LocalAgentSpec TestAgents() {
  LocalAgentSpec spec;
  spec.drivers = {{"test-engine@1", orch::testing::TestDriverBinary()}};
  return spec;
}

TEST(LocalSystemTest, TheCoordinatorListensOnThePortChosenBeforeItStarted) {
  ScratchFolder scratch;
  LocalSystem system(scratch.path.string(), (scratch.path / "local").string());
  ASSERT_TRUE(system.MakeKeys(1).ok());
  Result<int> port = FreeLocalPort();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  system.SetPortChooser([&](int) { return port; });
  Result<std::string> endpoint = system.Start(orch::testing::OrchBinary(), 1, TestAgents());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  EXPECT_EQ(*endpoint, "tcp://127.0.0.1:" + std::to_string(*port));
  // The agent was told that endpoint before the coordinator had bound it.
  EXPECT_THAT(Slurp(scratch.path / "local" / "agent-local-1.toml"), HasSubstr(*endpoint));
  system.Stop();
}

TEST(LocalSystemTest, APortTakenBeforeTheCoordinatorBoundItIsReplacedByAnother) {
  ScratchFolder scratch;
  ListeningSocket taken;
  LocalSystem system(scratch.path.string(), (scratch.path / "local").string());
  ASSERT_TRUE(system.MakeKeys(1).ok());
  int attempts = 0;
  system.SetPortChooser([&](int attempt) -> Result<int> {
    attempts = attempt;
    return attempt == 1 ? taken.port : FreeLocalPort();
  });
  Result<std::string> endpoint = system.Start(orch::testing::OrchBinary(), 1, TestAgents());
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  EXPECT_EQ(attempts, 2);
  EXPECT_THAT(*endpoint, Not(HasSubstr(":" + std::to_string(taken.port))));
  EXPECT_THAT(Slurp(scratch.path / "local" / "coordinator.log"),
              HasSubstr("Address already in use"));
  EXPECT_THAT(Slurp(scratch.path / "local" / "agent-local-1.toml"), HasSubstr(*endpoint));
  system.Stop();
}

TEST(LocalSystemTest, APortTakenThreeTimesIsAnErrorNamingTheLog) {
  ScratchFolder scratch;
  ListeningSocket taken;
  LocalSystem system(scratch.path.string(), (scratch.path / "local").string());
  ASSERT_TRUE(system.MakeKeys(1).ok());
  int attempts = 0;
  system.SetPortChooser([&](int attempt) -> Result<int> {
    attempts = attempt;
    return taken.port;
  });
  Result<std::string> endpoint = system.Start(orch::testing::OrchBinary(), 1, TestAgents());
  ASSERT_FALSE(endpoint.ok());
  EXPECT_EQ(attempts, 3);
  EXPECT_THAT(endpoint.status().message(),
              AllOf(HasSubstr("the 3 ports of 127.0.0.1 chosen for it were taken"),
                    HasSubstr(":" + std::to_string(taken.port)), HasSubstr("coordinator.log")));
  system.Stop();
}

}  // namespace
}  // namespace orch::cli
