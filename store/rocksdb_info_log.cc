#include "store/rocksdb_info_log.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <ctime>

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
    int n = std::snprintf(out, size, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld ",
                          parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                          parts.tm_hour, parts.tm_min, parts.tm_sec,
                          static_cast<long>(now.tv_usec));
    return n > 0 ? static_cast<size_t>(n) : 0;
  }

  const int fd_;  // -1: the file could not be opened
};

}  // namespace

std::shared_ptr<rocksdb::Logger> MakeInfoLog(const std::string& file) {
  return std::make_shared<FileInfoLog>(file);
}

}  // namespace orch::store
