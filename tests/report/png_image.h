// Decodes a PNG file far enough for tests to look at its pixels: 8-bit greyscale, RGB or
// RGBA, not interlaced (what headless Chromium writes for a screenshot). Other kinds and
// damaged files are errors, never crashes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::report::testing {

struct PngImage {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  int channels = 0;  // 1 (grey), 3 (RGB) or 4 (RGBA)
  // Rows top to bottom, `channels` bytes per pixel, no filter bytes.
  std::vector<std::uint8_t> pixels;

  // 0xRRGGBB of the pixel at (x, y); alpha is ignored. Precondition: inside the image.
  std::uint32_t Rgb(std::uint32_t x, std::uint32_t y) const;
};

// InvalidArgument with what is wrong: no PNG signature, a chunk past the end, an
// unsupported kind, pixel data that does not inflate to the size the header promises.
Result<PngImage> DecodePng(std::string_view file);

}  // namespace orch::report::testing
