#include "base/file_mistakes.h"

#include <algorithm>
#include <cstdlib>

namespace orch {

Status MistakesInFileOrder(std::vector<std::string> errors, std::string_view file) {
  if (errors.empty()) return Status::Ok();
  auto line_of = [&file](const std::string& error) {
    return std::strtol(error.c_str() + std::min(error.size(), file.size() + 1), nullptr, 10);
  };
  std::stable_sort(errors.begin(), errors.end(), [&](const std::string& a, const std::string& b) {
    return line_of(a) < line_of(b);
  });
  std::string all = errors.front();
  for (std::size_t i = 1; i < errors.size(); ++i) all += "\n" + errors[i];
  return InvalidArgument(std::move(all));
}

}  // namespace orch
