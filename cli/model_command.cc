#include "cli/model_command.h"

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "cli/command.h"
#include "cli/driver_lookup.h"
#include "cli/hash_cache_file.h"
#include "fingerprint/file_hasher.h"
#include "fingerprint/memory_hash_cache.h"
#include "model/free_space.h"
#include "model/synth_model.h"
#include "model/synth_recipe.h"
#include "cli/files.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;
namespace fp = orch::fingerprint;

constexpr std::string_view kDefaultRelease = "v0.4.0";
constexpr int kDriverInvalidInput = 2;  // the driver's exit status for a bad input
constexpr int kDriverEngineError = 3;   // ... and for an engine failure

struct SynthOptions {
  std::string recipe;
  std::string output;
  std::uint64_t max_bytes = model::kDefaultSynthMaxBytes;
  bool json = false;
};

struct HashOptions {
  std::string file;
  std::string cache;  // empty: the default location
  bool json = false;
};

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;
  std::string engine;  // a llama.cpp release, e.g. v0.4.0 or llama.cpp@b8390
  std::string driver;  // an explicit driver executable
  bool json = false;
};

// Prints one model file: a key/value block, or one JSON object with --json.
void PrintFile(const nlohmann::ordered_json& fields, bool json) {
  if (json) {
    std::cout << fields.dump() << "\n";
    return;
  }
  for (const auto& [key, value] : fields.items()) {
    std::cout << key << std::string(key.size() < 8 ? 8 - key.size() : 1, ' ')
              << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
  }
}

int Fail(const std::string& command, const std::string& message, int code) {
  std::cerr << command << ": " << message << "\n";
  return code;
}

int RunSynth(const SynthOptions& options) {
  const std::string command = "orch model synth";
  Result<model::SynthRecipe> recipe = model::ParseSynthRecipe(options.recipe);
  if (!recipe.ok()) {
    return Fail(command,
                "recipe \"" + options.recipe + "\": " + recipe.status().message() +
                    " (grammar: docs/spec.md, [model] synth)",
                kExitInvalidInput);
  }
  if (Status size = model::CheckSynthModelSize(*recipe, options.max_bytes, "--max-bytes");
      !size.ok()) {
    return Fail(command, size.message(), kExitInvalidInput);
  }
  std::string path = AbsolutePath(options.output);
  if (std::error_code ec; !fs::is_directory(fs::path(path).parent_path(), ec)) {
    return Fail(command,
                "output " + options.output + ": folder " + fs::path(path).parent_path().string() +
                    " does not exist; create it or choose another -o FILE",
                kExitInvalidInput);
  }
  if (Status space = model::CheckFreeSpace(
          fs::path(path).parent_path().string(), fs::path(path).filename().string(),
          model::SynthModelBytes(*recipe), model::StatvfsFreeSpace);
      !space.ok()) {
    return Fail(command, space.message(), kExitError);
  }
  Result<model::FileDigest> digest = model::WriteSynthModelHashed(*recipe, path);
  if (!digest.ok()) return Fail(command, digest.status().message(), kExitError);
  PrintFile({{"path", path},
             {"bytes", digest->bytes},
             {"sha256", digest->sha256},
             {"recipe", model::CanonicalRecipe(*recipe)}},
            options.json);
  return kExitOk;
}

int RunHash(const HashOptions& options) {
  const std::string command = "orch model hash";
  std::string path = AbsolutePath(options.file);
  std::unique_ptr<fp::HashCache> cache = OpenHashCache(options.cache, command);
  fp::FileHasher hasher(*cache);
  Result<fp::FileHash> hash = hasher.Hash(path);
  if (!hash.ok()) {
    bool missing = hash.status().code() == StatusCode::kNotFound;
    return Fail(command, hash.status().message() + (missing ? "; give an existing file" : ""),
                missing ? kExitInvalidInput : kExitError);
  }
  if (options.json) {
    PrintFile({{"path", path}, {"bytes", hash->size}, {"sha256", hash->sha256}}, true);
  } else {
    std::cout << hash->sha256 << "  " << path << "\n";  // the format of sha256sum
  }
  return kExitOk;
}

