#include "store/memory_store.h"

#include <utility>

#include "store/kv_engine.h"
#include "store/kv_store.h"

namespace orch::store {
namespace {

class MemoryEngine final : public KvEngine {
 public:
  MemoryEngine(MemoryTables& tables, std::unique_ptr<MemoryTables> owned)
      : owned_(std::move(owned)), tables_(tables) {}

  Result<std::optional<std::string>> Get(Table table, std::string_view key) override {
    std::lock_guard lock(tables_.mu);
    const auto& map = Map(table);
    auto it = map.find(key);
    if (it == map.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }

  Status Write(const KvBatch& batch, bool) override {
    std::lock_guard lock(tables_.mu);
    for (const KvBatch::Put& put : batch.puts) Map(put.table)[put.key] = put.value();
    return Status::Ok();
  }

  Status Sync() override { return Status::Ok(); }  // nothing survives the process anyway

  // Copies one entry at a time out of the lock, so visitors may read the store.
  Status Scan(Table table, std::string_view prefix, std::string_view start,
              const KvVisitor& visit) override {
    std::string key(start.empty() ? prefix : start);
    std::string value;
    bool inclusive = true;
    while (Next(table, inclusive, key, value)) {
      if (std::string_view(key).substr(0, prefix.size()) != prefix) break;
      if (!visit(key, value)) break;
      inclusive = false;
    }
    return Status::Ok();
  }

  Result<std::optional<std::string>> LastKey(Table table) override {
    std::lock_guard lock(tables_.mu);
    const auto& map = Map(table);
    if (map.empty()) return std::optional<std::string>();
    return std::optional<std::string>(map.rbegin()->first);
  }

 private:
  // Moves `key` to the first key >= it (inclusive) or > it, with its value.
  bool Next(Table table, bool inclusive, std::string& key, std::string& value) {
    std::lock_guard lock(tables_.mu);
    const auto& map = Map(table);
    auto it = inclusive ? map.lower_bound(key) : map.upper_bound(key);
    if (it == map.end()) return false;
    key = it->first;
    value = it->second;
    return true;
  }

  std::map<std::string, std::string, std::less<>>& Map(Table table) {
    return tables_.tables[static_cast<size_t>(table)];
  }

  std::unique_ptr<MemoryTables> owned_;  // null when the tables are borrowed
  MemoryTables& tables_;                 // owned_ or the caller's
};

std::unique_ptr<Store> OpenOver(MemoryTables& tables, std::unique_ptr<MemoryTables> owned) {
  Result<std::unique_ptr<Store>> store =
      KvStore::Open(std::make_unique<MemoryEngine>(tables, std::move(owned)), KvStoreOptions{});
  ORCH_CHECK(store.ok()) << "memory store: " << store.status().ToString();
  return std::move(store).value();
}

}  // namespace

std::unique_ptr<KvEngine> MakeMemoryEngine(MemoryTables& tables) {
  return std::make_unique<MemoryEngine>(tables, nullptr);
}

std::unique_ptr<Store> MakeMemoryStore() {
  auto owned = std::make_unique<MemoryTables>();
  MemoryTables& tables = *owned;
  return OpenOver(tables, std::move(owned));
}

std::unique_ptr<Store> MakeMemoryStore(MemoryTables& tables) { return OpenOver(tables, nullptr); }

}  // namespace orch::store
