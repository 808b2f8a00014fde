// Did-you-mean for a name the user typed that is not among the known ones: the
// edit distance of two names and the closest known name within a small distance.
// Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace orch {

// Levenshtein distance: insertions, deletions and substitutions of one byte.
std::size_t EditDistance(std::string_view a, std::string_view b);

// The name in `known` closest to `typed` when it is fewer than 3 edits away (the
// first such on a tie), else "".
std::string ClosestName(std::string_view typed, const std::vector<std::string>& known);

}  // namespace orch
