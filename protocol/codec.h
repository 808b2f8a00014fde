// The codec: Message <-> one frame of bytes (a Cap'n Proto Envelope).
//
// Decode is the single place where bytes from a peer are validated: frame size,
// Cap'n Proto structure (traversal and nesting limits), known union member,
// required fields, enum ranges and the protocol version. Code past Decode
// trusts the Message. Neither function throws; Decode reports every defect as a
// Status naming the field.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "base/status.h"
#include "protocol/messages.h"

namespace orch::protocol {

// One frame for `message`. The message should satisfy what Decode checks;
// Encode does not validate (tests build invalid frames with it).
std::string Encode(const Message& message);

// Parses and validates one frame. Any alignment of `frame` is fine (it is
// copied). Errors: kDataLoss for bytes that are not a well-formed frame (empty,
// oversize, truncated, trailing bytes, limits exceeded, unknown message kind);
// kInvalidArgument for a well-formed message that breaks a field rule
// ("assign.runId: required"); kFailedPrecondition for another protocol version:
// a Hello or Welcome of another version, or a DigestChunk of version 1 (the
// message names both versions).
Result<Message> Decode(std::span<const std::byte> frame);

// Convenience for frames held in strings.
Result<Message> Decode(std::string_view frame);

}  // namespace orch::protocol
