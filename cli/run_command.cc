#include "cli/run_command.h"

#include <signal.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "cli/client_commands.h"
#include "cli/command.h"
#include "cli/files.h"
#include "cli/local_system.h"
#include "cli/run_bundle.h"
#include "cli/run_local.h"
#include "cli/run_sizing.h"
#include "cli/spec_model_files.h"
#include "cli/status_text.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"

namespace orch::cli {
namespace run_local {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The signal that asked `orch run` to stop (SIGINT, SIGTERM), 0 while none did.
// A global because a signal handler can reach nothing else; only RunLocal reads it.
volatile std::sig_atomic_t g_stop_signal = 0;

void OnStopSignal(int signal) { g_stop_signal = signal; }

// The subcommand running ("run" or "bisect"), for the prefix of what this file prints.
std::string g_command = "run";
std::string Who() { return "orch " + g_command + ": "; }

// Without SA_RESTART, so that a sleep or wait returns at once. SIGHUP (the terminal went
// away) stops it like SIGINT. SIGPIPE is ignored: when its output is a pipe whose reader
// has gone (`orch run ... | tee log`, then Ctrl-C, which stops tee first), a write fails
// instead of killing orch run before it has stopped the processes it started.
void InstallStopSignals(const std::string& command) {
  g_command = command;
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

// Sleeps up to `duration`, returning early when a stop signal arrives.
void Pause(std::chrono::milliseconds duration) {
  auto until = std::chrono::steady_clock::now() + duration;
  for (auto now = std::chrono::steady_clock::now(); g_stop_signal == 0 && now < until;
       now = std::chrono::steady_clock::now()) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(20ms, until - now));
  }
}

std::string SelfPath() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "orch" : self.string();
}

int Fail(const std::string& message, int code) {
  std::cerr << Who() << "" << message << "\n";
  return code;
}

ClientOptions WithTimeout(ClientOptions client) {
  client.timeout_s = 10;
  return client;
}

Result<protocol::StatusReply> AskStatus(const ClientOptions& client, bool all_jobs,
                                        const std::string& experiment) {
  return RequestStatus(WithTimeout(client), protocol::StatusRequest{experiment, all_jobs});
}

// Waits until `count` agents have registered (each registers once it has hashed
// its model files).
Status WaitForAgents(LocalSystem& system, const ClientOptions& client,
                     const std::string& experiment, int count) {
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + 10min;
  bool said = false;
  CoordinatorClient connection(WithTimeout(client));  // one for every question
  while (g_stop_signal == 0 && std::chrono::steady_clock::now() < deadline) {
    std::string exited = system.ExitedDaemon();
    if (!exited.empty()) return Status(StatusCode::kUnavailable, exited);
    Result<protocol::StatusReply> status =
        RequestStatus(connection, protocol::StatusRequest{experiment, false});
    // Agents known from stored runs are listed too (never seen, down): count those up.
    int registered = 0;
    if (status.ok()) {
      for (const protocol::AgentSummary& a : status->agents)
        registered += a.state == protocol::AgentState::kConnected ? 1 : 0;
    }
    if (registered >= count) return Status::Ok();
    if (!said && std::chrono::steady_clock::now() - start > 3s) {
      std::cout << Who() << "waiting for the agents to register (" << registered << " of " << count
                << "; each first hashes its model files)" << std::endl;
      said = true;
    }
    // Every ms here is start-up of each `orch run` (docs/benchmarks.md); after a
    // second the agents are hashing large model files, and asking often would only
    // take time from them.
    Pause(std::chrono::steady_clock::now() - start < 1s ? 5ms : 100ms);
  }
  if (g_stop_signal != 0) return Status(StatusCode::kUnavailable, "interrupted");
  return Status(StatusCode::kUnavailable,
                "the agents did not register within 10 minutes; see " + system.run_dir());
}

Result<std::string> Submit(ClientOptions client, const std::string& plan_json) {
  client.timeout_s = 30;
  ORCH_ASSIGN_OR_RETURN(protocol::Message reply, SubmitPlan(client, plan_json, "run"));
  const auto* answer = std::get_if<protocol::CommandReply>(&reply);
  if (answer == nullptr) return Status(StatusCode::kUnavailable, "unexpected reply to submit");
  if (!answer->ok) return Status(StatusCode::kFailedPrecondition, answer->message);
  return answer->message;
}

