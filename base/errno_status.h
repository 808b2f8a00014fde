// A Status from a failed system call's errno: the one way orch words such failures,
// "WHAT: <strerror>", with a path that is absent reported as NotFound where the caller
// distinguishes it.
#pragma once

#include <string>

#include "base/status.h"

namespace orch {

// IoError "WHAT: <strerror(error)>", for a system call that set errno = `error`.
Status ErrnoError(const std::string& what, int error);
// As ErrnoError, but NotFound when `error` says the path is absent (ENOENT, ENOTDIR).
Status ErrnoPathError(const std::string& what, int error);

}  // namespace orch
