// The model files an `orch run` spec names ([model] file and its variants): where they
// are, the SHA-256 the spec declares for each, and, when the agents hold none of them
// by that hash, whether the file's content is what the spec says.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "cli/files.h"
#include "planner/spec.h"

namespace orch::cli {

struct SpecModelFile {
  std::string as_written;  // the spec's path
  std::string path;        // where it is
  std::string sha256;      // what the spec declares (lowercase hex)
  std::string field;       // "model.sha256", "model.variants.q8_0.sha256"
};

// The files of `spec`'s model resolved with `reader` (the rules of its text files,
// cli/files.h). A missing one is left out and, when `say_missing`, said on stdout after
// `who`; a refused one is an error.
Result<std::vector<SpecModelFile>> LocateSpecModelFiles(const planner::Spec& spec,
                                                        const FileSourceReader& reader,
                                                        const std::string& who, bool say_missing);

// One line per file whose content's SHA-256 is not the declared one, naming the file,
// both hashes and the field ("" when every file matches). Hashes through the CLI's hash
// cache (cli/hash_cache_file.h), so a file is read again only when it changed.
std::string ModelHashMismatches(const std::vector<SpecModelFile>& files);

// ModelHashMismatches of the model files `spec` names, each line after `who` (e.g.
// "orch submit: "); "" when every file found matches, or none can be located.
std::string SpecModelMismatchLines(const planner::Spec& spec, const FileSourceReader& reader,
                                   const std::string& who);

}  // namespace orch::cli
