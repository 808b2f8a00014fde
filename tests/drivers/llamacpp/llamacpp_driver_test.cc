// The llama.cpp driver on the real engine (both installed builds) and a
// generated model: what changes the logits' bits and what does not, the typed
// errors, and the digests against exact values on real rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "digest/kl_divergence.h"
#include "tests/drivers/llamacpp/driver_harness.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class LlamaCppDriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new std::string(MakeDriverTestDir("orch-llamacpp-test")); }
  static void TearDownTestSuite() {
    RemoveDriverTestDir(*dir_);
    delete dir_;
  }
  static std::string Model() { return TinyModel(*dir_); }
  static std::string Cache() { return ModelCache(*dir_); }

  static DriverOutput Run(const json& overrides, const std::string& release = "v0.4.0",
                          int positions = 128) {
    json job = TeacherForcedJob(Model(), Cache(), overrides, positions);
    return RunLlamaDriver(release, job, *dir_);
  }

  // Runs and expects a clean, complete stream.
  static DriverOutput RunOk(const json& overrides, const std::string& release = "v0.4.0",
                            int positions = 128) {
    DriverOutput output = Run(overrides, release, positions);
    EXPECT_EQ(output.exit_code, 0) << output.log;
    EXPECT_EQ(output.stream_error, "");
    EXPECT_TRUE(output.done.is_object()) << output.error.dump();
    return output;
  }

  static std::string* dir_;
};

std::string* LlamaCppDriverTest::dir_ = nullptr;

bool AllRowsIdentical(const DriverOutput& a, const DriverOutput& b) {
  if (a.records.size() != b.records.size()) return false;
  for (std::size_t i = 0; i < a.records.size(); ++i)
    if (!(a.records[i].digest.hash == b.records[i].digest.hash)) return false;
  return true;
}

TEST_F(LlamaCppDriverTest, RerunOfOneCoordinateIsBitIdenticalAtEveryPosition) {
  DriverOutput first = RunOk({});
  DriverOutput second = RunOk({});
  ASSERT_EQ(first.records.size(), 128u);
  EXPECT_TRUE(AllRowsIdentical(first, second));
  EXPECT_EQ(first.InputTokens(), second.InputTokens());
  EXPECT_EQ(first.done["positions"], 128);
  EXPECT_EQ(first.done["nan_rows"], 0);
}

TEST_F(LlamaCppDriverTest, RecordsCarryTokensTargetsAndPositionsInOrder) {
  DriverOutput output = RunOk({});
  ASSERT_EQ(output.records.size(), 128u);
  for (std::size_t i = 0; i < output.records.size(); ++i) {
    const auto& record = output.records[i];
    EXPECT_EQ(record.position, i);
    EXPECT_EQ(record.output_token, -1);
    EXPECT_EQ(record.digest.vocab_size, 1024u);
    EXPECT_EQ(record.digest.top.size(), 20u);
    EXPECT_TRUE(record.digest.is_distribution());
    std::int32_t next = i + 1 < output.records.size() ? output.records[i + 1].input_token : -1;
    EXPECT_EQ(record.digest.target_id, next) << "position " << i;
  }
  // The text of every input token and argmax, for reports.
  const json& text = output.done["token_text"];
  for (const auto& record : output.records) {
    EXPECT_TRUE(text.contains(std::to_string(record.input_token))) << record.position;
    EXPECT_TRUE(text.contains(std::to_string(record.digest.argmax))) << record.position;
  }
  // Partial UTF-8 pieces of byte tokens are kept as \xNN, never U+FFFD.
  for (const auto& [id, piece] : text.items())
    EXPECT_EQ(piece.get<std::string>().find("\xEF\xBF\xBD"), std::string::npos) << id;
  // Not every position predicts the same thing: the model computes.
  EXPECT_NE(output.records[5].digest.hash, output.records[6].digest.hash);
}

