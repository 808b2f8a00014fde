// Order statistics with llama.cpp's `llama-perplexity` definitions, so a median
// or a 99th percentile printed by orch means what the same line of that tool
// means.
#pragma once

#include <span>

namespace orch::digest {

// Median of sorted values: the middle one, or the mean of the two middle ones
// when the count is even. Precondition (checked): not empty, sorted ascending.
double SortedMedian(std::span<const double> sorted);

// Linear interpolation between closest ranks at rank fraction * (n - 1);
// fraction <= 0 gives the minimum, >= 1 the maximum. Precondition as above.
double SortedPercentile(std::span<const double> sorted, double fraction);

}  // namespace orch::digest
