#include "protocol/transport.h"

#include <string>

#include "protocol/messages.h"

namespace orch::protocol {

Status FrameFits(std::string_view frame) {
  if (frame.size() <= kMaxFrameBytes) return Status::Ok();
  return InvalidArgument("message too large: a frame of " + std::to_string(frame.size()) +
                         " bytes, above the limit of " + std::to_string(kMaxFrameBytes) +
                         " bytes (" + std::to_string(kMaxFrameBytes >> 20) + " MiB)");
}

}  // namespace orch::protocol
