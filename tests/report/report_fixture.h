// Builders for report tests: hand-made logit rows, their digest records, and experiments
// (plan JSON, jobs, runs, digests) written into a memory store.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "digest/record_codec.h"
#include "report/render.h"
#include "store/store.h"

namespace orch::report::testing {

inline constexpr std::uint32_t kVocab = 8;

// Text wide enough that no line wraps: for tests of what the text says, not its layout.
inline constexpr TextOptions kUnwrapped{100000};

// A row of kVocab logits, all 0 except `top` = 1 + margin and `second` = 1.
std::vector<float> TwoPeakRow(std::int32_t top, std::int32_t second, double margin);

// The record of `row` at `position` with its digest (top-4, target `target`) and, when
// `full`, the row itself.
digest::PositionRecord MakeRecord(std::uint64_t position, const std::vector<float>& row,
                                  std::int32_t target, bool full, std::int32_t output_token = -1);

// softmax-based reference values computed directly in double precision.
double ReferenceKld(const std::vector<float>& p, const std::vector<float>& q);
double ReferenceNll(const std::vector<float>& row, std::int32_t target);

struct PlannedJobSpec {
  std::string cell;  // "baseline" or "axis=value"
  std::string workload;
  int repeat = 0;
};

// One experiment in a memory store. Jobs get ids "job-<n>" in the order they are added.
class ExperimentBuilder {
 public:
  explicit ExperimentBuilder(std::string name);

  // kind: "teacher_forced" or "generate". `requested` > 0 becomes the workload's
  // `positions` (teacher_forced) or `max_tokens` (generate); `full_every` its capture's.
  ExperimentBuilder& Workload(const std::string& name, const std::string& kind, int requested = 0,
                              int full_every = 0);
  // The plan's model ({"name", "sha256"}) and baseline coordinate; absent unless set.
  ExperimentBuilder& Model(const std::string& name, const std::string& sha256);
  ExperimentBuilder& Baseline(const std::string& axis, const std::string& value);
  ExperimentBuilder& Cell(const std::string& label);  // "baseline" or "axis=value"
  // A bisection's cell of several axes: `changes` is its JSON object (axis -> value).
  ExperimentBuilder& Combination(const std::string& label, const std::string& changes);
  // The plan's "bisect" object, as JSON.
  ExperimentBuilder& Bisect(const std::string& bisect);
  // Returns the job id.
  std::string Job(const std::string& cell, const std::string& workload, int repeat);

  std::string PlanJson() const;
  // Stores the plan and its jobs (pending).
  void Submit(store::Store& store) const;

 private:
  struct PlannedWorkloadSpec {
    std::string name, kind;
    int requested = 0, full_every = 0;
  };
  std::string WorkloadsJson() const;
  std::string name_;
  std::string model_json_;
  std::vector<std::pair<std::string, std::string>> baseline_;
  std::vector<PlannedWorkloadSpec> workloads_;
  std::vector<std::string> cells_;
  std::vector<std::string> changes_;  // parallel to cells_; empty for one-axis cells
  std::string bisect_json_;
  std::vector<PlannedJobSpec> jobs_;
};

// A run of `job_id` that succeeded with `records` (one chunk) and fingerprint ids.
void AddSucceededRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                     const std::vector<digest::PositionRecord>& records,
                     const std::string& host_fingerprint = "",
                     const std::string& engine_fingerprint = "");
// The same with the run summary the agent would store ({"hello": ..., "done": ...}).
void AddSucceededRunWithSummary(store::Store& store, const std::string& job_id,
                                const std::string& run_id,
                                const std::vector<digest::PositionRecord>& records,
                                const std::string& summary,
                                const std::string& host_fingerprint = "");
// A run imported from `contributor`'s result bundle: succeeded with `records`, run by
// `agent_id` on `host_fingerprint`. The job's record is left as it is (its current run,
// when it has one, still stands for it).
void AddImportedRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                    const std::vector<digest::PositionRecord>& records,
                    const std::string& contributor, const std::string& host_fingerprint,
                    const std::string& agent_id = "rig-1");
// A run that failed with `error`; the job is marked failed with it.
void AddFailedRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                  const std::string& error);
// A run still running, with `records` received so far.
void AddRunningRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                   const std::vector<digest::PositionRecord>& records);

}  // namespace orch::report::testing

namespace orch::report::testing {

// The experiment most tests read, named "standard", 40 teacher-forced positions:
// - wiki (teacher_forced): baseline x2 (repeat 1 moves the top logit at position 20 by
//   0.5), attention=on (flips at 10, margin 0.2, and 30, margin 3.0), quant=q8_0 (flips
//   at 3, 5, 9, 25, 34, 36), kv=q8_0 (its only run failed: kStandardFailure).
// - gen (generate, max_tokens kStandardMaxTokens, every run 6 tokens and no stop reason, so
//   every run is flagged as short): baseline x2 identical; sampler.seed=43 differs from
//   token index 2 (3 vs 7).
// Every record carries its full row, so KLDs are exact. Fingerprints: host fp-a for the
// baseline, fp-b for attention=on (another CPU model).
inline constexpr const char* kStandardFailure = "driver exited with status 3: out of memory";
inline constexpr int kStandardPositions = 40;  // requested and stored
inline constexpr int kStandardMaxTokens = 8;
void BuildStandardExperiment(store::Store& store);

// Rows of the standard experiment.
std::vector<float> BaselineRow(std::uint64_t position);
std::vector<float> AttentionRow(std::uint64_t position);
std::int32_t TargetAt(std::uint64_t position);

}  // namespace orch::report::testing

namespace orch::report::testing {

// The experiment "contributed": one teacher-forced workload of kContributedPositions, one
// job per cell, with the lab's runs and runs imported from contributors alice and bob:
// - baseline: the lab on fp-a, alice on fp-b and bob on fp-c, all bit-identical;
// - attention=on: only alice, on two rigs (fp-b, fp-c), bit-identical;
// - quant=q8_0: the lab on fp-a; alice on fp-a2 (fp-a's twin with other memory: same class)
//   differing from position 20; bob on fp-b (another CPU: another class) differing from 25.
inline constexpr std::uint64_t kContributedPositions = 40;
void BuildContributedExperiment(store::Store& store);

}  // namespace orch::report::testing

namespace orch::report::testing {

// The experiment "generation": one generate workload "story" (max_tokens 6), full rows
// everywhere (exact KLDs), each run's summary with its generated_text (two lines) and ids:
// - baseline x2: tokens 1 2 3 4 5 6, top-1 minus top-2 margin 2 except 0.05 at token 4
//   (position 3); repeat 1's top logit at position 1 is 0.1 higher: repeat noise 0.1.
// - attention=on: the same rows up to position 3, where its argmax flips (5 over 4, margin
//   0.05): tokens 1 2 3 5 0 7. An argmax flip within the noise band.
// - sampler.seed=43: the baseline's rows, but at position 2 it sampled 7 where both
//   argmaxes are 3 (margin 2): tokens 1 2 7 0 1 2. A sampled draw outside the band.
inline constexpr std::uint64_t kFlipTokenIndex = 3;
inline constexpr std::uint64_t kDrawTokenIndex = 2;
inline constexpr double kGenerationRepeatNoise = 0.1;
void BuildGenerationExperiment(store::Store& store);

// RFC 4180 records of `csv` (quoted fields may hold commas, quotes and newlines).
std::vector<std::vector<std::string>> ParseCsv(const std::string& csv);

}  // namespace orch::report::testing
