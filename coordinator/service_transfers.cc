// CoordinatorService's transfers (coordinator_service.h): requests that arrive in parts
// (plans and result bundles above one frame, assembled by AddPart) and the bundle
// requests, which need the store and the keys rather than the pure core.
#include <algorithm>
#include <optional>
#include <string>

#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "coordinator/coordinator_service.h"

namespace orch::coordinator {
const CoordinatorService::UploadKind CoordinatorService::kPlanUpload{
    "plan", kMaxPlanBytes, kMaxPlanUploads,
    "split the experiment into smaller ones (fewer workloads, cells or repeats per spec)"};
const CoordinatorService::UploadKind CoordinatorService::kBundleUpload{
    "bundle", kMaxUploadBytes, kMaxUploads, "stop it and import with orch import --data-dir"};

bool CoordinatorService::WholePlan(const protocol::TransportEvent& event,
                                   protocol::Message& message, Millis now) {
  auto* submit = std::get_if<protocol::Submit>(&message);
  if (submit == nullptr || submit->upload_id.empty()) return true;
  std::optional<std::string> whole =
      AddPart(event,
              UploadPart{kPlanUpload, "", submit->upload_id, submit->offset, submit->total_size,
                         submit->plan_json},
              now);
  if (!whole) return false;
  message = protocol::Submit{std::move(*whole)};
  // Whether this key may submit it depends on its experiment, known only now.
  return Permitted(event, message, now);
}

namespace {

constexpr const char* kNoKey =
    "this coordinator has no key of its own (plain mode), so it can neither sign plan "
    "bundles nor check result bundles: start it with --key and --allowed-keys "
    "(docs/security.md)";

}  // namespace

void CoordinatorService::OnExport(const protocol::TransportEvent& event,
                                  const protocol::ExportRequest& request, Millis now) {
  if (!bundle_keys_.own) {
    SendMessage(event.peer, protocol::ExportReply{false, kNoKey, ""});
    return;
  }
  bundle::ExportOptions options{request.experiment, request.cells, now.count(),
                                static_cast<int64_t>(request.valid_for_ms)};
  Result<std::string> file = bundle::ExportPlanBundle(*store_, options, *bundle_keys_.own);
  if (!file.ok()) {
    SendMessage(event.peer,
                protocol::ExportReply{
                    false, "export " + request.experiment + ": " + file.status().message(), ""});
    return;
  }
  log_.info(fmt::runtime("exported a plan bundle of {} ({} bytes) to {}"), request.experiment,
            file->size(), event.user.empty() ? event.peer : event.user);
  SendMessage(event.peer, protocol::ExportReply{true, "plan bundle of " + request.experiment,
                                                std::move(*file)});
}

std::optional<std::string> CoordinatorService::AddPart(const protocol::TransportEvent& event,
                                                       const protocol::ImportRequest& part,
                                                       Millis now) {
  return AddPart(event,
                 UploadPart{kBundleUpload, part.name, part.upload_id, part.offset, part.total_size,
                            part.bundle},
                 now);
}

std::optional<std::string> CoordinatorService::AddPart(const protocol::TransportEvent& event,
                                                       const UploadPart& part, Millis now) {
  auto reply = [&](bool ok, const std::string& message) {
    SendMessage(event.peer, protocol::CommandReply{ok, message});
  };
  const UploadKind& kind = part.kind;
  std::string what =
      std::string(kind.what) + (part.name.empty() ? "" : " ") + std::string(part.name);
  // Idle uploads go first so that they do not count against the bound.
  std::erase_if(uploads_,
                [now](const auto& entry) { return now - entry.second.last > kUploadIdle; });
  // Keyed by the sender's key too, so that two keys' uploads of the same id never mix.
  std::string prefix = std::string(kind.what) + ":";
  std::string id = prefix + event.user + "/" + std::string(part.upload_id);
  auto it = uploads_.find(id);
  if (part.offset == 0) {
    if (part.total_size > kind.max_bytes) {
      reply(false, what + " is " + std::to_string((part.total_size + (1 << 20) - 1) >> 20) +
                       " MiB (" + std::to_string(part.total_size) + " bytes), above the " +
                       std::to_string(kind.max_bytes >> 20) +
                       " MiB the coordinator takes over the network: " + kind.past_bound);
      return std::nullopt;
    }
    std::size_t in_progress = std::count_if(uploads_.begin(), uploads_.end(), [&](const auto& e) {
      return e.first.starts_with(prefix);
    });
    if (it == uploads_.end() && in_progress >= kind.max_at_once) {
      reply(false, std::to_string(in_progress) + " " + kind.what +
                       " uploads are in progress; try again in a minute");
      return std::nullopt;
    }
    // A part at offset 0 starts the upload over, dropping what an earlier try sent.
    it = uploads_.insert_or_assign(id, Upload{"", part.total_size, now}).first;
  } else if (it == uploads_.end() || it->second.bytes.size() != part.offset ||
             it->second.total != part.total_size) {
    // Parts are appended, so each must start where the last one ended.
    uploads_.erase(id);
    reply(false, what + ": a part at byte " + std::to_string(part.offset) +
                     " came out of order or after its upload expired; send the file again");
    return std::nullopt;
  }
  it->second.bytes += part.bytes;
  it->second.last = now;
  if (it->second.bytes.size() < it->second.total) {
    reply(true, "received " + std::to_string(it->second.bytes.size()) + " of " +
                    std::to_string(it->second.total) + " bytes");
    return std::nullopt;
  }
  std::string whole = std::move(it->second.bytes);
  uploads_.erase(it);
  return whole;
}

void CoordinatorService::OnImport(const protocol::TransportEvent& event,
                                  const protocol::ImportRequest& request, Millis now) {
  auto reply = [&](bool ok, const std::string& message) {
    SendMessage(event.peer, protocol::CommandReply{ok, message});
  };
  if (!bundle_keys_.own) return reply(false, kNoKey);
  std::optional<std::string> assembled;
  if (!request.upload_id.empty()) {
    assembled = AddPart(event, request, now);
    if (!assembled) return;
  }
  const std::string& bundle_bytes = assembled ? *assembled : request.bundle;
  // Read at each import, so a key added to the folder is trusted without a restart.
  Result<std::vector<protocol::PublicIdentity>> allowed =
      protocol::ReadAllowedKeys(bundle_keys_.allowed_dir);
  if (!allowed.ok()) return reply(false, "read the trusted keys: " + allowed.status().message());
  bundle::ImportContext context;
  for (const protocol::PublicIdentity& key : *allowed) {
    (key.role == "contributor" ? context.trusted : context.other_roles).push_back(key);
  }
  context.trust_hint = "check with the contributor that this is their key, then: cp {name}.key " +
                       bundle_keys_.allowed_dir +
                       "/ (the public file `orch keygen {name} "
                       "--role contributor` made on the rig; no restart is needed)";
  context.coordinator_key = bundle_keys_.own->identity.sign_public;
  context.max_bundle_bytes = bundle_keys_.max_bundle_bytes;
  context.now_ms = now.count();
  auto role = policy_.roles.find(event.user);
  if (policy_.authenticated && (role == policy_.roles.end() || role->second != "admin")) {
    // A submitter imports only into the experiments it submitted.
    context.may_import = [this, user = event.user](const std::string& experiment) {
      auto owner = owners_.find(experiment);
      return owner != owners_.end() && owner->second == user;
    };
  }
  std::string name = request.name.empty() ? "(unnamed)" : request.name;
  // The import writes the store: under group commit, Commit() syncs it before the
  // reply goes out.
  unsynced_ = true;
  Result<bundle::ImportResult> result =
      bundle::ImportResultBundle(*store_, bundle_bytes, name, context);
  if (!result.ok()) {
    log_.warn(fmt::runtime("refused bundle {} from {}: {}"), name, event.peer,
              result.status().message());
    return reply(false, result.status().message());
  }
  log_.info(fmt::runtime("{}"), bundle::DescribeImport(*result));
  if (!result->duplicate) {
    // The jobs it completed must not be handed out: the core takes the store's word.
    Result<store::StoreState> state = store_->LoadState();
    if (state.ok()) {
      RestoreOwners(*state);
      Perform(core_.Restore(*state, now), now);
    } else {
      log_.error(fmt::runtime("reload state after an import: {}"), state.status().ToString());
      needs_resync_ = true;
    }
  }
  reply(true, bundle::DescribeImport(*result));
}

}  // namespace orch::coordinator
