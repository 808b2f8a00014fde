// CoordinatorService's transfers (coordinator_service.h): requests that arrive in parts
// (plans and result bundles above one frame, assembled by AddPart) and the bundle
// requests, which need the store and the keys rather than the pure core.
#include <optional>
#include <string>

#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "coordinator/coordinator_service.h"

namespace orch::coordinator {

bool CoordinatorService::WholePlan(const protocol::TransportEvent& event,
                                   protocol::Message& message, Millis now) {
  auto* submit = std::get_if<protocol::Submit>(&message);
  if (submit == nullptr || submit->upload_id.empty()) return true;
  std::optional<std::string> whole = AddPart(
      event,
      {kPlanUpload, "", submit->upload_id, submit->offset, submit->total_size, submit->plan_json},
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
  const BundleKeys& keys = state_.bundle_keys;
  if (!keys.own) {
    SendMessage(event.peer, protocol::ExportReply{false, kNoKey, ""});
    return;
  }
  bundle::ExportOptions options{request.experiment, request.cells, now.count(),
                                static_cast<int64_t>(request.valid_for_ms)};
  Result<std::string> file = bundle::ExportPlanBundle(*store_, options, *keys.own);
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
                                                       const UploadPart& part, Millis now) {
  Uploads::Added added = state_.uploads.Add(event.user, part, now);
  if (added.answer) SendMessage(event.peer, *added.answer);
  return std::move(added.whole);
}

void CoordinatorService::OnImport(const protocol::TransportEvent& event,
                                  const protocol::ImportRequest& request, Millis now) {
  auto reply = [&](bool ok, const std::string& message) {
    SendMessage(event.peer, protocol::CommandReply{ok, message});
  };
  const BundleKeys& keys = state_.bundle_keys;
  if (!keys.own) return reply(false, kNoKey);
  std::optional<std::string> assembled;
  if (!request.upload_id.empty()) {
    assembled = AddPart(event,
                        {kBundleUpload, request.name, request.upload_id, request.offset,
                         request.total_size, request.bundle},
                        now);
    if (!assembled) return;
  }
  const std::string& bundle_bytes = assembled ? *assembled : request.bundle;
  // Read at each import, so a key added to the folder is trusted without a restart.
  Result<std::vector<protocol::PublicIdentity>> allowed =
      protocol::ReadAllowedKeys(keys.allowed_dir);
  if (!allowed.ok()) return reply(false, "read the trusted keys: " + allowed.status().message());
  bundle::ImportContext context;
  for (const protocol::PublicIdentity& key : *allowed) {
    (key.role == "contributor" ? context.trusted : context.other_roles).push_back(key);
  }
  context.trust_hint = "check with the contributor that this is their key, then: cp {name}.key " +
                       keys.allowed_dir +
                       "/ (the public file `orch keygen {name} "
                       "--role contributor` made on the rig; no restart is needed)";
  context.coordinator_key = keys.own->identity.sign_public;
  context.max_bundle_bytes = keys.max_bundle_bytes;
  context.now_ms = now.count();
  context.may_import = state_.admission.ImportScope(event.user);
  std::string name = request.name.empty() ? "(unnamed)" : request.name;
  // The import writes the store: under group commit, Commit() syncs it before the
  // reply goes out.
  state_.unsynced = true;
  Result<bundle::ImportResult> result =
      bundle::ImportResultBundle(*store_, bundle_bytes, name, context);
  if (!result.ok()) {
    log_.warn(fmt::runtime("refused bundle {} from {}: {}"), name, event.peer,
              result.status().message());
    return reply(false, result.status().message());
  }
  log_.info(fmt::runtime("{}"), bundle::DescribeImport(*result));
  // The jobs it completed must not be handed out: the core is told what was stored.
  if (!result->duplicate) state_.core.OnImported(result->stored_runs, result->completed_jobs, now);
  reply(true, bundle::DescribeImport(*result));
}

}  // namespace orch::coordinator
