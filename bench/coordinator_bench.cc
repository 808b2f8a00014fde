// Coordinator core throughput and memory.
//
// BM_DispatchNoOpJobs: 100 agents (one slot each) work through 10,000 no-op
// jobs: every assignment is followed by the stored, complete run that frees the
// slot, through the pure core (no store, no network). Baseline in the same run:
// BM_EncodeAssigns encodes the same number of Assign messages, the least work a
// real dispatch must do per job. BM_MemoryAgentsAndJobs: RSS growth with 1,000
// registered agents and 100,000 jobs, with the plan parser's transients and
// after returning freed memory (malloc_trim).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "coordinator/coordinator_core.h"
#include "planner/job_id.h"
#include "protocol/codec.h"

namespace orch::coordinator {
namespace {

constexpr const char* kEngine = "llama.cpp@b8390";

// An orch.plan/1 document with `jobs` jobs of one cell and workload, their ids made
// as orch plan makes them (the coordinator recomputes them).
std::string PlanJson(const std::string& name, int jobs) {
  planner::Workload workload;
  workload.name = "w";
  workload.text = "bench";
  workload.positions = 16;
  planner::Coordinate coordinate;
  coordinate["engine"] = planner::AxisValue::String(kEngine);
  coordinate["hardware"] = planner::AxisValue::String("cpu");
  coordinate["kv"] = planner::AxisValue::String("f16");
  coordinate["quant"] = planner::AxisValue::String("q4_0");
  std::string axes = planner::CanonicalAxes(coordinate, workload.kind);
  std::string digest = planner::WorkloadDigest(workload);
  std::string json =
      R"({"schema":"orch.plan/1","experiment":{"name":")" + name +
      R"("},"model":{"name":"m","synth":"llama:vocab=512"},)"
      R"("workloads":[{"name":"w","kind":"teacher_forced","positions":16,"text":"bench",)"
      R"("capture":{"top_logits":20,"full_every":0,"full_windows":[]}}],"jobs":[)";
  for (int i = 0; i < jobs; ++i) {
    if (i > 0) json += ",";
    std::string id =
        planner::JobIdOf(planner::CanonicalJob(axes, name, "synth:llama:vocab=512", i, digest));
    json +=
        R"({"id":")" + id + R"(","cell":"baseline","workload":"w","repeat":)" + std::to_string(i) +
        R"(,"coordinate":{"engine":"llama.cpp@b8390","hardware":"cpu","kv":"f16","quant":"q4_0"},)"
        R"("requirements":{"engine":"llama.cpp@b8390","hardware":"cpu","gpus":0,"model":"synth:llama:vocab=512"}})";
  }
  return json + "]}";
}

protocol::Hello AgentHello(int i) {
  protocol::Hello hello;
  hello.agent_id = "agent-" + std::to_string(i);
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  return hello;
}

std::vector<protocol::Assign> Assigns(const Effects& effects) {
  std::vector<protocol::Assign> out;
  for (const Effect& e : effects) {
    if (auto* send = std::get_if<SendEffect>(&e)) {
      if (auto* a = std::get_if<protocol::Assign>(&send->message)) out.push_back(*a);
    }
  }
  return out;
}

store::RunRecord Done(const protocol::Assign& assign, const std::string& agent) {
  store::RunRecord run;
  run.id = assign.run_id;
  run.job_id = assign.job_id;
  run.agent_id = agent;
  run.state = store::RunState::kSucceeded;
  run.finished = true;
  run.chunks_expected = 0;
  return run;
}

constexpr int kAgents = 100;
constexpr int kJobs = 10'000;

