#include "cli/run_sizing.h"

#include <algorithm>

namespace orch::cli {
namespace {

std::string Count(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The largest value of the spec's threads axis, or 0 when it has none.
int SpecThreads(const planner::Plan& plan) {
  const planner::Axis* threads = plan.spec.FindAxis("threads");
  if (threads == nullptr || !threads->baseline.is_int()) return 0;
  std::int64_t most = threads->baseline.as_int();
  for (const planner::AxisValue& v : threads->alternatives)
    if (v.is_int()) most = std::max(most, v.as_int());
  return static_cast<int>(std::clamp<std::int64_t>(most, 1, 4096));
}

}  // namespace

Sizing SizeAgents(const planner::Plan& plan, int cores, int requested) {
  cores = std::max(1, cores);
  int most_agents = std::max(1, static_cast<int>(plan.jobs.size()));
  Sizing size;
  if (int per = SpecThreads(plan); per > 0) {
    size.agents = requested > 0 ? requested : std::clamp(cores / per, 1, most_agents);
    size.why = Count(size.agents, "agent", "agents") + " x " + Count(per, "thread", "threads") +
               " (the spec's threads) on " + Count(cores, "core", "cores");
    return size;
  }
  size.agents = requested > 0 ? requested : std::clamp(std::min(2, cores), 1, most_agents);
  size.threads = std::max(1, cores / size.agents);
  size.why = Count(size.agents, "agent", "agents") + " x " +
             Count(size.threads, "thread", "threads") + " on " + Count(cores, "core", "cores") +
             " (set threads in the spec, or --agents, to choose)";
  return size;
}

}  // namespace orch::cli
