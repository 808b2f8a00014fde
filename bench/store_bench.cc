// Chunk ingestion into the RocksDB store: 300-byte digest records in chunks of 1,024,
// each chunk one AppendChunk (one WriteBatch). Goal: >= 500k records/s with a durable
// WAL sync per chunk. Baseline in the same run: the same ingestion without the sync
// (and the memory store, which has no disk at all). "records/s" is the figure to read;
// report the synced one as a ratio of the unsynced one.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/memory_store.h"
#include "store/rocksdb_store.h"

namespace orch::store {
namespace {

constexpr int kRecordsPerChunk = 1024;
constexpr size_t kRecordBytes = 300;

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "orch-bench-XXXXXX").string();
    ORCH_CHECK(mkdtemp(pattern.data()) != nullptr) << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Db() const { return (path_ / "db").string(); }

 private:
  std::filesystem::path path_;
};

// A store holding one plan, job and run "r" ready for chunks.
void PrepareRun(Store& store) {
  JobRecord job;
  job.id = "j";
  job.experiment = "p";
  ORCH_CHECK(store.PutPlan({"p", "{}"}, {job}).ok());
  StateChange change;
  change.run = RunRecord{};
  change.run->id = "r";
  change.run->job_id = "j";
  ORCH_CHECK(store.Apply(change).ok());
}

// `sync_every` > 0: the store writes without syncing and Store::Sync() runs after
// every `sync_every` chunks, as the coordinator's group commit does per burst.
void Ingest(benchmark::State& state, Store& store, int sync_every = 0) {
  PrepareRun(store);
  std::vector<DigestRecord> chunk(kRecordsPerChunk);
  for (DigestRecord& record : chunk) record.bytes.assign(kRecordBytes, 'd');
  uint64_t seq = 0;
  for (auto _ : state) {
    for (int i = 0; i < kRecordsPerChunk; ++i) {
      chunk[i].position = seq * kRecordsPerChunk + i;
      chunk[i].bytes[0] = static_cast<char>(i);
    }
    Result<WriteOutcome> outcome = store.AppendChunk("r", seq++, chunk);
    ORCH_CHECK(outcome.ok()) << outcome.status().ToString();
    if (sync_every > 0 && seq % static_cast<uint64_t>(sync_every) == 0) {
      Status synced = store.Sync();
      ORCH_CHECK(synced.ok()) << synced.ToString();
    }
  }
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kRecordsPerChunk, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(state.iterations() * kRecordsPerChunk * kRecordBytes);
}

void BM_IngestRocksDb(benchmark::State& state, bool sync) {
  ScratchDir dir;
  RocksDbOptions options;
  options.sync_chunks = sync;
  Result<std::unique_ptr<Store>> store = OpenRocksDbStore(dir.Db(), options);
  ORCH_CHECK(store.ok()) << store.status().ToString();
  Ingest(state, **store);
}

void BM_IngestRocksDbSynced(benchmark::State& state) { BM_IngestRocksDb(state, true); }

// Group commit: one sync per 4 chunks (4,096 records), durable before they would be
// acknowledged.
void BM_IngestRocksDbGroupCommit(benchmark::State& state) {
  ScratchDir dir;
  RocksDbOptions options;
  options.sync_chunks = false;
  Result<std::unique_ptr<Store>> store = OpenRocksDbStore(dir.Db(), options);
  ORCH_CHECK(store.ok()) << store.status().ToString();
  Ingest(state, **store, 4);
}
void BM_IngestRocksDbUnsynced(benchmark::State& state) { BM_IngestRocksDb(state, false); }
void BM_IngestMemory(benchmark::State& state) {
  std::unique_ptr<Store> store = MakeMemoryStore();
  Ingest(state, *store);
}

BENCHMARK(BM_IngestRocksDbSynced)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_IngestRocksDbGroupCommit)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_IngestRocksDbUnsynced)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_IngestMemory)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();

}  // namespace
}  // namespace orch::store

BENCHMARK_MAIN();
