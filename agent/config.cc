#include "agent/config.h"

#include "agent/config_fields.h"
#include "agent/server_presets.h"

#include "base/suggest.h"
#include "telemetry/http_listener.h"

#include "protocol/endpoint.h"
#include "protocol/peer_names.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace orch::agent {
namespace {

using config_fields::Fields;
using config_fields::Mistakes;
using config_fields::Resolve;

// Who the agent is and how it reaches the coordinator: id, coordinator, key and
// coordinator_key.
void ParseIdentity(const Fields& f, const toml::table& agent, const std::string& base_dir,
                   AgentConfig& config, Mistakes& m) {
  config.id = m.Take(f.String(agent, "agent", "id", std::nullopt), "");
  if (!config.id.empty() && !protocol::ValidPeerName(config.id)) {
    m.Note(f.Error(agent.source(), "agent.id",
                   "\"" + config.id + "\" must be 1..200 characters of A-Z a-z 0-9 . _ : @ -"));
  }
  config.coordinator = m.Take(f.String(agent, "agent", "coordinator", std::nullopt), "");
  if (!config.coordinator.empty()) {
    std::string bad_endpoint =
        protocol::WhyBadEndpoint(config.coordinator, protocol::EndpointUse::kConnect);
    if (!bad_endpoint.empty()) {
      const toml::node* node = agent.get("coordinator");
      m.Note(f.Error(node != nullptr ? node->source() : agent.source(), "agent.coordinator",
                     bad_endpoint));
    }
  }
  std::string key = m.Take(f.String(agent, "agent", "key", ""), "");
  std::string server_key = m.Take(f.String(agent, "agent", "coordinator_key", ""), "");
  if (key.empty() != server_key.empty()) {
    m.Note(f.Error(agent.source(), "agent.key",
                   "key and coordinator_key go together (CurveZMQ), or neither is set"));
  } else if (!key.empty()) {
    config.key = Resolve(base_dir, key);
    config.coordinator_key = Resolve(base_dir, server_key);
  }
}

void ParseModelDirs(const Fields& f, const toml::table& agent, const std::string& base_dir,
                    AgentConfig& config, Mistakes& m) {
  const toml::node* dirs = agent.get("model_dirs");
  if (dirs == nullptr) return;
  if (!dirs->is_array()) {
    m.Note(f.Error(dirs->source(), "agent.model_dirs",
                   "must be an array of strings, got " + Fields::Describe(*dirs)));
    return;
  }
  std::size_t index = 0;
  for (const toml::node& dir : *dirs->as_array()) {
    std::string field = "agent.model_dirs[" + std::to_string(index++) + "]";
    if (!dir.is_string()) {
      m.Note(f.Error(dir.source(), field, "must be a string, got " + Fields::Describe(dir)));
      continue;
    }
    config.model_dirs.push_back(Resolve(base_dir, *dir.value<std::string>()));
  }
}

// The metrics listener (docs/metrics-endpoint.md, "Agent metrics"): off unless
// metrics_listen is set; beyond loopback only with a viewer token.
void ParseMetrics(const Fields& f, const toml::table& agent, const std::string& base_dir,
                  AgentConfig& config, Mistakes& m) {
  config.metrics_listen = m.Take(f.String(agent, "agent", "metrics_listen", ""), "");
  std::string token = m.Take(f.String(agent, "agent", "metrics_viewer_token_file", ""), "");
  if (!token.empty()) config.metrics_viewer_token_file = Resolve(base_dir, token);
  if (const toml::node* listen = agent.get("metrics_listen"); listen && listen->is_string()) {
    Status allowed =
        telemetry::CheckViewerListen("agent.metrics_listen", config.metrics_listen,
                                     "agent.metrics_viewer_token_file", !token.empty());
    if (!allowed.ok()) m.Note(allowed.WithContext(f.Where(listen->source())));
  }
}

void ParseAgentTable(const Fields& f, const toml::table& agent, const std::string& base_dir,
                     AgentConfig& config, Mistakes& m) {
  m.Note(f.CheckKeys(agent, "agent",
                     {"id", "coordinator", "slots", "hardware", "gpus", "spool_dir", "model_dirs",
                      "model_cache", "run_timeout_ms", "driver_threads", "key", "coordinator_key",
                      "stop_drain_ms", "synth_max_bytes", "warm_sessions", "warm_idle_ms",
                      "metrics_listen", "metrics_viewer_token_file"}));
  ParseIdentity(f, agent, base_dir, config, m);
  config.slots = static_cast<std::int32_t>(m.Take(f.Int(agent, "agent", "slots", 1, 1), 1));
  config.hardware = m.Take(f.String(agent, "agent", "hardware", "cpu"), "cpu");
  config.gpus = static_cast<std::int32_t>(m.Take(f.Int(agent, "agent", "gpus", 0, 0), 0));
  config.spool_dir =
      Resolve(base_dir, m.Take(f.String(agent, "agent", "spool_dir", "spool-" + config.id), ""));
  config.model_cache =
      Resolve(base_dir, m.Take(f.String(agent, "agent", "model_cache", "model-cache"), ""));
  const auto synth_default = static_cast<std::int64_t>(model::kDefaultSynthMaxBytes);
  config.synth_max_bytes = static_cast<std::uint64_t>(
      m.Take(f.Int(agent, "agent", "synth_max_bytes", synth_default, 1, INT64_MAX), synth_default));
  config.run_timeout =
      std::chrono::milliseconds(m.Take(f.Int(agent, "agent", "run_timeout_ms", 600000, 1), 600000));
  config.stop_drain =
      std::chrono::milliseconds(m.Take(f.Int(agent, "agent", "stop_drain_ms", 0, 0), 0));
  config.driver_threads =
      static_cast<std::int32_t>(m.Take(f.Int(agent, "agent", "driver_threads", 0, 0), 0));
  config.warm_sessions =
      static_cast<std::int32_t>(m.Take(f.Int(agent, "agent", "warm_sessions", 2, 0, 64), 2));
  config.warm_idle =
      std::chrono::milliseconds(m.Take(f.Int(agent, "agent", "warm_idle_ms", 300000, 1), 300000));
  ParseModelDirs(f, agent, base_dir, config, m);
  ParseMetrics(f, agent, base_dir, config, m);
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

std::string FamilyOf(std::string_view engine) {
  return std::string(engine.substr(0, engine.find('@')));
}

std::string Where(const std::string& file, const toml::node& node) {
  return file + ":" + std::to_string(node.source().begin.line);
}

Status CheckServerEngine(const Fields& f, const toml::table& table, const std::string& path,
                         const std::string& engine) {
  std::size_t at = engine.find('@');
  std::string family = FamilyOf(engine);
  if (at == std::string::npos || at + 1 == engine.size() || family.empty()) {
    return f.Error(table.get("engine")->source(), path + ".engine",
                   "must be FAMILY@VERSION (e.g. \"llama-server@b8390\"), got \"" + engine + "\"");
  }
  if (IsServerEngine(engine)) return Status::Ok();
  std::vector<std::string> families(std::begin(kServerFamilies), std::end(kServerFamilies));
  std::string guess = ClosestName(family, families);
  return f.Error(table.get("engine")->source(), path + ".engine",
                 "\"" + family + "\" is not a server family" +
                     (guess.empty() ? "" : "; did you mean \"" + guess + "\"?") +
                     " (families: llama-server, vllm, sglang, ollama)");
}

// {model}, {port} and {host} are the placeholders; {port} must appear.
Status CheckPlaceholders(const Fields& f, const toml::node& node, const std::string& field,
                         const std::vector<std::string>& argv) {
  static const std::vector<std::string> kKnown = {"model", "port", "host"};
  bool has_port = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    for (std::size_t open = argv[i].find('{'); open != std::string::npos;
         open = argv[i].find('{', open + 1)) {
      std::size_t close = argv[i].find('}', open);
      if (close == std::string::npos) break;
      std::string name = argv[i].substr(open + 1, close - open - 1);
      has_port = has_port || name == "port";
      bool known = std::find(kKnown.begin(), kKnown.end(), name) != kKnown.end();
      if (known) continue;
      std::string guess = ClosestName(name, kKnown);
      return f.Error(node.source(), field + "[" + std::to_string(i) + "]",
                     "unknown placeholder {" + name + "}" +
                         (guess.empty() ? "" : "; did you mean {" + guess + "}?") +
                         " (placeholders: {model}, {port}, {host})");
    }
  }
  if (!has_port) {
    return f.Error(node.source(), field,
                   "must pass {port} to the server (the agent picks a free port and waits for "
                   "the server's health on it)");
  }
  return Status::Ok();
}

// One axis value: ["-fa", "on"], or {args = [...], env = {NAME = "value"}}.
Result<ServerAxisValue> ParseAxisValue(const Fields& f, const toml::node& node,
                                       const std::string& field) {
  ServerAxisValue value;
  if (node.is_array()) {
    ORCH_ASSIGN_OR_RETURN(value.args, f.Strings(node, field));
    return value;
  }
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return f.Error(node.source(), field,
                   "must be an array of arguments or a table {args = [...], env = {...}}, got " +
                       Fields::Describe(node));
  }
  ORCH_RETURN_IF_ERROR(f.CheckKeys(*table, field, {"args", "env"}));
  if (const toml::node* args = table->get("args")) {
    ORCH_ASSIGN_OR_RETURN(value.args, f.Strings(*args, field + ".args"));
  }
  if (const toml::node* env = table->get("env")) {
    const toml::table* vars = env->as_table();
    if (vars == nullptr) {
      return f.Error(env->source(), field + ".env",
                     "must be a table of NAME = \"value\", got " + Fields::Describe(*env));
    }
    for (const auto& [name, var] : *vars) {
      if (!var.is_string()) {
        return f.Error(var.source(), field + ".env." + std::string(name.str()),
                       "must be a string, got " + Fields::Describe(var));
      }
      value.env.push_back(std::string(name.str()) + "=" + *var.value<std::string>());
    }
  }
  return value;
}

