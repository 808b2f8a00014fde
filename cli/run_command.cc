#include "cli/run_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "cli/command.h"
#include "cli/driver_lookup.h"
#include "cli/files.h"
#include "planner/plan.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct RunOptions {
  std::string spec;
  int agents = 2;
  std::string data_dir = "orch-data";
  std::vector<std::string> drivers;  // ENGINE=EXECUTABLE
  std::string hardware = "cpu";
  int timeout_s = 3600;
};

struct Progress {
  int total = -1, succeeded = 0, running = 0, pending = 0, failed = 0;
  bool operator==(const Progress&) const = default;
  bool finished() const { return total >= 0 && succeeded + failed >= total; }
};

std::string SelfPath() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "orch" : self.string();
}

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
  std::optional<std::string> release = LlamaCppRelease(engine);
  if (!release) return std::nullopt;
  looked = DefaultDriverCandidates(ExecutableDir(), *release);
  for (const std::string& candidate : looked) {
    if (std::error_code ec; fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

// Every engine the plan needs gets a driver: its --driver flag, else for llama.cpp@REL
// orch-driver-llamacpp-REL next to orch or in the build tree. The error names every
// engine left without one, where orch looked, and the flag that gives it.
Status ResolveDrivers(const planner::Plan& plan, std::map<std::string, std::string>& drivers) {
  std::set<std::string> engines;
  for (const planner::Cell& cell : plan.cells) engines.insert(cell.requirements.engine);
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
      problems += "looked for " + looked[0] + " and " + looked[1] + "; build target " +
                  fs::path(looked[0]).filename().string() + " (docs/drivers.md) or ";
    }
    problems += "pass --driver " + engine + "=EXECUTABLE";
  }
  if (problems.empty()) return Status::Ok();
  return InvalidArgument(problems);
}

void WriteCoordinatorConfig(const fs::path& path, const fs::path& data_dir) {
  std::ofstream(path) << "[coordinator]\nid = \"local\"\nlisten = \"tcp://127.0.0.1:*\"\n"
                      << "data_dir = " << nlohmann::json(data_dir.string()).dump() << "\n";
}

void WriteAgentConfig(const fs::path& path, const std::string& id, const std::string& endpoint,
                      const RunOptions& options, const std::map<std::string, std::string>& drivers) {
  std::ofstream out(path);
  out << "[agent]\nid = \"" << id << "\"\ncoordinator = \"" << endpoint << "\"\nslots = 1\n"
      << "hardware = " << nlohmann::json(options.hardware).dump() << "\ngpus = 0\n"
      << "spool_dir = " << nlohmann::json((path.parent_path() / ("spool-" + id)).string()).dump()
      << "\n";
  int n = 0;
  for (const auto& [engine, exe] : drivers) {
    out << "\n[[drivers]]\nname = \"driver" << n++ << "\"\nexecutable = "
        << nlohmann::json(exe).dump() << "\nengine = " << nlohmann::json(engine).dump() << "\n";
  }
}

// Runs `orch ARGS` to completion and returns its stdout (stderr goes to `log`).
Result<std::string> RunClient(std::vector<std::string> args, const fs::path& run_dir) {
  fs::path out = run_dir / "client.out";
  fs::remove(out);
  args.insert(args.begin(), SelfPath());
  std::string command_log = (run_dir / "client.log").string();
  // The child writes stdout and stderr to one file; clients print JSON on stdout only
  // when asked, so the command's exit code decides and the file is its output.
  Result<ChildProcess> child = ChildProcess::Start(args, out.string());
  if (!child.ok()) return child.status();
  std::optional<int> code = child->WaitFor(60s);
  Result<std::string> text = ReadFile(out.string());
  std::ofstream(command_log, std::ios::app) << (text.ok() ? *text : "");
  if (!code || *code != 0) {
    return Status(StatusCode::kUnavailable, "orch " + args[1] + " failed: " +
                                                (text.ok() ? *text : text.status().message()));
  }
  return text;
}

std::optional<Progress> ReadProgress(const std::string& experiment, const fs::path& run_dir,
                                     const std::string& endpoint) {
  Result<std::string> out = RunClient({"status", "--json", "--coordinator", endpoint}, run_dir);
  if (!out.ok()) return std::nullopt;
  nlohmann::json status = nlohmann::json::parse(*out, nullptr, false);
  if (status.is_discarded() || !status.contains("experiments")) return std::nullopt;
  for (const nlohmann::json& e : status["experiments"]) {
    if (e.value("experiment", "") != experiment) continue;
    return Progress{e.value("total", 0), e.value("succeeded", 0), e.value("running", 0),
                    e.value("pending", 0), e.value("failed", 0)};
  }
  return std::nullopt;
}

Result<std::string> WaitForEndpoint(const fs::path& file, ChildProcess& coordinator) {
  for (int i = 0; i < 300; ++i) {
    Result<std::string> text = ReadFile(file.string());
    if (text.ok() && !text->empty()) {
      std::string endpoint = *text;
      while (!endpoint.empty() && std::isspace(static_cast<unsigned char>(endpoint.back()))) {
        endpoint.pop_back();
      }
      return endpoint;
    }
    if (coordinator.WaitFor(100ms)) break;
  }
  return Status(StatusCode::kUnavailable, "the coordinator did not start; see its log");
}

class LocalSystem {
 public:
  ~LocalSystem() {
    for (ChildProcess& agent : agents_) agent.Stop(10s);
    if (coordinator_) coordinator_->Stop(10s);
  }
  std::unique_ptr<ChildProcess> coordinator_;
  std::vector<ChildProcess> agents_;
};

