// EngineProbe: what an inference engine is made of on this host: the driver executable's
// hash, the version/build facts the driver reported, the backend libraries it can load and
// the git state of its source checkouts. Never fails; unreadable parts are unknown.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fingerprint/commit_resolver.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/fingerprint.h"

namespace orch::fingerprint {

// One configured engine driver.
struct EngineSpec {
  std::string name{};        // unique among the engines of one fingerprint
  std::string executable{};  // may be empty (only checkouts or libraries configured)
  std::map<std::string, std::string> metadata{};  // version/build facts, copied as given
  std::string backend_dir{};  // may be empty; shared libraries directly inside are hashed
  std::vector<std::string> checkouts{};  // source checkout directories
};

class EngineProbe final {
 public:
  // Both are borrowed and must outlive the probe.
  EngineProbe(FileHasher& hasher, CommitResolver& resolver)
      : hasher_(hasher), resolver_(resolver) {}

  EngineFacts Probe(const EngineSpec& spec);

 private:
  Probed<std::string> HashFile(const std::string& path);
  Probed<LibraryHashes> ProbeLibraries(const std::string& directory);

  FileHasher& hasher_;
  CommitResolver& resolver_;
};

// True for the names EngineProbe treats as backend libraries: "lib*.so", "lib*.so.*",
// "*.dylib", "*.dll" (llama.cpp's "libggml-cpu-haswell.so", "libggml-cuda.so", ...).
bool IsBackendLibraryName(const std::string& file_name);

}  // namespace orch::fingerprint