const protocol::ExperimentProgress* Find(const protocol::StatusReply& status,
                                         const std::string& experiment) {
  for (const auto& e : status.experiments)
    if (e.experiment == experiment) return &e;
  return nullptr;
}

std::string ProgressLine(const protocol::ExperimentProgress& p) {
  return "[" + std::to_string(p.succeeded + p.failed + p.cancelled) + "/" +
         std::to_string(p.total) + "] succeeded " + std::to_string(p.succeeded) + ", running " +
         std::to_string(p.running) + ", pending " + std::to_string(p.pending) + ", failed " +
         std::to_string(p.failed) + ", cancelled " + std::to_string(p.cancelled);
}

// Why the experiment did not fully succeed: every failed or cancelled job with
// its reason.
void PrintFailures(const ClientOptions& client, const std::string& experiment,
                   const std::string& run_dir) {
  Result<protocol::StatusReply> status = AskStatus(client, true, experiment);
  if (!status.ok()) return;
  protocol::StatusReply failed;
  for (const protocol::JobStatus& job : status->jobs) {
    if (job.state == "failed" || job.state == "cancelled") failed.jobs.push_back(job);
  }
  if (!failed.jobs.empty()) {
    std::cerr << Who() << "" << failed.jobs.size() << " jobs did not succeed:\n"
              << FormatJobsTable(failed);
  }
  std::cerr << Who() << "agent and driver logs are in " << run_dir << "; after a fix, `orch "
            << g_command << "` again retries nothing that succeeded (orch retry " << experiment
            << " needs a running coordinator)\n";
}

// The jobs that wait for nothing: every pending job is one no local agent can run any
// more (its last capable driver quarantined, its engine withdrawn), with the reasons,
// and what each agent quarantined.
void PrintStuck(const ClientOptions& client, const std::string& experiment) {
  Result<protocol::StatusReply> status = AskStatus(client, true, experiment);
  if (!status.ok()) return;
  std::size_t count = 0;
  std::string table = FormatUnrunnableJobs(*status, &count);
  std::cerr << Who() << "" << count
            << " pending jobs can run on none of this machine's agents any more:\n"
            << table;
  for (const protocol::AgentSummary& agent : status->agents) {
    if (!agent.quarantined.empty()) {
      std::cerr << Who() << "agent " << agent.agent_id << " quarantined " << agent.quarantined
                << "\n";
    }
  }
}

enum class Outcome { kDone, kStuck, kInterrupted, kError };

// Prints progress until every job is done, a daemon of the local `system` exits, a
// signal arrives or `timeout_s` passes. Without a local system (a remote coordinator)
// agents come and go, so pending jobs no agent can run now are waited for.
// Asks on one connection every 100 ms, and every 20 ms once no job is pending (the last
// ones run), so that the end is seen at once (a short experiment's wall time) while a
// large store's coordinator (a status counts every job) is not kept busy answering.
// Prints a changed line at most every 300 ms, and the last one.
Outcome Watch(LocalSystem* system, const ClientOptions& client, const std::string& experiment,
              int timeout_s, bool& all_succeeded) {
  CoordinatorClient connection(WithTimeout(client));
  std::string last;
  auto printed_at = std::chrono::steady_clock::time_point();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (g_stop_signal != 0) return Outcome::kInterrupted;
    if (std::string exited = system ? system->ExitedDaemon() : ""; !exited.empty()) {
      Fail(exited, kExitError);
      return Outcome::kError;
    }
    Result<protocol::StatusReply> status =
        RequestStatus(connection, protocol::StatusRequest{experiment, false});
    const protocol::ExperimentProgress* p = status.ok() ? Find(*status, experiment) : nullptr;
    const bool done = p != nullptr && p->pending == 0 && p->running == 0;
    const auto now = std::chrono::steady_clock::now();
    if (p != nullptr && ProgressLine(*p) != last && (done || now - printed_at >= 300ms)) {
      last = ProgressLine(*p);
      printed_at = now;
      std::cout << last << std::endl;
    }
    if (done) {
      all_succeeded = p->succeeded == p->total;
      return Outcome::kDone;
    }
    // Local agents do not come and go: when nothing runs and no pending job can run,
    // waiting would only wait for --timeout.
    if (system != nullptr && p != nullptr && p->running == 0 && p->pending > 0 &&
        p->unrunnable == p->pending) {
      return Outcome::kStuck;
    }
    Pause(p != nullptr && p->pending == 0 ? 20ms : 100ms);
  }
  Fail("gave up after " + std::to_string(timeout_s) + " s (--timeout)", kExitError);
  return Outcome::kError;
}

