// MapSourceReader: the in-memory twin of the CLI's FileSourceReader for planner tests.
// Files are a path -> content map; a missing path is a NotFound naming it. It passes the
// same contract tests as the real reader (tests/cli/source_reader_contract_test.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/spec_parser.h"

namespace orch::testing {

class MapSourceReader final : public planner::SourceReader {
 public:
  MapSourceReader() = default;
  explicit MapSourceReader(std::map<std::string, std::string> files) : files_(std::move(files)) {}

  void Add(const std::string& path, std::string content) { files_[path] = std::move(content); }
  const std::vector<std::string>& reads() const { return reads_; }

  Result<std::string> Read(const std::string& path) override {
    reads_.push_back(path);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFound("cannot open " + path + ": No such file or directory");
    return it->second;
  }

 private:
  std::map<std::string, std::string> files_;
  std::vector<std::string> reads_;
};

}  // namespace orch::testing
