// Plan expansion throughput: a spec of 6 axes x 20 values x W workloads x 3 repeats.
// W = 50 is the target size (~18k jobs, goal < 50 ms); W = 200 and 800 show that time
// grows linearly with the number of jobs (ns/job stays flat).
//
// Baseline in the same run: SHA-256 of one canonical-job-sized string per job, the
// irreducible work of an id. The "x_hash_baseline" counter is expansion time / baseline.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "base/sha256.h"
#include "planner/plan.h"

namespace orch::planner {
namespace {

Spec BenchSpec(int workloads) {
  Spec spec;
  spec.file = "bench.toml";
  spec.name = "bench";
  spec.model.synth =
      "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1,type=f32";
  spec.baseline_repeats = 3;
  spec.cell_repeats = 3;
  auto add = [&](const char* name, AxisValue baseline) {
    spec.axes.push_back({name, std::move(baseline), {}, {}, {}});
  };
  add("engine", AxisValue::String("llama.cpp@v0.4.0"));
  add("quant", AxisValue::String("q4_0"));
  add("kv", AxisValue::String("f16"));
  add("attention", AxisValue::String("on"));
  add("tp", AxisValue::Int(1));
  add("hardware", AxisValue::String("cpu"));
  for (const char* name : {"threads", "batch", "ubatch", "ctx", "knob.a", "knob.b"}) {
    add(name, AxisValue::Int(1000));
    // ctx must hold the 128 positions (the planner refuses a smaller one).
    int base = std::string(name) == "ctx" ? 200 : 0;
    for (int v = 1; v <= 20; ++v) {
      spec.axes.back().alternatives.push_back(AxisValue::Int(base + v));
      spec.axes.back().alternative_pos.push_back({});
    }
  }
  for (int w = 0; w < workloads; ++w) {
    Workload workload;
    workload.name = "w" + std::to_string(w);
    workload.text = "The quick brown fox jumps over the lazy dog, workload " + std::to_string(w);
    workload.positions = 128;
    spec.workloads.push_back(std::move(workload));
  }
  return spec;
}

double HashBaselineSeconds(std::size_t jobs) {
  std::string canonical(300, 'x');
  auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < jobs; ++i) {
    canonical[i % 300] = static_cast<char>('a' + i % 26);
    benchmark::DoNotOptimize(Sha256Of(canonical));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_ExpandSpec(benchmark::State& state) {
  Spec spec = BenchSpec(static_cast<int>(state.range(0)));
  PlanOutcome first = ExpandSpec(spec);
  if (!first.plan || !first.diagnostics.errors().empty() || first.plan->jobs.empty()) {
    std::string why = first.diagnostics.errors().empty()
                          ? std::string("no jobs")
                          : first.diagnostics.errors()[0].Format(spec.file);
    state.SkipWithError(("the bench spec does not plan: " + why).c_str());
    return;
  }
  std::size_t jobs = 0;
  for (auto _ : state) {
    PlanOutcome outcome = ExpandSpec(spec);
    jobs = outcome.plan->jobs.size();
    benchmark::DoNotOptimize(outcome);
  }
  state.counters["jobs"] = static_cast<double>(jobs);
  state.counters["ns_per_job"] =
      benchmark::Counter(static_cast<double>(jobs) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  double expand = 0;
  {
    auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(ExpandSpec(spec));
    expand = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.counters["x_hash_baseline"] = expand / HashBaselineSeconds(jobs);
}
BENCHMARK(BM_ExpandSpec)->Arg(50)->Arg(200)->Arg(800)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace orch::planner

BENCHMARK_MAIN();
