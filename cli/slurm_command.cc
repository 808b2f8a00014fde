#include "cli/slurm_command.h"

#include <signal.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "agent/config.h"
#include "cli/client_commands.h"
#include "cli/command.h"
#include "cli/files.h"
#include "cli/slurm_pilots.h"
#include "fingerprint/posix_command_runner.h"
#include "protocol/identity_key.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

struct SlurmOptions {
  PilotOptions pilots;
  std::string agent_config;
  bool watch = false;
  int interval_s = 30;
  ClientOptions client;
};

int Fail(const std::string& message, int code) {
  std::cerr << "orch slurm: " << message << "\n";
  return code;
}

std::unique_ptr<fingerprint::CommandRunner> Runner() {
  const char* path = std::getenv("PATH");
  std::vector<std::string> environment;
  for (char** variable = ::environ; variable != nullptr && *variable != nullptr; ++variable) {
    environment.emplace_back(*variable);
  }
  return fingerprint::MakePosixCommandRunner({.search_path = path ? path : "/usr/bin:/bin",
                                              .environment = std::move(environment),
                                              .timeout = std::chrono::seconds(60),
                                              .max_output_bytes = 16 << 20});
}

// `argv`'s stdout; an error naming the command and what it printed on stderr.
Result<std::string> RunTool(fingerprint::CommandRunner& runner,
                            const std::vector<std::string>& argv) {
  Result<fingerprint::CommandOutput> out = runner.Run(argv);
  if (!out.ok()) {
    return Status(out.status().code(), argv[0] + ": " + out.status().message() +
                                           (out.status().code() == StatusCode::kNotFound
                                                ? " (is this a Slurm submit host?)"
                                                : ""));
  }
  if (out->exit_code != 0) {
    return Status(StatusCode::kUnavailable, argv[0] + " exited with status " +
                                                std::to_string(out->exit_code) + ": " +
                                                out->stderr_text);
  }
  return out->stdout_text;
}

// The pilots of this user: `--me` is the process's own uid, as Slurm owns jobs by uid
// (not $USER, which is unset under cron, systemd and many containers, and would list
// every user's pilots).
Result<std::vector<PilotJob>> OurPilots(fingerprint::CommandRunner& runner) {
  ORCH_ASSIGN_OR_RETURN(std::string out,
                        RunTool(runner, {"squeue", "--me", "-h", "-o", "%i|%j|%T|%N"}));
  return ParseSqueue(out);
}

// Reads the pilots' agent config: its hardware class, and the id prefix its key allows.
Status ReadAgentConfig(SlurmOptions& options) {
  ORCH_ASSIGN_OR_RETURN(agent::AgentConfig config, agent::LoadAgentConfig(options.agent_config));
  options.pilots.agent_config = fs::absolute(options.agent_config).string();
  options.pilots.agent_hardware = config.hardware;
  options.pilots.id_prefix = config.id;
  if (!config.key.empty()) {
    ORCH_ASSIGN_OR_RETURN(protocol::SecretIdentity key, protocol::ReadSecretKeyFile(config.key));
    if (key.identity.role != "pilot") {
      return InvalidArgument(options.agent_config + ": its key " + config.key + " has role " +
                             key.identity.role +
                             "; pilots need a key of role pilot, which "
                             "speaks as NAME.slurm-JOBID (orch keygen NAME --role pilot)");
    }
    options.pilots.id_prefix = key.identity.name;
  }
  return Status::Ok();
}

// One round: what the coordinator waits for, what Slurm holds, what to submit. Returns
// the number of pending jobs no agent can run (0: nothing left to submit for).
Result<int> Round(SlurmOptions& options, fingerprint::CommandRunner& runner) {
  ORCH_ASSIGN_OR_RETURN(protocol::StatusReply status,
                        RequestStatus(options.client, protocol::StatusRequest{"", false}));
  ORCH_ASSIGN_OR_RETURN(std::vector<PilotJob> pilots, OurPilots(runner));
  PilotPlan plan = PlanPilots(status, pilots, options.pilots);
  for (const std::string& note : plan.notes) std::cout << "orch slurm: " << note << "\n";
  std::string script = options.pilots.log_dir + "/pilot.sh";
  if (!plan.submissions.empty()) {
    ORCH_RETURN_IF_ERROR(WriteFileAtomically(script, PilotScript(options.pilots)));
    fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  }
  for (const PilotPlan::Submission& submission : plan.submissions) {
    for (int i = 0; i < submission.count; ++i) {
      std::vector<std::string> argv{"sbatch"};
      argv.insert(argv.end(), submission.sbatch_args.begin(), submission.sbatch_args.end());
      argv.push_back(script);
      ORCH_ASSIGN_OR_RETURN(std::string job, RunTool(runner, argv));
      while (!job.empty() && (job.back() == '\n' || job.back() == ' ')) job.pop_back();
      std::cout << "orch slurm: submitted pilot " << job << " (" << PilotName(submission.shape)
                << ")" << std::endl;
    }
  }
  int waiting = 0;
  for (const protocol::JobStatus& job : status.jobs) waiting += job.state == "pending";
  return waiting;
}

