#include "fingerprint/engine_probe.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace orch::fingerprint {
namespace {

Result<std::vector<std::string>> ListFiles(const std::string& directory) {
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) {
    return IoError("list " + directory + ": " + std::strerror(errno));
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool IsBackendLibraryName(const std::string& name) {
  bool shared_object =
      name.starts_with("lib") && (name.ends_with(".so") || name.find(".so.") != std::string::npos);
  return shared_object || name.ends_with(".dylib") || name.ends_with(".dll");
}

EngineFacts EngineProbe::Probe(const EngineSpec& spec) {
  EngineFacts facts;
  facts.name = spec.name;
  facts.executable = spec.executable;
  facts.executable_sha256 = spec.executable.empty()
                                ? Probed<std::string>::Unknown("no executable configured")
                                : HashFile(spec.executable);
  facts.metadata = spec.metadata;
  facts.backend_dir = spec.backend_dir;
  facts.backend_libraries = spec.backend_dir.empty()
                                ? Probed<LibraryHashes>::Unknown("no backend directory configured")
                                : ProbeLibraries(spec.backend_dir);
  for (const std::string& checkout : spec.checkouts) {
    Result<CheckoutState> state = resolver_.Resolve(checkout);
    facts.checkouts.push_back(
        {checkout, state.ok() ? Probed<CheckoutState>::Known(*state)
                              : Probed<CheckoutState>::Unknown(state.status().message())});
  }
  return facts;
}

Probed<std::string> EngineProbe::HashFile(const std::string& path) {
  Result<FileHash> hash = hasher_.Hash(path);
  if (!hash.ok()) return Probed<std::string>::Unknown(hash.status().message());
  return Probed<std::string>::Known(hash->sha256);
}

Probed<LibraryHashes> EngineProbe::ProbeLibraries(const std::string& directory) {
  Result<std::vector<std::string>> names = ListFiles(directory);
  if (!names.ok()) return Probed<LibraryHashes>::Unknown(names.status().message());
  LibraryHashes libraries;
  for (const std::string& name : *names) {
    if (IsBackendLibraryName(name)) libraries[name] = HashFile(directory + "/" + name);
  }
  return Probed<LibraryHashes>::Known(std::move(libraries));
}

}  // namespace orch::fingerprint
