// Token pieces as printable text for JSON reports. Pure; no engine header.
#pragma once

#include <string>
#include <string_view>

namespace orch::drivers::llamacpp {

// `bytes` as valid UTF-8: well-formed sequences kept, every other byte written
// as the four characters \xNN (a byte-level token's piece is often a partial
// UTF-8 sequence; reports show it instead of U+FFFD).
std::string PrintableText(std::string_view bytes);

}  // namespace orch::drivers::llamacpp
