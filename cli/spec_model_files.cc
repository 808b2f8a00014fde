#include "cli/spec_model_files.h"

#include <iostream>
#include <memory>

#include "cli/hash_cache_file.h"
#include "fingerprint/file_hasher.h"

namespace orch::cli {

Result<std::vector<SpecModelFile>> LocateSpecModelFiles(const planner::Spec& spec,
                                                        const FileSourceReader& reader,
                                                        const std::string& who, bool say_missing) {
  std::vector<SpecModelFile> named;
  if (!spec.model.file.empty())
    named.push_back({spec.model.file, "", spec.model.sha256, "model.sha256"});
  for (const auto& [quant, variant] : spec.model.variants)
    named.push_back({variant.file, "", variant.sha256, "model.variants." + quant + ".sha256"});
  std::vector<SpecModelFile> files;
  for (SpecModelFile& file : named) {
    Result<std::string> real = reader.Locate(file.as_written);
    if (real.ok()) {
      file.path = *real;
      files.push_back(std::move(file));
    } else if (real.status().code() == StatusCode::kNotFound) {
      if (say_missing) {
        std::cout << who << "the spec's model file " << file.as_written
                  << " is not here; its jobs need an agent that holds it\n";
      }
    } else {
      return real.status().WithContext("[model] file");
    }
  }
  return files;
}

std::string ModelHashMismatches(const std::vector<SpecModelFile>& files) {
  std::unique_ptr<fingerprint::HashCache> cache = OpenHashCache("", "orch run");
  fingerprint::FileHasher hasher(*cache);
  std::string out;
  for (const SpecModelFile& file : files) {
    Result<fingerprint::FileHash> hash = hasher.Hash(file.path);
    if (!hash.ok()) {
      out += "the spec's model file " + file.as_written +
             " cannot be hashed: " + hash.status().message() + "\n";
    } else if (hash->sha256 != file.sha256) {
      out += "the spec's model file " + file.as_written + " has SHA-256 " + hash->sha256 +
             ", but " + file.field + " is " + file.sha256 +
             ": no agent holds a file with that hash. Put the file's hash in the spec (orch "
             "model hash " +
             file.path + ") or the intended file at that path\n";
    }
  }
  return out;
}

std::string SpecModelMismatchLines(const planner::Spec& spec, const FileSourceReader& reader,
                                   const std::string& who) {
  Result<std::vector<SpecModelFile>> files =
      LocateSpecModelFiles(spec, reader, who, /*say_missing=*/false);
  if (!files.ok()) return "";
  std::string out;
  std::string lines = ModelHashMismatches(*files);
  for (std::size_t at = 0; at < lines.size();) {
    std::size_t end = lines.find('\n', at);
    out += who + lines.substr(at, end - at + 1);
    at = end + 1;
  }
  return out;
}

}  // namespace orch::cli