TEST_F(LlamaCppDriverTest, FullRowsFollowTheCapturePolicyAndMatchTheirDigest) {
  json job = TeacherForcedJob(Model(), Cache(), {}, 40);
  job["capture"] = {{"top_logits", 5},
                    {"full_every", 16},
                    {"full_windows", {{3, 5}}},
                    {"full_row_budget_bytes", 0}};
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  ASSERT_EQ(output.exit_code, 0) << output.log;
  std::vector<std::uint64_t> full;
  for (const auto& record : output.records) {
    EXPECT_EQ(record.digest.top.size(), 5u);
    if (record.full_row.empty()) continue;
    full.push_back(record.position);
    EXPECT_EQ(digest::HashRow(record.full_row), record.digest.hash);
  }
  EXPECT_EQ(full, (std::vector<std::uint64_t>{0, 3, 4, 16, 32}));
}

std::vector<std::uint64_t> FullRowPositions(const DriverOutput& output) {
  std::vector<std::uint64_t> full;
  for (const auto& record : output.records) {
    if (!record.full_row.empty()) full.push_back(record.position);
  }
  return full;
}

// 40 positions x 1,024 logits x 4 bytes = 163,840 bytes: within the default budget every
// row is kept; one byte less and full_every alone decides.
TEST_F(LlamaCppDriverTest, EveryRowIsKeptWhenTheRunFitsTheFullRowBudget) {
  json job = TeacherForcedJob(Model(), Cache(), {}, 40);
  job["capture"] = {{"top_logits", 5}, {"full_every", 16}, {"full_windows", json::array()}};
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  ASSERT_EQ(output.exit_code, 0) << output.log;
  ASSERT_EQ(output.records.size(), 40u);
  EXPECT_EQ(FullRowPositions(output).size(), 40u) << "the default budget (64 MiB)";
  job["capture"]["full_row_budget_bytes"] = 40 * 1024 * 4;
  output = RunLlamaDriver("v0.4.0", job, *dir_);
  ASSERT_EQ(output.exit_code, 0) << output.log;
  EXPECT_EQ(FullRowPositions(output).size(), 40u) << "exactly the budget";
  job["capture"]["full_row_budget_bytes"] = 40 * 1024 * 4 - 1;
  output = RunLlamaDriver("v0.4.0", job, *dir_);
  ASSERT_EQ(output.exit_code, 0) << output.log;
  EXPECT_EQ(FullRowPositions(output), (std::vector<std::uint64_t>{0, 16, 32}));
}

TEST_F(LlamaCppDriverTest, BothEngineBuildsRunAndEachReportsItsOwnVersion) {
  DriverOutput v040 = RunOk({{"engine", "llama.cpp@v0.4.0"}}, "v0.4.0");
  DriverOutput b8390 = RunOk({{"engine", "llama.cpp@b8390"}}, "b8390");
  EXPECT_EQ(v040.hello["engine"], "llama.cpp");
  EXPECT_EQ(v040.hello["version"], "v0.4.0");
  EXPECT_EQ(b8390.hello["version"], "b8390");
  EXPECT_NE(v040.hello["commit"], b8390.hello["commit"]);
  EXPECT_EQ(v040.hello["commit"].get<std::string>().size(), 40u);
  EXPECT_NE(v040.hello["build"]["library_dir"], b8390.hello["build"]["library_dir"]);
  EXPECT_EQ(v040.records.size(), b8390.records.size());
  EXPECT_EQ(v040.InputTokens(), b8390.InputTokens());
}

TEST_F(LlamaCppDriverTest, FlashAttentionOnChangesTheBits) {
  DriverOutput off = RunOk({{"attention", "off"}});
  DriverOutput on = RunOk({{"attention", "on"}});
  digest::StreamSummary summary = Compare(off, on);
  EXPECT_TRUE(summary.first_divergence.has_value());
  EXPECT_LT(summary.identical_rows, summary.compared);
  EXPECT_EQ(off.InputTokens(), on.InputTokens());
}

TEST_F(LlamaCppDriverTest, Q4WeightsMoveTheDistributionFurtherThanFlashAttention) {
  DriverOutput base = RunOk({{"quant", "f32"}});
  DriverOutput q4 = RunOk({{"quant", "q4_0"}});
  DriverOutput flash = RunOk({{"attention", "on"}});
  digest::StreamSummary weights = Compare(base, q4);
  digest::StreamSummary attention = Compare(base, flash);
  EXPECT_LT(weights.top1_agreement, 0.90);
  EXPECT_GT(weights.kld.mean, attention.kld.mean);
  EXPECT_EQ(q4.done["model"]["type"], "q4_0");
  EXPECT_EQ(q4.done["model"]["quantized_from"], Model());
  EXPECT_EQ(base.InputTokens(), q4.InputTokens());
}

