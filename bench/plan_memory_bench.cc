// plan_memory_bench: what holding and reading a large plan costs the coordinator.
//
// For two plan shapes of about 100,000 jobs, reads the orch.plan/1 text the way a Submit
// is read (coordinator::ParsePlanJson, from a peer: every job id recomputed) and reports
// the memory it retains (the parsed plan held; also after malloc_trim, which gives the
// heap freed while reading back) and its peak growth while reading. The
// baseline in the same run is a tree of the whole text (nlohmann::json::parse), which is
// what reading a plan cost before the typed document (it was the first step). Each
// measurement runs in its own forked child so that VmHWM is its own. Not a ctest test;
// results in docs/benchmarks.md.
//
//   plan_memory_bench [JOBS]    JOBS: about how many jobs per plan (default 100000)
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "coordinator/plan_catalog.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"

namespace orch {
namespace {

// A /proc/self/status field in kB ("VmRSS", "VmHWM").
long StatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

planner::Spec BaseSpec(const std::string& name) {
  planner::Spec spec;
  spec.file = name + ".toml";
  spec.name = name;
  spec.model.synth = "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512";
  auto add = [&](const char* axis, planner::AxisValue baseline) {
    spec.axes.push_back({axis, std::move(baseline), {}, {}, {}});
  };
  add("engine", planner::AxisValue::String("llama.cpp@v0.4.0"));
  add("quant", planner::AxisValue::String("q4_0"));
  add("kv", planner::AxisValue::String("f16"));
  add("attention", planner::AxisValue::String("on"));
  add("tp", planner::AxisValue::Int(1));
  add("hardware", planner::AxisValue::String("cpu"));
  return spec;
}

void AddWorkloads(planner::Spec& spec, int count) {
  for (int w = 0; w < count; ++w) {
    planner::Workload workload;
    workload.name = "w" + std::to_string(w);
    workload.text = "The quick brown fox jumps over the lazy dog, workload " + std::to_string(w);
    workload.positions = 32;
    spec.workloads.push_back(std::move(workload));
  }
}

void AddAxis(planner::Spec& spec, const char* name, int alternatives) {
  spec.axes.push_back({name, planner::AxisValue::Int(1000), {}, {}, {}});
  for (int v = 1; v <= alternatives; ++v) {
    spec.axes.back().alternatives.push_back(planner::AxisValue::Int(1000 + v));
    spec.axes.back().alternative_pos.push_back({});
  }
}

// A study's shape: 6 axes of 20 values (121 cells), workloads, 3 repeats of every cell.
planner::Spec StudySpec(int jobs) {
  planner::Spec spec = BaseSpec("study");
  for (const char* axis : {"threads", "batch", "ubatch", "knob.a", "knob.b", "knob.c"}) {
    AddAxis(spec, axis, 20);
  }
  AddWorkloads(spec, std::max(1, jobs / 363));
  spec.baseline_repeats = 3;
  spec.cell_repeats = 3;
  return spec;
}

// The worst case for sharing: every job its own cell (one axis of JOBS values).
planner::Spec CellPerJobSpec(int jobs) {
  planner::Spec spec = BaseSpec("cell-per-job");
  AddAxis(spec, "knob.variant", jobs - 1);
  AddWorkloads(spec, 1);
  spec.baseline_repeats = 1;
  spec.cell_repeats = 1;
  return spec;
}

struct Usage {
  long retained_kb = 0;  // RSS growth holding the result
  long peak_kb = 0;      // VmHWM growth while reading
  long live_kb = 0;      // RSS growth after malloc_trim: freed heap given back
  bool ok = false;
};

// Runs `read` in a forked child, which keeps what it read (leaked: the child exits) while
// its memory is measured, and reports through a pipe.
template <typename Read>
Usage Measure(const std::string& text, Read read) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    malloc_trim(0);
    // A forked child inherits its parent's high-water mark; "5" resets it (Linux >= 4.0).
    std::ofstream("/proc/self/clear_refs") << "5";
    long before = StatusKb("VmRSS");
    bool ok = read(text);
    Usage usage{StatusKb("VmRSS") - before, StatusKb("VmHWM") - before, 0, ok};
    malloc_trim(0);
    usage.live_kb = StatusKb("VmRSS") - before;
    bool sent = write(fds[1], &usage, sizeof usage) == static_cast<ssize_t>(sizeof usage);
    _exit(sent ? 0 : 1);
  }
  close(fds[1]);
  Usage usage;
  if (::read(fds[0], &usage, sizeof usage) != static_cast<ssize_t>(sizeof usage)) usage = {};
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return usage;
}

std::string Mib(long kb) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(kb) / 1024.0);
  return text;
}

void Report(const char* shape, const planner::Spec& spec) {
  planner::PlanOutcome outcome = planner::ExpandSpec(spec);
  if (!outcome.plan) {
    std::cerr << shape << ": the spec does not plan:";
    for (const auto& d : outcome.diagnostics.errors()) std::cerr << " " << d.Format(spec.file);
    std::cerr << "\n";
    std::exit(1);
  }
  const std::string text = planner::PlanToJson(*outcome.plan);
  Usage tree = Measure(text, [](const std::string& t) {
    auto* doc = new nlohmann::json(nlohmann::json::parse(t, nullptr, false));
    return !doc->is_discarded();
  });
  Usage typed = Measure(text, [](const std::string& t) {
    auto* plan = new Result<coordinator::ParsedPlan>(coordinator::ParsePlanJson(t));
    return plan->ok();
  });
  std::cout << "| " << shape << " | " << outcome.plan->jobs.size() << " | "
            << Mib(static_cast<long>(text.size() / 1024)) << " | " << Mib(tree.peak_kb) << " | "
            << Mib(typed.peak_kb) << " | " << Mib(typed.retained_kb) << " | " << Mib(typed.live_kb)
            << " | ";
  std::printf("%.2f |%s\n", static_cast<double>(typed.peak_kb) / static_cast<double>(tree.peak_kb),
              tree.ok && typed.ok ? "" : " (a read failed)");
}

}  // namespace
}  // namespace orch

int main(int argc, char** argv) {
  int jobs = argc > 1 ? std::atoi(argv[1]) : 100'000;
  if (jobs < 2) {
    std::cerr << "usage: plan_memory_bench [JOBS >= 2]\n";
    return 2;
  }
  std::cout << "| plan shape | jobs | plan JSON | tree of the text: peak | typed read: peak"
               " | typed: retained | typed: live after malloc_trim | typed / tree (peak) |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  orch::Report("121 cells x workloads x 3 repeats", orch::StudySpec(jobs));
  orch::Report("a cell per job", orch::CellPerJobSpec(jobs));
  return 0;
}