int Interrupted(LocalSystem& system, const RunOptions& options) {
  int signal = g_stop_signal;
  std::cerr << Who() << "" << (signal == SIGINT ? "interrupted" : "terminated")
            << "; stopping the agents, their drivers and the coordinator\n";
  system.Stop();
  std::string what = !options.resume.empty()  ? options.resume
                     : options.bundle.empty() ? options.spec
                                              : "--bundle " + options.bundle;
  std::cerr << Who() << "stopped. Resume with: orch " << options.command << " " << what
            << " --data-dir " << options.data_dir << " (finished jobs are kept)\n";
  return 128 + signal;
}

FileSourceReader SpecReader(const RunOptions& options) {
  return FileSourceReader(fs::path(options.spec).parent_path().string(),
                          options.allow_outside_spec_dir ? planner::SourceScope::kAnywhere
                                                         : planner::SourceScope::kSpecDirOnly);
}

Result<planner::Plan> PlanOrReport(const RunOptions& options) {
  ORCH_ASSIGN_OR_RETURN(std::string text, ReadFile(options.spec));
  FileSourceReader reader = SpecReader(options);
  planner::PlanOutcome outcome = planner::PlanSpec(text, options.spec, reader);
  if (outcome.plan) return std::move(*outcome.plan);
  for (const planner::Diagnostic& d : outcome.diagnostics.all())
    std::cerr << d.Format(options.spec) << "\n";
  return InvalidArgument("invalid spec " + options.spec);
}

// Why the agents may hold none of the spec's model files: each whose content is not the
// declared SHA-256, said after Who() ("" for a bundle, or when every file matches).
std::string SpecModelMismatches(const RunOptions& options) {
  if (options.spec.empty()) return "";
  Result<std::string> text = ReadFile(options.spec);
  if (!text.ok()) return "";
  FileSourceReader reader = SpecReader(options);
  planner::PlanOutcome outcome = planner::PlanSpec(*text, options.spec, reader);
  if (!outcome.plan) return "";
  return SpecModelMismatchLines(outcome.plan->spec, reader, Who());
}

// Everything after the daemons started: submit (while the agents start: the coordinator
// stores the plan meanwhile and hands out its first jobs as each agent registers), fail
// fast once they all have, watch.
int Drive(LocalSystem& system, const ClientOptions& client, const std::string& experiment,
          const std::string& plan_json, const RunOptions& options, int agents) {
  Result<std::string> submitted = Submit(client, plan_json);
  if (!submitted.ok()) return Fail(submitted.status().message(), kExitError);
  std::cout << *submitted << "\n";
  if (Status up = WaitForAgents(system, client, experiment, agents); !up.ok()) {
    return g_stop_signal != 0 ? Interrupted(system, options) : Fail(up.message(), kExitError);
  }
  Result<protocol::StatusReply> status = AskStatus(client, false, experiment);
  if (!status.ok()) return Fail(status.status().message(), kExitError);
  if (std::string table = FormatUnrunnableJobs(*status, nullptr); !table.empty()) {
    std::cerr << Who() << "these jobs can run on none of this machine's agents:\n"
              << table << SpecModelMismatches(options) << Who()
              << "nothing was waited for; fix the spec, or give the agents what "
                 "they lack (--driver, --model-dir, --hardware)\n";
    return kExitError;
  }
  bool all_succeeded = false;
  Outcome outcome = Watch(&system, client, experiment, options.timeout_s, all_succeeded);
  if (outcome == Outcome::kInterrupted) return Interrupted(system, options);
  if (outcome == Outcome::kError) return kExitError;
  if (all_succeeded) return kExitOk;
  if (outcome == Outcome::kStuck) PrintStuck(client, experiment);
  PrintFailures(client, experiment, system.run_dir());
  return kExitError;
}

