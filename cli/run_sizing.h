// How `orch run` sizes its local agents to the machine: agents x threads per
// driver should fit the cores, so that two agents whose drivers each take every
// core do not slow each other down tenfold. Pure.
//
// A spec that sets the `threads` axis decides the threads: agents = cores /
// the largest threads value (at least 1). Otherwise min(2, cores) agents, each
// driver taking cores / agents threads (sent as the agents' driver_threads;
// the coordinate, and so the job ids, do not change). An explicit --agents
// wins over the computed count. Never more agents than jobs.
#pragma once

#include <string>

#include "planner/plan.h"

namespace orch::cli {

struct Sizing {
  int agents = 1;
  int threads = 0;  // per driver; 0: the spec's threads axis decides
  std::string why;  // one line for the user, e.g. "2 agents x 1 thread on 2 cores ..."
};

// `requested`: --agents, or 0 when not given.
Sizing SizeAgents(const planner::Plan& plan, int cores, int requested);

}  // namespace orch::cli
