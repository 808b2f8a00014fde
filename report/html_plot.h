// The inline SVG plot of one compared cell in the HTML report (docs/report.md, "--html"):
// per bin of positions the top-k bound KLD as bars and the exact KLD (both full rows) as
// dots, on the value scale shared by every plot of the workload (report/plot_scale.h);
// top-1 flips in a strip above; the baseline's top-1 minus top-2 margin in a track below,
// near-tie bins marked. A cell whose stream equals the baseline's says "bit identical".
// Pure: a cell in, markup out.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "report/plot_scale.h"
#include "report/report.h"

namespace orch::report {

// Margins below this many logits sit on the floor of the margin track.
inline constexpr double kMarginFloor = 1e-3;

struct WorkloadScales {
  PlotScale kld;  // over every compared cell's exact and bound bin maxima
  // Log10 of the baseline margins the cells saw, from kMarginFloor to the decade above the
  // largest: near-ties (margins around 0.01) stay visible next to margins of 5.
  PlotScale margin;
  // The x axis of every plot of the workload: position 0 to the longest stream any
  // compared cell's pair holds (either side), so plots of cells compare by position even
  // where a generate cell's figures stop at its first divergence.
  std::uint64_t positions = 1;
};

// The scales shared by the plots of `workload`'s compared cells.
WorkloadScales ScalesOf(const WorkloadReport& workload);

// Appends one <svg class="plot"> element with data-workload, data-cell, data-scale ("log"
// or "linear"), data-kld-low and data-kld-high.
void WritePlot(const std::string& workload, const CellReport& cell, const WorkloadScales& scales,
               std::ostringstream& out);

}  // namespace orch::report
