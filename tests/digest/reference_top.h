// The top-k contract written the plain way, for checking the digest's fast
// one (row_digest_test, fuzz/row_digest_fuzzer): the k largest non-NaN logits
// by logit descending, lower id first on ties.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "digest/row_digest.h"

namespace orch::digest::testing {

inline std::vector<TokenLogit> ReferenceTop(const std::vector<float>& row, std::size_t k) {
  std::vector<TokenLogit> all;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (!std::isnan(row[i])) all.push_back({static_cast<std::int32_t>(i), row[i]});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const TokenLogit& a, const TokenLogit& b) { return a.logit > b.logit; });
  all.resize(std::min(k, all.size()));
  return all;
}

}  // namespace orch::digest::testing
