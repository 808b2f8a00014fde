// Per-job cost of vouching for a model file before a job (docs/benchmarks.md, "Model
// hashing per job"): reading the whole file (what every reuse of a synth model or a
// cached quantized variant cost before) against resolving it through the identity-keyed
// hash cache (agent/model_resolver.h: a stat and a lookup). A harness run by hand, not a
// ctest test: `model_hash_bench [DIR]` writes 100 MB, 300 MB and 1 GB files into DIR
// (default: the temp folder), prints a table, and removes them.
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/model_resolver.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/memory_hash_cache.h"
#include "model/split_mix64.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// `bytes` of pseudo-random data with a sidecar, as the model cache holds them.
std::string WriteModel(const fs::path& dir, std::uint64_t bytes) {
  fs::path path = dir / ("variant-" + std::to_string(bytes >> 20) + "M.gguf");
  std::ofstream out(path, std::ios::binary);
  orch::model::SplitMix64 random(bytes);
  std::vector<std::uint64_t> block(1 << 17);
  for (std::uint64_t written = 0; written < bytes; written += block.size() * 8) {
    for (std::uint64_t& word : block) word = random.Next();
    out.write(
        reinterpret_cast<const char*>(block.data()),
        static_cast<std::streamsize>(std::min<std::uint64_t>(block.size() * 8, bytes - written)));
  }
  return path.string();
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  fs::path dir = (argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path()) /
                 ("orch-model-hash-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir / "cache");
  spdlog::logger log("bench", std::make_shared<spdlog::sinks::null_sink_st>());
  std::printf("| model file | full read (SHA-256) | per job, identity cache | jobs timed |\n");
  std::printf("|-----------:|-------------------:|------------------------:|----------:|\n");
  for (std::uint64_t mb : {100, 300, 1024}) {
    std::string path = WriteModel(dir / "cache", mb << 20);
    orch::fingerprint::MemoryHashCache none;
    Clock::time_point start = Clock::now();
    std::string sha256 = orch::fingerprint::FileHasher(none).Hash(path)->sha256;
    double full_ms = Ms(Clock::now() - start);
    std::ofstream(path + ".sha256") << sha256 << "  " << fs::path(path).filename().string() << "\n";
    orch::fingerprint::MemoryHashCache hashes;
    orch::agent::ModelResolver resolver({.model_dirs = {}, .cache_dir = (dir / "cache").string()},
                                        hashes, log);
    (void)resolver.Resolve("sha256:" + sha256);  // first sight: one read
    constexpr int kJobs = 1000;
    start = Clock::now();
    for (int job = 0; job < kJobs; ++job) {
      if (resolver.Resolve("sha256:" + sha256)->path != path) return 1;
    }
    double per_job_ms = Ms(Clock::now() - start) / kJobs;
    std::printf("| %4llu MB | %8.0f ms | %8.3f ms (%llu reads after the first) | %d |\n",
                static_cast<unsigned long long>(mb), full_ms, per_job_ms,
                static_cast<unsigned long long>(resolver.files_hashed() - 1), kJobs);
    fs::remove(path);
    fs::remove(path + ".sha256");
  }
  fs::remove_all(dir);
  return 0;
}
