#include "agent/config.h"

#include "protocol/endpoint.h"
#include "protocol/peer_names.h"

#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace orch::agent {
namespace {

// Collects the first problem; every accessor returns nullopt after an error.
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  Status Error(const toml::source_region& where, const std::string& field,
               const std::string& what) const {
    return InvalidArgument(file_ + ":" + std::to_string(where.begin.line) + ":" +
                           std::to_string(where.begin.column) + ": " + field + ": " + what);
  }

  static std::string Describe(const toml::node& node) {
    if (node.is_string()) return "\"" + std::string(*node.value<std::string>()) + "\"";
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    std::ostringstream out;
    node.visit([&out](const auto& value) { out << value; });
    return out.str();
  }

  Status CheckKeys(const toml::table& table, const std::string& path,
                   std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, node] : table) {
      bool known = false;
      for (std::string_view name : allowed) known = known || key.str() == name;
      if (!known) {
        return Error(node.source(), path + "." + std::string(key.str()),
                     "unknown key (allowed: " + Join(allowed) + ")");
      }
    }
    return Status::Ok();
  }

  Result<std::string> String(const toml::table& table, const std::string& path,
                             std::string_view key, std::optional<std::string> fallback) const {
    const toml::node* node = table.get(key);
    std::string field = path + "." + std::string(key);
    if (node == nullptr) {
      if (fallback) return *fallback;
      return Error(table.source(), field, "required");
    }
    if (!node->is_string()) {
      return Error(node->source(), field, "must be a string, got " + Describe(*node));
    }
    std::string value(*node->value<std::string>());
    if (value.empty()) return Error(node->source(), field, "must not be empty");
    return value;
  }

  Result<std::int64_t> Int(const toml::table& table, const std::string& path, std::string_view key,
                           std::int64_t fallback, std::int64_t min,
                           std::int64_t max = INT32_MAX) const {
    const toml::node* node = table.get(key);
    std::string field = path + "." + std::string(key);
    if (node == nullptr) return fallback;
    if (!node->is_integer()) {
      return Error(node->source(), field, "must be an integer, got " + Describe(*node));
    }
    std::int64_t value = *node->value<std::int64_t>();
    if (value < min || value > max) {
      return Error(node->source(), field,
                   "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                       std::to_string(value));
    }
    return value;
  }

 private:
  static std::string Join(std::initializer_list<std::string_view> names) {
    std::string out;
    for (std::string_view name : names) out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
  }

  std::string file_;
};

std::string Resolve(const std::string& base_dir, const std::string& path) {
  std::filesystem::path resolved(path);
  if (resolved.is_relative()) resolved = std::filesystem::path(base_dir) / resolved;
  return resolved.lexically_normal().string();
}

