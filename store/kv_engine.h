// KvEngine: the ordered key-value tables under the store (internal to store/).
//
// The store's logic (kv_store.h) is written once against this interface; RocksDB
// (rocksdb_store.cc) and sorted in-memory maps (memory_store.cc) implement it. Tables
// and keys are those of keys.h. Keys compare as unsigned bytes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/keys.h"

namespace orch::store {

// Puts to apply together. A borrowed value is not copied: the bytes it views belong to
// the caller and must stay alive until Write returns.
struct KvBatch {
  struct Put {
    Table table;
    std::string key;
    std::string owned;
    std::string_view borrowed;
    bool is_borrowed = false;
    std::string_view value() const { return is_borrowed ? borrowed : std::string_view(owned); }
  };
  std::vector<Put> puts;
  size_t bytes = 0;

  void Add(Table table, std::string key, std::string value) {
    bytes += key.size() + value.size();
    puts.push_back({table, std::move(key), std::move(value), {}, false});
  }
  void AddBorrowed(Table table, std::string key, std::string_view value) {
    bytes += key.size() + value.size();
    puts.push_back({table, std::move(key), {}, value, true});
  }
};

// Receives one key and value of a scan; returns false to stop.
using KvVisitor = std::function<bool(std::string_view key, std::string_view value)>;

class KvEngine {
 public:
  virtual ~KvEngine() = default;

  // The value, or nullopt when the key is absent.
  virtual Result<std::optional<std::string>> Get(Table table, std::string_view key) = 0;

  // Applies every put of the batch or none. `sync`: durable before returning.
  virtual Status Write(const KvBatch& batch, bool sync) = 0;

  // Makes every write that returned OK durable (those made with sync = false); one
  // sync for many writes is the coordinator's group commit. An error leaves them as
  // durable as they were.
  virtual Status Sync() = 0;

  // Visits, in key order, the keys that start with `prefix` and are >= `start`
  // (`start` empty: from the first key of the prefix).
  virtual Status Scan(Table table, std::string_view prefix, std::string_view start,
                      const KvVisitor& visit) = 0;

  // The greatest key of the table, or nullopt when it is empty.
  virtual Result<std::optional<std::string>> LastKey(Table table) = 0;
};

struct MemoryTables;  // store/memory_store.h

// The memory store's engine over `tables`, which must outlive it (memory_store.cc).
// For tests that put a fault-injecting engine under KvStore.
std::unique_ptr<KvEngine> MakeMemoryEngine(MemoryTables& tables);

}  // namespace orch::store
