#include "coordinator/access_policy.h"

#include "coordinator/plan_catalog.h"
#include "protocol/identity_key.h"

namespace orch::coordinator {
namespace {

bool IsAgentMessage(const protocol::Message& m) {
  return std::holds_alternative<protocol::Hello>(m) ||
         std::holds_alternative<protocol::Heartbeat>(m) ||
         std::holds_alternative<protocol::RunStarted>(m) ||
         std::holds_alternative<protocol::DigestChunk>(m) ||
         std::holds_alternative<protocol::RunFinished>(m);
}

// The experiment a Submit, CancelExperiment or Retry is about; "" for other messages.
std::string ExperimentOf(const protocol::Message& m) {
  if (const auto* cancel = std::get_if<protocol::CancelExperiment>(&m)) return cancel->experiment;
  if (const auto* retry = std::get_if<protocol::Retry>(&m)) return retry->experiment;
  if (const auto* out = std::get_if<protocol::ExportRequest>(&m)) return out->experiment;
  if (const auto* submit = std::get_if<protocol::Submit>(&m)) {
    return ExperimentNameOf(submit->plan_json);
  }
  return "";
}

std::string Needs(const std::string& user, const std::string& role, const protocol::Message& m,
                  const std::string& needed) {
  return "key " + user + " (role " + role + ") may not send " + protocol::MessageName(m) +
         ": needs role " + needed;
}

std::string ForSubmitter(const std::string& user, const protocol::Message& m,
                         const OwnerOf& owner_of) {
  if (std::holds_alternative<protocol::StatusRequest>(m)) return "";
  // Which experiment a result bundle is for is known once it is read: the service
  // checks that the submitter owns it.
  if (std::holds_alternative<protocol::ImportRequest>(m)) return "";
  bool submit = std::holds_alternative<protocol::Submit>(m);
  // A plan sent in parts names its experiment once whole: the service checks it then.
  if (submit && !std::get<protocol::Submit>(m).upload_id.empty()) return "";
  bool own_request = submit || std::holds_alternative<protocol::CancelExperiment>(m) ||
                     std::holds_alternative<protocol::Retry>(m) ||
                     std::holds_alternative<protocol::ExportRequest>(m);
  if (!own_request) return Needs(user, "submitter", m, "admin");
  std::string experiment = ExperimentOf(m);
  std::optional<std::string> owner = owner_of(experiment);
  if ((submit && !owner) || owner == user) return "";
  // `orch cancel` sends a CancelExperiment: the user knows it as cancel.
  std::string verb = std::holds_alternative<protocol::CancelExperiment>(m)
                         ? "cancel"
                         : std::string(protocol::MessageName(m));
  return "key " + user + " (role submitter) may " + verb +
         " only the experiments it submitted, not " + experiment + ": needs role admin";
}

}  // namespace

std::string WhyRefused(const AccessPolicy& policy, const std::string& user, const std::string& peer,
                       const protocol::Message& message, const OwnerOf& owner_of) {
  if (!policy.authenticated) return "";
  auto it = policy.roles.find(user);
  std::string role = it == policy.roles.end() ? "" : it->second;
  if (IsAgentMessage(message)) {
    if (!protocol::IsAgentRole(role)) {
      return Needs(user, role.empty() ? "none" : role, message, "agent or pilot");
    }
    if (!protocol::SpeaksAs(role, user, peer) && peer.rfind(user + "~", 0) == 0) {
      // The alias of a second connection under a held name (protocol/peer_names.h).
      return "agent id " + user +
             " is in use by another connected agent: two agents were given one id and key; "
             "give each its own `id` and key. This one is refused while the other stays "
             "connected.";
    }
    if (!protocol::SpeaksAs(role, user, peer)) {
      return "key " + user + " speaks only as agent " + user +
             (role == "pilot" ? " or its pilots " + user + ".*" : "") + ", not as " + peer;
    }
    return "";
  }
  if (role == "admin") return "";
  if (role == "submitter") return ForSubmitter(user, message, owner_of);
  if (role == "viewer" && std::holds_alternative<protocol::StatusRequest>(message)) return "";
  bool drain = std::holds_alternative<protocol::Drain>(message);
  bool status = std::holds_alternative<protocol::StatusRequest>(message);
  return Needs(user, role.empty() ? "none" : role, message,
               drain    ? "admin"
               : status ? "viewer, submitter or admin"
                        : "submitter or admin");
}

}  // namespace orch::coordinator