Status ParseAgentTable(const Fields& f, const toml::table& agent, const std::string& base_dir,
                       AgentConfig& config) {
  ORCH_RETURN_IF_ERROR(f.CheckKeys(agent, "agent",
                                   {"id", "coordinator", "slots", "hardware", "gpus", "spool_dir",
                                    "model_dirs", "model_cache", "run_timeout_ms", "driver_threads",
                                    "key", "coordinator_key", "stop_drain_ms", "synth_max_bytes"}));
  ORCH_ASSIGN_OR_RETURN(config.id, f.String(agent, "agent", "id", std::nullopt));
  if (!protocol::ValidPeerName(config.id)) {
    return f.Error(agent.source(), "agent.id",
                   "\"" + config.id + "\" must be 1..200 characters of A-Z a-z 0-9 . _ : @ -");
  }
  ORCH_ASSIGN_OR_RETURN(config.coordinator, f.String(agent, "agent", "coordinator", std::nullopt));
  std::string bad_endpoint =
      protocol::WhyBadEndpoint(config.coordinator, protocol::EndpointUse::kConnect);
  if (!bad_endpoint.empty()) {
    const toml::node* node = agent.get("coordinator");
    return f.Error(node != nullptr ? node->source() : agent.source(), "agent.coordinator",
                   bad_endpoint);
  }
  ORCH_ASSIGN_OR_RETURN(std::int64_t slots, f.Int(agent, "agent", "slots", 1, 1));
  config.slots = static_cast<std::int32_t>(slots);
  ORCH_ASSIGN_OR_RETURN(config.hardware, f.String(agent, "agent", "hardware", "cpu"));
  ORCH_ASSIGN_OR_RETURN(std::int64_t gpus, f.Int(agent, "agent", "gpus", 0, 0));
  config.gpus = static_cast<std::int32_t>(gpus);
  ORCH_ASSIGN_OR_RETURN(std::string spool,
                        f.String(agent, "agent", "spool_dir", "spool-" + config.id));
  config.spool_dir = Resolve(base_dir, spool);
  ORCH_ASSIGN_OR_RETURN(std::string cache, f.String(agent, "agent", "model_cache", "model-cache"));
  config.model_cache = Resolve(base_dir, cache);
  ORCH_ASSIGN_OR_RETURN(
      std::int64_t synth_max,
      f.Int(agent, "agent", "synth_max_bytes",
            static_cast<std::int64_t>(model::kDefaultSynthMaxBytes), 1, INT64_MAX));
  config.synth_max_bytes = static_cast<std::uint64_t>(synth_max);
  ORCH_ASSIGN_OR_RETURN(std::int64_t timeout, f.Int(agent, "agent", "run_timeout_ms", 600000, 1));
  config.run_timeout = std::chrono::milliseconds(timeout);
  ORCH_ASSIGN_OR_RETURN(std::int64_t drain, f.Int(agent, "agent", "stop_drain_ms", 0, 0));
  config.stop_drain = std::chrono::milliseconds(drain);
  ORCH_ASSIGN_OR_RETURN(std::string key, f.String(agent, "agent", "key", ""));
  ORCH_ASSIGN_OR_RETURN(std::string server_key, f.String(agent, "agent", "coordinator_key", ""));
  if (key.empty() != server_key.empty()) {
    return f.Error(agent.source(), "agent.key",
                   "key and coordinator_key go together (CurveZMQ), or neither is set");
  }
  if (!key.empty()) {
    config.key = Resolve(base_dir, key);
    config.coordinator_key = Resolve(base_dir, server_key);
  }
  ORCH_ASSIGN_OR_RETURN(std::int64_t threads, f.Int(agent, "agent", "driver_threads", 0, 0));
  config.driver_threads = static_cast<std::int32_t>(threads);
  if (const toml::node* dirs = agent.get("model_dirs")) {
    if (!dirs->is_array()) {
      return f.Error(dirs->source(), "agent.model_dirs",
                     "must be an array of strings, got " + Fields::Describe(*dirs));
    }
    std::size_t index = 0;
    for (const toml::node& dir : *dirs->as_array()) {
      std::string field = "agent.model_dirs[" + std::to_string(index++) + "]";
      if (!dir.is_string()) {
        return f.Error(dir.source(), field, "must be a string, got " + Fields::Describe(dir));
      }
      config.model_dirs.push_back(Resolve(base_dir, *dir.value<std::string>()));
    }
  }
  return Status::Ok();
}

Status ParseDrivers(const Fields& f, const toml::table& root, const std::string& base_dir,
                    AgentConfig& config) {
  const toml::node* drivers = root.get("drivers");
  if (drivers == nullptr) return Status::Ok();
  if (!drivers->is_array_of_tables()) {
    return f.Error(drivers->source(), "drivers",
                   "must be an array of tables ([[drivers]]), got " + Fields::Describe(*drivers));
  }
  std::set<std::string> names;
  std::size_t index = 0;
  for (const toml::node& node : *drivers->as_array()) {
    const toml::table& table = *node.as_table();
    std::string path = "drivers[" + std::to_string(index++) + "]";
    ORCH_RETURN_IF_ERROR(f.CheckKeys(table, path, {"name", "executable", "engine"}));
    DriverConfig driver;
    ORCH_ASSIGN_OR_RETURN(driver.name, f.String(table, path, "name", std::nullopt));
    ORCH_ASSIGN_OR_RETURN(std::string executable,
                          f.String(table, path, "executable", std::nullopt));
    driver.executable = Resolve(base_dir, executable);
    ORCH_ASSIGN_OR_RETURN(driver.engine, f.String(table, path, "engine", std::nullopt));
    if (!names.insert(driver.name).second) {
      return f.Error(table.get("name")->source(), path + ".name",
                     "duplicate driver name \"" + driver.name + "\"");
    }
    config.drivers.push_back(std::move(driver));
  }
  return Status::Ok();
}

}  // namespace

Result<AgentConfig> ParseAgentConfig(std::string_view text, const std::string& file_name,
                                     const std::string& base_dir) {
  toml::table root;
  try {
    root = toml::parse(text, file_name);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(file_name + ":" + std::to_string(e.source().begin.line) + ":" +
                           std::to_string(e.source().begin.column) + ": " +
                           std::string(e.description()));
  }
  Fields f(file_name);
  ORCH_RETURN_IF_ERROR(f.CheckKeys(root, "(top level)", {"agent", "drivers"}));
  const toml::table* agent = root["agent"].as_table();
  if (agent == nullptr) {
    return InvalidArgument(file_name + ":1:1: agent: required table [agent] is missing");
  }
  AgentConfig config;
  ORCH_RETURN_IF_ERROR(ParseAgentTable(f, *agent, base_dir, config));
  ORCH_RETURN_IF_ERROR(ParseDrivers(f, root, base_dir, config));
  return config;
}

Result<AgentConfig> LoadAgentConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read agent config " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::filesystem::path base = std::filesystem::absolute(path).parent_path();
  return ParseAgentConfig(text.str(), path, base.string());
}

}  // namespace orch::agent
