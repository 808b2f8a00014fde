// The model file a job runs: checked against its SHA-256, and quantized to the
// coordinate's weight type with the linked engine when the resolved file has
// another type. Quantized files are cached in the job's cache_dir under a name
// made of the source's SHA-256, the type and the engine release, and written
// atomically (temp file + rename), so concurrent runs and crashes never leave a
// partial file under the final name. Each has a sidecar NAME.sha256 (written
// after it, `sha256sum` format); every reuse compares the file's hash with it: a
// file that does not match, or has no sidecar, is removed and quantized again.
// Hashes come through a HashCache keyed by the file's identity (with ctime;
// fingerprint/hash_cache.h), the agent's: a variant is read when it is made and
// again only when its identity changed (rewritten, corrupted by a write), so
// reuse costs a stat, not a read of the file.
#pragma once

#include <string>

#include "base/status.h"
#include "drivers/llamacpp/job_settings.h"
#include "fingerprint/hash_cache.h"

namespace orch::drivers::llamacpp {

// The weight type recorded in a GGUF file (general.file_type) as a quant name,
// "" when the file does not record one. kInvalidArgument when `path` is not a
// GGUF file.
Result<std::string> GgufWeightType(const std::string& path);

// Runs llama_model_quantize(in -> out, type), writing out atomically.
// kInvalidArgument for an unknown type or an unreadable input; kInternal when
// the engine fails.
Status QuantizeModel(const std::string& in, const std::string& out, const std::string& type,
                     int threads);

struct PreparedModel {
  std::string path;        // the file to load
  std::string sha256;      // of `path`
  std::string type;        // its weight type ("" when unknown)
  std::string source;      // the file it was quantized from; empty if none
  bool cache_hit = false;  // the quantized file already existed and matched its sidecar
  // The weight type of the job's own file (settings.model_path), "" when it
  // records none: what a later job of the same file and sha256 can pass as
  // settings.model_type instead of parsing the file's metadata again.
  std::string resolved_type;
};

// Errors before any engine work: kNotFound (no model path: model_missing),
// kDataLoss (a sha256: requirement whose file differs: sha256_mismatch),
// kInvalidArgument (not a GGUF file; unknown type to quantize from).
// `hashes` (borrowed) holds the hashes trusted by identity; the hashes of files
// read are added to it.
Result<PreparedModel> PrepareModel(const JobSettings& settings, const std::string& engine_release,
                                   fingerprint::HashCache& hashes);

}  // namespace orch::drivers::llamacpp