// "v0.4.0" from "v0.4.0" or "llama.cpp@v0.4.0"; nullopt for anything that is not a
// plain release name (it becomes part of a file name).
std::optional<std::string> ReleaseName(std::string engine) {
  if (engine.starts_with("llama.cpp@")) engine = engine.substr(10);
  if (engine.empty() || engine.front() == '.') return std::nullopt;
  for (char c : engine) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return std::nullopt;
    }
  }
  return engine;
}

// The driver executable for `options`, or the message saying what to do.
Result<std::string> FindDriver(const QuantizeOptions& options) {
  std::error_code ec;
  if (!options.driver.empty()) {
    if (!fs::is_regular_file(options.driver, ec)) {
      return InvalidArgument("--driver " + options.driver +
                             ": no such file; give the path of a llama.cpp driver executable");
    }
    return AbsolutePath(options.driver);
  }
  std::string engine = options.engine.empty() ? std::string(kDefaultRelease) : options.engine;
  std::optional<std::string> release = ReleaseName(engine);
  if (!release) {
    return InvalidArgument("--engine \"" + engine +
                           "\": expected a llama.cpp release such as v0.4.0 or b8390");
  }
  std::vector<std::string> candidates = DefaultDriverCandidates(ExecutableDir(), *release);
  for (const std::string& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return InvalidArgument("no driver for llama.cpp " + *release + ": looked for " +
                         JoinPlaces(candidates) +
                         "; build it (drivers/llamacpp) or pass --driver EXE");
}

bool IsTypeName(const std::string& type) {
  if (type.empty()) return false;
  for (char c : type) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Checks the arguments before anything runs; the message names the value.
Status CheckQuantizeArguments(const QuantizeOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(options.input, ec)) {
    return InvalidArgument("input " + options.input +
                           ": no such file; give an existing GGUF file (`orch model synth` "
                           "writes one)");
  }
  fs::path out_dir = fs::path(AbsolutePath(options.output)).parent_path();
  if (!fs::is_directory(out_dir, ec)) {
    return InvalidArgument("output " + options.output + ": folder " + out_dir.string() +
                           " does not exist; create it or choose another OUT");
  }
  if (fs::equivalent(options.input, options.output, ec)) {
    return InvalidArgument("output " + options.output + " is the input file; choose another OUT");
  }
  if (!IsTypeName(options.type)) {
    return InvalidArgument("TYPE \"" + options.type +
                           "\": expected a llama.cpp type name such as q4_0, q8_0, q4_k_m, "
                           "f16 or bf16");
  }
  return Status::Ok();
}

int RunQuantize(const QuantizeOptions& options) {
  const std::string command = "orch model quantize";
  if (Status checked = CheckQuantizeArguments(options); !checked.ok()) {
    return Fail(command, checked.message(), kExitInvalidInput);
  }
  Result<std::string> driver = FindDriver(options);
  if (!driver.ok()) return Fail(command, driver.status().message(), kExitInvalidInput);
  std::string input = AbsolutePath(options.input);
  std::string output = AbsolutePath(options.output);
  Result<int> exit = RunToExit({*driver, "quantize", input, output, options.type});
  if (!exit.ok()) return Fail(command, exit.status().message(), kExitError);
  std::string what = "quantize " + input + " to " + options.type + " with " + *driver;
  if (*exit == kDriverInvalidInput) {
    return Fail(command, what + ": rejected the input (exit 2; the driver's reason is above)",
                kExitInvalidInput);
  }
  if (*exit == kDriverEngineError) {
    return Fail(command, what + ": the engine failed (exit 3; its message is above)", kExitError);
  }
  if (*exit != 0) {
    return Fail(command, what + ": the driver failed with exit status " + std::to_string(*exit),
                kExitError);
  }
  fp::MemoryHashCache cache;
  Result<fp::FileHash> hash = fp::FileHasher(cache).Hash(output);
  if (!hash.ok()) {
    return Fail(command, what + ": the driver succeeded but " + hash.status().message(),
                kExitError);
  }
  PrintFile({{"path", output},
             {"bytes", hash->size},
             {"sha256", hash->sha256},
             {"type", options.type},
             {"driver", *driver}},
            options.json);
  return kExitOk;
}

void RegisterSynth(CLI::App& model, int& exit_code) {
  auto options = std::make_shared<SynthOptions>();  // shared with the callback below
  CLI::App* cmd = model.add_subcommand(
      "synth",
      "Write the generated llama-architecture GGUF of a synth recipe (byte-identical on\n"
      "every machine; see docs/models.md) and print its path, size and SHA-256.\n"
      "Refused before anything is written: a file over --max-bytes, or one that does not\n"
      "fit in the folder's free space with a margin.\n"
      "Exit status: 0 written, 1 the file could not be written (or does not fit), 2 invalid\n"
      "recipe or over --max-bytes.");
  cmd->add_option("RECIPE", options->recipe,
                  "[synth:]llama[:KEY=VALUE,...], e.g. llama:vocab=1024,embd=128 "
                  "(docs/spec.md)")
      ->required();
  cmd->add_option("-o,--output", options->output, "FILE: where to write the GGUF (atomically)")
      ->required();
  cmd->add_option("--max-bytes", options->max_bytes,
                  "the largest file written, in bytes (default 4294967296, 4 GiB)")
      ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX));
  cmd->add_flag("--json", options->json, "print {path, bytes, sha256, recipe} as JSON");
  cmd->callback([options, &exit_code] { exit_code = RunSynth(*options); });
}

