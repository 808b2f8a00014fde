#include "base/errno_status.h"

#include <cerrno>
#include <cstring>

namespace orch {

Status ErrnoError(const std::string& what, int error) {
  return IoError(what + ": " + std::strerror(error));
}

Status ErrnoPathError(const std::string& what, int error) {
  if (error != ENOENT && error != ENOTDIR) return ErrnoError(what, error);
  return NotFound(what + ": " + std::strerror(error));
}

}  // namespace orch
