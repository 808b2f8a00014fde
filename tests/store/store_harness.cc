#include "tests/store/store_harness.h"

#include <stdlib.h>

#include "store/memory_store.h"
#include "store/rocksdb_store.h"

namespace orch::store {
namespace {

class RocksDbHarness final : public StoreHarness {
 public:
  RocksDbHarness() { Open(); }

  Store& store() override { return *store_; }

  void Reopen() override {
    store_.reset();
    Open();
  }

  void Corrupt(Table table, const std::string& key, const std::string& value) override {
    store_.reset();
    Status status = WriteRawValueForTesting(Path(), TableName(table), key, value);
    ORCH_CHECK(status.ok()) << status.ToString();
    Open();
  }

 private:
  std::string Path() const { return (dir_.path() / "db").string(); }

  void Open() {
    Result<std::unique_ptr<Store>> store = OpenRocksDbStore(Path(), RocksDbOptions{});
    ORCH_CHECK(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  TempDir dir_;  // outlives store_ (declared first, destroyed last)
  std::unique_ptr<Store> store_;
};

class MemoryHarness final : public StoreHarness {
 public:
  MemoryHarness() : store_(MakeMemoryStore(tables_)) {}

  Store& store() override { return *store_; }

  void Reopen() override {
    store_.reset();
    store_ = MakeMemoryStore(tables_);
  }

  void Corrupt(Table table, const std::string& key, const std::string& value) override {
    store_.reset();
    tables_.tables[static_cast<size_t>(table)][key] = value;
    store_ = MakeMemoryStore(tables_);
  }

 private:
  MemoryTables tables_;  // outlives store_
  std::unique_ptr<Store> store_;
};

}  // namespace

HarnessFactory RocksDbHarnessFactory() {
  return {"RocksDb", [] { return std::unique_ptr<StoreHarness>(new RocksDbHarness()); }};
}

HarnessFactory MemoryHarnessFactory() {
  return {"Memory", [] { return std::unique_ptr<StoreHarness>(new MemoryHarness()); }};
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "orch-store-XXXXXX").string();
  ORCH_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace orch::store