int DriveRemote(const ClientOptions& client, const std::string& experiment,
                const std::string& plan_json, const RunOptions& options) {
  Result<std::string> submitted = Submit(client, plan_json);
  if (!submitted.ok()) return Fail(submitted.status().message(), kExitError);
  std::cout << *submitted << "\n";
  Result<protocol::StatusReply> status = AskStatus(client, false, experiment);
  if (!status.ok()) return Fail(status.status().message(), kExitError);
  std::size_t count = 0;
  if (std::string table = FormatUnrunnableJobs(*status, &count); !table.empty()) {
    std::cerr << "orch " << options.command << ": " << count
              << " jobs can run on no connected agent; they wait until one that can "
                 "registers:\n"
              << table << SpecModelMismatches(options);
  }
  bool all_succeeded = false;
  Outcome outcome = Watch(nullptr, client, experiment, options.timeout_s, all_succeeded);
  if (outcome == Outcome::kInterrupted) {
    std::cerr << "orch " << options.command << ": stopped; the coordinator goes on with the "
              << "jobs submitted. Resume with the same command (finished jobs are kept)\n";
    return 128 + g_stop_signal;
  }
  if (outcome == Outcome::kError) return kExitError;
  if (all_succeeded) return kExitOk;
  Result<protocol::StatusReply> all = AskStatus(client, true, experiment);
  if (all.ok()) {
    protocol::StatusReply failed;
    for (const protocol::JobStatus& job : all->jobs) {
      if (job.state == "failed" || job.state == "cancelled") failed.jobs.push_back(job);
    }
    std::cerr << "orch " << options.command << ": " << failed.jobs.size()
              << " jobs did not succeed:\n"
              << FormatJobsTable(failed);
  }
  return kExitError;
}

int StartLocal(const planner::Plan& plan, const RunOptions& options, LocalSystem& system,
               ClientOptions& client, int& agents) {
  // Before any daemon starts: a plan the coordinator would refuse is said at once.
  if (Status fits = PlanFits(plan.spec.name, planner::PlanToJson(plan).size()); !fits.ok()) {
    return Fail(fits.message(), kExitInvalidInput);
  }
  Result<std::map<std::string, std::string>> drivers = ParseDrivers(options.drivers);
  if (!drivers.ok()) return Fail(drivers.status().message(), kExitInvalidInput);
  std::set<std::string> engines;
  for (const planner::Cell& cell : plan.cells) engines.insert(cell.requirements.engine);
  if (Status s = ResolveDrivers(engines, *drivers); !s.ok()) {
    return Fail(s.message(), kExitInvalidInput);
  }

  Result<std::vector<LocalServer>> servers = ResolveServers(engines, options.servers);
  if (!servers.ok()) return Fail(servers.status().message(), kExitInvalidInput);

  LocalAgentSpec agent_spec{
      options.hardware, {}, 0, {drivers->begin(), drivers->end()}, std::move(*servers)};
  for (const std::string& dir : options.model_dirs)
    agent_spec.model_dirs.push_back(fs::absolute(dir).lexically_normal().string());
  Result<std::vector<SpecModelFile>> model_files =
      LocateSpecModelFiles(plan.spec, SpecReader(options), Who(), /*say_missing=*/true);
  if (!model_files.ok()) return Fail(model_files.status().message(), kExitInvalidInput);
  for (const SpecModelFile& file : *model_files) agent_spec.model_dirs.push_back(file.path);
  Sizing size =
      SizeAgents(plan, static_cast<int>(std::thread::hardware_concurrency()), options.agents);
  agent_spec.driver_threads = size.threads;
  std::cout << Who() << "" << size.why << "\n";

  if (Status keys = system.MakeKeys(size.agents); !keys.ok())
    return Fail(keys.message(), kExitError);
  Result<std::string> endpoint = system.Start(SelfPath(), size.agents, agent_spec);
  if (!endpoint.ok()) return Fail(endpoint.status().message(), kExitError);
  client = ClientOptions{*endpoint, 10, system.admin_key(), system.coordinator_public_key()};
  agents = size.agents;
  std::cout << Who() << "coordinator " << *endpoint << ", " << size.agents << " agents, logs in "
            << system.run_dir() << "\n"
            << Who() << "to watch it from another terminal: orch status --data-dir "
            << options.data_dir << " --watch" << std::endl;
  return kExitOk;
}