TEST_F(LlamaCppDriverTest, QuantizedModelIsCachedBySha256AndReused) {
  DriverOutput first = RunOk({{"quant", "q5_0"}}, "v0.4.0", 8);
  DriverOutput second = RunOk({{"quant", "q5_0"}}, "v0.4.0", 8);
  EXPECT_FALSE(first.done["model"]["cache_hit"].get<bool>());
  EXPECT_TRUE(second.done["model"]["cache_hit"].get<bool>());
  EXPECT_EQ(first.done["model"]["sha256"], second.done["model"]["sha256"]);
  std::string path = second.done["model"]["path"];
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(Cache()));
  EXPECT_TRUE(AllRowsIdentical(first, second));
}

TEST_F(LlamaCppDriverTest, ACachedQuantizedModelModifiedInPlaceIsQuantizedAgain) {
  DriverOutput first = RunOk({{"quant", "q4_1"}}, "v0.4.0", 8);
  std::string path = first.done["model"]["path"];
  ASSERT_TRUE(fs::exists(path + ".sha256")) << "the quantized file has a sidecar";
  // Same size and mtime, other bytes: what a stray writer or bad disk leaves behind.
  fs::file_time_type mtime = fs::last_write_time(path);
  std::uintmax_t size = fs::file_size(path);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size - size / 4));
    std::string noise(4096, '\xff');
    file.write(noise.data(), static_cast<std::streamsize>(noise.size()));
  }
  fs::last_write_time(path, mtime);
  ASSERT_EQ(fs::file_size(path), size);

  DriverOutput second = RunOk({{"quant", "q4_1"}}, "v0.4.0", 8);
  EXPECT_FALSE(second.done["model"]["cache_hit"].get<bool>()) << second.log;
  EXPECT_EQ(second.done["model"]["sha256"], first.done["model"]["sha256"]);
  EXPECT_TRUE(AllRowsIdentical(first, second));
  EXPECT_NE(second.log.find("quantizing it again"), std::string::npos) << second.log;
  DriverOutput third = RunOk({{"quant", "q4_1"}}, "v0.4.0", 8);
  EXPECT_TRUE(third.done["model"]["cache_hit"].get<bool>()) << "the new file is reused";
}

// The hash-cache lines (fingerprint/file_hash_cache.h) for `path`: one per time
// a file was read in full and its hash kept.
int HashCacheLinesFor(const std::string& cache_file, const std::string& path) {
  std::ifstream in(cache_file);
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > path.size() && line.ends_with("\t" + path)) ++lines;
  }
  return lines;
}

TEST_F(LlamaCppDriverTest, ACachedVariantIsHashedWhenMadeAndOnlyAgainWhenItChanges) {
  std::string cache = Cache() + "-hashed-once";
  std::string hashes = *dir_ + "/file-sha256-agent.tsv";
  auto run = [&] {
    json job = TeacherForcedJob(Model(), cache, {{"quant", "q8_0"}}, 8);
    job["model"]["hash_cache"] = hashes;  // what the agent sends (docs/driver-protocol.md)
    DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
    EXPECT_EQ(output.exit_code, 0) << output.log;
    return output;
  };
  DriverOutput first = run();
  std::string variant = first.done["model"]["path"];
  ASSERT_FALSE(first.done["model"]["cache_hit"].get<bool>());
  for (int job = 0; job < 3; ++job) EXPECT_TRUE(run().done["model"]["cache_hit"].get<bool>());
  EXPECT_EQ(HashCacheLinesFor(hashes, variant), 1) << "hashed as it was made, then trusted";
  EXPECT_EQ(HashCacheLinesFor(hashes, Model()), 1) << "the source, hashed on first sight";

  // Other bytes with size and mtime set back: its ctime moved, so it is read again.
  fs::file_time_type mtime = fs::last_write_time(variant);
  std::uintmax_t size = fs::file_size(variant);
  {
    std::fstream file(variant, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size / 2));
    std::string noise(4096, '\x5a');
    file.write(noise.data(), static_cast<std::streamsize>(noise.size()));
  }
  fs::last_write_time(variant, mtime);
  DriverOutput caught = run();
  EXPECT_FALSE(caught.done["model"]["cache_hit"].get<bool>()) << caught.log;
  EXPECT_NE(caught.log.find("quantizing it again"), std::string::npos) << caught.log;
  EXPECT_EQ(caught.done["model"]["sha256"], first.done["model"]["sha256"]);
  EXPECT_EQ(HashCacheLinesFor(hashes, variant), 3) << "the corrupted file, then the new one";
  EXPECT_TRUE(run().done["model"]["cache_hit"].get<bool>());
  EXPECT_EQ(HashCacheLinesFor(hashes, variant), 3);
}

