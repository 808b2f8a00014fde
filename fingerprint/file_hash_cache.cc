#include "fingerprint/file_hash_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "base/sha256.h"

namespace orch::fingerprint {
namespace {

// One line: sha256 \t size \t mtime_ns \t inode \t device \t ctime_ns \t path, or the
// older form without ctime_ns (read with ctime unknown: it matches no real file, so such
// a file is hashed once more). False if malformed.
bool ParseLine(const std::string& line, FileIdentity& identity, std::string& sha256) {
  std::size_t tabs = static_cast<std::size_t>(std::count(line.begin(), line.end(), '\t'));
  std::istringstream fields(line);
  std::string size, mtime, inode, device, ctime = "0";
  if (!std::getline(fields, sha256, '\t') || !IsSha256Hex(sha256)) return false;
  if (!std::getline(fields, size, '\t') || !std::getline(fields, mtime, '\t') ||
      !std::getline(fields, inode, '\t') || !std::getline(fields, device, '\t') ||
      (tabs == 6 && !std::getline(fields, ctime, '\t')) || (tabs != 5 && tabs != 6) ||
      !std::getline(fields, identity.path) || identity.path.empty()) {
    return false;
  }
  try {
    identity.size = std::stoull(size);
    identity.mtime_ns = std::stoll(mtime);
    identity.inode = std::stoull(inode);
    identity.device = std::stoull(device);
    identity.ctime_ns = std::stoll(ctime);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

class FileHashCache final : public HashCache {
 public:
  explicit FileHashCache(std::string path) : path_(std::move(path)) {}

  Status Load(std::istream& in) {
    for (std::string line; std::getline(in, line);) {
      FileIdentity identity;
      std::string sha256;
      if (ParseLine(line, identity, sha256)) entries_[identity] = sha256;
    }
    return in.bad() ? IoError("read " + path_ + ": " + std::strerror(errno)) : Status::Ok();
  }

  std::optional<std::string> Find(const FileIdentity& identity) const override {
    auto it = entries_.find(identity);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }

  Status Put(const FileIdentity& identity, const std::string& sha256_hex) override {
    if (identity.path.find_first_of("\t\n") != std::string::npos) {
      return InvalidArgument("path holds a tab or newline: not cached");
    }
    std::ostringstream line;
    line << sha256_hex << '\t' << identity.size << '\t' << identity.mtime_ns << '\t'
         << identity.inode << '\t' << identity.device << '\t' << identity.ctime_ns << '\t'
         << identity.path << '\n';
    std::ofstream out(path_, std::ios::app);
    out << line.str();  // one append (a line is far shorter than the stream's buffer)
    out.close();
    if (!out) return IoError("append to " + path_ + ": " + std::strerror(errno));
    entries_[identity] = sha256_hex;
    return Status::Ok();
  }

 private:
  std::string path_;
  std::map<FileIdentity, std::string> entries_;
};

}  // namespace

Result<std::unique_ptr<HashCache>> OpenFileHashCache(const std::string& path) {
  auto cache = std::make_unique<FileHashCache>(path);
  std::ifstream in(path);
  if (in.is_open()) {
    ORCH_RETURN_IF_ERROR(cache->Load(in));
  } else if (errno != ENOENT) {
    return IoError("open " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<HashCache>(std::move(cache));
}

}  // namespace orch::fingerprint
