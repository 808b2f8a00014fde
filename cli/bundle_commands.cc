#include "cli/bundle_commands.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bundle/result_bundle.h"
#include "cli/client_commands.h"
#include "cli/command.h"
#include "cli/files.h"
#include "protocol/identity_key.h"
#include "store/rocksdb_store.h"

namespace orch::cli {
namespace {

// The largest bundle file orch reads (the store import itself has no other bound).
constexpr std::uint64_t kMaxBundleFileBytes = std::uint64_t{4} << 30;

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct ExportOptions {
  std::string experiment;
  std::vector<std::string> cells;
  double valid_days = 30;
  std::string output;
  ClientOptions client;
};

int RunExport(const ExportOptions& options) {
  if (options.valid_days <= 0) {
    std::cerr << "orch export: --valid-days must be above 0, got " << options.valid_days << "\n";
    return kExitInvalidInput;
  }
  ClientOptions client = options.client;
  protocol::ExportRequest request{options.experiment, options.cells,
                                  static_cast<uint64_t>(options.valid_days * 86'400'000.0)};
  Result<protocol::Message> reply = Request(client, request);
  if (!reply.ok()) {
    std::cerr << "orch export: " << reply.status().message() << "\n";
    return kExitError;
  }
  const auto* answer = std::get_if<protocol::ExportReply>(&*reply);
  if (answer == nullptr || !answer->ok) {
    std::string why = answer != nullptr ? answer->message
                      : std::holds_alternative<protocol::CommandReply>(*reply)
                          ? std::get<protocol::CommandReply>(*reply).message
                          : std::string("unexpected ") + protocol::MessageName(*reply);
    std::cerr << "orch export: " << why << "\n";
    return kExitError;
  }
  Result<bundle::PlanBundle> plan = bundle::ReadPlanBundle(answer->bundle, options.output);
  if (!plan.ok()) {
    std::cerr << "orch export: the coordinator sent a bundle that does not read: "
              << plan.status().message() << "\n";
    return kExitError;
  }
  if (Status written = WriteFileAtomically(options.output, answer->bundle); !written.ok()) {
    std::cerr << "orch export: " << written.message() << "\n";
    return kExitError;
  }
  std::cout << "wrote " << options.output << ": " << plan->job_ids.size() << " jobs of "
            << plan->experiment << " (" << plan->cells.size() << " cells), signed by "
            << plan->coordinator.name << ", valid for " << options.valid_days << " days (nonce "
            << plan->nonce << ")\n"
            << "a contributor runs it with: orch run --bundle " << options.output
            << " --key KEY.key_secret\n";
  return kExitOk;
}

struct ImportOptions {
  std::vector<std::string> files;
  std::string data_dir;      // offline: the stopped coordinator's data directory
  std::string own_key;       // offline: the coordinator's secret key file
  std::string allowed_keys;  // offline: its allowed-keys folder
  std::uint64_t max_bundle_bytes = bundle::kDefaultMaxBundleBytes;  // offline: inflated, at most
  ClientOptions client;
};

// Imports one file into a store the command opened itself.
int ImportOffline(store::Store& store, const bundle::ImportContext& context,
                  const std::string& file) {
  Result<std::string> bytes = ReadRegularFile(file, kMaxBundleFileBytes);
  if (!bytes.ok()) {
    std::cerr << "orch import: " << bytes.status().message() << "\n";
    return kExitInvalidInput;
  }
  Result<bundle::ImportResult> result = Status(StatusCode::kInternal, "not imported");
  try {
    result = bundle::ImportResultBundle(store, *bytes, file, context);
  } catch (const std::bad_alloc&) {
    result =
        Status(StatusCode::kInternal, "result bundle " + file + ": out of memory while reading it");
  }
  if (!result.ok()) {
    std::cerr << "orch import: refused, nothing stored: " << result.status().message() << "\n";
    return kExitError;
  }
  std::cout << file << ": " << bundle::DescribeImport(*result) << "\n";
  return kExitOk;
}

int RunImportOffline(const ImportOptions& options) {
  if (options.own_key.empty() || options.allowed_keys.empty()) {
    std::cerr << "orch import: --data-dir needs --own-key (the coordinator's secret key file) "
                 "and --allowed-keys (its folder of trusted keys)\n";
    return kExitInvalidInput;
  }
  Result<protocol::SecretIdentity> own = protocol::ReadSecretKeyFile(options.own_key);
  Result<std::vector<protocol::PublicIdentity>> allowed =
      protocol::ReadAllowedKeys(options.allowed_keys);
  for (const Status& s : {own.status(), allowed.status()}) {
    if (!s.ok()) {
      std::cerr << "orch import: " << s.message() << "\n";
      return kExitInvalidInput;
    }
  }
  std::vector<std::string> dropped;
  std::string store_path = store::RocksDbPathInDataDir(options.data_dir);
  Result<std::unique_ptr<store::Store>> store =
      store::OpenRocksDbStore(store_path, {.dropped = &dropped});
  for (const std::string& what : dropped) {
    std::cerr << "orch import: warning: store " << store_path << ": " << what << "\n";
  }
  if (!store.ok()) {
    std::cerr << "orch import: " << store.status().message()
              << " (is its coordinator running? then import without --data-dir)\n";
    return kExitError;
  }
  bundle::ImportContext context;
  for (const protocol::PublicIdentity& key : *allowed) {
    (key.role == "contributor" ? context.trusted : context.other_roles).push_back(key);
  }
  context.trust_hint = "check with the contributor that this is their key, then: cp {name}.key " +
                       options.allowed_keys +
                       "/ (the public file `orch keygen {name} "
                       "--role contributor` made on the rig)";
  context.coordinator_key = own->identity.sign_public;
  context.now_ms = WallNowMs();
  context.max_bundle_bytes = options.max_bundle_bytes;
  int worst = kExitOk;
  for (const std::string& file : options.files) {
    worst = std::max(worst, ImportOffline(**store, context, file));
  }
  return worst;
}

// Sends one file to the coordinator, in parts when it is larger than one message; the
// reply to the last part (or to the only one) is the import's outcome.
Result<protocol::Message> SendBundle(const ClientOptions& options, const std::string& file,
                                     const std::string& bytes) {
  ClientOptions client = options;
  client.timeout_s = std::max(client.timeout_s, 60);
  return RequestInParts(
      client, bytes,
      [&file](FilePart part) -> protocol::Message {
        return protocol::ImportRequest{std::move(part.bytes), file, std::move(part.upload_id),
                                       part.offset, part.total_size};
      },
      [&file](std::uint64_t sent, std::uint64_t total) {
        std::cerr << "orch import: " << file << ": sent " << (sent >> 20) << " of " << (total >> 20)
                  << " MiB" << std::endl;
      });
}

int RunImport(const ImportOptions& options) {
  if (!options.data_dir.empty()) return RunImportOffline(options);
  int worst = kExitOk;
  for (const std::string& file : options.files) {
    Result<std::string> bytes = ReadRegularFile(file, kMaxBundleFileBytes);
    if (!bytes.ok()) {
      std::cerr << "orch import: " << bytes.status().message() << "\n";
      worst = std::max(worst, kExitInvalidInput);
      continue;
    }
    Result<protocol::Message> reply = SendBundle(options.client, file, *bytes);
    const auto* answer = reply.ok() ? std::get_if<protocol::CommandReply>(&*reply) : nullptr;
    if (answer == nullptr) {
      std::cerr << "orch import: " << file << ": "
                << (reply.ok() ? "unexpected reply" : reply.status().message()) << "\n";
      worst = std::max(worst, kExitError);
    } else if (!answer->ok) {
      std::cerr << "orch import: " << file << ": refused, nothing stored: " << answer->message
                << "\n";
      worst = std::max(worst, kExitError);
    } else {
      std::cout << file << ": " << answer->message << "\n";
    }
  }
  return worst;
}

}  // namespace

void RegisterExportCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ExportOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a plan bundle for contributors' home rigs (docs/bundles.md): the experiment's\n"
      "plan (or only some cells), a nonce and an expiry, signed by the coordinator's key.\n"
      "The coordinator must run with --key. Exit status: 0 written, 1 refused or\n"
      "unreachable, 2 invalid arguments.");
  cmd->add_option("EXPERIMENT", options->experiment, "experiment name")->required();
  cmd->add_option("--cells", options->cells,
                  "only these cells (labels as orch status shows them: baseline, kv=q8_0)")
      ->delimiter(',');
  cmd->add_option("--valid-days", options->valid_days,
                  "results of it are accepted for this many days (default 30)");
  cmd->add_option("-o,--output", options->output, "the bundle file to write")->required();
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] { exit_code = RunExport(*options); });
}

void RegisterImportCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ImportOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Import contributors' result bundles (docs/bundles.md): each is verified (signature\n"
      "of a trusted contributor key, every content hash, a plan bundle this coordinator\n"
      "issued and that has not expired, sequence number) and stored in one write, or\n"
      "refused with nothing stored. Through the running coordinator, or with --data-dir\n"
      "into a stopped one's store. Importing a bundle again changes nothing. Exit status:\n"
      "0 every file imported (or already was), 1 one was refused, 2 invalid arguments.");
  cmd->add_option("FILE", options->files, "result bundle files")->required();
  cmd->add_option("--data-dir", options->data_dir,
                  "import into this stopped coordinator's store instead (needs --own-key and "
                  "--allowed-keys)");
  cmd->add_option("--own-key", options->own_key, "with --data-dir: the coordinator's secret key");
  cmd->add_option("--allowed-keys", options->allowed_keys,
                  "with --data-dir: the coordinator's folder of admitted keys (contributor "
                  "keys there are trusted)");
  cmd->add_option("--max-bundle-bytes", options->max_bundle_bytes,
                  "with --data-dir: refuse a bundle whose blobs inflate to more than this "
                  "(default 1 GiB; the coordinator's own limit is its max_bundle_bytes)")
      ->check(CLI::Range(std::uint64_t{1} << 20, bundle::kMaxBlobBytes * bundle::kMaxBlobs));
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] { exit_code = RunImport(*options); });
}

}  // namespace orch::cli
