#include "drivers/llamacpp/model_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "base/sha256.h"
#include "fingerprint/file_hasher.h"
#include "model/atomic_file.h"
#include "model/free_space.h"
#include "drivers/llamacpp/llama_types.h"
#include "gguf.h"
#include "llama.h"

namespace orch::drivers::llamacpp {
namespace {

namespace fs = std::filesystem;

struct GgufDeleter {
  void operator()(gguf_context* context) const { gguf_free(context); }
};

std::string CacheDir(const JobSettings& settings) {
  if (!settings.cache_dir.empty()) return settings.cache_dir;
  return (fs::temp_directory_path() / "orch-model-cache").string();
}

Result<std::string> ExpectedSha256(const JobSettings& settings) {
  const std::string& requirement = settings.model_requirement;
  if (requirement.rfind("sha256:", 0) != 0) return std::string();
  std::string expected = requirement.substr(7);
  if (!IsSha256Hex(expected)) {
    return InvalidArgument("model.requirement: \"" + requirement +
                           "\" is not sha256: followed by 64 hex digits");
  }
  for (char& c : expected)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  return expected;
}

constexpr char kSidecarSuffix[] = ".sha256";

// The hash a sidecar records (`sha256sum` format), if well-formed.
std::optional<std::string> ReadSidecar(const std::string& path) {
  std::ifstream in(path + kSidecarSuffix);
  std::string hex;
  if (!(in >> hex) || !IsSha256Hex(hex)) return std::nullopt;
  return hex;
}

// The SHA-256 of the cached quantized file `path` when its sidecar vouches for
// it. A file without a sidecar, or whose bytes no longer match it (modified in
// place, truncated, bit rot), is removed, to be quantized again.
// Read only when `hashes` has no entry for its current identity.
Result<std::optional<std::string>> VerifiedCachedFile(const std::string& path,
                                                      fingerprint::HashCache& hashes) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return std::optional<std::string>();
  std::optional<std::string> recorded = ReadSidecar(path);
  ORCH_ASSIGN_OR_RETURN(fingerprint::FileHash hash, fingerprint::FileHasher(hashes).Hash(path));
  const std::string& actual = hash.sha256;
  if (recorded && *recorded == actual) return std::optional<std::string>(actual);
  std::string why = recorded ? "has sha256 " + actual + ", its sidecar records " + *recorded
                             : std::string("has no readable .sha256 sidecar");
  std::fprintf(stderr, "model cache: %s %s; quantizing it again\n", path.c_str(), why.c_str());
  fs::remove(path, error);
  return std::optional<std::string>();
}

}  // namespace

Result<std::string> GgufWeightType(const std::string& path) {
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  std::unique_ptr<gguf_context, GgufDeleter> gguf(gguf_init_from_file(path.c_str(), params));
  if (gguf == nullptr) return InvalidArgument("model " + path + " is not a readable GGUF file");
  std::int64_t key = gguf_find_key(gguf.get(), "general.file_type");
  if (key < 0 || gguf_get_kv_type(gguf.get(), key) != GGUF_TYPE_UINT32) return std::string();
  return FileTypeName(gguf_get_val_u32(gguf.get(), key));
}