Status ParseServerAxes(const Fields& f, const toml::node& node, const std::string& path,
                       ServerConfig& server) {
  const toml::table* axes = node.as_table();
  if (axes == nullptr) {
    return f.Error(node.source(), path,
                   "must be a table of axes ([servers.axes.NAME]), got " + Fields::Describe(node));
  }
  for (const auto& [axis, values] : *axes) {
    std::string field = path + "." + std::string(axis.str());
    const toml::table* table = values.as_table();
    if (table == nullptr || table->empty()) {
      return f.Error(values.source(), field,
                     "must be a table mapping each accepted value to arguments, e.g. "
                     "on = [\"-fa\", \"on\"]");
    }
    auto& mapped = server.axes[std::string(axis.str())];
    for (const auto& [value, what] : *table) {
      ORCH_ASSIGN_OR_RETURN(mapped[std::string(value.str())],
                            ParseAxisValue(f, what, field + "." + std::string(value.str())));
    }
  }
  return Status::Ok();
}

Status ParseServerMode(const Fields& f, const toml::table& table, const std::string& path,
                       const std::string& base_dir, ServerConfig& server) {
  const toml::node* launch = table.get("launch");
  const toml::node* url = table.get("url");
  if ((launch == nullptr) == (url == nullptr)) {
    return f.Error(table.source(), path,
                   "set either url (attach to a running server) or launch (the agent starts it), "
                   "not both or neither");
  }
  if (url != nullptr) {
    ORCH_ASSIGN_OR_RETURN(server.url, f.String(table, path, "url", std::nullopt));
    if (server.url.rfind("http://", 0) != 0 && server.url.rfind("https://", 0) != 0) {
      return f.Error(url->source(), path + ".url",
                     "must start with http:// or https://, got \"" + server.url + "\"");
    }
    ORCH_ASSIGN_OR_RETURN(std::string key, f.String(table, path, "api_key_file", ""));
    if (!key.empty()) server.api_key_file = Resolve(base_dir, key);
    for (const char* only : {"axes", "preset", "health", "start_timeout_ms", "stop_timeout_ms"}) {
      if (const toml::node* extra = table.get(only)) {
        return f.Error(extra->source(), path + "." + only,
                       "applies to launch entries only; an attached server is not started here");
      }
    }
    return Status::Ok();
  }
  if (table.get("api_key_file") != nullptr) {
    return f.Error(table.get("api_key_file")->source(), path + ".api_key_file",
                   "applies to attached servers (url) only");
  }
  ORCH_ASSIGN_OR_RETURN(server.launch, f.Strings(*launch, path + ".launch"));
  if (server.launch.empty()) {
    return f.Error(launch->source(), path + ".launch", "must name the program to start");
  }
  ORCH_RETURN_IF_ERROR(CheckPlaceholders(f, *launch, path + ".launch", server.launch));
  if (server.launch[0].find('/') != std::string::npos) {
    server.launch[0] = Resolve(base_dir, server.launch[0]);
  }
  if (const toml::node* axes = table.get("axes")) {
    ORCH_RETURN_IF_ERROR(ParseServerAxes(f, *axes, path + ".axes", server));
  }
  ORCH_ASSIGN_OR_RETURN(server.preset, f.String(table, path, "preset", ""));
  if (Status preset = ApplyServerPreset(server); !preset.ok()) {
    return f.Error(table.get("preset")->source(), path + ".preset", preset.message());
  }
  ORCH_ASSIGN_OR_RETURN(server.health, f.String(table, path, "health", "/health"));
  if (server.health[0] != '/') {
    return f.Error(table.get("health")->source(), path + ".health",
                   "must be a path starting with /, got \"" + server.health + "\"");
  }
  ORCH_ASSIGN_OR_RETURN(std::int64_t start, f.Int(table, path, "start_timeout_ms", 120000, 1));
  server.start_timeout = std::chrono::milliseconds(start);
  ORCH_ASSIGN_OR_RETURN(std::int64_t stop, f.Int(table, path, "stop_timeout_ms", 10000, 1));
  server.stop_timeout = std::chrono::milliseconds(stop);
  return Status::Ok();
}

