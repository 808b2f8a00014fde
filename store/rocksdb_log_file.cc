#include "store/rocksdb_log_file.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

namespace orch::store {
namespace {

constexpr size_t kBlockSize = 32768;
constexpr size_t kHeaderSize = 7;             // crc 4, length 2, type 1
constexpr size_t kRecyclableHeaderSize = 11;  // and the log number, 4
enum : uint8_t {
  kZeroType = 0,
  kFullType = 1,
  kFirstType = 2,
  kMiddleType = 3,
  kLastType = 4,
  kRecyclableFullType = 5,
  kRecyclableLastType = 8,
  kSetCompressionType = 9,
};

std::array<uint32_t, 256> Crc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    table[i] = crc;
  }
  return table;
}

uint32_t Crc32c(const char* data, size_t size) {
  static const std::array<uint32_t, 256> table = Crc32cTable();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc = table[(crc ^ static_cast<uint8_t>(data[i])) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

// RocksDB stores checksums masked (util/crc32c.h).
uint32_t Unmask(uint32_t masked) {
  uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

uint64_t LittleEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(p[i]);
  return value;
}

// Walks the fragments of one file, assembling records and counting what does not read.
class LogParser {
 public:
  explicit LogParser(const std::string& bytes) : bytes_(bytes) {}

  LogFileContents Run() {
    while (offset_ < bytes_.size()) Step();
    if (in_record_) Damage(offset_, partial_.size(), "the file ends inside a record");
    return std::move(out_);
  }

 private:
  void Step() {
    size_t block_end = (offset_ / kBlockSize + 1) * kBlockSize;
    size_t left_in_block = block_end - offset_;
    size_t left_in_file = bytes_.size() - offset_;
    if (left_in_block < kHeaderSize) {  // the block's zero trailer
      SkipTo(std::min(block_end, bytes_.size()), "a block trailer that is not zero");
      return;
    }
    if (left_in_file < kHeaderSize) return Drop(bytes_.size(), "the file ends inside a header");
    const char* header = bytes_.data() + offset_;
    size_t length = LittleEndian(header + 4, 2);
    uint8_t type = static_cast<uint8_t>(header[6]);
    if (type == kZeroType && length == 0) {  // preallocated space: the block's rest
      SkipTo(std::min(block_end, bytes_.size()), "bytes after a zero header");
      return;
    }
    bool recyclable = type >= kRecyclableFullType && type <= kRecyclableLastType;
    size_t header_size = recyclable ? kRecyclableHeaderSize : kHeaderSize;
    if (header_size + length > left_in_file && block_end >= bytes_.size()) {
      // A write cut off leaves a sound header whose fragment the file's end cuts; bytes
      // overwritten there make a header no writer writes (a fragment never leaves its
      // block, and its type is one of the log's).
      bool sound =
          type >= kFullType && type <= kSetCompressionType && header_size + length <= left_in_block;
      return Drop(bytes_.size(), sound ? "the file ends inside a fragment"
                                       : "a bad fragment header at the end of the file");
    }
    if (header_size + length > left_in_block) return Drop(block_end, "a bad fragment length");
    uint32_t expected = Unmask(static_cast<uint32_t>(LittleEndian(header, 4)));
    if (Crc32c(header + 6, header_size - 6 + length) != expected) {
      return Drop(block_end, "checksum mismatch");
    }
    Fragment(recyclable ? type - (kRecyclableFullType - kFullType) : type,
             std::string_view(header + header_size, length));
    offset_ += header_size + length;
  }

  void Fragment(int type, std::string_view payload) {
    switch (type) {
      case kFullType:
        DropPartial();
        out_.records.emplace_back(payload);
        return;
      case kFirstType:
        DropPartial();
        partial_.assign(payload);
        in_record_ = true;
        return;
      case kMiddleType:
      case kLastType:
        if (!in_record_) {
          Damage(offset_, payload.size(), "a fragment without its record's start");
          return;
        }
        partial_.append(payload);
        if (type == kLastType) {
          out_.records.push_back(std::move(partial_));
          partial_.clear();
          in_record_ = false;
        }
        return;
      case kSetCompressionType:  // no record: how later records are compressed
        return;
      default:
        Damage(offset_, payload.size(), "an unknown fragment type " + std::to_string(type));
    }
  }

  void DropPartial() {
    if (in_record_) Damage(offset_, partial_.size(), "a record without its end");
    partial_.clear();
    in_record_ = false;
  }

  // The bytes from here to `end` do not read; neither does a record they interrupt.
  void Drop(size_t end, const std::string& why) {
    Damage(offset_, end - offset_, why);
    if (in_record_) Damage(offset_, partial_.size(), "a record cut by damage");
    partial_.clear();
    in_record_ = false;
    offset_ = end;
  }

  void SkipTo(size_t end, const std::string& why) {
    for (size_t i = offset_; i < end; ++i) {
      if (bytes_[i] != 0) return Drop(end, why);
    }
    offset_ = end;
  }

  void Damage(size_t at, size_t bytes, const std::string& why) {
    out_.unreadable_bytes += bytes;
    if (out_.first_damage.empty()) out_.first_damage = "offset " + std::to_string(at) + ": " + why;
  }

  const std::string& bytes_;
  size_t offset_ = 0;
  std::string partial_;
  bool in_record_ = false;
  LogFileContents out_;
};

}  // namespace

Result<LogFileContents> ReadLogFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError("read " + file + ": cannot open it");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return IoError("read " + file + ": read error");
  return LogParser(bytes).Run();
}

std::vector<std::string> WalFiles(const std::string& path) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (entry.path().extension() == ".log") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());  // zero-padded numbers: oldest first
  return files;
}

Result<std::string> CutOffLastWalRecord(const std::string& path) {
  std::vector<std::string> files = WalFiles(path);
  for (size_t i = 0; i < files.size(); ++i) {
    std::string file = (std::filesystem::path(path) / files[i]).string();
    ORCH_ASSIGN_OR_RETURN(LogFileContents contents, ReadLogFile(file));
    if (contents.unreadable_bytes == 0) continue;
    if (i + 1 != files.size()) return std::string();  // an older WAL is damaged
    const std::string& damage = contents.first_damage;
    for (const char* cut : {": the file ends inside a record", ": the file ends inside a fragment",
                            ": the file ends inside a header"}) {
      if (damage.size() > std::strlen(cut) && damage.ends_with(cut)) {
        return files[i] + " ends inside its last record (the " +
               std::to_string(contents.unreadable_bytes) + " bytes of it that were written)";
      }
    }
    return std::string();
  }
  return std::string();
}

bool ParseWalBatch(const std::string& record, WalBatch& batch) {
  if (record.size() < 12) return false;
  batch.sequence = LittleEndian(record.data(), 8);
  batch.count = static_cast<uint32_t>(LittleEndian(record.data() + 8, 4));
  return true;
}

}  // namespace orch::store