int RunSubmit(SlurmOptions options) {
  if (Status read = ReadAgentConfig(options); !read.ok()) {
    return Fail(read.message(), kExitInvalidInput);
  }
  std::error_code ec;
  options.pilots.log_dir = fs::absolute(options.pilots.log_dir).string();
  fs::create_directories(options.pilots.log_dir, ec);
  if (ec) return Fail("create " + options.pilots.log_dir + ": " + ec.message(), kExitError);
  std::signal(SIGINT, OnStop);
  std::signal(SIGTERM, OnStop);
  std::unique_ptr<fingerprint::CommandRunner> runner = Runner();
  while (true) {
    Result<int> waiting = Round(options, *runner);
    if (!waiting.ok()) return Fail(waiting.status().message(), kExitError);
    if (!options.watch) return kExitOk;
    Result<protocol::StatusReply> status =
        RequestStatus(options.client, protocol::StatusRequest{"", false});
    bool busy = false;
    if (status.ok()) {
      for (const protocol::ExperimentProgress& p : status->experiments) {
        busy = busy || p.pending > 0 || p.running > 0;
      }
    }
    if (!busy) {
      std::cout << "orch slurm: nothing is pending or running; no more pilots" << std::endl;
      return kExitOk;
    }
    for (int s = 0; s < options.interval_s * 10 && g_stop == 0; ++s) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (g_stop != 0) {
      std::cout << "orch slurm: stopped; the pilots in the queue stay there (scancel them "
                   "with: scancel --name=orch-pilot-...)\n";
      return 128 + SIGINT;
    }
  }
}

int RunStatus(const ClientOptions& client) {
  std::unique_ptr<fingerprint::CommandRunner> runner = Runner();
  Result<std::vector<PilotJob>> pilots = OurPilots(*runner);
  if (!pilots.ok()) return Fail(pilots.status().message(), kExitError);
  Result<protocol::StatusReply> status = RequestStatus(client, protocol::StatusRequest{"", false});
  if (!status.ok()) return Fail(status.status().message(), kExitError);
  std::printf("%-10s %-24s %-11s %-12s %-28s %-12s %s\n", "SLURM JOB", "NAME", "STATE", "NODE",
              "AGENT", "AGENT STATE", "RUNS");
  for (const PilotJob& pilot : *pilots) {
    const protocol::AgentSummary* agent = nullptr;
    std::string suffix = ".slurm-" + pilot.job_id;
    for (const protocol::AgentSummary& a : status->agents) {
      if (a.agent_id.size() > suffix.size() &&
          a.agent_id.compare(a.agent_id.size() - suffix.size(), suffix.size(), suffix) == 0) {
        agent = &a;
      }
    }
    std::string state = agent ? std::string(protocol::AgentStateName(agent->state)) : "-";
    std::printf("%-10s %-24s %-11s %-12s %-28s %-12s %s\n", pilot.job_id.c_str(),
                pilot.name.c_str(), pilot.state.c_str(),
                pilot.node.empty() ? "-" : pilot.node.c_str(),
                agent ? agent->agent_id.c_str() : "-", state.c_str(),
                agent ? std::to_string(agent->current_runs.size()).c_str() : "-");
  }
  if (pilots->empty()) std::printf("(no orch pilots in the queue)\n");
  return kExitOk;
}

}  // namespace

void RegisterSlurmCommand(CLI::App& app, int& exit_code) {
  CLI::App* slurm = app.add_subcommand(
      "slurm",
      "Run agents on a Slurm cluster as pilot jobs (docs/slurm.md): sbatch starts an\n"
      "agent inside each allocation, which connects back and pulls work.");
  slurm->require_subcommand(1);

  auto options = std::make_shared<SlurmOptions>();  // shared with the callback below
  CLI::App* submit = slurm->add_subcommand(
      "submit",
      "Submit pilot jobs for the pending jobs no connected agent can run: per shape\n"
      "(hardware, GPUs) up to --max-pilots queued or running, each asking for the job's\n"
      "GPUs (--gres=gpu:N) or --cpus-per-task, with --signal=B:TERM@N so its agent\n"
      "drains before the walltime. --watch repeats until nothing is pending or running.\n"
      "Exit status: 0 done, 1 Slurm or the coordinator failed, 2 invalid arguments.");
  submit
      ->add_option("--agent-config", options->agent_config,
                   "FILE: the pilots' agent config (coordinator, key of role pilot, "
                   "drivers, hardware)")
      ->required();
  submit->add_option("--partition", options->pilots.partition, "Slurm partition");
  submit->add_option("--account", options->pilots.account, "Slurm account");
  submit->add_option("--walltime", options->pilots.walltime,
                     "each pilot's time limit (default 01:00:00)");
  submit
      ->add_option("--max-pilots", options->pilots.max_pilots,
                   "pilots queued or running per shape (default 2)")
      ->check(CLI::Range(1, 10000));
  submit
      ->add_option("--cpus-per-task", options->pilots.cpus_per_task,
                   "CPUs of a pilot for CPU jobs (default 1)")
      ->check(CLI::Range(1, 4096));
  submit
      ->add_option("--drain-seconds", options->pilots.drain_seconds,
                   "SIGTERM this long before the walltime (default 120; the agent's "
                   "stop_drain must be shorter)")
      ->check(CLI::Range(10, 3600));
  submit->add_option("--orch", options->pilots.orch,
                     "the orch binary on the compute nodes (default: orch on their PATH)");
  submit->add_option("--log-dir", options->pilots.log_dir,
                     "where the pilot script and each pilot's log (JOBID.log) go; must be "
                     "visible from the compute nodes (default ./orch-pilots)");
  submit->add_flag("--watch", options->watch, "keep the queue filled until the work is done");
  submit->add_option("--interval", options->interval_s, "seconds between rounds (default 30)")
      ->check(CLI::Range(1, 3600));
  AddClientOptions(*submit, options->client);
  options->pilots.log_dir = "orch-pilots";
  submit->callback([options, &exit_code] { exit_code = RunSubmit(*options); });

  auto client = std::make_shared<ClientOptions>();
  CLI::App* status = slurm->add_subcommand(
      "status", "The orch pilot jobs in the queue (squeue) and the agents they run.");
  AddClientOptions(*status, *client);
  status->callback([client, &exit_code] { exit_code = RunStatus(*client); });
}

}  // namespace orch::cli
