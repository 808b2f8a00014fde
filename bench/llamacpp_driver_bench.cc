// llamacpp_driver_bench: teacher-forced throughput of the llama.cpp driver
// (orch-driver-llamacpp-v0.4.0) against a bare llama.cpp C API loop on the
// same models and positions (docs/benchmarks.md). A measurement, not a test:
// it asserts no timing and is not registered with ctest.
//
//   llamacpp_driver_bench [--reps N] [--driver PATH]
//     --reps N       rounds per case (default 9); the tables show medians
//     --driver PATH  another build of the v0.4.0 driver to measure, e.g. a
//                    candidate change (default: the one built with this tree)
//
// Each round of a case measures, in rotating order:
//   in process  one model load, context and decode, then three timed passes
//               over the same rows in rotating order: the bare loop's (sum every
//               logit), the driver's (rows through the driver's digest
//               pipeline, record encoding, framing into a buffer), and the
//               same work with every row digested in turn on this thread (the
//               driver before its pipeline). bare = load + context + decode +
//               sum pass; drv-work = the same with the driver's pass; seq with
//               the sequential one.
//   bare-proc   the bare loop as its own program (llamacpp_bare_loop), spawn
//               to exit
//   drv-proc    the driver process: job on stdin from a file, frames drained
//               from its stdout and counted, spawn to exit
// Both engine paths use one thread and the same context settings
// (bench/llamacpp_bare_loop.h); the driver's records are checked bit for bit
// against the in-process digests, so both computed the same rows. Models are
// written by `orch model synth` into a temporary folder removed at exit.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "driver_protocol/frames.h"
#include "base/check.h"
#include "base/sha256.h"
#include "base/status.h"
#include "bench/llamacpp_bare_loop.h"
#include "bench/timed_child.h"
#include "digest/record_codec.h"
#include "digest/row_digest.h"
#include "drivers/llamacpp/digest_pipeline.h"
#include "ggml-backend.h"
#include "llama.h"

namespace orch::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace fs = std::filesystem;

// The median of `get` over `items`.
template <typename T, typename Get>
double Median(const std::vector<T>& items, Get get) {
  std::vector<double> values;
  for (const T& item : items) values.push_back(get(item));
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

struct Case {
  const char* model;  // label in the table
  const char* recipe;
  std::int32_t vocab;
  int positions;
};

constexpr char kSmallRecipe[] =
    "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed="
    "1";
constexpr char kLargeVocabRecipe[] =
    "llama:vocab=32000,embd=256,layers=2,heads=4,kv_heads=2,ff=512,ctx=1024,"
    "seed=1";
// Qwen2's vocabulary size.
constexpr char kHugeVocabRecipe[] =
    "llama:vocab=152064,embd=256,layers=2,heads=4,kv_heads=2,ff=512,ctx=1024,"
    "seed=1";

constexpr Case kCases[] = {
    {"vocab 1k", kSmallRecipe, 1024, 128},         {"vocab 1k", kSmallRecipe, 1024, 512},
    {"vocab 32k", kLargeVocabRecipe, 32000, 128},  {"vocab 32k", kLargeVocabRecipe, 32000, 512},
    {"vocab 152k", kHugeVocabRecipe, 152064, 128}, {"vocab 152k", kHugeVocabRecipe, 152064, 512},
};

// ---- Inputs ----------------------------------------------------------------

Result<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path);
  return Sha256Hex(std::string(std::istreambuf_iterator<char>(in), {}));
}

Status SynthModel(const std::string& recipe, const std::string& path) {
  ORCH_ASSIGN_OR_RETURN(
      ChildRun run,
      RunTimedChild({ORCH_BENCH_ORCH, "model", "synth", recipe, "-o", path}, "/dev/null", false));
  if (run.exit_code != 0) {
    return Internal("orch model synth " + recipe + " exited with " + std::to_string(run.exit_code));
  }
  return Status::Ok();
}