void RegisterHash(CLI::App& model, int& exit_code) {
  auto options = std::make_shared<HashOptions>();  // shared with the callback below
  CLI::App* cmd = model.add_subcommand(
      "hash",
      "Print a file's SHA-256 (the `sha256` of a spec's [model]) as `HEX  PATH`. Hashes are\n"
      "cached by (path, size, mtime, inode, device): an unchanged file is not read again.\n"
      "Exit status: 0 printed, 1 unreadable, 2 no such file.");
  cmd->add_option("FILE", options->file, "the model file")->required();
  cmd->add_option("--cache", options->cache,
                  "FILE: the hash cache; default $XDG_CACHE_HOME/orch/file-sha256.tsv or "
                  "~/.cache/orch/file-sha256.tsv (shared with `orch fingerprint`)");
  cmd->add_flag("--json", options->json, "print {path, bytes, sha256} as JSON");
  cmd->callback([options, &exit_code] { exit_code = RunHash(*options); });
}

void RegisterQuantize(CLI::App& model, int& exit_code) {
  auto options = std::make_shared<QuantizeOptions>();  // shared with the callback below
  CLI::App* cmd = model.add_subcommand(
      "quantize",
      "Quantize a GGUF with a real llama.cpp build: runs `DRIVER quantize IN OUT TYPE`,\n"
      "whose messages appear on stderr, then prints OUT's path, size and SHA-256.\n"
      "Exit status: 0 written, 1 engine or driver failure, 2 invalid arguments or input.");
  cmd->add_option("IN", options->input, "the GGUF to quantize")->required();
  cmd->add_option("OUT", options->output, "where the quantized GGUF goes")->required();
  cmd->add_option("TYPE", options->type,
                  "q4_0, q8_0, q4_k_m, f16, bf16, ... (the engine's "
                  "names)")
      ->required();
  CLI::Option* engine = cmd->add_option(
      "--engine", options->engine,
      "RELEASE: the llama.cpp release whose driver runs (default v0.4.0), e.g. b8390; "
      "looked up as orch-driver-llamacpp-RELEASE next to orch, then in the build tree");
  cmd->add_option("--driver", options->driver, "EXE: the driver executable to run")
      ->excludes(engine);
  cmd->add_flag("--json", options->json, "print {path, bytes, sha256, type, driver} as JSON");
  cmd->callback([options, &exit_code] { exit_code = RunQuantize(*options); });
}

}  // namespace

void RegisterModelCommand(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "model",
      "Model files: generate a synth recipe's GGUF, hash a file, quantize with llama.cpp.\n"
      "See docs/models.md.");
  cmd->require_subcommand(1);
  RegisterSynth(*cmd, exit_code);
  RegisterHash(*cmd, exit_code);
  RegisterQuantize(*cmd, exit_code);
}

}  // namespace orch::cli
