// The engines of a local run: each engine's driver (--driver, else found where orch
// looks by default) and each server engine's server (--server, else the llama-server
// scripts/setup built). Declared in cli/run_local.h.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/config.h"
#include "cli/driver_lookup.h"
#include "cli/run_local.h"

namespace orch::cli::run_local {

namespace fs = std::filesystem;

// ENGINE=EXECUTABLE flags as a map; the error names the flag.
Result<std::map<std::string, std::string>> ParseDrivers(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> drivers;
  for (const std::string& flag : flags) {
    std::size_t eq = flag.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
      return InvalidArgument("--driver " + flag + ": expected ENGINE=EXECUTABLE");
    }
    drivers[flag.substr(0, eq)] = fs::absolute(flag.substr(eq + 1)).string();
  }
  return drivers;
}

// The driver of a llama.cpp engine found where orch looks by default, else nullopt;
// `looked` gets the places tried.
std::optional<std::string> DefaultDriver(const std::string& engine,
                                         std::vector<std::string>& looked) {
  if (agent::IsServerEngine(engine)) {
    looked = ServerDriverCandidates(ExecutableDir(), engine.substr(0, engine.find('@')));
  } else if (std::optional<std::string> release = LlamaCppRelease(engine)) {
    looked = DefaultDriverCandidates(ExecutableDir(), *release);
  } else {
    return std::nullopt;
  }
  for (const std::string& candidate : looked) {
    if (std::error_code ec; fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

// Every engine the plan needs gets a driver: its --driver flag, else for llama.cpp@REL
// orch-driver-llamacpp-REL next to orch, in ../lib/orch/drivers or in the build tree.
// The error names every engine left without one, where orch looked, and the flag that
// gives it.
Status ResolveDrivers(const std::set<std::string>& engines,
                      std::map<std::string, std::string>& drivers) {
  std::string problems;
  for (const std::string& engine : engines) {
    if (drivers.count(engine) > 0) continue;
    std::vector<std::string> looked;
    if (std::optional<std::string> found = DefaultDriver(engine, looked)) {
      drivers[engine] = *found;
      std::cout << "orch run: " << engine << " runs with " << *found << "\n";
      continue;
    }
    problems += (problems.empty() ? "" : "\n") + ("no driver for engine " + engine + ": ");
    if (!looked.empty()) {
      problems += "looked for " + JoinPlaces(looked) + "; build target " +
                  fs::path(looked[0]).filename().string() + " (docs/drivers.md) or ";
    }
    problems += "pass --driver " + engine + "=EXECUTABLE";
  }
  if (problems.empty()) return Status::Ok();
  return InvalidArgument(problems);
}

namespace {

bool IsExecutableFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

// The entry of a --server ENGINE=URL|PROGRAM flag.
Result<LocalServer> ServerFromFlag(const std::string& flag, const std::set<std::string>& engines) {
  std::size_t eq = flag.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
    return InvalidArgument("--server " + flag + ": expected ENGINE=URL or ENGINE=PROGRAM");
  }
  LocalServer server{flag.substr(0, eq), "", ""};
  std::string value = flag.substr(eq + 1);
  if (!engines.contains(server.engine) || !agent::IsServerEngine(server.engine)) {
    return InvalidArgument("--server " + flag + ": the plan has no server engine " + server.engine +
                           " (docs/drivers.md, \"Server engines\")");
  }
  if (value.starts_with("http://") || value.starts_with("https://")) {
    server.url = value;
    return server;
  }
  if (!LlamaServerRelease(server.engine)) {
    return InvalidArgument(
        "--server " + flag + ": orch run launches only llama-server; attach " + "to a running " +
        server.engine + " with --server " + server.engine +
        "=URL, or configure its launch in an agent's [[servers]] (docs/agent.md)");
  }
  server.program = fs::absolute(value).lexically_normal().string();
  if (!IsExecutableFile(server.program)) {
    return InvalidArgument("--server " + flag + ": " + server.program +
                           " is not an executable file");
  }
  return server;
}

}  // namespace

Result<std::vector<LocalServer>> ResolveServers(const std::set<std::string>& engines,
                                                const std::vector<std::string>& flags) {
  std::map<std::string, LocalServer> servers;
  for (const std::string& flag : flags) {
    ORCH_ASSIGN_OR_RETURN(LocalServer server, ServerFromFlag(flag, engines));
    servers[server.engine] = server;
  }
  std::string problems;
  for (const std::string& engine : engines) {
    if (!agent::IsServerEngine(engine) || servers.contains(engine)) continue;
    std::optional<std::string> release = LlamaServerRelease(engine);
    std::vector<std::string> looked;
    if (release) looked = LlamaServerCandidates(ExecutableDir(), *release);
    auto found = std::find_if(looked.begin(), looked.end(), IsExecutableFile);
    if (found != looked.end()) {
      servers[engine] = {engine, "", *found};
      std::cout << "orch run: " << engine << " servers are launched from " << *found << "\n";
      continue;
    }
    problems += (problems.empty() ? "" : "\n") + ("no server for engine " + engine + ": ");
    if (!looked.empty()) {
      problems += "looked for " + JoinPlaces(looked) + " (scripts/setup builds it) or ";
    }
    problems += "pass --server " + engine + "=URL of a running server" +
                (release ? " or =PROGRAM, a llama-server to launch" : "");
  }
  if (!problems.empty()) return InvalidArgument(problems);
  std::vector<LocalServer> out;
  for (auto& [engine, server] : servers) out.push_back(std::move(server));
  return out;
}

}  // namespace orch::cli::run_local
