#include "coordinator/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "base/file_mistakes.h"
#include "base/suggest.h"
#include "protocol/endpoint.h"
#include "telemetry/http_listener.h"

namespace orch::coordinator {
namespace {

std::string Where(const std::string& file, const toml::source_region& at) {
  return file + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column);
}

Status BadValue(const std::string& file, const toml::node& node, const std::string& field,
                const std::string& rule) {
  std::ostringstream value;
  node.visit([&value](const auto& concrete) { value << concrete; });
  return InvalidArgument(Where(file, node.source()) + ": coordinator." + field + " = " +
                         value.str() + ": " + rule);
}

Status ReadString(const toml::table& t, const std::string& file, const char* key,
                  std::string& out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::Ok();
  auto value = node->value<std::string>();
  if (!value || value->empty()) return BadValue(file, *node, key, "expected a non-empty string");
  out = *value;
  return Status::Ok();
}

Status ReadInt(const toml::table& t, const std::string& file, const char* key, std::int64_t min,
               std::int64_t& out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::Ok();
  auto value = node->value_exact<std::int64_t>();
  if (!value || *value < min) {
    return BadValue(file, *node, key, "expected an integer >= " + std::to_string(min));
  }
  out = *value;
  return Status::Ok();
}

Status ReadMillis(const toml::table& t, const std::string& file, const char* key,
                  std::chrono::milliseconds& out) {
  std::int64_t ms = out.count();
  ORCH_RETURN_IF_ERROR(ReadInt(t, file, key, 1, ms));
  out = std::chrono::milliseconds(ms);
  return Status::Ok();
}

// Every unknown key, each with the known key it is closest to.
void CheckKeys(const toml::table& t, const std::string& file, std::vector<std::string>& errors) {
  static const std::vector<std::string> kKnown = {"id",
                                                  "listen",
                                                  "data_dir",
                                                  "heartbeat_interval_ms",
                                                  "agent_timeout_ms",
                                                  "lease_ms",
                                                  "retry_budget",
                                                  "key",
                                                  "allowed_keys",
                                                  "insecure",
                                                  "max_bundle_bytes",
                                                  "metrics_listen",
                                                  "metrics_viewer_token_file"};
  for (const auto& [key, node] : t) {
    std::string name(key.str());
    if (std::find(kKnown.begin(), kKnown.end(), name) != kKnown.end()) continue;
    std::string guess = ClosestName(name, kKnown);
    errors.push_back(Where(file, node.source()) + ": coordinator." + name + ": unknown key" +
                     (guess.empty() ? "" : "; did you mean \"" + guess + "\"?"));
  }
}

// Settings that cannot work together: an agent must be able to miss a
// heartbeat before it counts as lost, and a lease must outlive the heartbeats
// that renew it.
Status CheckTimings(const CoordinatorOptions& o, const toml::table& t, const std::string& file) {
  auto at = [&](const char* key) {
    const toml::node* node = t.get(key);
    return Where(file, node != nullptr ? node->source() : t.source()) + ": coordinator." + key;
  };
  auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()); };
  if (o.agent_timeout < 2 * o.heartbeat_interval) {
    return InvalidArgument(at("agent_timeout_ms") + " = " + ms(o.agent_timeout) +
                           ": must be at least twice heartbeat_interval_ms (" +
                           ms(o.heartbeat_interval) + "), or agents are lost between heartbeats");
  }
  if (o.lease < 2 * o.heartbeat_interval) {
    return InvalidArgument(at("lease_ms") + " = " + ms(o.lease) +
                           ": must be at least twice heartbeat_interval_ms (" +
                           ms(o.heartbeat_interval) +
                           "), or leases expire before a heartbeat "
                           "renews them");
  }
  return Status::Ok();
}

Result<CoordinatorConfig> CheckSecurity(CoordinatorConfig config, const toml::table& t,
                                        const std::string& file) {
  std::string at = Where(file, t.source()) + ": coordinator";
  if (!config.key.empty() && config.allowed_keys.empty()) {
    return InvalidArgument(at +
                           ".allowed_keys: required with key (the folder of the public "
                           "keys it admits)");
  }
  if (config.key.empty() && !config.insecure && !IsLoopbackEndpoint(config.listen)) {
    return InvalidArgument(at + ".listen = " + config.listen +
                           ": plain sockets on an address other machines can reach; set key "
                           "and allowed_keys (orch keygen, docs/security.md), or insecure = "
                           "true to accept that anyone who reaches it may submit, cancel and "
                           "forge results");
  }
  return config;
}

// Adds a failed status's message to `errors`.
void Note(std::vector<std::string>& errors, const Status& status) {
  if (!status.ok()) errors.push_back(status.message());
}

