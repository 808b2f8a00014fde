// Mistakes found in one file (a config, a spec), reported all at once rather than the
// first only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch {

// One InvalidArgument of the lines `errors` (each starting "FILE:LINE:COLUMN", FILE being
// `file`) in file order, one per line; OK when there are none.
Status MistakesInFileOrder(std::vector<std::string> errors, std::string_view file);

}  // namespace orch