TEST_F(LlamaCppDriverTest, CpuVariantChangesTheBitsWithQ8Weights) {
  // x64 runs everywhere; the other side is the best variant this CPU can run
  // besides x64, so the test holds on any x86-64 machine.
  ProcessResult variants = RunProcess({LlamaDriverBinary("v0.4.0"), "variants"});
  ASSERT_EQ(variants.exit_code, 0) << variants.err;
  std::string other;
  int best = 0;
  for (const json& v : json::parse(variants.out)) {
    if (v["variant"] != "x64" && v["score"].get<int>() > best) {
      best = v["score"].get<int>();
      other = v["variant"];
    }
  }
  ASSERT_FALSE(other.empty()) << "this CPU runs no variant besides x64";
  DriverOutput x64 = RunOk({{"quant", "q8_0"}, {"cpu_backend", "x64"}});
  DriverOutput fast = RunOk({{"quant", "q8_0"}, {"cpu_backend", other}});
  EXPECT_EQ(x64.hello["kernel_path"], "cpu: x64");
  EXPECT_EQ(fast.hello["kernel_path"], "cpu: " + other);
  EXPECT_FALSE(AllRowsIdentical(x64, fast)) << "x64 vs " << other;
  EXPECT_EQ(x64.InputTokens(), fast.InputTokens());
}

TEST_F(LlamaCppDriverTest, QuantizedVCacheWithoutFlashAttentionIsATypedError) {
  DriverOutput output = Run({{"kv", "q8_0/q8_0"}, {"attention", "off"}});
  EXPECT_EQ(output.exit_code, 2) << output.log;
  EXPECT_EQ(output.stream_error, "");
  EXPECT_EQ(output.error["code"], "invalid_combination");
  EXPECT_NE(output.error["message"].get<std::string>().find("flash attention"), std::string::npos);
  EXPECT_TRUE(output.records.empty());
}

TEST_F(LlamaCppDriverTest, QuantizedKCacheWithFlashAttentionRunsAndChangesBits) {
  DriverOutput f16 = RunOk({{"attention", "on"}});
  DriverOutput q8 = RunOk({{"kv", "q8_0/q8_0"}, {"attention", "on"}});
  EXPECT_FALSE(AllRowsIdentical(f16, q8));
  EXPECT_NE(q8.done["context"].get<std::string>().find("type_v=q8_0"), std::string::npos);
}

TEST_F(LlamaCppDriverTest, UnknownCpuVariantIsATypedError) {
  DriverOutput output = Run({{"cpu_backend", "pentium4"}});
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_EQ(output.error["code"], "invalid_combination");
  EXPECT_NE(output.error["message"].get<std::string>().find("pentium4"), std::string::npos);
}

// Without a GPU the job would run on the CPU and be recorded as a GPU cell.
TEST_F(LlamaCppDriverTest, AGpuJobWhereNoGpuIsFoundIsATypedErrorNamingTheBuild) {
  DriverOutput output = Run({{"hardware", "gpu"}});
  EXPECT_EQ(output.exit_code, 2) << output.log;
  EXPECT_EQ(output.error["code"], "invalid_combination");
  std::string message = output.error["message"];
  EXPECT_THAT(message, ::testing::HasSubstr("hardware = \"gpu\": no GPU device here"));
  EXPECT_THAT(message, ::testing::HasSubstr("has no accelerator backend file"));
  EXPECT_THAT(message, ::testing::HasSubstr("scripts/setup-engines --cuda"));
  EXPECT_TRUE(output.records.empty());
}