// The job an agent would send for this case: explicit token ids, capture top
// 20, the model's SHA-256 supplied (as the agent does), one thread, best CPU
// variant.
std::string DriverJob(const Case& c, const std::string& model_path, const std::string& sha256,
                      const std::string& cache_dir) {
  json coordinate = {{"engine", "llama.cpp@v0.4.0"},
                     {"quant", "f32"},
                     {"kv", "f16"},
                     {"attention", "auto"},
                     {"threads", "1"},
                     {"cpu_backend", "best"},
                     {"hardware", "cpu"},
                     {"tp", "1"}};
  // No full rows: the benchmark measures the digest path alone.
  json capture = {{"top_logits", 20},
                  {"full_every", 0},
                  {"full_windows", json::array()},
                  {"full_row_budget_bytes", 0}};
  return json{{"run_id", "bench-run"},
              {"job_id", "bench-job"},
              {"experiment", "driver-bench"},
              {"coordinate", coordinate},
              {"workload",
               {{"name", "bench"},
                {"kind", "teacher_forced"},
                {"positions", c.positions},
                {"tokens", BenchTokens(c.vocab, c.positions)},
                {"capture", capture}}},
              {"model",
               {{"requirement", std::string("synth:") + c.recipe},
                {"path", model_path},
                {"sha256", sha256},
                {"cache_dir", cache_dir},
                {"spec", json::object()}}},
              {"capture", capture},
              {"requirements", {{"engine", "llama.cpp@v0.4.0"}, {"hardware", "cpu"}, {"gpus", 0}}}}
      .dump();
}

// ---- In-process runs -------------------------------------------------------

// What the driver does with each row after llama_get_logits_ith (its
// LlamaSession and frame writer): the row into the digest pipeline (borrowed,
// digested on DigestWorkers(1 engine thread, this machine's cores, the
// vocabulary) workers and this thread, or in turn below kMinPipelinedRow), then in position order record and frame. The pipeline is
// finished at the last row, inside the timed pass.
class DriverRowWork final {
 public:
  explicit DriverRowWork(std::vector<std::int32_t> tokens, std::int32_t vocab)
      : tokens_(std::move(tokens)) {
    using drivers::llamacpp::DigestWorkers;
    int workers =
        DigestWorkers(1, std::thread::hardware_concurrency(), static_cast<std::size_t>(vocab));
    pipeline_ = std::make_unique<drivers::llamacpp::DigestPipeline>(
        drivers::llamacpp::PipelineOptions{
            .workers = workers, .max_in_flight = drivers::llamacpp::RowsInFlight(workers)},
        static_cast<std::size_t>(vocab), drivers::llamacpp::ComputeDigester(digest::kDefaultTopK),
        [this](const digest::PositionRecord& record) {
          auto start = Clock::now();
          stdout_ += driver_protocol::EncodeDriverFrame(driver_protocol::DriverFrameType::kRecord,
                                                        digest::EncodePositionRecord(record));
          hashes_.push_back(record.digest.hash);
          encode_ms_ += Milliseconds(start, Clock::now());
          return Status::Ok();
        });
  }

  void operator()(std::size_t position, std::span<const float> row) {
    auto start = Clock::now();
    double encode_before = encode_ms_;
    drivers::llamacpp::RowMeta meta{
        .position = static_cast<std::int64_t>(position),
        .input_token = tokens_[position],
        .output_token = -1,
        .target = position + 1 < tokens_.size() ? tokens_[position + 1] : digest::kNoTarget,
        .full_row = false};
    // Borrowed, as the driver does with a batch's rows: they stay valid (the
    // context's logits) until the loop frees the context after every pass.
    Status status = pipeline_->SubmitBorrowed(meta, row);
    if (status.ok() && position + 1 == tokens_.size()) status = pipeline_->Finish();
    ORCH_CHECK(status.ok()) << status.ToString();
    digest_ms_ += Milliseconds(start, Clock::now()) - (encode_ms_ - encode_before);
  }

  // The pipeline's time on this thread less encoding: digesting, waiting
  // for workers.
  double digest_ms() const { return digest_ms_; }
  double encode_ms() const { return encode_ms_; }
  const std::vector<digest::RowHash>& hashes() const { return hashes_; }

 private:
  std::vector<std::int32_t> tokens_;
  std::string stdout_;
  std::vector<digest::RowHash> hashes_;
  double digest_ms_ = 0;
  double encode_ms_ = 0;
  std::unique_ptr<drivers::llamacpp::DigestPipeline> pipeline_;  // last: its sink uses the above
};

// The driver's row work before the digest pipeline, the reference of the
// `seq` column: digest, record, frame, each row in turn on the engine's thread.
class SequentialRowWork final {
 public:
  explicit SequentialRowWork(std::vector<std::int32_t> tokens) : tokens_(std::move(tokens)) {}

  void operator()(std::size_t position, std::span<const float> row) {
    digest::DigestOptions options{
        .top_k = digest::kDefaultTopK,
        .target_id = position + 1 < tokens_.size() ? tokens_[position + 1] : digest::kNoTarget};
    Status status = digest::ComputeRowDigest(row, options, &record_.digest);
    ORCH_CHECK(status.ok()) << status.ToString();
    record_.position = position;
    record_.input_token = tokens_[position];
    record_.output_token = -1;
    record_.full_row.clear();
    stdout_ += driver_protocol::EncodeDriverFrame(driver_protocol::DriverFrameType::kRecord,
                                                  digest::EncodePositionRecord(record_));
  }

