#include "tests/report/png_image.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/check.h"

namespace orch::report::testing {
namespace {

constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);

std::uint32_t BigEndian32(std::string_view bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<std::uint8_t>(bytes[at + i]);
  return v;
}

int ChannelsOf(std::uint8_t colour_type) {
  switch (colour_type) {
    case 0:
      return 1;
    case 2:
      return 3;
    case 6:
      return 4;
    default:
      return 0;
  }
}

std::uint8_t Paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return static_cast<std::uint8_t>(a);
  return static_cast<std::uint8_t>(pb <= pc ? b : c);
}

// Undoes the PNG filter of one row in place. `prior` is the previous unfiltered row, or
// null for the first row.
Status Unfilter(std::uint8_t filter, std::uint8_t* row, const std::uint8_t* prior,
                std::size_t length, std::size_t pixel_bytes) {
  for (std::size_t i = 0; i < length; ++i) {
    const int a = i >= pixel_bytes ? row[i - pixel_bytes] : 0;
    const int b = prior != nullptr ? prior[i] : 0;
    const int c = prior != nullptr && i >= pixel_bytes ? prior[i - pixel_bytes] : 0;
    switch (filter) {
      case 0:
        break;
      case 1:
        row[i] = static_cast<std::uint8_t>(row[i] + a);
        break;
      case 2:
        row[i] = static_cast<std::uint8_t>(row[i] + b);
        break;
      case 3:
        row[i] = static_cast<std::uint8_t>(row[i] + (a + b) / 2);
        break;
      case 4:
        row[i] = static_cast<std::uint8_t>(row[i] + Paeth(a, b, c));
        break;
      default:
        return InvalidArgument("png: unknown filter type " + std::to_string(filter));
    }
  }
  return Status::Ok();
}

Status ReadHeader(std::string_view data, PngImage& image) {
  if (data.size() != 13) return InvalidArgument("png: IHDR is not 13 bytes");
  image.width = BigEndian32(data, 0);
  image.height = BigEndian32(data, 4);
  const auto depth = static_cast<std::uint8_t>(data[8]);
  image.channels = ChannelsOf(static_cast<std::uint8_t>(data[9]));
  const bool interlaced = data[12] != 0;
  if (depth != 8 || image.channels == 0 || interlaced) {
    return InvalidArgument(
        "png: only 8-bit grey, RGB or RGBA without interlace is read (bit "
        "depth " +
        std::to_string(depth) + ", colour type " + std::to_string(static_cast<int>(data[9])) + ")");
  }
  if (image.width == 0 || image.height == 0 || image.width > 1u << 14 || image.height > 1u << 14) {
    return InvalidArgument("png: implausible size " + std::to_string(image.width) + "x" +
                           std::to_string(image.height));
  }
  return Status::Ok();
}

// The header and the concatenated IDAT payload.
Status ReadChunks(std::string_view file, PngImage& image, std::string& compressed) {
  bool header = false;
  for (std::size_t at = kSignature.size(); at + 12 <= file.size();) {
    const std::uint32_t length = BigEndian32(file, at);
    if (length > file.size() - at - 12) return InvalidArgument("png: chunk past the end");
    const std::string_view type = file.substr(at + 4, 4);
    const std::string_view data = file.substr(at + 8, length);
    if (type == "IHDR") {
      ORCH_RETURN_IF_ERROR(ReadHeader(data, image));
      header = true;
    } else if (type == "IDAT") {
      compressed.append(data);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (!header) return InvalidArgument("png: no IHDR chunk");
  if (compressed.empty()) return InvalidArgument("png: no IDAT chunk");
  return Status::Ok();
}

}  // namespace

std::uint32_t PngImage::Rgb(std::uint32_t x, std::uint32_t y) const {
  ORCH_CHECK(x < width && y < height) << "pixel " << x << "," << y << " outside the image";
  const std::size_t at = (static_cast<std::size_t>(y) * width + x) * channels;
  if (channels == 1) return pixels[at] * 0x010101u;
  return (std::uint32_t{pixels[at]} << 16) | (std::uint32_t{pixels[at + 1]} << 8) | pixels[at + 2];
}

Result<PngImage> DecodePng(std::string_view file) {
  if (file.substr(0, kSignature.size()) != kSignature) {
    return InvalidArgument("png: no PNG signature");
  }
  PngImage image;
  std::string compressed;
  ORCH_RETURN_IF_ERROR(ReadChunks(file, image, compressed));
  const std::size_t stride = std::size_t{image.width} * static_cast<std::size_t>(image.channels);
  std::vector<std::uint8_t> raw((stride + 1) * image.height);
  uLongf raw_size = raw.size();
  const int rc = ::uncompress(raw.data(), &raw_size,
                              reinterpret_cast<const Bytef*>(compressed.data()), compressed.size());
  if (rc != Z_OK || raw_size != raw.size()) {
    return InvalidArgument("png: pixel data does not inflate to " + std::to_string(raw.size()) +
                           " bytes (zlib " + std::to_string(rc) + ")");
  }
  image.pixels.resize(stride * image.height);
  for (std::size_t y = 0; y < image.height; ++y) {
    std::uint8_t* row = image.pixels.data() + y * stride;
    std::copy_n(raw.data() + y * (stride + 1) + 1, stride, row);
    const std::uint8_t* prior = y > 0 ? row - stride : nullptr;
    ORCH_RETURN_IF_ERROR(Unfilter(raw[y * (stride + 1)], row, prior, stride,
                                  static_cast<std::size_t>(image.channels))
                             .WithContext("png: row " + std::to_string(y)));
  }
  return image;
}

}  // namespace orch::report::testing
