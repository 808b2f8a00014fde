// Which full-row KLD figure stands for a pair where one number must (the attribution's
// rank, `--by-host`'s KLD column; docs/report.md "Attribution"): the mean that rests on
// the most positions. The exact mean (both full rows) when it rests on at least as many
// positions as the top-k bound mean, else the bound mean: a pair with 4 exact positions
// among 128 is represented by its bound mean over the other 124, not by 4 values. Pure.
#pragma once

#include <string>

#include "report/pair_compare.h"

namespace orch::report {

struct KldFigure {
  const KldSummary* kld = nullptr;  // null when neither method scored a position
  std::string method;               // "exact", "bound" or "none"
};

KldFigure MostPositionsKld(const PairResult& result);

}  // namespace orch::report