 private:
  std::vector<std::int32_t> tokens_;
  digest::PositionRecord record_;  // reused, as the driver did
  std::string stdout_;
};

// ---- Measurement -----------------------------------------------------------

// One repetition of the three measurements of a case.
struct Round {
  // In process: one decode, then one pass over the rows for the bare loop
  // (sum), one for the driver's row work and one for the same work done
  // sequentially, in rotating order (`first_pass`: which comes first).
  int first_pass = 0;
  LoopTimings in_process;
  double sum_ms = 0;
  double driver_rows_ms = 0;
  double seq_rows_ms = 0;
  double digest_ms = 0;
  double encode_ms = 0;
  double bare_sum = 0;
  std::vector<digest::RowHash> hashes;
  // As processes.
  ChildRun bare_proc;
  BareProcessReport bare_report;
  ChildRun drv_proc;

  double bare_ms() const { return in_process.compute_ms() + sum_ms; }
  double work_ms() const { return in_process.compute_ms() + driver_rows_ms; }
  double seq_ms() const { return in_process.compute_ms() + seq_rows_ms; }
};

struct Prepared {
  Case c;
  std::string model_path;
  std::string job_path;
  std::string driver;  // the driver executable
};

Status MeasureInProcess(const Prepared& p, Round* r) {
  DriverRowWork work(BenchTokens(p.c.vocab, p.c.positions), p.c.vocab);
  const RowVisitor sum_pass = [r](std::size_t, std::span<const float> row) {
    r->bare_sum += SumRow(row);
  };
  const RowVisitor driver_pass = [&work](std::size_t i, std::span<const float> row) {
    work(i, row);
  };
  SequentialRowWork sequential(BenchTokens(p.c.vocab, p.c.positions));
  const RowVisitor seq_pass = [&sequential](std::size_t i, std::span<const float> row) {
    sequential(i, row);
  };
  const RowVisitor kinds[] = {sum_pass, driver_pass, seq_pass};
  RowVisitor passes[3];
  for (int k = 0; k < 3; ++k) passes[k] = kinds[(r->first_pass + k) % 3];
  ORCH_RETURN_IF_ERROR(RunTeacherForcedLoop(p.model_path, p.c.positions, passes, &r->in_process));
  // Pass k ran kind (first_pass + k) % 3: kind j ran as pass (j - first_pass) mod 3.
  auto pass_of = [r](int kind) { return r->in_process.pass_ms[(kind - r->first_pass + 3) % 3]; };
  r->sum_ms = pass_of(0);
  r->driver_rows_ms = pass_of(1);
  r->seq_rows_ms = pass_of(2);
  r->digest_ms = work.digest_ms();
  r->encode_ms = work.encode_ms();
  r->hashes = work.hashes();
  return Status::Ok();
}

Status MeasureBareProcess(const Prepared& p, Round* r) {
  ORCH_ASSIGN_OR_RETURN(r->bare_proc, RunTimedChild({ORCH_BENCH_BARE_LOOP, p.model_path,
                                                     std::to_string(p.c.positions)},
                                                    "/dev/null", false));
  if (r->bare_proc.exit_code != 0 || !ParseBareReport(r->bare_proc.out, &r->bare_report))
    return Internal("llamacpp_bare_loop exited with " + std::to_string(r->bare_proc.exit_code));
  return Status::Ok();
}

Status MeasureDriverProcess(const Prepared& p, Round* r) {
  ORCH_ASSIGN_OR_RETURN(r->drv_proc, RunTimedChild({p.driver}, p.job_path, true));
  const ChildRun& run = r->drv_proc;
  if (run.exit_code != 0 || run.done_ms < 0 ||
      run.records != static_cast<std::uint64_t>(p.c.positions)) {
    return Internal("the driver exited with " + std::to_string(run.exit_code) + " after " +
                    std::to_string(run.records) + " records");
  }
  return Status::Ok();
}

using Measure = Status (*)(const Prepared&, Round*);
constexpr Measure kMeasures[] = {MeasureInProcess, MeasureBareProcess, MeasureDriverProcess};

