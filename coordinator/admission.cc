#include "coordinator/admission.h"

#include <ctime>
#include <utility>

#include "protocol/codec.h"
#include "protocol/identity_key.h"

namespace orch::coordinator {

std::optional<protocol::Message> RequestAnswer(const protocol::Message& message, std::string why) {
  if (std::holds_alternative<protocol::ExportRequest>(message)) {
    return protocol::ExportReply{false, std::move(why), ""};
  }
  bool request = std::holds_alternative<protocol::ImportRequest>(message) ||
                 std::holds_alternative<protocol::Submit>(message) ||
                 std::holds_alternative<protocol::StatusRequest>(message) ||
                 std::holds_alternative<protocol::CancelExperiment>(message) ||
                 std::holds_alternative<protocol::Retry>(message) ||
                 std::holds_alternative<protocol::Drain>(message);
  if (!request) return std::nullopt;
  return protocol::CommandReply{false, std::move(why)};
}

namespace {

// "2025-03-01 12:00:05 UTC" for a wall-clock time in ms since the Unix epoch.
std::string UtcTime(Millis at) {
  std::time_t seconds = static_cast<std::time_t>(at.count() / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

}  // namespace

Admission::Admission(std::int32_t max_bad_frames, LogSink warn)
    : max_bad_frames_(max_bad_frames), warn_(std::move(warn)) {}

void Admission::OnConnected(const std::string& peer) {
  bad_by_peer_.erase(peer);
  ignored_.erase(peer);
}

void Admission::NoteHolder(const std::string& peer, const std::string& user) {
  if (policy_.authenticated) holder_[peer] = user;
}

bool Admission::OwnAgentConnection(const protocol::TransportEvent& event) const {
  auto role = policy_.roles.find(event.user);
  return role != policy_.roles.end() && protocol::SpeaksAs(role->second, event.user, event.peer);
}

Admission::Screened Admission::Screen(const protocol::TransportEvent& event, Millis now) const {
  if (ignored_.contains(event.peer)) return {true, std::nullopt};
  auto quiet = quiet_until_.find(event.user);
  if (quiet == quiet_until_.end() || now >= quiet->second.until) return {};
  // The id's legitimate holder is not locked out by another connection using its key.
  if (OwnAgentConnection(event)) return {};
  Result<protocol::Message> message = protocol::Decode(event.frame);
  if (!message.ok()) return {true, std::nullopt};
  Millis left = quiet->second.until - now;
  return {true,
          RequestAnswer(*message, "throttled: " + std::to_string(quiet->second.refusals) +
                                      " refused requests from key " + event.user + " within " +
                                      std::to_string(kRefusalWindow.count() / 1000) +
                                      " s; its requests are ignored until " +
                                      UtcTime(quiet->second.until) + " (in " +
                                      std::to_string((left.count() + 999) / 1000) + " s)")};
}

void Admission::BadFrame(const std::string& peer, const Status& why) {
  std::int32_t count = ++bad_by_peer_[peer];
  warn_("dropping a bad frame from " + peer + " (" + std::to_string(count) +
        " so far): " + why.ToString());
  if (count >= max_bad_frames_) {
    ignored_.insert(peer);
    warn_("ignoring " + peer + " from now on: " + std::to_string(count) + " bad frames");
  }
}

std::optional<protocol::Message> Admission::Refusal(
    const protocol::TransportEvent& event, const protocol::Message& message,
    const std::function<bool(const std::string&)>& has_experiment, Millis now) {
  auto owner_of = [&](const std::string& experiment) -> std::optional<std::string> {
    if (!has_experiment(experiment)) return std::nullopt;
    auto it = owners_.find(experiment);
    return it == owners_.end() ? std::string() : it->second;
  };
  std::string refusal = WhyRefused(policy_, event.user, event.peer, message, owner_of);
  if (refusal.empty()) return std::nullopt;
  // Refusals count within a sliding window, whatever the key sent between: an agent's
  // key whose heartbeats are permitted is still quieted for refused requests.
  std::deque<Millis>& refused = refused_by_[event.user];
  refused.push_back(now);
  while (now - refused.front() >= kRefusalWindow) refused.pop_front();
  std::size_t count = refused.size();
  std::string window = std::to_string(kRefusalWindow.count() / 1000) + " s";
  warn_("refused " + std::string(protocol::MessageName(message)) + " from " + event.peer + " (" +
        std::to_string(count) + " within " + window + "): " + refusal);
  if (count >= static_cast<std::size_t>(max_bad_frames_)) {
    quiet_until_[event.user] = {now + kQuietAfterAbuse, count};
    refused_by_.erase(event.user);
    warn_("ignoring key " + event.user + " for " + std::to_string(kQuietAfterAbuse.count() / 1000) +
          " s: " + std::to_string(count) + " refused requests within " + window);
  }
  // `orch export` waits for an ExportReply, other CLI requests for a CommandReply; an
  // agent's message gets a Reject. Exactly one answer each.
  return RequestAnswer(message, "refused: " + refusal)
      .value_or(protocol::Reject{protocol::kProtocolVersion, "refused: " + refusal});
}

void Admission::StampOwner(const std::string& user, Effects& effects) const {
  for (Effect& effect : effects) {
    auto* put = std::get_if<PutPlanEffect>(&effect);
    if (put == nullptr) continue;
    auto owner = owners_.find(put->plan.experiment);
    put->plan.owner = owner == owners_.end() ? user : owner->second;
  }
}

void Admission::NoteOwner(const store::PlanRecord& plan) {
  // try_emplace: the first submitter stays the owner.
  if (!plan.owner.empty()) owners_.try_emplace(plan.experiment, plan.owner);
}

void Admission::RestoreOwners(const store::StoreState& state) {
  owners_.clear();
  // Plans stored in plain mode have no owner.
  for (const store::PlanRecord& plan : state.plans) NoteOwner(plan);
}

std::function<bool(const std::string&)> Admission::ImportScope(const std::string& user) const {
  auto role = policy_.roles.find(user);
  if (!policy_.authenticated || (role != policy_.roles.end() && role->second == "admin")) {
    return nullptr;
  }
  return [this, user](const std::string& experiment) {
    auto owner = owners_.find(experiment);
    return owner != owners_.end() && owner->second == user;
  };
}

bool Admission::Withheld(const std::string& peer, const protocol::Message& message) const {
  if (!policy_.authenticated || std::holds_alternative<protocol::Reject>(message)) return false;
  auto holder = holder_.find(peer);
  if (holder == holder_.end()) return false;
  bool agents_id = false;  // some agent key may speak as `peer`
  for (const auto& [name, role] : policy_.roles) {
    if (protocol::SpeaksAs(role, name, peer)) agents_id = true;
  }
  auto holder_role = policy_.roles.find(holder->second);
  bool held_by_its_key = holder_role != policy_.roles.end() &&
                         protocol::SpeaksAs(holder_role->second, holder->second, peer);
  if (!agents_id || held_by_its_key) return false;
  warn_(std::string(protocol::MessageName(message)) + " for agent " + peer +
        " not sent: its id is held by key " + holder->second);
  return true;
}

}  // namespace orch::coordinator
