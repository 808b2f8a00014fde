// Harnesses that let one contract suite run against every Store implementation: each
// owns a store and knows how to close and reopen it over the same data and how to damage
// a stored value.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "store/keys.h"
#include "store/store.h"

namespace orch::store {

class StoreHarness {
 public:
  virtual ~StoreHarness() = default;
  // The open store; valid until the next Reopen or Corrupt.
  virtual Store& store() = 0;
  // Closes the store and opens a new one over the same data.
  virtual void Reopen() = 0;
  // Replaces the raw value of `key` in `table`, then reopens.
  virtual void Corrupt(Table table, const std::string& key, const std::string& value) = 0;
};

struct HarnessFactory {
  std::string name;  // test name suffix
  std::function<std::unique_ptr<StoreHarness>()> make;
  // What gtest (and ctest's test names) show for the parameter; a bare
  // factory would print as its bytes, different in every build.
  friend void PrintTo(const HarnessFactory& factory, std::ostream* out) { *out << factory.name; }
};

HarnessFactory RocksDbHarnessFactory();
HarnessFactory MemoryHarnessFactory();

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace orch::store
