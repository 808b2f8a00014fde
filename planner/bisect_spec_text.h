// A [bisect] spec written from two stored jobs (`orch bisect A B`, docs/bisect.md): the
// model and the workload they ran, A's coordinate as `from` and B's as `to`, as TOML text.
// PlanSpec reads it back to the same workload (the same digest) and the same two
// coordinates, so the bisection's `from` and `to` cells run what A and B ran; the text is
// also what a user keeps, edits and runs again.
//
// Standard axes come first in documentation order, then the others sorted: the walk
// follows that order. A workload a spec cannot state on its own (a task's case, which
// comes from a case file) is an InvalidArgument naming it.
#pragma once

#include <string>

#include "base/status.h"
#include "plan_document/plan_document.h"

namespace orch::planner {

struct BisectSpecSource {
  std::string name;         // the experiment's name
  std::string description;  // what it bisects, in words
  plan_document::Model model;
  plan_document::Workload workload;
  plan_document::Coordinate from;  // A's coordinate
  plan_document::Coordinate to;    // B's coordinate
  double tolerance = 0.05;
  int max_rounds = 4;
};

Result<std::string> BisectSpecText(const BisectSpecSource& source);

}  // namespace orch::planner