void BM_DispatchNoOpJobs(benchmark::State& state) {
  std::string plan = PlanJson("bench", kJobs);
  for (auto _ : state) {
    CoordinatorCore core(CoordinatorOptions{}, [](std::string_view) {});
    std::chrono::milliseconds now{1'000'000};
    core.OnMessage("cli", protocol::Submit{plan}, now);
    std::vector<std::pair<protocol::Assign, std::string>> work;
    for (int a = 0; a < kAgents; ++a) {
      protocol::Hello hello = AgentHello(a);
      for (auto& assign : Assigns(core.OnMessage(hello.agent_id, hello, now))) {
        work.emplace_back(std::move(assign), hello.agent_id);
      }
    }
    std::int64_t assigned = static_cast<std::int64_t>(work.size());
    while (!work.empty()) {
      auto [assign, agent] = std::move(work.back());
      work.pop_back();
      for (auto& next : Assigns(core.OnRunStored(Done(assign, agent), now))) {
        work.emplace_back(std::move(next), agent);
        ++assigned;
      }
    }
    if (assigned != kJobs) state.SkipWithError("not every job was assigned");
  }
  state.SetItemsProcessed(state.iterations() * kJobs);
  state.counters["assignments_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kJobs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DispatchNoOpJobs)->Unit(benchmark::kMillisecond);

void BM_EncodeAssigns(benchmark::State& state) {
  protocol::Assign assign;
  assign.run_id = "0000000000000007-1-abc123";
  assign.job_id = "00000000000000000000000000000007";
  assign.coordinate = {{"engine", kEngine}, {"hardware", "cpu"}, {"kv", "f16"}, {"quant", "q4_0"}};
  assign.workload = "w";
  assign.requirements = {kEngine, "cpu", 0, "synth:llama:vocab=512"};
  assign.lease = std::chrono::seconds(30);
  assign.job_spec = std::string(600, 'x');
  for (auto _ : state) {
    for (int i = 0; i < kJobs; ++i) benchmark::DoNotOptimize(protocol::Encode(assign));
  }
  state.SetItemsProcessed(state.iterations() * kJobs);
  state.counters["assignments_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kJobs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodeAssigns)->Unit(benchmark::kMillisecond);

// `orch status` (and every refresh of `orch status --watch`) against a coordinator with
// 100,000 jobs of 10 experiments and 1,000 agents, each running one job. Baseline in
// the same run: one pass over the same jobs that only counts their states (the least a
// status must do).
class StatusFixture {
 public:
  StatusFixture() : core_(CoordinatorOptions{}, [](std::string_view) {}) {
    std::chrono::milliseconds now{1'000'000};
    for (int e = 0; e < 10; ++e) {
      core_.OnMessage("cli", protocol::Submit{PlanJson("status-" + std::to_string(e), 10'000)},
                      now);
    }
    for (int a = 0; a < 1000; ++a) {
      protocol::Hello hello = AgentHello(a);
      core_.OnMessage(hello.agent_id, hello, now);
    }
  }
  CoordinatorCore& core() { return core_; }

 private:
  CoordinatorCore core_;
};

StatusFixture& Fixture() {
  static StatusFixture fixture;
  return fixture;
}

void BM_Status100kJobs(benchmark::State& state) {
  StatusFixture& fixture = Fixture();
  std::chrono::milliseconds now{1'001'000};
  std::size_t listed = 0;
  for (auto _ : state) {
    protocol::StatusReply reply = fixture.core().Status({}, now);
    listed = reply.jobs.size();
    benchmark::DoNotOptimize(reply);
  }
  state.counters["jobs_listed"] = static_cast<double>(listed);
}
BENCHMARK(BM_Status100kJobs)->Unit(benchmark::kMillisecond);

void BM_CountJobStates100k(benchmark::State& state) {
  StatusFixture& fixture = Fixture();
  protocol::StatusReply all = fixture.core().Status({.experiment = "", .all_jobs = true},
                                                    std::chrono::milliseconds{1'001'000});
  // A table shaped like the coordinator's: job id -> state, node per job.
  std::unordered_map<std::string, store::JobState> table;
  for (const protocol::JobStatus& job : all.jobs) {
    table.emplace(job.job_id,
                  job.state == "pending" ? store::JobState::kPending : store::JobState::kRunning);
  }
  for (auto _ : state) {
    std::array<int, 8> counts{};
    for (const auto& [id, job_state] : table) ++counts[static_cast<int>(job_state) & 7];
    benchmark::DoNotOptimize(counts);
  }
  state.counters["jobs"] = static_cast<double>(table.size());
}
BENCHMARK(BM_CountJobStates100k)->Unit(benchmark::kMillisecond);

double RssMiB() {
  long pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// The peak RSS (VmHWM) since the last ResetPeakRss().
double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;  // kB
  }
  return 0;
}

// Sets VmHWM to the current RSS (Linux 4.0 and later), so that the peak of what follows
// is measured rather than that of building its input.
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

void BM_MemoryAgentsAndJobs(benchmark::State& state) {
  for (auto _ : state) {
    std::string plan = PlanJson("memory", 100'000);
    malloc_trim(0);
    ResetPeakRss();
    double before = RssMiB();
    CoordinatorCore core(CoordinatorOptions{}, [](std::string_view) {});
    std::chrono::milliseconds now{1'000'000};
    core.OnMessage("cli", protocol::Submit{plan}, now);
    for (int a = 0; a < 1000; ++a) {
      protocol::Hello hello = AgentHello(a);
      benchmark::DoNotOptimize(core.OnMessage(hello.agent_id, hello, now));
    }
    state.counters["rss_peak_growth_MiB"] = PeakRssMiB() - before;  // parse transients included
    state.counters["rss_after_growth_MiB"] = RssMiB() - before;     // freed heap glibc kept
    malloc_trim(0);
    state.counters["rss_retained_growth_MiB"] = RssMiB() - before;
    state.counters["plan_json_MiB"] = static_cast<double>(plan.size()) / (1 << 20);
  }
}
BENCHMARK(BM_MemoryAgentsAndJobs)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace orch::coordinator

BENCHMARK_MAIN();
