#include "cli/fingerprint_command.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/files.h"
#include "cli/hash_cache_file.h"
#include "fingerprint/fingerprint_json.h"
#include "fingerprint/collect.h"
#include "fingerprint/diff.h"
#include "fingerprint/fingerprint_text.h"
#include "fingerprint/libgit2_commit_resolver.h"
#include "fingerprint/memory_hash_cache.h"
#include "fingerprint/posix_command_runner.h"
#include "store/rocksdb_store.h"

namespace orch::cli {
namespace {

namespace fp = orch::fingerprint;

struct FingerprintOptions {
  bool json = false;
  std::vector<std::string> drivers;       // NAME=EXECUTABLE
  std::vector<std::string> checkouts;     // [NAME=]DIR
  std::vector<std::string> backend_dirs;  // [NAME=]DIR
  std::vector<std::string> models;
  std::string hash_cache;  // empty: the default location
};

struct DiffOptions {
  std::string a;
  std::string b;
  bool json = false;
  std::string data_dir;  // where ids that are not files are looked up
};

// "NAME=VALUE" -> {NAME, VALUE}; a plain VALUE (or one whose prefix holds '/') -> {"", VALUE}.
std::pair<std::string, std::string> SplitNamed(const std::string& text) {
  auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 ||
      text.substr(0, equals).find('/') != std::string::npos) {
    return {"", text};
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

// The engine `name` names, or the only engine when `name` is empty; creates a named one.
Result<fp::EngineSpec*> EngineFor(std::vector<fp::EngineSpec>& engines, const std::string& name,
                                  const std::string& flag) {
  if (name.empty()) {
    if (engines.size() == 1) return &engines.front();
    return InvalidArgument(flag + " without NAME= needs exactly one --driver (" +
                           std::to_string(engines.size()) + " given)");
  }
  for (fp::EngineSpec& engine : engines) {
    if (engine.name == name) return &engine;
  }
  engines.push_back({.name = name});
  return &engines.back();
}

Result<std::vector<fp::EngineSpec>> BuildEngineSpecs(const FingerprintOptions& options) {
  std::vector<fp::EngineSpec> engines;
  for (const std::string& driver : options.drivers) {
    auto [name, executable] = SplitNamed(driver);
    if (name.empty() || executable.empty()) {
      return InvalidArgument("--driver wants NAME=EXECUTABLE, got \"" + driver + "\"");
    }
    for (const fp::EngineSpec& engine : engines) {
      if (engine.name == name) return InvalidArgument("--driver " + name + " given twice");
    }
    engines.push_back({.name = name, .executable = AbsolutePath(executable)});
  }
  for (const std::string& checkout : options.checkouts) {
    auto [name, dir] = SplitNamed(checkout);
    ORCH_ASSIGN_OR_RETURN(fp::EngineSpec * engine, EngineFor(engines, name, "--checkout"));
    engine->checkouts.push_back(AbsolutePath(dir));
  }
  for (const std::string& backend : options.backend_dirs) {
    auto [name, dir] = SplitNamed(backend);
    ORCH_ASSIGN_OR_RETURN(fp::EngineSpec * engine, EngineFor(engines, name, "--backend-dir"));
    engine->backend_dir = AbsolutePath(dir);
  }
  return engines;
}

int RunFingerprint(const FingerprintOptions& options) {
  Result<std::vector<fp::EngineSpec>> engines = BuildEngineSpecs(options);
  if (!engines.ok()) {
    std::cerr << "orch fingerprint: " << engines.status().message() << "\n";
    return kExitInvalidInput;
  }
  std::string path =
      EnvOrEmpty("PATH").empty() ? "/usr/local/bin:/usr/bin:/bin" : EnvOrEmpty("PATH");
  auto runner = fp::MakePosixCommandRunner(
      {.search_path = path, .environment = {"PATH=" + path, "LC_ALL=C"}});
  auto resolver = fp::MakeLibgit2CommitResolver();
  bool hashes = !options.models.empty() || !engines->empty();
  std::unique_ptr<fp::HashCache> cache = hashes
                                             ? OpenHashCache(options.hash_cache, "orch fingerprint")
                                             : std::make_unique<fp::MemoryHashCache>();
  fp::FileHasher hasher(*cache);
  fp::RootFs root("/");
  fp::HostProbe host(root);
  fp::GpuProbe gpus(root, *runner);
  fp::EngineProbe engine_probe(hasher, *resolver);
  std::vector<std::string> models;
  for (const std::string& model : options.models) models.push_back(AbsolutePath(model));
  fp::Fingerprint fingerprint = fp::CollectFingerprint(host, gpus, engine_probe, hasher,
                                                       {.engines = *engines, .models = models});
  if (options.json) {
    std::cout << fp::ToCanonicalJson(fingerprint) << "\n";
  } else {
    std::cout << fp::RenderFingerprintText(fingerprint);
  }
  return kExitOk;
}

// A fingerprint file, or with a data directory an id stored by the coordinator.
Result<std::string> FingerprintText(const std::string& name, const std::string& data_dir,
                                    std::unique_ptr<store::Store>& db) {
  if (data_dir.empty() || std::filesystem::exists(name)) return ReadFile(name);
  if (!db) {
    store::RocksDbOptions options;
    options.create_if_missing = false;
    Result<std::unique_ptr<store::Store>> opened =
        store::OpenRocksDbStore(store::RocksDbPathInDataDir(data_dir), options);
    if (!opened.ok()) return opened.status();
    db = std::move(opened).value();
  }
  Result<std::string> stored = db->GetFingerprint(name);
  if (!stored.ok()) {
    return NotFound(name + " is neither a file nor a fingerprint stored in " + data_dir);
  }
  return stored;
}

Result<fp::Fingerprint> LoadFingerprint(const std::string& path, const std::string& data_dir,
                                        std::unique_ptr<store::Store>& db) {
  Result<std::string> text = FingerprintText(path, data_dir, db);
  if (!text.ok()) return text.status();
  Result<fp::Fingerprint> fingerprint = fp::ParseFingerprintJson(*text);
  if (!fingerprint.ok()) return fingerprint.status().WithContext(path);
  return fingerprint;
}

int RunDiff(const DiffOptions& options) {
  std::unique_ptr<store::Store> db;  // opened on the first stored id
  Result<fp::Fingerprint> a = LoadFingerprint(options.a, options.data_dir, db);
  Result<fp::Fingerprint> b = a.ok() ? LoadFingerprint(options.b, options.data_dir, db) : a;
  for (const Result<fp::Fingerprint>* loaded : {&a, &b}) {
    if (loaded->ok()) continue;
    std::cerr << "orch fingerprint diff: " << loaded->status().message() << "\n";
    return kExitInvalidInput;
  }
  fp::FingerprintDiff diff = fp::Diff(*a, *b);
  std::cout << (options.json ? fp::RenderDiffJson(diff) + "\n" : fp::RenderDiffText(diff));
  return kExitOk;
}

void RegisterDiff(CLI::App& fingerprint, int& exit_code) {
  auto options = std::make_shared<DiffOptions>();  // shared with the callback below
  CLI::App* cmd = fingerprint.add_subcommand(
      "diff",
      "List the fields two fingerprints differ in, grouped (hardware, gpu_driver, engine,\n"
      "model), with both values. A and B are files written by `orch fingerprint --json`.\n"
      "Exit status: 0 compared (identical or not), 2 unreadable or malformed input.");
  cmd->add_option("A", options->a, "first fingerprint: a JSON file, or a stored id with --data-dir")
      ->required();
  cmd->add_option("B", options->b,
                  "second fingerprint: a JSON file, or a stored id with --data-dir")
      ->required();
  cmd->add_option("--data-dir", options->data_dir,
                  "a coordinator's data directory: look up ids (fp-...) in its store");
  cmd->add_flag("--json", options->json, "print the differences as JSON");
  cmd->callback([options, &exit_code] { exit_code = RunDiff(*options); });
}

}  // namespace

void RegisterFingerprintCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<FingerprintOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "fingerprint",
      "Print what is true of this machine and its engines: CPU and flags, GPUs, driver and\n"
      "CUDA versions, kernel, glibc, container/VM, engine executables, backend libraries,\n"
      "source checkouts (git) and model hashes, with a stable id. Works offline; facts that\n"
      "cannot be read are shown as unknown with the reason. See docs/fingerprint.md.");
  cmd->add_flag("--json", options->json, "print canonical JSON (input to `fingerprint diff`)");
  cmd->add_option("--driver", options->drivers,
                  "NAME=EXECUTABLE: an engine driver whose executable is hashed");
  cmd->add_option("--checkout", options->checkouts,
                  "[NAME=]DIR: a source checkout of engine NAME (commit, branch, describe, "
                  "dirty); NAME may be left out when exactly one --driver is given");
  cmd->add_option("--backend-dir", options->backend_dirs,
                  "[NAME=]DIR: folder whose backend libraries (lib*.so...) are hashed");
  cmd->add_option("--model", options->models, "FILE: a model file to hash (SHA-256)");
  cmd->add_option("--hash-cache", options->hash_cache,
                  "FILE: where file hashes are cached by (path, size, mtime, inode); "
                  "default $XDG_CACHE_HOME/orch/file-sha256.tsv or ~/.cache/orch/...");
  RegisterDiff(*cmd, exit_code);
  cmd->callback([options, cmd, &exit_code] {
    if (cmd->get_subcommand("diff")->parsed()) return;  // the diff callback did the work
    exit_code = RunFingerprint(*options);
  });
}

}  // namespace orch::cli
