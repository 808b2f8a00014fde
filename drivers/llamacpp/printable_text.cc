#include "drivers/llamacpp/printable_text.h"

namespace orch::drivers::llamacpp {

std::string PrintableText(std::string_view bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < bytes.size()) {
    auto lead = static_cast<unsigned char>(bytes[i]);
    std::size_t length = lead < 0x80           ? 1
                         : (lead >> 5) == 0x6  ? 2
                         : (lead >> 4) == 0xe  ? 3
                         : (lead >> 3) == 0x1e ? 4
                                               : 0;
    bool valid = length > 0 && i + length <= bytes.size();
    for (std::size_t j = 1; valid && j < length; ++j)
      valid = (static_cast<unsigned char>(bytes[i + j]) & 0xc0) == 0x80;
    if (valid) {
      out.append(bytes.substr(i, length));
      i += length;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[lead >> 4];
    out += kHex[lead & 0xf];
    ++i;
  }
  return out;
}

}  // namespace orch::drivers::llamacpp