// The timings and bounds: heartbeat_interval_ms, agent_timeout_ms, lease_ms,
// retry_budget, max_bundle_bytes.
void ReadLimits(const toml::table& t, const std::string& file, CoordinatorConfig& config,
                std::vector<std::string>& errors) {
  CoordinatorOptions& o = config.options;
  std::size_t before_timings = errors.size();
  Note(errors, ReadMillis(t, file, "heartbeat_interval_ms", o.heartbeat_interval));
  Note(errors, ReadMillis(t, file, "agent_timeout_ms", o.agent_timeout));
  Note(errors, ReadMillis(t, file, "lease_ms", o.lease));
  // Only values that were read are compared (not a default standing in for a bad one).
  if (errors.size() == before_timings) Note(errors, CheckTimings(o, t, file));
  std::int64_t budget = o.retry_budget;
  Note(errors, ReadInt(t, file, "retry_budget", 1, budget));
  o.retry_budget = static_cast<std::int32_t>(budget);
  std::int64_t max_bundle = static_cast<std::int64_t>(config.max_bundle_bytes);
  Note(errors, ReadInt(t, file, "max_bundle_bytes", 1 << 20, max_bundle));
  config.max_bundle_bytes = static_cast<std::uint64_t>(max_bundle);
}

// The keys, insecure, and the metrics listener.
void ReadAccess(const toml::table& t, const std::string& file, CoordinatorConfig& config,
                std::vector<std::string>& errors) {
  Note(errors, ReadString(t, file, "key", config.key));
  Note(errors, ReadString(t, file, "allowed_keys", config.allowed_keys));
  if (const toml::node* insecure = t.get("insecure")) {
    if (!insecure->is_boolean()) {
      Note(errors, BadValue(file, *insecure, "insecure", "expected true or false"));
    } else {
      config.insecure = **insecure->as_boolean();
    }
  }
  Note(errors, ReadString(t, file, "metrics_listen", config.metrics_listen));
  Note(errors, ReadString(t, file, "metrics_viewer_token_file", config.metrics_viewer_token_file));
  if (const toml::node* metrics = t.get("metrics_listen")) {
    Status allowed = telemetry::CheckViewerListen(
        "coordinator.metrics_listen", config.metrics_listen,
        "coordinator.metrics_viewer_token_file", !config.metrics_viewer_token_file.empty());
    if (!allowed.ok()) Note(errors, allowed.WithContext(Where(file, metrics->source())));
  }
}

// Reads [coordinator], reporting every mistake at once (one line each, in file order)
// rather than the first only.
Result<CoordinatorConfig> ReadTable(const toml::table& root, const std::string& file) {
  CoordinatorConfig config;
  config.data_dir = "orch-data";
  const toml::table* t = root["coordinator"].as_table();
  if (t == nullptr) {
    return InvalidArgument(file + ":1:1: [coordinator]: required table is missing");
  }
  std::vector<std::string> errors;
  CheckKeys(*t, file, errors);
  Note(errors, ReadString(*t, file, "id", config.options.id));
  Note(errors, ReadString(*t, file, "listen", config.listen));
  if (const toml::node* listen = t->get("listen")) {
    std::string why = protocol::WhyBadEndpoint(config.listen, protocol::EndpointUse::kBind);
    if (!why.empty()) {
      errors.push_back(Where(file, listen->source()) + ": coordinator.listen: " + why);
    }
  }
  Note(errors, ReadString(*t, file, "data_dir", config.data_dir));
  ReadLimits(*t, file, config, errors);
  ReadAccess(*t, file, config, errors);
  Result<CoordinatorConfig> checked = CheckSecurity(config, *t, file);
  if (!checked.ok()) Note(errors, checked.status());
  if (errors.empty()) return checked;
  return MistakesInFileOrder(std::move(errors), file);
}

}  // namespace

Result<CoordinatorConfig> ParseCoordinatorConfig(std::string_view text, const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(Where(file, e.source()) + ": " + std::string(e.description()));
  }
  ORCH_ASSIGN_OR_RETURN(CoordinatorConfig config, ReadTable(root, file));
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  std::filesystem::path data(config.data_dir);
  if (data.is_relative() && !dir.empty()) config.data_dir = (dir / data).string();
  for (std::string* path : {&config.key, &config.allowed_keys, &config.metrics_viewer_token_file}) {
    if (!path->empty() && std::filesystem::path(*path).is_relative() && !dir.empty())
      *path = (dir / *path).string();
  }
  return config;
}

bool IsLoopbackEndpoint(const std::string& endpoint) {
  for (std::string_view prefix :
       {"tcp://127.", "tcp://localhost:", "tcp://[::1]:", "ipc://", "inproc://"}) {
    if (endpoint.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace orch::coordinator
