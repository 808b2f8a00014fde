#include "tests/report/report_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "digest/row_digest.h"

namespace orch::report::testing {
namespace {

double LogSumExp(const std::vector<float>& row) {
  double m = -INFINITY;
  for (float x : row) m = std::max(m, static_cast<double>(x));
  double s = 0.0;
  for (float x : row) s += std::exp(static_cast<double>(x) - m);
  return m + std::log(s);
}

store::JobRecord JobWith(store::Store& store, const std::string& job_id, store::JobState state) {
  Result<store::JobRecord> job = store.GetJob(job_id);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  store::JobRecord out = *job;
  out.state = state;
  ++out.attempts;
  return out;
}

void StartRun(store::Store& store, const std::string& job_id, const std::string& run_id,
              const std::string& host, const std::string& engine) {
  store::RunRecord run;
  run.id = run_id;
  run.job_id = job_id;
  run.agent_id = "agent-1";
  run.state = store::RunState::kRunning;
  run.host_fingerprint_id = host;
  run.engine_fingerprint_id = engine;
  store::JobRecord job = JobWith(store, job_id, store::JobState::kRunning);
  job.current_run_id = run_id;
  ASSERT_TRUE(store.Apply({job, run, {}}).ok());
}

std::vector<store::DigestRecord> Encode(const std::vector<digest::PositionRecord>& records) {
  std::vector<store::DigestRecord> out;
  for (const digest::PositionRecord& r : records) {
    out.push_back({r.position, digest::EncodePositionRecord(r)});
  }
  return out;
}

}  // namespace

std::vector<float> TwoPeakRow(std::int32_t top, std::int32_t second, double margin) {
  std::vector<float> row(kVocab, 0.0f);
  row[static_cast<std::size_t>(top)] = static_cast<float>(1.0 + margin);
  row[static_cast<std::size_t>(second)] = 1.0f;
  return row;
}

digest::PositionRecord MakeRecord(std::uint64_t position, const std::vector<float>& row,
                                  std::int32_t target, bool full, std::int32_t output_token) {
  digest::PositionRecord record;
  record.position = position;
  record.input_token = static_cast<std::int32_t>(position % kVocab);
  record.output_token = output_token;
  // Pinned rather than the default: the goldens in testdata/ were rendered from
  // these digests, and a later default version must not move their last digits.
  digest::DigestOptions options{4, target, digest::DigestVersion::kV2};
  Status status = digest::ComputeRowDigest(row, options, &record.digest);
  EXPECT_TRUE(status.ok()) << status.ToString();
  if (full) record.full_row = row;
  return record;
}

double ReferenceKld(const std::vector<float>& p, const std::vector<float>& q) {
  const double lp = LogSumExp(p), lq = LogSumExp(q);
  double kld = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double log_p = p[i] - lp, log_q = q[i] - lq;
    kld += std::exp(log_p) * (log_p - log_q);
  }
  return kld;
}

double ReferenceNll(const std::vector<float>& row, std::int32_t target) {
  return LogSumExp(row) - row[static_cast<std::size_t>(target)];
}

ExperimentBuilder::ExperimentBuilder(std::string name) : name_(std::move(name)) {}

ExperimentBuilder& ExperimentBuilder::Workload(const std::string& name, const std::string& kind,
                                               int requested, int full_every) {
  workloads_.push_back({name, kind, requested, full_every});
  return *this;
}

ExperimentBuilder& ExperimentBuilder::Model(const std::string& name, const std::string& sha256) {
  model_json_ = "{\"name\": \"" + name + "\", \"sha256\": \"" + sha256 + "\"}";
  return *this;
}

ExperimentBuilder& ExperimentBuilder::Baseline(const std::string& axis, const std::string& value) {
  baseline_.emplace_back(axis, value);
  return *this;
}

std::string ExperimentBuilder::WorkloadsJson() const {
  std::string json;
  for (std::size_t i = 0; i < workloads_.size(); ++i) {
    const PlannedWorkloadSpec& w = workloads_[i];
    json +=
        std::string(i ? ", " : "") + "{\"name\": \"" + w.name + "\", \"kind\": \"" + w.kind + "\"";
    if (w.requested > 0) {
      json += std::string(", \"") + (w.kind == "generate" ? "max_tokens" : "positions") +
              "\": " + std::to_string(w.requested);
    }
    json +=
        ", \"capture\": {\"top_logits\": 4, \"full_every\": " + std::to_string(w.full_every) + "}}";
  }
  return json;
}

