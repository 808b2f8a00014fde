#include "tests/report/png_image.h"

#include <png.h>

#include <string>

#include "base/check.h"

namespace orch::report::testing {

std::uint32_t PngImage::Rgb(std::uint32_t x, std::uint32_t y) const {
  ORCH_CHECK(x < width && y < height) << "pixel (" << x << ", " << y << ") outside the image";
  const std::uint8_t* p = &pixels[(static_cast<std::size_t>(y) * width + x) * 3];
  return std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | p[2];
}

Result<PngImage> DecodePng(std::string_view file) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, file.data(), file.size())) {
    std::string why = png.message;
    png_image_free(&png);
    return InvalidArgument("not a PNG libpng can read: " + why);
  }
  png.format = PNG_FORMAT_RGB;
  PngImage image;
  image.width = png.width;
  image.height = png.height;
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    std::string why = png.message;
    png_image_free(&png);
    return InvalidArgument("damaged PNG: " + why);
  }
  return image;
}

}  // namespace orch::report::testing
