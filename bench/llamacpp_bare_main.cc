// llamacpp_bare_loop MODEL POSITIONS: the bare C API program that the driver
// benchmark starts as a process, the counterpart of one driver run. It loads
// the best-scoring CPU kernel variant of the engine build it is linked to,
// runs the bare teacher-forcing loop (bench/llamacpp_bare_loop.h) and prints
// one BareProcessReport line on stdout: the sum of every logit and its
// timeline. The engine's log goes to stderr, as the driver's does.
// Exit codes: 0 ok, 2 bad arguments, 3 engine error.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench/llamacpp_bare_loop.h"
#include "ggml-backend.h"
#include "llama.h"

namespace {

std::int64_t SteadyNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  orch::bench::BareProcessReport report;
  report.main_ns = SteadyNanoseconds();
  if (argc != 3 || std::atoi(argv[2]) <= 0) {
    std::fprintf(stderr, "usage: %s MODEL POSITIONS\n", argv[0]);
    return 2;
  }
  ggml_backend_load_all_from_path(ORCH_BENCH_ENGINE_DIR);
  llama_backend_init();
  report.backend_ns = SteadyNanoseconds();
  const orch::bench::RowVisitor sum_rows = [&report](std::size_t, std::span<const float> row) {
    report.sum += orch::bench::SumRow(row);
  };
  orch::Status status =
      orch::bench::RunTeacherForcedLoop(argv[1], std::atoi(argv[2]), {&sum_rows, 1}, &report.loop);
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], status.ToString().c_str());
    return 3;
  }
  std::fputs(orch::bench::FormatBareReport(report).c_str(), stdout);
  return 0;
}