ExperimentBuilder& ExperimentBuilder::Cell(const std::string& label) {
  cells_.push_back(label);
  changes_.emplace_back();
  return *this;
}

ExperimentBuilder& ExperimentBuilder::Combination(const std::string& label,
                                                  const std::string& changes) {
  cells_.push_back(label);
  changes_.push_back(changes);
  return *this;
}

ExperimentBuilder& ExperimentBuilder::Bisect(const std::string& bisect) {
  bisect_json_ = bisect;
  return *this;
}

std::string ExperimentBuilder::Job(const std::string& cell, const std::string& workload,
                                   int repeat) {
  jobs_.push_back({cell, workload, repeat});
  return "job-" + std::to_string(jobs_.size());
}

std::string ExperimentBuilder::PlanJson() const {
  std::string json = "{\"schema\": \"orch.plan/1\", \"experiment\": {\"name\": \"" + name_ +
                     "\", \"description\": \"\"},\n";
  if (!model_json_.empty()) json += " \"model\": " + model_json_ + ",\n";
  if (!baseline_.empty()) {
    json += " \"baseline\": {";
    for (std::size_t i = 0; i < baseline_.size(); ++i) {
      json += std::string(i ? ", " : "") + "\"" + baseline_[i].first + "\": \"" +
              baseline_[i].second + "\"";
    }
    json += "},\n";
  }
  if (!bisect_json_.empty()) json += " \"bisect\": " + bisect_json_ + ",\n";
  json += " \"workloads\": [" + WorkloadsJson() + "],\n \"cells\": [";
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    const std::string& label = cells_[i];
    if (!changes_[i].empty()) {
      json += std::string(i ? ", " : "") + "{\"label\": \"" + label +
              "\", \"axis\": null, \"value\": null, \"changes\": " + changes_[i] + "}";
      continue;
    }
    const auto eq = label.find('=');
    json +=
        std::string(i ? ", " : "") + "{\"label\": \"" + label +
        "\", \"axis\": " + (eq == std::string::npos ? "null" : "\"" + label.substr(0, eq) + "\"") +
        ", \"value\": " + (eq == std::string::npos ? "null" : "\"" + label.substr(eq + 1) + "\"") +
        "}";
  }
  json += "],\n \"jobs\": [";
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    json += std::string(i ? ",\n  " : "") + "{\"id\": \"job-" + std::to_string(i + 1) +
            "\", \"cell\": \"" + jobs_[i].cell + "\", \"workload\": \"" + jobs_[i].workload +
            "\", \"repeat\": " + std::to_string(jobs_[i].repeat) + "}";
  }
  return json + "]}\n";
}

void ExperimentBuilder::Submit(store::Store& store) const {
  std::vector<store::JobRecord> jobs;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    store::JobRecord job;
    job.id = "job-" + std::to_string(i + 1);
    job.experiment = name_;
    jobs.push_back(job);
  }
  Result<int> stored = store.PutPlan({name_, PlanJson()}, jobs);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
}

void AddSucceededRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                     const std::vector<digest::PositionRecord>& records,
                     const std::string& host_fingerprint, const std::string& engine_fingerprint) {
  StartRun(store, job_id, run_id, host_fingerprint, engine_fingerprint);
  ASSERT_TRUE(store.AppendChunk(run_id, 0, Encode(records)).ok());
  store::RunOutcome outcome{store::RunState::kSucceeded, 0, "", 1, ""};
  store::JobRecord job = JobWith(store, job_id, store::JobState::kSucceeded);
  --job.attempts;
  ASSERT_TRUE(store.FinishRun(run_id, outcome, job).ok());
}

void AddSucceededRunWithSummary(store::Store& store, const std::string& job_id,
                                const std::string& run_id,
                                const std::vector<digest::PositionRecord>& records,
                                const std::string& summary, const std::string& host_fingerprint) {
  StartRun(store, job_id, run_id, host_fingerprint, "");
  ASSERT_TRUE(store.AppendChunk(run_id, 0, Encode(records)).ok());
  store::RunOutcome outcome{store::RunState::kSucceeded, 0, "", 1, summary};
  store::JobRecord job = JobWith(store, job_id, store::JobState::kSucceeded);
  --job.attempts;
  ASSERT_TRUE(store.FinishRun(run_id, outcome, job).ok());
}

void AddImportedRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                    const std::vector<digest::PositionRecord>& records,
                    const std::string& contributor, const std::string& host_fingerprint,
                    const std::string& agent_id) {
  store::RunRecord run;
  run.id = run_id;
  run.job_id = job_id;
  run.agent_id = agent_id;
  run.state = store::RunState::kRunning;
  run.host_fingerprint_id = host_fingerprint;
  run.contributor = contributor;
  run.bundle_sha256 = std::string(64, 'b');
  run.imported_at_ms = 1700000000000;
  ASSERT_TRUE(store.Apply({std::nullopt, run, {}}).ok());
  ASSERT_TRUE(store.AppendChunk(run_id, 0, Encode(records)).ok());
  store::RunOutcome outcome{store::RunState::kSucceeded, 0, "", 1, ""};
  ASSERT_TRUE(store.FinishRun(run_id, outcome, std::nullopt).ok());
}

void AddFailedRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                  const std::string& error) {
  StartRun(store, job_id, run_id, "", "");
  store::RunOutcome outcome{store::RunState::kFailed, 3, error, 0, ""};
  store::JobRecord job = JobWith(store, job_id, store::JobState::kFailed);
  --job.attempts;
  job.last_error = error;
  job.current_run_id.clear();
  ASSERT_TRUE(store.FinishRun(run_id, outcome, job).ok());
}

void AddRunningRun(store::Store& store, const std::string& job_id, const std::string& run_id,
                   const std::vector<digest::PositionRecord>& records) {
  StartRun(store, job_id, run_id, "", "");
  if (records.empty()) return;
  ASSERT_TRUE(store.AppendChunk(run_id, 0, Encode(records)).ok());
}

}  // namespace orch::report::testing

#include "fingerprint/fingerprint_json.h"

namespace orch::report::testing {
namespace {

std::int32_t Top(std::uint64_t i) { return static_cast<std::int32_t>(i % kVocab); }
std::int32_t Second(std::uint64_t i) { return static_cast<std::int32_t>((i + 1) % kVocab); }

double BaselineMargin(std::uint64_t i) {
  if (i == 10) return 0.2;
  if (i == 30) return 3.0;
  return 2.0;
}

std::vector<digest::PositionRecord> Records(std::vector<float> (*row)(std::uint64_t)) {
  std::vector<digest::PositionRecord> out;
  for (std::uint64_t i = 0; i < kStandardPositions; ++i) {
    out.push_back(MakeRecord(i, row(i), TargetAt(i), /*full=*/true));
  }
  return out;
}

std::vector<float> RepeatRow(std::uint64_t i) {
  return i == 20 ? TwoPeakRow(Top(i), Second(i), 2.5) : BaselineRow(i);
}

std::vector<float> QuantRow(std::uint64_t i) {
  for (std::uint64_t f : {3, 5, 9, 25, 34, 36}) {
    if (i == f) return TwoPeakRow(Second(i), Top(i), BaselineMargin(i));
  }
  return BaselineRow(i);
}

std::vector<digest::PositionRecord> Generated(const std::vector<std::int32_t>& tokens) {
  std::vector<digest::PositionRecord> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::int32_t other = (tokens[i] + 1) % static_cast<std::int32_t>(kVocab);
    out.push_back(MakeRecord(i, TwoPeakRow(tokens[i], other, 2.0), digest::kNoTarget,
                             /*full=*/false, tokens[i]));
  }
  return out;
}

std::string FingerprintJson(const std::string& cpu) {
  fingerprint::Fingerprint fp;
  fp.host.cpu.model_name = fingerprint::Probed<std::string>::Known(cpu);
  return fingerprint::ToCanonicalJson(fp);
}

}  // namespace

std::vector<float> BaselineRow(std::uint64_t i) {
  return TwoPeakRow(Top(i), Second(i), BaselineMargin(i));
}

std::vector<float> AttentionRow(std::uint64_t i) {
  if (i == 10 || i == 30) return TwoPeakRow(Second(i), Top(i), BaselineMargin(i));
  return BaselineRow(i);
}

std::int32_t TargetAt(std::uint64_t i) { return static_cast<std::int32_t>(i % kVocab); }