int Fail(const Status& status, int code) {
  std::cerr << "orch run: " << status.message() << "\n";
  return code;
}

// Prints progress until every job of `experiment` is finished, the coordinator exits, or
// `timeout_s` passes.
int WatchUntilFinished(const std::string& experiment, const fs::path& run_dir,
                       const std::string& endpoint, int timeout_s, ChildProcess& coordinator) {
  Progress last;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::optional<int> code = coordinator.WaitFor(0ms)) {
      std::cerr << "orch run: the coordinator exited (status " << *code << "); see "
                << (run_dir / "coordinator.log").string() << "\n";
      return kExitError;
    }
    std::optional<Progress> p = ReadProgress(experiment, run_dir, endpoint);
    if (p && !(*p == last)) {
      std::cout << "[" << p->succeeded + p->failed << "/" << p->total << "] succeeded "
                << p->succeeded << ", running " << p->running << ", pending " << p->pending
                << ", failed " << p->failed << std::endl;
      last = *p;
    }
    if (p && p->finished()) return p->failed == 0 ? kExitOk : kExitError;
    std::this_thread::sleep_for(500ms);
  }
  std::cerr << "orch run: gave up after " << timeout_s << " s (--timeout)\n";
  return kExitError;
}

int RunLocal(const RunOptions& options) {
  Result<std::string> text = ReadFile(options.spec);
  if (!text.ok()) return Fail(text.status(), kExitError);
  FileSourceReader reader(fs::path(options.spec).parent_path().string());
  planner::PlanOutcome outcome = planner::PlanSpec(*text, options.spec, reader);
  if (!outcome.plan) {
    for (const planner::Diagnostic& d : outcome.diagnostics.all()) {
      std::cerr << d.Format(options.spec) << "\n";
    }
    return kExitInvalidInput;
  }
  Result<std::map<std::string, std::string>> drivers = ParseDrivers(options.drivers);
  if (!drivers.ok()) return Fail(drivers.status(), kExitInvalidInput);
  if (Status s = ResolveDrivers(*outcome.plan, *drivers); !s.ok()) {
    return Fail(s, kExitInvalidInput);
  }

  fs::path data_dir = fs::absolute(options.data_dir);
  fs::path run_dir = data_dir / "local";
  fs::create_directories(run_dir);
  fs::remove(data_dir / "coordinator.endpoint");
  WriteCoordinatorConfig(run_dir / "coordinator.toml", data_dir);
  LocalSystem system;
  Result<ChildProcess> coordinator = ChildProcess::Start(
      {SelfPath(), "coordinator", "--config", (run_dir / "coordinator.toml").string()},
      (run_dir / "coordinator.log").string());
  if (!coordinator.ok()) return Fail(coordinator.status(), kExitError);
  system.coordinator_ = std::make_unique<ChildProcess>(std::move(coordinator).value());
  Result<std::string> endpoint = WaitForEndpoint(data_dir / "coordinator.endpoint",
                                                 *system.coordinator_);
  if (!endpoint.ok()) return Fail(endpoint.status().WithContext((run_dir / "coordinator.log").string()), kExitError);
  for (int i = 1; i <= options.agents; ++i) {
    std::string id = "local-" + std::to_string(i);
    fs::path config = run_dir / ("agent-" + id + ".toml");
    WriteAgentConfig(config, id, *endpoint, options, *drivers);
    Result<ChildProcess> agent = ChildProcess::Start(
        {SelfPath(), "agent", "--config", config.string()}, (run_dir / (id + ".log")).string());
    if (!agent.ok()) return Fail(agent.status(), kExitError);
    system.agents_.push_back(std::move(agent).value());
  }
  std::cout << "orch run: coordinator " << *endpoint << ", " << options.agents
            << " agents, logs in " << run_dir.string() << "\n";
  Result<std::string> submitted =
      RunClient({"submit", options.spec, "--coordinator", *endpoint}, run_dir);
  if (!submitted.ok()) return Fail(submitted.status(), kExitError);
  std::cout << *submitted;
  return WatchUntilFinished(outcome.plan->spec.name, run_dir, *endpoint, options.timeout_s,
                            *system.coordinator_);
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RunOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run an experiment on this machine: start a coordinator and local agents, submit the\n"
      "plan, show progress, stop everything. Exit status: 0 every job succeeded, 1 a job\n"
      "failed or another error, 2 invalid spec or arguments.");
  cmd->add_option("SPEC", options->spec, "experiment spec (TOML, see docs/spec.md)")->required();
  cmd->add_option("--agents", options->agents, "local agents to start (default 2)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--data-dir", options->data_dir,
                  "coordinator data (RocksDB), configs and logs (default ./orch-data)");
  cmd->add_option("--driver", options->drivers,
                  "ENGINE=EXECUTABLE: the driver agents run for jobs of ENGINE (repeatable); "
                  "default for llama.cpp@REL: orch-driver-llamacpp-REL next to orch, else in "
                  "../drivers/llamacpp/ from it (the build tree)");
  cmd->add_option("--hardware", options->hardware, "hardware class of the local agents (default cpu)");
  cmd->add_option("--timeout", options->timeout_s, "give up after this many seconds (default 3600)")
      ->check(CLI::PositiveNumber);
  cmd->callback([options, &exit_code] { exit_code = RunLocal(*options); });
}

}  // namespace orch::cli
