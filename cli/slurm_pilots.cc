#include "cli/slurm_pilots.h"

#include <map>
#include <sstream>

namespace orch::cli {
namespace {

constexpr std::string_view kPilotPrefix = "orch-pilot-";

bool Active(const std::string& state) {
  return state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" ||
         state == "REQUEUED" || state == "RESIZING";
}

// A word safe in a job name and a shell script: letters, digits, '-', '_', '.', '/'.
std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string PilotName(const Shape& shape) {
  std::string hardware;
  for (char c : shape.hardware) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    hardware += plain ? c : '_';
  }
  return std::string(kPilotPrefix) + hardware + "-g" + std::to_string(shape.gpus);
}

std::vector<PilotJob> ParseSqueue(const std::string& output) {
  std::vector<PilotJob> jobs;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string field; std::getline(parts, field, '|');) fields.push_back(field);
    if (fields.size() < 3 || fields[1].rfind(kPilotPrefix, 0) != 0) continue;
    jobs.push_back({fields[0], fields[1], fields[2], fields.size() > 3 ? fields[3] : ""});
  }
  return jobs;
}

PilotPlan PlanPilots(const protocol::StatusReply& status, const std::vector<PilotJob>& pilots,
                     const PilotOptions& options) {
  std::map<Shape, int> waiting;  // pending jobs no connected agent can run, by shape
  for (const protocol::JobStatus& job : status.jobs) {
    if (job.state != "pending" || job.runnable) continue;
    ++waiting[Shape{job.hardware, job.gpus}];
  }
  std::map<std::string, int> active;  // our queued or running pilots, by job name
  for (const PilotJob& pilot : pilots) {
    if (Active(pilot.state)) ++active[pilot.name];
  }
  PilotPlan plan;
  for (const auto& [shape, jobs] : waiting) {
    std::string what = std::to_string(jobs) + " jobs need " + shape.hardware +
                       (shape.gpus > 0 ? " with " + std::to_string(shape.gpus) + " GPUs" : "");
    if (shape.hardware != options.agent_hardware) {
      plan.notes.push_back(what + ": the pilots' agent config offers hardware " +
                           options.agent_hardware + ", so no pilot can run them");
      continue;
    }
    int have = active[PilotName(shape)];
    int count = std::min(options.max_pilots - have, jobs);
    if (count <= 0) {
      plan.notes.push_back(what + ": " + std::to_string(have) +
                           " pilots are queued or "
                           "running (--max-pilots " +
                           std::to_string(options.max_pilots) + ")");
      continue;
    }
    std::vector<std::string> args{"--parsable",
                                  "--job-name=" + PilotName(shape),
                                  "--time=" + options.walltime,
                                  "--signal=B:TERM@" + std::to_string(options.drain_seconds),
                                  "--output=" + options.log_dir + "/%j.log",
                                  "--nodes=1",
                                  "--ntasks=1"};
    if (!options.partition.empty()) args.push_back("--partition=" + options.partition);
    if (!options.account.empty()) args.push_back("--account=" + options.account);
    if (shape.gpus > 0) {
      args.push_back("--gres=gpu:" + std::to_string(shape.gpus));
    } else {
      args.push_back("--cpus-per-task=" + std::to_string(options.cpus_per_task));
    }
    plan.notes.push_back(what + ": submitting " + std::to_string(count) + " pilot" +
                         (count == 1 ? "" : "s") + " (" + std::to_string(have) +
                         " queued or running)");
    plan.submissions.push_back({shape, count, std::move(args)});
  }
  return plan;
}

std::string PilotScript(const PilotOptions& options) {
  return "#!/bin/sh\n"
         "# An orch agent for the length of this allocation (docs/slurm.md). Slurm sends\n"
         "# SIGTERM before the walltime ends; the agent then drains and hands back its runs.\n"
         "exec " +
         Quote(options.orch) + " agent --config " + Quote(options.agent_config) + " --id " +
         Quote(options.id_prefix) + ".slurm-\"$SLURM_JOB_ID\"\n";
}

}  // namespace orch::cli