void BuildStandardExperiment(store::Store& store) {
  ExperimentBuilder plan("standard");
  plan.Workload("wiki", "teacher_forced", kStandardPositions)
      .Workload("gen", "generate", kStandardMaxTokens);
  plan.Cell("baseline").Cell("attention=on").Cell("quant=q8_0").Cell("kv=q8_0");
  plan.Cell("sampler.seed=43");
  const std::string b0 = plan.Job("baseline", "wiki", 0), b1 = plan.Job("baseline", "wiki", 1);
  const std::string att = plan.Job("attention=on", "wiki", 0);
  const std::string quant = plan.Job("quant=q8_0", "wiki", 0);
  const std::string kv = plan.Job("kv=q8_0", "wiki", 0);
  const std::string g0 = plan.Job("baseline", "gen", 0), g1 = plan.Job("baseline", "gen", 1);
  const std::string seed = plan.Job("sampler.seed=43", "gen", 0);
  plan.Submit(store);
  ASSERT_TRUE(store.PutFingerprint("fp-a", FingerprintJson("Intel N150")).ok());
  ASSERT_TRUE(store.PutFingerprint("fp-b", FingerprintJson("AMD EPYC 9654")).ok());
  AddSucceededRun(store, b0, "run-b0", Records(BaselineRow), "fp-a", "");
  AddSucceededRun(store, b1, "run-b1", Records(RepeatRow), "fp-a", "");
  AddSucceededRun(store, att, "run-att", Records(AttentionRow), "fp-b", "");
  AddSucceededRun(store, quant, "run-quant", Records(QuantRow), "fp-a", "");
  AddFailedRun(store, kv, "run-kv", kStandardFailure);
  AddSucceededRun(store, g0, "run-g0", Generated({1, 2, 3, 4, 5, 6}));
  AddSucceededRun(store, g1, "run-g1", Generated({1, 2, 3, 4, 5, 6}));
  AddSucceededRun(store, seed, "run-seed", Generated({1, 2, 7, 0, 1, 2}));
}

}  // namespace orch::report::testing

namespace orch::report::testing {
namespace {

// Records of `row`, with the top logit at `moved` (if any) raised a little: a stream
// that differs from the unchanged one at that position, without a flip.
std::vector<digest::PositionRecord> Rows(std::vector<float> (*row)(std::uint64_t),
                                         std::optional<std::uint64_t> moved = {}) {
  std::vector<digest::PositionRecord> out;
  for (std::uint64_t i = 0; i < kContributedPositions; ++i) {
    std::vector<float> r = row(i);
    const auto top = static_cast<std::int32_t>(i % kVocab);
    if (moved && i == *moved) r = TwoPeakRow(top, (top + 1) % kVocab, 2.5);
    out.push_back(MakeRecord(i, r, TargetAt(i), /*full=*/true));
  }
  return out;
}

std::string HostJson(const std::string& cpu, std::int64_t memory_bytes) {
  fingerprint::Fingerprint fp;
  fp.host.cpu.model_name = fingerprint::Probed<std::string>::Known(cpu);
  fp.host.memory_bytes = fingerprint::Probed<std::int64_t>::Known(memory_bytes);
  return fingerprint::ToCanonicalJson(fp);
}

}  // namespace

void BuildContributedExperiment(store::Store& store) {
  ExperimentBuilder plan("contributed");
  plan.Workload("wiki", "teacher_forced", kContributedPositions);
  plan.Cell("baseline").Cell("attention=on").Cell("quant=q8_0");
  const std::string base = plan.Job("baseline", "wiki", 0);
  const std::string att = plan.Job("attention=on", "wiki", 0);
  const std::string quant = plan.Job("quant=q8_0", "wiki", 0);
  plan.Submit(store);
  for (const auto& [id, json] : {std::pair{"fp-a", HostJson("Intel N150", 16)},
                                 std::pair{"fp-a2", HostJson("Intel N150", 32)},
                                 std::pair{"fp-b", HostJson("AMD EPYC 9654", 16)},
                                 std::pair{"fp-c", HostJson("Apple M2", 16)}}) {
    ASSERT_TRUE(store.PutFingerprint(id, json).ok());
  }
  AddSucceededRun(store, base, "run-base-lab", Rows(BaselineRow), "fp-a");
  AddImportedRun(store, base, "run-base-alice", Rows(BaselineRow), "alice", "fp-b");
  AddImportedRun(store, base, "run-base-bob", Rows(BaselineRow), "bob", "fp-c", "rig-2");
  AddImportedRun(store, att, "run-att-1", Rows(AttentionRow), "alice", "fp-b");
  AddImportedRun(store, att, "run-att-2", Rows(AttentionRow), "alice", "fp-c", "rig-2");
  AddSucceededRun(store, quant, "run-q-lab", Rows(BaselineRow), "fp-a");
  AddImportedRun(store, quant, "run-q-alice", Rows(BaselineRow, 20), "alice", "fp-a2");
  AddImportedRun(store, quant, "run-q-bob", Rows(BaselineRow, 25), "bob", "fp-b");
}

}  // namespace orch::report::testing