// A CUDA build's libggml-cuda.so on a host without the NVIDIA driver: skipped,
// and the reason is the loader's own.
TEST_F(LlamaCppDriverTest, TheAcceleratorsCommandSaysWhyABackendFileDoesNotLoad) {
  fs::path bins = fs::path(*dir_) / "bins";
  fs::create_directories(bins);
  auto WriteFile = [](const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
  };
  WriteFile(bins / "libggml-vulkan.so", "not an ELF file");
  fs::copy_file("/proc/self/exe", bins / "libggml-exe.so");  // ELF, not a library
  WriteFile(bins / "libggml-cpu-x64.so", "a CPU variant: not an accelerator");
  WriteFile(bins / "libggml-base.so", "not an accelerator");
  ProcessResult result = RunProcess({LlamaDriverBinary("b8390"), "accelerators", bins.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json report = json::parse(result.out);
  EXPECT_EQ(report["dir"], bins.string());
  EXPECT_EQ(report["gpu_devices"], 0);
  ASSERT_EQ(report["accelerators"].size(), 2u) << report.dump();
  EXPECT_EQ(report["accelerators"][0]["file"], "libggml-exe.so");
  EXPECT_EQ(report["accelerators"][0]["loaded"], false);
  EXPECT_THAT(report["accelerators"][0]["why"].get<std::string>(),
              ::testing::HasSubstr("libggml-exe.so"));
  EXPECT_EQ(report["accelerators"][1]["file"], "libggml-vulkan.so");
  EXPECT_EQ(report["accelerators"][1]["loaded"], false);
  EXPECT_THAT(report["accelerators"][1]["why"].get<std::string>(),
              ::testing::HasSubstr("libggml-vulkan.so"));
  // The driver's own build: the CPU build has no accelerator file.
  ProcessResult own = RunProcess({LlamaDriverBinary("b8390"), "accelerators"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(json::parse(own.out)["accelerators"], json::array());
}

// A text shorter than the positions asked for would "succeed" with fewer
// positions and compare as bit-identical on what little there was.
TEST_F(LlamaCppDriverTest, ATextShorterThanItsPositionsIsATypedError) {
  json job = TeacherForcedJob(Model(), Cache(), {}, 128);
  job["workload"]["text"] = "hi";
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(output.exit_code, 2) << output.log;
  EXPECT_EQ(output.error["code"], "invalid_job");
  EXPECT_THAT(output.error["message"].get<std::string>(),
              ::testing::HasSubstr("fewer than positions = 128"));
  EXPECT_TRUE(output.records.empty());
}

TEST_F(LlamaCppDriverTest, MissingModelIsATypedErrorBeforeAnyWork) {
  json job = TeacherForcedJob("", Cache(), {});
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_EQ(output.error["code"], "model_missing");
  EXPECT_TRUE(output.records.empty());
}

TEST_F(LlamaCppDriverTest, Sha256MismatchIsATypedErrorBeforeAnyWork) {
  json job = TeacherForcedJob(Model(), Cache(), {});
  job["model"]["requirement"] = "sha256:" + std::string(64, 'a');
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_EQ(output.error["code"], "sha256_mismatch");
  EXPECT_NE(output.error["message"].get<std::string>().find(std::string(64, 'a')),
            std::string::npos);
  EXPECT_TRUE(output.records.empty());
}

TEST_F(LlamaCppDriverTest, Sha256SentByTheAgentIsComparedWithTheRequirement) {
  json job = TeacherForcedJob(Model(), Cache(), {});
  job["model"]["requirement"] = "sha256:" + std::string(64, 'b');
  job["model"]["sha256"] = std::string(64, 'c');
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_EQ(output.error["code"], "sha256_mismatch");
  EXPECT_NE(output.error["message"].get<std::string>().find(std::string(64, 'c')),
            std::string::npos);
}

TEST_F(LlamaCppDriverTest, MalformedModelFileIsAnErrorNotACrash) {
  std::string bad = *dir_ + "/bad.gguf";
  std::ofstream(bad) << "GGUF this is not a model";
  json job = TeacherForcedJob(bad, Cache(), {{"quant", "q4_0"}});
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(output.exit_code, 2) << output.log;
  EXPECT_EQ(output.stream_error, "");
  EXPECT_NE(output.error["message"].get<std::string>().find(bad), std::string::npos);
  // Without quantization the engine itself refuses it: still a typed error.
  job = TeacherForcedJob(bad, Cache(), {});
  job["model"]["requirement"] = "bad.gguf";
  DriverOutput load = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(load.exit_code, 2) << load.log;
  EXPECT_EQ(load.stream_error, "");
  EXPECT_EQ(load.error["code"], "invalid_job");
  EXPECT_NE(load.error["message"].get<std::string>().find(bad), std::string::npos);
}

TEST_F(LlamaCppDriverTest, InvalidJobDocumentIsATypedError) {
  json job = TeacherForcedJob(Model(), Cache(), {{"kv", "f17"}});
  DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_EQ(output.error["code"], "invalid_job");
  EXPECT_NE(output.error["message"].get<std::string>().find("f17"), std::string::npos);
}

TEST_F(LlamaCppDriverTest, ThreadsDoNotChangeTheBitsButUbatchOneDoes) {
  DriverOutput one = RunOk({{"threads", "1"}}, "v0.4.0", 64);
  DriverOutput two = RunOk({{"threads", "2"}}, "v0.4.0", 64);
  DriverOutput ubatch = RunOk({{"ubatch", "1"}}, "v0.4.0", 64);
  EXPECT_TRUE(AllRowsIdentical(one, two));
  EXPECT_FALSE(AllRowsIdentical(one, ubatch));
}

// Exact KL from full rows against the top-k estimate from the digests of the
// same real rows (f32 vs q8_0 weights). With k = the vocabulary the estimate
// is exact; with k = 20 it is a lower bound whose error docs/metrics.md
// states by P's mass outside the top-k.
struct KldErrors {
  int rows = 0;
  double worst_relative_error = 0;
  double mean_relative_error = 0;
  double min_tail = 1, max_tail = 0;
  double worst_excess = 0;  // max(approx - exact): rounding of the estimate
};

KldErrors CompareKld(const DriverOutput& p, const DriverOutput& q) {
  KldErrors errors;
  for (std::size_t i = 0; i < p.records.size() && i < q.records.size(); ++i) {
    const auto& a = p.records[i];
    const auto& b = q.records[i];
    Result<double> exact = digest::ExactKlDivergence(a.full_row, b.full_row);
    EXPECT_TRUE(exact.ok()) << "position " << i;
    if (!exact.ok() || *exact < 1e-9) continue;
    double approx = digest::TopKKlDivergence(a.digest, b.digest);
    errors.worst_excess = std::max(errors.worst_excess, approx - *exact);
    double tail = 1.0;
    for (const auto& t : a.digest.top) tail -= std::exp(t.logit - a.digest.logsumexp);
    double relative = std::abs(*exact - approx) / *exact;
    errors.worst_relative_error = std::max(errors.worst_relative_error, relative);
    errors.mean_relative_error += relative;
    errors.min_tail = std::min(errors.min_tail, tail);
    errors.max_tail = std::max(errors.max_tail, tail);
    ++errors.rows;
  }
  if (errors.rows > 0) errors.mean_relative_error /= errors.rows;
  return errors;
}

TEST_F(LlamaCppDriverTest, TopKKlDivergenceStaysWithinTheDocumentedBoundOnRealRows) {
  auto run = [](const std::string& quant, std::uint32_t k) {
    json job = TeacherForcedJob(Model(), Cache(), {{"quant", quant}}, 64);
    job["capture"]["full_every"] = 1;
    job["capture"]["top_logits"] = k;
    DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_);
    EXPECT_EQ(output.records.size(), 64u) << output.log;
    return output;
  };
  KldErrors whole = CompareKld(run("f32", 1024), run("q8_0", 1024));
  EXPECT_GT(whole.rows, 32);
  std::cout << "top-1024 (whole rows): worst rel. error " << whole.worst_relative_error
            << ", worst excess " << whole.worst_excess << "\n";
  // docs/metrics.md: with every token in its bucket the estimate is the exact
  // value up to the rounding of the two logsumexps (about 1e-7 nats).
  EXPECT_LT(whole.worst_excess, 1e-6);
  EXPECT_LT(whole.worst_relative_error, 0.01);
  KldErrors top20 = CompareKld(run("f32", 20), run("q8_0", 20));
  EXPECT_GT(top20.rows, 32);
  std::cout << "top-20 on real rows: " << top20.rows << " rows, P tail " << top20.min_tail << " .. "
            << top20.max_tail << ", mean rel. error " << top20.mean_relative_error << ", worst "
            << top20.worst_relative_error << "\n";
  // docs/metrics.md, real rows of the generated model: flat rows (P's tail
  // above 90%), where k = 20 sees only a few percent of the divergence; still a
  // lower bound up to rounding.
  EXPECT_GT(top20.min_tail, 0.90);
  EXPECT_LT(top20.worst_excess, 1e-6);
  EXPECT_LE(top20.worst_relative_error, 0.99);
}

json GenerateJob(const std::string& model, const std::string& cache, const json& sampler) {
  json job = TeacherForcedJob(model, cache, sampler);
  job["workload"] = {{"name", "reasoning"},
                     {"kind", "generate"},
                     {"prompt", "Question: what is 17 times 23?\nAnswer:"},
                     {"max_tokens", 24},
                     {"capture", job["capture"]}};
  return job;
}

TEST_F(LlamaCppDriverTest, GenerationWithOneSeedReproducesAndAnotherSeedDiffers) {
  json sampler = {{"sampler.temperature", "1.0"},
                  {"sampler.top_k", "0"},
                  {"sampler.top_p", "1.0"},
                  {"sampler.min_p", "0.0"},
                  {"sampler.seed", "42"}};
  DriverOutput a = RunLlamaDriver("v0.4.0", GenerateJob(Model(), Cache(), sampler), *dir_);
  DriverOutput b = RunLlamaDriver("v0.4.0", GenerateJob(Model(), Cache(), sampler), *dir_);
  sampler["sampler.seed"] = "43";
  DriverOutput c = RunLlamaDriver("v0.4.0", GenerateJob(Model(), Cache(), sampler), *dir_);
  ASSERT_EQ(a.exit_code, 0) << a.log;
  ASSERT_EQ(c.exit_code, 0) << c.log;
  EXPECT_EQ(a.done["generated_ids"], b.done["generated_ids"]);
  EXPECT_EQ(a.done["generated_text"], b.done["generated_text"]);
  EXPECT_NE(a.done["generated_ids"], c.done["generated_ids"]);
  ASSERT_FALSE(a.records.empty());
  EXPECT_EQ(a.records.size(), a.done["generated_ids"].size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].output_token, a.done["generated_ids"][i].get<int>());
    if (i > 0) {
      EXPECT_EQ(a.records[i].input_token, a.records[i - 1].output_token);
    }
  }
  // The first step sees the same prompt whatever the seed: same logits.
  EXPECT_EQ(a.records[0].digest.hash, c.records[0].digest.hash);
  // Done says why generation stopped and how far it got.
  for (const DriverOutput* out : {&a, &c}) {
    std::size_t generated = out->done["generated_ids"].size();
    EXPECT_EQ(out->done["generated_tokens"], generated);
    std::string stop = out->done.value("stop", "");
    int max_tokens = out->done.value("max_tokens", -1);
    ASSERT_GT(max_tokens, 0);
    EXPECT_EQ(stop, generated < static_cast<std::size_t>(max_tokens) ? "eos" : "max_tokens");
  }
}

std::vector<std::string> RecordBytes(const DriverOutput& output) {
  std::vector<std::string> bytes;
  for (const auto& record : output.records) bytes.push_back(digest::EncodePositionRecord(record));
  return bytes;
}

// Rows are digested on worker threads while the engine decodes the next batch;
// the stream must not depend on how many: same record bytes, position order.
TEST_F(LlamaCppDriverTest, DigestWorkerCountChangesNoRecordByteNorTheirOrder) {
  constexpr int kPositions = 480;
  json job = TeacherForcedJob(Model(), Cache(), {{"batch", "64"}}, kPositions);
  json tokens = json::array();
  for (int i = 0; i < kPositions; ++i) tokens.push_back((i * 7919 + 3) % 1024);
  job["workload"].erase("text");
  job["workload"]["tokens"] = tokens;
  job["capture"] = {{"top_logits", 20},
                    {"full_every", 50},
                    {"full_windows", json::array()},
                    {"full_row_budget_bytes", 0}};
  DriverOutput reference = RunLlamaDriver("v0.4.0", job, *dir_);
  ASSERT_EQ(reference.exit_code, 0) << reference.log;
  ASSERT_EQ(reference.records.size(), static_cast<std::size_t>(kPositions));
  for (std::size_t i = 0; i < reference.records.size(); ++i) {
    EXPECT_EQ(reference.records[i].position, i);
    EXPECT_EQ(reference.records[i].full_row.empty(), i % 50 != 0) << i;
  }
  for (const char* workers : {"1", "2", "4"}) {
    DriverOutput output = RunLlamaDriver("v0.4.0", job, *dir_, {"--digest-workers", workers});
    ASSERT_EQ(output.exit_code, 0) << workers << " workers: " << output.log;
    EXPECT_EQ(RecordBytes(output), RecordBytes(reference)) << workers << " workers";
    EXPECT_EQ(output.done["token_text"], reference.done["token_text"]) << workers;
    EXPECT_EQ(output.done["positions"], kPositions) << workers;
  }
  json sampler = {{"sampler.temperature", "1.0"}, {"sampler.seed", "42"}};
  DriverOutput one = RunLlamaDriver("v0.4.0", GenerateJob(Model(), Cache(), sampler), *dir_,
                                    {"--digest-workers", "1"});
  DriverOutput four = RunLlamaDriver("v0.4.0", GenerateJob(Model(), Cache(), sampler), *dir_,
                                     {"--digest-workers", "4"});
  ASSERT_EQ(one.exit_code, 0) << one.log;
  ASSERT_EQ(four.exit_code, 0) << four.log;
  ASSERT_FALSE(one.records.empty());
  EXPECT_EQ(RecordBytes(one), RecordBytes(four));
  EXPECT_EQ(one.done["generated_ids"], four.done["generated_ids"]);
}

TEST_F(LlamaCppDriverTest, DigestWorkersMustBeAPositiveCount) {
  for (const char* workers : {"0", "-1", "x", ""}) {
    DriverOutput output = RunLlamaDriver("v0.4.0", TeacherForcedJob(Model(), Cache(), {}), *dir_,
                                         {"--digest-workers", workers});
    EXPECT_EQ(output.exit_code, 2) << workers;
    EXPECT_THAT(output.log, ::testing::HasSubstr("--digest-workers")) << workers;
  }
}

TEST_F(LlamaCppDriverTest, GreedyGenerationFollowsTheArgmax) {
  json sampler = {{"sampler.temperature", "0"}, {"sampler.seed", "7"}};
  DriverOutput output = RunLlamaDriver("v0.4.0", GenerateJob(Model(), Cache(), sampler), *dir_);
  ASSERT_EQ(output.exit_code, 0) << output.log;
  ASSERT_FALSE(output.records.empty());
  for (const auto& record : output.records)
    EXPECT_EQ(record.output_token, record.digest.argmax) << record.position;
}

TEST_F(LlamaCppDriverTest, QuantizeCommandWritesALoadableFileOfTheType) {
  std::string out = *dir_ + "/q8.gguf";
  ProcessResult result = RunProcess({LlamaDriverBinary("b8390"), "quantize", Model(), out, "q8_0"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  json job = TeacherForcedJob(out, Cache(), {{"quant", "q8_0"}}, 8);
  job["model"]["requirement"] = "q8.gguf";  // the type is read from the file
  DriverOutput output = RunLlamaDriver("b8390", job, *dir_);
  EXPECT_EQ(output.exit_code, 0) << output.log;
  EXPECT_EQ(output.done["model"]["type"], "q8_0");
  EXPECT_EQ(output.done["model"]["quantized_from"], "");
  ProcessResult bad = RunProcess({LlamaDriverBinary("b8390"), "quantize", Model(), out, "q9_9"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("q9_9"), std::string::npos);
}

}  // namespace
}  // namespace orch::testing
