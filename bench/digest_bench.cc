// Digest and compare throughput. Each figure is read as a ratio against a
// baseline measured in the same run on the same data:
//   BM_DigestRow/version:D/vocab:V vs BM_CopyRow/V (the memory-bandwidth floor
//   for one row); BM_DigestToCopyRatio/V times all three side by side and
//   reports v1_per_copy and v2_per_copy
//   BM_CompareStreams vs BM_ScanDigests (one pass that reads every digest once)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "digest/row_digest.h"
#include "digest/row_pass.h"
#include "digest/stream_compare.h"
#include "tests/digest/synthetic_rows.h"

namespace orch::digest {
namespace {

std::vector<float> BenchRow(std::size_t vocab) {
  return testing::RowGenerator(1).Row(vocab, 2.5, 10.0);
}

void BM_CopyRow(benchmark::State& state) {
  const std::vector<float> row = BenchRow(static_cast<std::size_t>(state.range(0)));
  std::vector<float> copy(row.size());
  for (auto _ : state) {
    std::memcpy(copy.data(), row.data(), row.size() * sizeof(float));
    benchmark::DoNotOptimize(copy.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * row.size() * sizeof(float));
}

void BM_SumRow(benchmark::State& state) {
  const std::vector<float> row = BenchRow(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    float sum = 0.0f;
    for (const float x : row) sum += x;
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * row.size() * sizeof(float));
}

// Digest version 1 or 2 with the widest variant this CPU has.
void BM_DigestRow(benchmark::State& state) {
  const auto version = static_cast<DigestVersion>(state.range(0));
  const std::vector<float> row = BenchRow(static_cast<std::size_t>(state.range(1)));
  RowDigest digest;
  for (auto _ : state) {
    const Status status = ComputeRowDigest(row, {kDefaultTopK, 17, version}, &digest);
    benchmark::DoNotOptimize(status.ok());
    benchmark::DoNotOptimize(digest.logsumexp);
  }
  state.SetBytesProcessed(state.iterations() * row.size() * sizeof(float));
}

// One instruction-set variant of the pass (0 baseline SSE2, 1 AVX2, 2
// AVX-512); BM_DigestRow uses the widest this CPU has. All give the same bits.
void BM_DigestRowWith(benchmark::State& state) {
  const auto version = static_cast<DigestVersion>(state.range(0));
  const auto isa = static_cast<internal::VectorIsa>(state.range(1));
  if (!internal::VectorIsaAvailable(isa)) {
    state.SkipWithError("instruction set not available on this CPU");
    return;
  }
  const std::vector<float> row = BenchRow(static_cast<std::size_t>(state.range(2)));
  RowDigest digest;
  for (auto _ : state) {
    const Status status =
        internal::ComputeRowDigestWith(isa, row, {kDefaultTopK, 17, version}, &digest);
    benchmark::DoNotOptimize(status.ok());
    benchmark::DoNotOptimize(digest.logsumexp);
  }
  state.SetBytesProcessed(state.iterations() * row.size() * sizeof(float));
}

// The goal's ratios, measured side by side: every iteration times one copy,
// one v1 digest and one v2 digest of the same row, so load on a shared
// machine hits all three alike. Counters: microseconds per row of each, and
// v1_per_copy, v2_per_copy (the goal: v2_per_copy <= 2).
void BM_DigestToCopyRatio(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  const std::vector<float> row = BenchRow(static_cast<std::size_t>(state.range(0)));
  std::vector<float> copy(row.size());
  RowDigest digest;
  Clock::duration copy_time{}, v1_time{}, v2_time{};
  const auto timed = [](Clock::duration* total, auto&& work) {
    const Clock::time_point start = Clock::now();
    work();
    *total += Clock::now() - start;
  };
  for (auto _ : state) {
    timed(&copy_time, [&] {
      std::memcpy(copy.data(), row.data(), row.size() * sizeof(float));
      benchmark::DoNotOptimize(copy.data());
      benchmark::ClobberMemory();
    });
    for (const DigestVersion version : {DigestVersion::kV1, DigestVersion::kV2}) {
      timed(version == DigestVersion::kV1 ? &v1_time : &v2_time, [&] {
        benchmark::DoNotOptimize(ComputeRowDigest(row, {kDefaultTopK, 17, version}, &digest).ok());
        benchmark::DoNotOptimize(digest.logsumexp);
      });
    }
  }
  const auto us = [&state](Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count() /
           static_cast<double>(state.iterations());
  };
  state.counters["copy_us"] = us(copy_time);
  state.counters["v1_us"] = us(v1_time);
  state.counters["v2_us"] = us(v2_time);
  state.counters["v1_per_copy"] = us(v1_time) / us(copy_time);
  state.counters["v2_per_copy"] = us(v2_time) / us(copy_time);
}

BENCHMARK(BM_CopyRow)->Arg(32000)->Arg(152064);
BENCHMARK(BM_SumRow)->Arg(32000)->Arg(152064);
BENCHMARK(BM_DigestRow)->ArgNames({"version", "vocab"})->ArgsProduct({{1, 2}, {32000, 152064}});
BENCHMARK(BM_DigestRowWith)
    ->ArgNames({"version", "isa", "vocab"})
    ->ArgsProduct({{1, 2}, {0, 1, 2}, {32000, 152064}});
BENCHMARK(BM_DigestToCopyRatio)->Arg(32000)->Arg(152064);

constexpr std::size_t kPositions = 100000;
constexpr std::size_t kDistinctRows = 64;

// Two 100k-position streams: identical up to position 1000, then every position
// holds a perturbed copy of the reference row (cycling through 64 distinct
// rows).
struct Streams {
  std::vector<RowDigest> reference;
  std::vector<RowDigest> other;
};

const Streams& BenchStreams() {
  static const Streams* streams = [] {
    testing::RowGenerator gen(2);
    std::vector<RowDigest> p_rows(kDistinctRows), q_rows(kDistinctRows);
    for (std::size_t i = 0; i < kDistinctRows; ++i) {
      const std::vector<float> p = gen.Row(32000, 2.5, 0.2 * i);
      const DigestOptions options{kDefaultTopK, static_cast<std::int32_t>(i)};
      (void)ComputeRowDigest(p, options, &p_rows[i]);
      (void)ComputeRowDigest(gen.Perturbed(p, 0.05), options, &q_rows[i]);
    }
    auto* s = new Streams;
    for (std::size_t i = 0; i < kPositions; ++i) {
      s->reference.push_back(p_rows[i % kDistinctRows]);
      s->other.push_back(i < 1000 ? p_rows[i % kDistinctRows] : q_rows[i % kDistinctRows]);
    }
    return s;
  }();
  return *streams;
}

void BM_ScanDigests(benchmark::State& state) {
  const Streams& s = BenchStreams();
  for (auto _ : state) {
    double sum = 0.0;
    for (std::size_t i = 0; i < kPositions; ++i) {
      sum += s.reference[i].logsumexp - s.other[i].logsumexp;
      for (const TokenLogit& t : s.reference[i].top) sum += t.logit;
      for (const TokenLogit& t : s.other[i].top) sum -= t.logit;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kPositions);
}

void BM_CompareStreams(benchmark::State& state) {
  const Streams& s = BenchStreams();
  for (auto _ : state) {
    Result<StreamComparison> c = CompareStreams({s.reference, {}}, {s.other, {}});
    benchmark::DoNotOptimize(c.ok());
  }
  state.SetItemsProcessed(state.iterations() * kPositions);
}

BENCHMARK(BM_ScanDigests)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompareStreams)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace orch::digest

BENCHMARK_MAIN();