namespace orch::report::testing {
namespace {

// One generated token per position; `row(i)` gives each position's logits.
std::vector<digest::PositionRecord> GenerationRecords(
    const std::vector<std::int32_t>& tokens,
    const std::function<std::vector<float>(std::size_t)>& row) {
  std::vector<digest::PositionRecord> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    out.push_back(MakeRecord(i, row(i), digest::kNoTarget, /*full=*/true, tokens[i]));
  }
  return out;
}

std::vector<float> GenerationBaselineRow(std::size_t i, const std::vector<std::int32_t>& tokens) {
  const std::int32_t top = tokens[i];
  const std::int32_t second = (top + 1) % static_cast<std::int32_t>(kVocab);
  return TwoPeakRow(top, second, i == kFlipTokenIndex ? 0.05 : 2.0);
}

std::string GenerationSummary(const std::vector<std::int32_t>& ids, const std::string& text) {
  nlohmann::json done{{"generated_ids", ids}, {"generated_text", text}, {"stop", "length"}};
  return nlohmann::json{{"done", done}}.dump();
}

}  // namespace

void BuildGenerationExperiment(store::Store& store) {
  ExperimentBuilder plan("generation");
  plan.Workload("story", "generate", 6);
  plan.Cell("baseline").Cell("attention=on").Cell("sampler.seed=43");
  const std::string b0 = plan.Job("baseline", "story", 0);
  const std::string b1 = plan.Job("baseline", "story", 1);
  const std::string att = plan.Job("attention=on", "story", 0);
  const std::string seed = plan.Job("sampler.seed=43", "story", 0);
  plan.Submit(store);
  const std::vector<std::int32_t> base{1, 2, 3, 4, 5, 6};
  auto baseline = [&base](std::size_t i) { return GenerationBaselineRow(i, base); };
  auto repeat = [&base](std::size_t i) {
    std::vector<float> r = GenerationBaselineRow(i, base);
    if (i == 1) r[static_cast<std::size_t>(base[i])] += static_cast<float>(kGenerationRepeatNoise);
    return r;
  };
  const std::string base_text = "The cat sat on the mat.\nIt purred.";
  AddSucceededRunWithSummary(store, b0, "run-s0", GenerationRecords(base, baseline),
                             GenerationSummary(base, base_text));
  AddSucceededRunWithSummary(store, b1, "run-s1", GenerationRecords(base, repeat),
                             GenerationSummary(base, base_text));
  const std::vector<std::int32_t> flipped{1, 2, 3, 5, 0, 7};
  auto attention = [&base](std::size_t i) {
    if (i == kFlipTokenIndex) return TwoPeakRow(5, 4, 0.05);
    return GenerationBaselineRow(i, base);
  };
  AddSucceededRunWithSummary(store, att, "run-att", GenerationRecords(flipped, attention),
                             GenerationSummary(flipped, "The cat sat on the rug.\nIt slept."));
  const std::vector<std::int32_t> drawn{1, 2, 7, 0, 1, 2};
  AddSucceededRunWithSummary(store, seed, "run-seed", GenerationRecords(drawn, baseline),
                             GenerationSummary(drawn, "The cat sat by the door.\nIt waited."));
}

std::vector<std::vector<std::string>> ParseCsv(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < csv.size(); ++i) {
    const char c = csv[i];
    if (quoted) {
      if (c == '"' && i + 1 < csv.size() && csv[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
    } else {
      field += c;
    }
  }
  return rows;
}

}  // namespace orch::report::testing
