// The in-memory Store twin, for tests of the coordinator and for the contract suite.
//
// Same contract as the RocksDB store (it runs the same store logic over sorted maps that
// use the same tables and keys, store/keys.h); nothing survives the process.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "store/keys.h"
#include "store/store.h"

namespace orch::store {

// The bytes of a memory store, one sorted map per table. Kept outside the store so that
// a test can open a second store over the same tables (a "reopen") or damage a value.
struct MemoryTables {
  std::mutex mu;  // guards `tables`; held by the store during each table access
  std::array<std::map<std::string, std::string, std::less<>>, kTableCount> tables;
};

// A store that owns fresh, empty tables.
std::unique_ptr<Store> MakeMemoryStore();

// A store over `tables`, which must outlive it. One store at a time per tables.
std::unique_ptr<Store> MakeMemoryStore(MemoryTables& tables);

}  // namespace orch::store