// One warm-up round, then `reps` rounds; each round starts with the next
// measure, so slow drift of a shared machine does not always hit the same one.
Result<std::vector<Round>> MeasureCase(const Prepared& p, int reps) {
  Round warmup;
  for (Measure measure : kMeasures) ORCH_RETURN_IF_ERROR(measure(p, &warmup));
  std::vector<Round> rounds(static_cast<std::size_t>(reps));
  constexpr std::size_t n = std::size(kMeasures);
  for (std::size_t rep = 0; rep < rounds.size(); ++rep) {
    rounds[rep].first_pass = static_cast<int>(rep % 3);
    for (std::size_t k = 0; k < n; ++k)
      ORCH_RETURN_IF_ERROR(kMeasures[(rep + k) % n](p, &rounds[rep]));
  }
  return rounds;
}

// Whether the driver process produced, record for record, the rows the
// in-process loop digested, and the bare program the in-process sum.
std::string Check(const Round& r) {
  driver_protocol::DriverFrameParser parser;
  std::vector<driver_protocol::DriverFrame> frames;
  if (!parser.Feed(r.drv_proc.out, &frames).ok() || !parser.Finish().ok()) return "bad stream";
  std::size_t i = 0;
  for (const driver_protocol::DriverFrame& frame : frames) {
    if (frame.type != driver_protocol::DriverFrameType::kRecord) continue;
    Result<digest::PositionRecord> record = digest::DecodePositionRecord(frame.payload);
    if (!record.ok() || i >= r.hashes.size() || !(record->digest.hash == r.hashes[i]))
      return "rows differ at " + std::to_string(i);
    ++i;
  }
  if (i != r.hashes.size()) return "record count";
  return r.bare_report.sum == r.bare_sum ? "identical" : "bare sums differ";
}

// Writes the case's model (once per recipe) and job into `dir`.
Result<Prepared> PrepareCase(const Case& c, const std::string& dir, const std::string& driver) {
  std::string name = "vocab" + std::to_string(c.vocab);
  Prepared p{c, dir + "/" + name + ".gguf",
             dir + "/job-" + name + "-" + std::to_string(c.positions) + ".json", driver};
  if (!fs::exists(p.model_path)) ORCH_RETURN_IF_ERROR(SynthModel(c.recipe, p.model_path));
  ORCH_ASSIGN_OR_RETURN(std::string sha256, FileSha256(p.model_path));
  std::ofstream(p.job_path) << DriverJob(c, p.model_path, sha256, dir + "/cache");
  return p;
}

// ---- Report ----------------------------------------------------------------

// A process's run in four phases (ms): start (spawn until the engine's backend
// is loaded), compute (model load, context, decode), rows (reading the rows;
// for the driver digest and records), teardown (to the end of waitpid).
struct Phases {
  double start, compute, rows, teardown, total;
};

Phases BarePhases(const Round& r) {
  const BareProcessReport& b = r.bare_report;
  double spawn_ns = static_cast<double>(r.bare_proc.start.time_since_epoch().count());
  double start = (static_cast<double>(b.backend_ns) - spawn_ns) / 1e6;
  double compute = b.loop.load_ms + b.loop.context_ms + b.loop.decode_ms;
  double total = r.bare_proc.total_ms;
  double rows = b.loop.pass_ms.at(0);
  return {start, compute, rows, total - start - compute - rows, total};
}

// The driver by the arrival of its frames: hello comes after the backend loads,
// the first record after the decode, done after the last record.
Phases DriverPhases(const Round& r) {
  const ChildRun& d = r.drv_proc;
  return {d.hello_ms, d.first_record_ms - d.hello_ms, d.done_ms - d.first_record_ms,
          d.total_ms - d.done_ms, d.total_ms};
}

void PrintSummaryRow(const Case& c, const std::vector<Round>& rounds) {
  std::printf(
      "%-10s %5d %8.1f %8.1f %9.1f %8.1f %7.3f %7.3f %7.3f %7.3f  %s\n", c.model, c.positions,
      Median(rounds, [](const Round& r) { return r.bare_ms(); }),
      Median(rounds, [](const Round& r) { return r.work_ms(); }),
      Median(rounds, [](const Round& r) { return r.bare_proc.total_ms; }),
      Median(rounds, [](const Round& r) { return r.drv_proc.total_ms; }),
      Median(rounds, [](const Round& r) { return r.bare_ms() / r.seq_ms(); }),
      Median(rounds, [](const Round& r) { return r.bare_ms() / r.work_ms(); }),
      Median(rounds, [](const Round& r) { return r.bare_proc.total_ms / r.drv_proc.total_ms; }),
      Median(rounds, [](const Round& r) { return r.bare_ms() / r.drv_proc.total_ms; }),
      Check(rounds.back()).c_str());
}

