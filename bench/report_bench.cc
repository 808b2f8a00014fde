// Report over two runs of 100k teacher-forced positions each (top-20 digests, no full
// rows) in the memory store, against plain scans of the same digests measured in the same
// run: BM_ScanRaw reads both runs' bytes, BM_ScanDecode also decodes every record. The
// figure of interest is BM_Report / BM_ScanDecode (the comparison's own cost).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "digest/record_codec.h"
#include "digest/row_digest.h"
#include "report/report.h"
#include "store/memory_store.h"

namespace orch::report {
namespace {

constexpr std::uint64_t kPositions = 100'000;
constexpr std::size_t kVocab = 256;
constexpr std::uint64_t kChunk = 1000;

std::string PlanJson() {
  return R"({"schema": "orch.plan/1", "experiment": {"name": "bench"},
    "workloads": [{"name": "w", "kind": "teacher_forced"}],
    "cells": [{"label": "baseline", "axis": null, "value": null},
              {"label": "attention=on", "axis": "attention", "value": "on"}],
    "jobs": [{"id": "j0", "cell": "baseline", "workload": "w", "repeat": 0},
             {"id": "j1", "cell": "attention=on", "workload": "w", "repeat": 0}]})";
}

void AddRun(store::Store& store, const std::string& job, const std::string& run, double noise) {
  store::JobRecord job_record{job, "bench", store::JobState::kRunning, 1, "", run};
  store::RunRecord run_record;
  run_record.id = run;
  run_record.job_id = job;
  run_record.state = store::RunState::kRunning;
  if (!store.Apply({job_record, run_record, {}}).ok()) std::abort();
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::mt19937_64 perturb(2);
  std::vector<float> row(kVocab);
  digest::PositionRecord record;
  std::vector<store::DigestRecord> chunk;
  std::uint64_t seq = 0;
  for (std::uint64_t i = 0; i < kPositions; ++i) {
    for (float& x : row) x = normal(rng);
    row[i % kVocab] += 6.0f;
    for (float& x : row) x += static_cast<float>(noise) * normal(perturb);
    record.position = i;
    record.input_token = static_cast<std::int32_t>(i % kVocab);
    if (!digest::ComputeRowDigest(row, {20, static_cast<std::int32_t>((i + 1) % kVocab)},
                                  &record.digest)
             .ok()) {
      std::abort();
    }
    chunk.push_back({i, digest::EncodePositionRecord(record)});
    if (chunk.size() == kChunk || i + 1 == kPositions) {
      if (!store.AppendChunk(run, seq++, chunk).ok()) std::abort();
      chunk.clear();
    }
  }
  job_record.state = store::JobState::kSucceeded;
  store::RunOutcome outcome{store::RunState::kSucceeded, 0, "", static_cast<std::int64_t>(seq), ""};
  if (!store.FinishRun(run, outcome, job_record).ok()) std::abort();
}

store::Store& BenchStore() {
  static std::unique_ptr<store::Store> store = [] {
    std::unique_ptr<store::Store> s = store::MakeMemoryStore();
    std::vector<store::JobRecord> jobs(2);
    jobs[0].id = "j0";
    jobs[1].id = "j1";
    for (store::JobRecord& job : jobs) job.experiment = "bench";
    if (!s->PutPlan({"bench", PlanJson()}, jobs).ok()) std::abort();
    AddRun(*s, "j0", "r0", 0.0);
    AddRun(*s, "j1", "r1", 0.05);
    return s;
  }();
  return *store;
}

void BM_ScanRaw(benchmark::State& state) {
  store::Store& store = BenchStore();
  for (auto _ : state) {
    std::uint64_t bytes = 0;
    for (const char* run : {"r0", "r1"}) {
      Status s = store.ScanDigests(run, 0, [&bytes](std::uint64_t, std::string_view b) {
        bytes += b.size();
        return true;
      });
      if (!s.ok()) std::abort();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * 2 * kPositions);
}

void BM_ScanDecode(benchmark::State& state) {
  store::Store& store = BenchStore();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(store);
  for (auto _ : state) {
    std::uint64_t argmax = 0;
    for (const char* run : {"r0", "r1"}) {
      Status s = source->ScanRecords(run, 0, [&argmax](const digest::PositionRecord& r) {
        argmax += static_cast<std::uint64_t>(r.digest.argmax);
        return true;
      });
      if (!s.ok()) std::abort();
    }
    benchmark::DoNotOptimize(argmax);
  }
  state.SetItemsProcessed(state.iterations() * 2 * kPositions);
}

void BM_Report(benchmark::State& state) {
  store::Store& store = BenchStore();
  Result<ExperimentInput> input = LoadExperiment(store, "bench");
  if (!input.ok()) std::abort();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(store);
  for (auto _ : state) {
    Result<Report> report = BuildReport(*input, *source, {});
    if (!report.ok() || report->workloads[0].cells[0].status != CellStatus::kCompared) {
      std::abort();
    }
    benchmark::DoNotOptimize(report->by_kld);
  }
  state.SetItemsProcessed(state.iterations() * 2 * kPositions);
}

BENCHMARK(BM_ScanRaw)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScanDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Report)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace orch::report

BENCHMARK_MAIN();
