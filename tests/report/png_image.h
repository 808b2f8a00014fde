// Decodes a PNG file for tests to look at its pixels, through libpng's simplified API:
// any PNG (what headless Chromium writes for a screenshot, and every other kind) comes
// out as 8-bit RGB rows. Damaged files are errors, never crashes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::report::testing {

struct PngImage {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  // Rows top to bottom, 3 bytes (R, G, B) per pixel; transparency composed over black.
  std::vector<std::uint8_t> pixels;

  // 0xRRGGBB of the pixel at (x, y). Precondition: inside the image.
  std::uint32_t Rgb(std::uint32_t x, std::uint32_t y) const;
};

// InvalidArgument with libpng's words when the file is not a PNG it can decode.
Result<PngImage> DecodePng(std::string_view file);

}  // namespace orch::report::testing