void PrintInProcessRow(const Case& c, const std::vector<Round>& rounds) {
  std::printf("%-10s %5d %7.1f %6.1f %8.1f %8.1f %8.1f %8.1f\n", c.model, c.positions,
              Median(rounds, [](const Round& r) { return r.in_process.load_ms; }),
              Median(rounds, [](const Round& r) { return r.in_process.context_ms; }),
              Median(rounds, [](const Round& r) { return r.in_process.decode_ms; }),
              Median(rounds, [](const Round& r) { return r.sum_ms; }),
              Median(rounds, [](const Round& r) { return r.digest_ms; }),
              Median(rounds, [](const Round& r) { return r.encode_ms; }));
}

void PrintProcessRow(const Case& c, const char* who, const std::vector<Round>& rounds,
                     Phases (*phases)(const Round&)) {
  std::printf("%-10s %5d %-9s %7.1f %8.1f %7.1f %9.1f %7.1f\n", c.model, c.positions, who,
              Median(rounds, [phases](const Round& r) { return phases(r).start; }),
              Median(rounds, [phases](const Round& r) { return phases(r).compute; }),
              Median(rounds, [phases](const Round& r) { return phases(r).rows; }),
              Median(rounds, [phases](const Round& r) { return phases(r).teardown; }),
              Median(rounds, [phases](const Round& r) { return phases(r).total; }));
}

using Results = std::vector<std::pair<Case, std::vector<Round>>>;

void PrintReport(const Results& results, int reps, double backend_ms, const std::string& driver) {
  std::printf("driver: %s\n", driver.c_str());
  std::printf(
      "llama.cpp v0.4.0, 1 thread, medians of %d rounds (ms). Ratios are bare "
      "time / driver time per round, the driver's\nthroughput relative to the "
      "bare loop (goal >= 0.95): work = in process (one shared decode), seq = "
      "the same with every row\ndigested in turn on the engine's thread (the "
      "driver before its digest pipeline), proc = both as processes,\ne2e = "
      "bare in process / driver process.\n\n",
      reps);
  std::printf("%-10s %5s %8s %8s %9s %8s %7s %7s %7s %7s  %s\n", "model", "pos", "bare", "drv-work",
              "bare-proc", "drv-proc", "seq", "work", "proc", "e2e", "check");
  for (const auto& [c, rounds] : results) PrintSummaryRow(c, rounds);
  std::printf("\nin process (ms; backend load once per process: %.1f)\n", backend_ms);
  std::printf("%-10s %5s %7s %6s %8s %8s %8s %8s\n", "model", "pos", "load", "ctx", "decode", "sum",
              "digest", "encode");
  for (const auto& [c, rounds] : results) PrintInProcessRow(c, rounds);
  std::printf(
      "\nas processes (ms): start = spawn until the backend is loaded (driver: "
      "hello), compute = load + context + decode (driver: until the first "
      "record), rows = the rows (driver: until done), teardown = to exit\n");
  std::printf("%-10s %5s %-9s %7s %8s %7s %9s %7s\n", "model", "pos", "program", "start", "compute",
              "rows", "teardown", "total");
  for (const auto& [c, rounds] : results) {
    PrintProcessRow(c, "bare", rounds, BarePhases);
    PrintProcessRow(c, "driver", rounds, DriverPhases);
  }
}

int Run(int reps, const std::string& driver) {
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  auto start = Clock::now();
  ggml_backend_load_all_from_path(ORCH_BENCH_ENGINE_DIR);
  llama_backend_init();
  double backend_ms = Milliseconds(start, Clock::now());

  std::string dir_template = (fs::temp_directory_path() / "orch-llamacpp-bench-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  Results results;
  Status status;
  for (const Case& c : kCases) {
    Result<Prepared> prepared = PrepareCase(c, dir, driver);
    Result<std::vector<Round>> rounds = prepared.ok()
                                            ? MeasureCase(*prepared, reps)
                                            : Result<std::vector<Round>>(prepared.status());
    if (!rounds.ok()) {
      status = rounds.status();
      break;
    }
    results.emplace_back(c, std::move(*rounds));
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (!status.ok()) {
    std::fprintf(stderr, "llamacpp_driver_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  PrintReport(results, reps, backend_ms, driver);
  return 0;
}

}  // namespace
}  // namespace orch::bench

int main(int argc, char** argv) {
  int reps = 9;
  std::string driver = ORCH_BENCH_DRIVER;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--driver") == 0 && i + 1 < argc) {
      driver = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--driver PATH]\n", argv[0]);
      return 2;
    }
  }
  return orch::bench::Run(reps, driver);
}
