#include "report/kld_figure.h"

namespace orch::report {

KldFigure MostPositionsKld(const PairResult& r) {
  if (r.kld_exact.count == 0 && r.kld_bound.count == 0) return {nullptr, "none"};
  if (r.kld_exact.count >= r.kld_bound.count) return {&r.kld_exact, "exact"};
  return {&r.kld_bound, "bound"};
}

}  // namespace orch::report