Status ParseServers(const Fields& f, const toml::table& root, const std::string& file,
                    const std::string& base_dir, AgentConfig& config) {
  const toml::node* servers = root.get("servers");
  if (servers == nullptr) return Status::Ok();
  if (!servers->is_array_of_tables()) {
    return f.Error(servers->source(), "servers",
                   "must be an array of tables ([[servers]]), got " + Fields::Describe(*servers));
  }
  std::size_t index = 0;
  for (const toml::node& node : *servers->as_array()) {
    const toml::table& table = *node.as_table();
    std::string path = "servers[" + std::to_string(index++) + "]";
    ORCH_RETURN_IF_ERROR(f.CheckKeys(table, path,
                                     {"engine", "url", "api_key_file", "launch", "axes", "preset",
                                      "health", "start_timeout_ms", "stop_timeout_ms"}));
    ServerConfig server;
    server.where = Where(file, table);
    ORCH_ASSIGN_OR_RETURN(server.engine, f.String(table, path, "engine", std::nullopt));
    ORCH_RETURN_IF_ERROR(CheckServerEngine(f, table, path, server.engine));
    for (const ServerConfig& other : config.servers) {
      if (other.engine == server.engine) {
        return f.Error(table.get("engine")->source(), path + ".engine",
                       "a second entry for \"" + server.engine + "\" (the first is at " +
                           other.where + "); one server entry per engine");
      }
    }
    ORCH_RETURN_IF_ERROR(ParseServerMode(f, table, path, base_dir, server));
    config.servers.push_back(std::move(server));
  }
  return Status::Ok();
}

}  // namespace

bool IsServerEngine(std::string_view engine) {
  std::string family = FamilyOf(engine);
  for (std::string_view known : kServerFamilies) {
    if (family == known) return true;
  }
  return false;
}

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
  // Every field's mistake at once; within a [[drivers]] or [[servers]] list, the first.
  Mistakes m(file_name);
  m.Note(f.CheckKeys(root, "(top level)", {"agent", "drivers", "servers"}));
  AgentConfig config;
  const toml::table* agent = root["agent"].as_table();
  if (agent == nullptr) {
    m.Note(InvalidArgument(file_name + ":1:1: agent: required table [agent] is missing"));
  } else {
    ParseAgentTable(f, *agent, base_dir, config, m);
  }
  m.Note(ParseDrivers(f, root, base_dir, config));
  m.Note(ParseServers(f, root, file_name, base_dir, config));
  ORCH_RETURN_IF_ERROR(m.Combined());
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