int RunLocal(const RunOptions& options) {
  InstallStopSignals();
  Result<planner::Plan> plan = PlanOrReport(options);
  if (!plan.ok()) return Fail(plan.status().message(), kExitInvalidInput);
  fs::path data_dir = fs::absolute(options.data_dir);
  LocalSystem system(data_dir.string(), (data_dir / "local").string());
  ClientOptions client;
  int agents = 0;
  if (int started = StartLocal(*plan, options, system, client, agents); started != kExitOk) {
    return started;
  }
  return Drive(system, client, plan->spec.name, planner::PlanToJson(*plan), options, agents);
}

void AddLocalOptions(CLI::App& command, RunOptions& options) {
  CLI::App* cmd = &command;
  RunOptions* opts = &options;
  cmd->add_option("--agents", opts->agents,
                  "local agents to start (default: sized to the cores; see the first line)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--data-dir", opts->data_dir,
                  "coordinator data (RocksDB), configs and logs (default ./orch-data)");
  cmd->add_option("--driver", opts->drivers,
                  "ENGINE=EXECUTABLE: the driver agents run for jobs of ENGINE (repeatable); "
                  "default for llama.cpp@REL: orch-driver-llamacpp-REL next to orch, else in "
                  "../drivers/llamacpp/ from it (the build tree)");
  cmd->add_option("--server", opts->servers,
                  "ENGINE=URL: jobs of a server engine (llama-server, vllm, sglang, ollama) run "
                  "against the server at URL; ENGINE=PROGRAM: the agents launch this llama-server "
                  "(repeatable); default for llama-server@REL: the llama-server scripts/setup "
                  "built (docs/drivers.md, \"Server engines\")");
  cmd->add_option("--model-dir", opts->model_dirs,
                  "DIR: a folder (or one file) of model files the agents offer by SHA-256 "
                  "(repeatable); the spec's [model] file is offered too");
  cmd->add_option("--hardware", opts->hardware, "hardware class of the local agents (default cpu)");
  cmd->add_option("--timeout", opts->timeout_s, "give up after this many seconds (default 3600)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--allow-outside-spec-dir", opts->allow_outside_spec_dir,
                "let text_file read files outside the spec's directory (absolute paths, "
                "\"..\", symlinks leading out); their content goes into the plan");
}

}  // namespace run_local

void RegisterRunCommand(CLI::App& app, int& exit_code) {
  using run_local::RunOptions;
  auto options = std::make_shared<RunOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run an experiment on this machine: start a coordinator and local agents, submit the\n"
      "plan, show progress, stop everything. Jobs no local agent can run are listed at once\n"
      "and nothing is waited for. Ctrl-C (or SIGTERM) stops drivers, agents and coordinator;\n"
      "running it again on the same --data-dir resumes. With --bundle instead of SPEC: a\n"
      "lab's plan bundle, offline, its results signed into a result bundle\n"
      "(docs/bundles.md). Exit status: 0 every job succeeded, 1 a job failed or another\n"
      "error (the reasons are printed), 2 invalid spec or arguments, 128+N stopped by\n"
      "signal N.");
  CLI::Option* spec =
      cmd->add_option("SPEC", options->spec, "experiment spec (TOML, see docs/spec.md)");
  run_local::AddLocalOptions(*cmd, *options);
  cmd->add_option("--bundle", options->bundle,
                  "run a plan bundle from a lab instead of SPEC (docs/bundles.md): the jobs "
                  "this machine's engines can run; writes a signed result bundle")
      ->excludes(spec);
  cmd->add_option("--key", options->key,
                  "with --bundle: the contributor's secret key file that signs the results");
  cmd->add_option("--results", options->results,
                  "with --bundle: the result bundle to write (default BUNDLE.results.orchb)");
  cmd->add_option("--coordinator-key", options->coordinator_key,
                  "with --bundle: the lab coordinator's public key file; refuse a plan bundle "
                  "it did not sign");
  cmd->add_flag("--write-results", options->write_results_only,
                "with --bundle: run nothing, write the result bundle of what has finished");
  cmd->callback([options, &exit_code] {
    if (options->bundle.empty() && options->spec.empty()) {
      std::cerr << "orch run: give a SPEC or --bundle FILE (try --help)\n";
      exit_code = kExitInvalidInput;
      return;
    }
    exit_code =
        options->bundle.empty() ? run_local::RunLocal(*options) : run_local::RunBundle(*options);
  });
}

}  // namespace orch::cli
