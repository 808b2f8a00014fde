// The binned position plot of one pair of runs: per bin of positions, the largest exact
// KLD (both full rows kept), the largest top-k bound KLD (a lower bound, docs/metrics.md),
// the largest returned top-k KLD (a side is a server's top-k-only row: its own series,
// never merged with the other two),
// the smallest baseline top-1 minus top-2 logit margin (near-ties) and the top-1 flip count.
//
// Bin i covers positions [i * bin_width, (i + 1) * bin_width). Widths double as the stream
// grows so that there are never more than kPlotBins bins: memory does not depend on the
// number of positions.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace orch::report {

inline constexpr std::size_t kPlotBins = 512;

struct PositionPlot {
  std::uint64_t bin_width = 1;
  // NaN where no position of the bin has a value of that kind.
  std::vector<double> max_kld;           // either method: the largest of the two below
  std::vector<double> max_exact_kld;     // positions with both full rows
  std::vector<double> max_bound_kld;     // top-k bound positions
  std::vector<double> max_returned_kld;  // returned top-k positions (not in max_kld)
  std::vector<double> min_margin;        // the baseline's top-1 minus top-2 logit, logits
  std::vector<std::uint32_t> flips;      // top-1 flips in the bin
};

// One compared position. kld is NaN when the position was not scored.
struct PlotPoint {
  std::uint64_t position = 0;
  double kld = std::numeric_limits<double>::quiet_NaN();
  bool exact = false;     // kld came from both full rows
  bool returned = false;  // kld is over a server's returned top k (docs/metrics.md)
  double margin = std::numeric_limits<double>::quiet_NaN();
  bool flip = false;
};

// Adds `point`, halving the resolution first when its position is past the last bin.
// Positions need not be added in order.
void AddToPlot(PositionPlot& plot, const PlotPoint& point);

}  // namespace orch::report
