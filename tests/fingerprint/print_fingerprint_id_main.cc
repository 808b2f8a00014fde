// Prints the fingerprint id of this machine (real root, real commands, no engines or
// models), so a test can compare the ids two separate processes compute.
#include <cstdio>
#include <cstdlib>

#include "fingerprint/fingerprint_json.h"
#include "fingerprint/collect.h"
#include "fingerprint/libgit2_commit_resolver.h"
#include "fingerprint/memory_hash_cache.h"
#include "fingerprint/posix_command_runner.h"

int main() {
  using namespace orch::fingerprint;
  const char* path = std::getenv("PATH");
  auto runner = MakePosixCommandRunner(
      {.search_path = path != nullptr ? path : "/usr/bin:/bin", .environment = {"LC_ALL=C"}});
  auto resolver = MakeLibgit2CommitResolver();
  MemoryHashCache cache;
  FileHasher hasher(cache);
  RootFs root("/");
  HostProbe host(root);
  GpuProbe gpus(root, *runner);
  EngineProbe engines(hasher, *resolver);
  Fingerprint fingerprint = CollectFingerprint(host, gpus, engines, hasher, {});
  std::printf("%s\n", FingerprintId(fingerprint).c_str());
  return 0;
}
