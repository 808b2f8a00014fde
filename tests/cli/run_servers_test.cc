// orch run's server entries for its local agents: --server ENGINE=URL attaches,
// ENGINE=PROGRAM launches that llama-server, and an engine left without one is an error
// naming it and the flag (cli/run_local.h ResolveServers).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/driver_lookup.h"
#include "cli/run_local.h"

namespace orch::cli::run_local {
namespace {

using ::testing::HasSubstr;

TEST(RunServersTest, AUrlAttachesAndAProgramLaunchesOnlyServerEnginesGetEntries) {
  Result<std::vector<LocalServer>> servers =
      ResolveServers({"llama.cpp@b8390", "llama-server@b8390", "vllm@0.11.0"},
                     {"vllm@0.11.0=http://gpu-7:8000", "llama-server@b8390=/bin/true"});
  ASSERT_TRUE(servers.ok()) << servers.status().ToString();
  ASSERT_EQ(servers->size(), 2u);  // llama.cpp runs in-process: no server
  EXPECT_EQ((*servers)[0].engine, "llama-server@b8390");
  EXPECT_EQ((*servers)[0].program, "/bin/true");
  EXPECT_EQ((*servers)[0].url, "");
  EXPECT_EQ((*servers)[1].engine, "vllm@0.11.0");
  EXPECT_EQ((*servers)[1].url, "http://gpu-7:8000");
}

TEST(RunServersTest, BadFlagsNameTheFlagAndWhatIsExpected) {
  const std::set<std::string> engines = {"llama-server@b8390", "vllm@0.11.0"};
  auto error = [&](const std::string& flag) {
    Result<std::vector<LocalServer>> r =
        ResolveServers(engines, {flag, "llama-server@b8390=http://127.0.0.1:1"});
    EXPECT_FALSE(r.ok()) << flag;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_THAT(error("vllm@0.11.0"), HasSubstr("expected ENGINE=URL or ENGINE=PROGRAM"));
  EXPECT_THAT(error("sglang@0.5.4=http://h:30000"),
              HasSubstr("the plan has no server engine sglang@0.5.4"));
  EXPECT_THAT(error("vllm@0.11.0=/bin/true"), HasSubstr("orch run launches only llama-server"));
  EXPECT_THAT(error("llama-server@b8390=/no/such/llama-server"),
              HasSubstr("/no/such/llama-server is not an executable file"));
}

TEST(RunServersTest, AServerEngineLeftWithoutOneNamesTheFlag) {
  Result<std::vector<LocalServer>> r = ResolveServers({"vllm@0.11.0", "ollama@0.13.0"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("no server for engine vllm@0.11.0: pass --server vllm@0.11.0=URL"));
  EXPECT_THAT(r.status().message(), HasSubstr("no server for engine ollama@0.13.0"));
}

TEST(RunServersTest, LlamaServerIsLookedForInstalledThenInTheBuildTree) {
  EXPECT_EQ(LlamaServerRelease("llama-server@b8390"), "b8390");
  EXPECT_EQ(LlamaServerRelease("llama-server@../x"), std::nullopt);
  EXPECT_EQ(LlamaServerRelease("vllm@0.11.0"), std::nullopt);
  EXPECT_EQ(LlamaServerCandidates("/src/orch/build/cli", "b8390"),
            (std::vector<std::string>{"/src/orch/build/lib/orch/servers/llama-server-b8390",
                                      "/src/orch/build/drivers/server/llama-server-b8390"}));
  EXPECT_EQ(ServerDriverCandidates("/usr/bin", "vllm")[1],
            "/usr/lib/orch/drivers/orch-driver-vllm");
  EXPECT_EQ(ServerDriverCandidates("/src/orch/build/cli", "ollama")[2],
            "/src/orch/build/drivers/server/orch-driver-ollama");
}

}  // namespace
}  // namespace orch::cli::run_local