Status QuantizeModel(const std::string& in, const std::string& out, const std::string& type,
                     int threads) {
  ORCH_ASSIGN_OR_RETURN(llama_ftype ftype, FileType(type));
  std::error_code error;
  if (!fs::is_regular_file(in, error)) return InvalidArgument("quantize: no model file " + in);
  ORCH_ASSIGN_OR_RETURN(std::string source_type, GgufWeightType(in));  // a GGUF file at all?
  fs::path target(out);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), error);
  // Before llama.cpp writes a byte: the variant (estimated from above) must fit.
  std::uint64_t source_bytes = fs::file_size(in, error);
  if (error) return IoError("quantize: size of " + in + ": " + error.message());
  std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  ORCH_RETURN_IF_ERROR(model::CheckFreeSpace(
      dir, "the " + type + " variant " + target.filename().string(),
      model::QuantizedSizeBound(source_bytes, source_type, type), model::StatvfsFreeSpace));
  std::string temp = out + ".tmp." + std::to_string(getpid());
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.ftype = ftype;
  params.nthread = threads;
  if (llama_model_quantize(in.c_str(), temp.c_str(), &params) != 0) {
    fs::remove(temp, error);
    return Internal("llama_model_quantize " + in + " -> " + type + " failed (see the log above)");
  }
  fs::rename(temp, out, error);
  if (error) {
    fs::remove(temp, error);
    return IoError("quantize: cannot move the result to " + out + ": " + error.message());
  }
  return Status::Ok();
}

Result<PreparedModel> PrepareModel(const JobSettings& settings, const std::string& engine_release,
                                   fingerprint::HashCache& hashes) {
  if (settings.model_path.empty()) {
    return NotFound("model \"" + settings.model_requirement +
                    "\" is not on this agent (searched its model_dirs)");
  }
  std::error_code error;
  if (!fs::is_regular_file(settings.model_path, error))
    return NotFound("model file " + settings.model_path + " does not exist");
  ORCH_ASSIGN_OR_RETURN(std::string expected, ExpectedSha256(settings));
  PreparedModel model{
      settings.model_path, settings.model_sha256, settings.model_type, "", false, ""};
  // The agent sends the hash it resolved the file by (from its hash cache, keyed
  // by the file's identity); reading a multi-GB model again would double the
  // I/O. Without one, the driver hashes the file itself.
  if (model.sha256.empty()) {
    ORCH_ASSIGN_OR_RETURN(fingerprint::FileHash hash,
                          fingerprint::FileHasher(hashes).Hash(model.path));
    model.sha256 = hash.sha256;
  }
  if (!expected.empty() && model.sha256 != expected) {
    return Status(StatusCode::kDataLoss, "model " + model.path + " has sha256 " + model.sha256 +
                                             ", the job requires " + expected);
  }
  // The plan usually knows the type; reading the metadata costs a parse of the
  // whole vocabulary, which the model load repeats.
  if (model.type.empty()) {
    ORCH_ASSIGN_OR_RETURN(model.type, GgufWeightType(model.path));
  }
  model.resolved_type = model.type;
  if (settings.quant.empty() || settings.quant == model.type) return model;
  if (model.type.empty()) {
    return InvalidArgument("model " + model.path +
                           " does not record its weight type, so it cannot be "
                           "quantized to quant = \"" +
                           settings.quant + "\"; pin the file as model.variants." + settings.quant);
  }
  std::string name =
      model.sha256.substr(0, 16) + "-" + settings.quant + "-" + engine_release + ".gguf";
  std::string out = (fs::path(CacheDir(settings)) / name).string();
  PreparedModel quantized{out, "", settings.quant, model.path, false, model.type};
  ORCH_ASSIGN_OR_RETURN(std::optional<std::string> cached, VerifiedCachedFile(out, hashes));
  if (cached) {
    quantized.sha256 = *cached;
    quantized.cache_hit = true;
    return quantized;
  }
  ORCH_RETURN_IF_ERROR(
      QuantizeModel(model.path, out, settings.quant, settings.threads > 0 ? settings.threads : 0));
  // Hashed once, as it is made: the hash cache keeps it for the file's identity.
  ORCH_ASSIGN_OR_RETURN(fingerprint::FileHash made, fingerprint::FileHasher(hashes).Hash(out));
  quantized.sha256 = made.sha256;
  std::string sidecar = quantized.sha256 + "  " + fs::path(out).filename().string() + "\n";
  ORCH_RETURN_IF_ERROR(model::WriteFileAtomically(out + kSidecarSuffix, sidecar).status());
  return quantized;
}

}  // namespace orch::drivers::llamacpp
