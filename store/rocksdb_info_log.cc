#include "store/rocksdb_info_log.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <utility>

namespace orch::store {
namespace {

class FileInfoLog final : public rocksdb::Logger {
 public:
  explicit FileInfoLog(const std::string& file)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL),
        fd_(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~FileInfoLog() override {
    if (fd_ >= 0) ::close(fd_);
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (fd_ < 0) return;
    char line[2048];
    size_t n = Timestamp(line, sizeof(line));
    int body = std::vsnprintf(line + n, sizeof(line) - n - 1, format, ap);
    if (body < 0) return;
    // vsnprintf returns the length it would have written: a long message was cut,
    // so count only what fits, keeping room for the newline.
    n = std::min(sizeof(line) - 2, n + static_cast<size_t>(body));
    if (line[n - 1] != '\n') line[n++] = '\n';
    ssize_t written = ::write(fd_, line, n);  // a full disk drops the line
    (void)written;
  }

 private:
  static size_t Timestamp(char* out, size_t size) {
    timeval now;
    ::gettimeofday(&now, nullptr);
    tm parts;
    ::localtime_r(&now.tv_sec, &parts);
    int n = std::snprintf(out, size, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld ", parts.tm_year + 1900,
                          parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min,
                          parts.tm_sec, static_cast<long>(now.tv_usec));
    return n > 0 ? static_cast<size_t>(n) : 0;
  }

  const int fd_;  // -1: the file could not be opened
};

class WalWarningTap final : public rocksdb::Logger {
 public:
  WalWarningTap(std::shared_ptr<rocksdb::Logger> next, std::vector<std::string>& lines)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), next_(std::move(next)), lines_(lines) {}

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    va_list copy;
    // The arguments are read twice (here and by `next_`); a va_list can be read
    // only once.
    va_copy(copy, ap);
    char line[2048];
    int n = std::vsnprintf(line, sizeof(line), format, copy);
    va_end(copy);
    if (n > 0 && IsAboutTheWal(line)) lines_.emplace_back(WithoutPrefixes(line));
    next_->Logv(format, ap);
  }

 private:
  // The lines of db_impl_open.cc's WAL replay that say what was not replayed.
  static bool IsAboutTheWal(std::string_view line) {
    return line.find("dropping") != std::string_view::npos ||
           line.find("Point in time recovered") != std::string_view::npos;
  }

  // "[WARN] [db/db_impl/db_impl_open.cc:982] 000004.log: ..." -> "000004.log: ...".
  static std::string WithoutPrefixes(std::string_view line) {
    while (line.size() > 1 && line[0] == '[') {
      size_t end = line.find("] ");
      if (end == std::string_view::npos) break;
      line.remove_prefix(end + 2);
    }
    return std::string(line);
  }

  std::shared_ptr<rocksdb::Logger> next_;
  std::vector<std::string>& lines_;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> MakeWalWarningTap(std::shared_ptr<rocksdb::Logger> next,
                                                   std::vector<std::string>& lines) {
  return std::make_shared<WalWarningTap>(std::move(next), lines);
}

std::shared_ptr<rocksdb::Logger> MakeInfoLog(const std::string& file) {
  return std::make_shared<FileInfoLog>(file);
}

}  // namespace orch::store
