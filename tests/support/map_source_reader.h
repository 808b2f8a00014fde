// MapSourceReader: the in-memory twin of the CLI's FileSourceReader for planner tests.
// Entries are keyed by path as written (relative ones live in the spec's directory,
// absolute ones and "../x" outside it): files, symlinks, FIFOs, directories and "sparse"
// files that have a size but hold no bytes. It applies the rules of
// planner/source_reader.h with the same messages, resolving symlinks through the map,
// and passes the same contract tests as the real reader
// (tests/cli/source_reader_contract_test.cc). A missing path is a NotFound naming it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "planner/spec_parser.h"

namespace orch::testing {

class MapSourceReader final : public planner::SourceReader {
 public:
  explicit MapSourceReader(planner::SourceScope scope = planner::SourceScope::kSpecDirOnly)
      : scope_(scope) {}
  explicit MapSourceReader(const std::map<std::string, std::string>& files) {
    for (const auto& [path, content] : files) Add(path, content);
  }

  void Add(const std::string& path, std::string content) {
    entries_[Key(path)] = {Kind::kFile, std::move(content), 0};
  }
  // `target` as symlink(2) takes it: absolute, or relative to the link's folder.
  void AddSymlink(const std::string& path, std::string target) {
    entries_[Key(path)] = {Kind::kSymlink, std::move(target), 0};
  }
  void AddFifo(const std::string& path) { entries_[Key(path)] = {Kind::kFifo, "", 0}; }
  void AddDirectory(const std::string& path) { entries_[Key(path)] = {Kind::kDirectory, "", 0}; }
  // A file of `bytes` zero bytes, without holding them.
  void AddSparse(const std::string& path, std::uint64_t bytes) {
    entries_[Key(path)] = {Kind::kSparse, "", bytes};
  }

  const std::vector<std::string>& reads() const { return reads_; }

  Result<std::string> Read(const std::string& path) override {
    reads_.push_back(path);
    bool confined = scope_ == planner::SourceScope::kSpecDirOnly;
    if (confined) ORCH_RETURN_IF_ERROR(planner::CheckInsideSpecDir(path));
    ORCH_ASSIGN_OR_RETURN(std::string real, Resolve(path));
    if (confined && !planner::CheckInsideSpecDir(real).ok()) {
      return planner::RefuseOutsideSpecDir(
          path, "resolves to " + real + ", outside the spec's directory");
    }
    const Entry& e = entries_.at(real);
    if (e.kind == Kind::kDirectory) return planner::RefuseSpecialFile(path, "a directory");
    if (e.kind == Kind::kFifo) return planner::RefuseSpecialFile(path, "a FIFO");
    std::uint64_t size = e.kind == Kind::kSparse ? e.size : e.text.size();
    if (size > planner::kMaxSourceFileBytes) return planner::RefuseTooLarge(path, size);
    return e.kind == Kind::kSparse ? std::string(size, '\0') : e.text;
  }

 private:
  enum class Kind { kFile, kSymlink, kFifo, kDirectory, kSparse };
  struct Entry {
    Kind kind = Kind::kFile;
    std::string text;  // a file's content, a symlink's target
    std::uint64_t size = 0;
  };
  static constexpr int kMaxLinks = 40;  // as Linux's ELOOP limit

  static std::string Key(const std::string& path) {
    std::string key = std::filesystem::path(path).lexically_normal().string();
    if (key.size() > 1 && key.back() == '/') key.pop_back();  // "a/b/.." is "a/"
    return key;
  }
  // Pushes the components of `path` so that the first is on top.
  static void Push(const std::filesystem::path& path, std::vector<std::string>& stack) {
    std::vector<std::string> parts(path.begin(), path.end());
    stack.insert(stack.end(), parts.rbegin(), parts.rend());
  }

  // Follows symlinks in every component, as realpath(3) does, to the key of an entry.
  Result<std::string> Resolve(const std::string& path) const {
    std::vector<std::string> rest;
    Push(path, rest);
    std::string done;
    int links = 0;
    while (!rest.empty()) {
      std::string next = Key((std::filesystem::path(done) / rest.back()).string());
      rest.pop_back();
      auto it = entries_.find(next);
      if (it == entries_.end() || it->second.kind != Kind::kSymlink) {
        done = next;
        continue;
      }
      if (++links > kMaxLinks) {
        return IoError("cannot open " + path + ": Too many levels of symbolic links");
      }
      std::filesystem::path target(it->second.text);
      done = target.is_absolute() ? "" : std::filesystem::path(next).parent_path().string();
      Push(target, rest);
    }
    if (!entries_.contains(done)) {
      return NotFound("cannot open " + path + ": No such file or directory");
    }
    return done;
  }

  planner::SourceScope scope_ = planner::SourceScope::kSpecDirOnly;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> reads_;
};

}  // namespace orch::testing
