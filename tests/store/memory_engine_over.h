// A KvEngine over the memory engine that a test overrides only where it intervenes
// (counts reads, fails a write): every call it does not override reaches the memory
// engine unchanged.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "store/kv_engine.h"
#include "store/memory_store.h"

namespace orch::store {

class MemoryEngineOver : public KvEngine {
 public:
  explicit MemoryEngineOver(MemoryTables& tables) : inner_(MakeMemoryEngine(tables)) {}

  Result<std::optional<std::string>> Get(Table table, std::string_view key) override {
    return inner_->Get(table, key);
  }
  Status Write(const KvBatch& batch, bool sync) override { return inner_->Write(batch, sync); }
  Status Sync() override { return inner_->Sync(); }
  Status Scan(Table table, std::string_view prefix, std::string_view start,
              const KvVisitor& visit) override {
    return inner_->Scan(table, prefix, start, visit);
  }
  Result<std::optional<std::string>> LastKey(Table table) override {
    return inner_->LastKey(table);
  }

 private:
  std::unique_ptr<KvEngine> inner_;
};

}  // namespace orch::store
